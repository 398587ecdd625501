#!/usr/bin/env python
"""pass@k evaluation driver; same as ``fgrpo-verl eval-passk`` (see fgrpo_verl/commands/eval_passk.py).

python scripts/eval_passk.py generate --model CKPT --data aime24.parquet --output run/samples.jsonl
python scripts/eval_passk.py score --samples run/samples.jsonl --output run/scores.jsonl
python scripts/eval_passk.py report --scores run/scores.jsonl --out-dir run/report
python scripts/eval_passk.py compare --a f_grpo/scores.jsonl --b grpo/scores.jsonl --out-dir cmp
"""

import sys
from pathlib import Path

# Runnable from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fgrpo_verl.cli import main

if __name__ == "__main__":
    sys.exit(main(["eval-passk", *sys.argv[1:]]))
