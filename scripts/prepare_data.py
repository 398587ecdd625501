#!/usr/bin/env python3
"""Prepare the recipes' data: DeepScaleR, DAPO-Math-17k, MATH-500 / AIME24 / AIME25 / AMC23, RLVR-IFeval and
IF_multi_constraints as verl parquet files, with the paper's filter (prompts <= 1024 tokens under the model's
chat template, conflicting duplicates removed) and its system prompt.

    python scripts/prepare_data.py --out-dir ~/data/fgrpo --tokenizer Qwen/Qwen2.5-7B
    python scripts/prepare_data.py --out-dir ~/data/fgrpo --tokenizer /models/qwen --only deepscaler,math500 \\
        --source deepscaler=/mirror/deepscaler.jsonl

Writes <out-dir>/<name>.parquet per source and <out-dir>/manifest.json with what was kept and dropped.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout, too

from fgrpo_verl.data.prepare import build_rows, load_records, load_tokenizer, write_parquet
from fgrpo_verl.data.sources import SOURCES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", required=True, help="directory for <name>.parquet (the recipes' DATA_DIR)")
    parser.add_argument("--tokenizer", required=True, help="hub id or local path of the model to train")
    parser.add_argument("--only", default=",".join(SOURCES), help=f"comma list of sources ({', '.join(SOURCES)})")
    parser.add_argument(
        "--source", action="append", default=[], metavar="NAME=FILE", help="read NAME from a local json/parquet/csv"
    )
    parser.add_argument("--max-prompt-tokens", type=int, default=1024, help="drop longer prompts (paper: 1024)")
    parser.add_argument("--strict", action="store_true", help="fail if any source row is malformed")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in SOURCES]
    local: dict[str, str] = {}
    for pair in args.source:
        name, sep, path = pair.partition("=")
        if not sep or name not in SOURCES:
            unknown.append(name)
        local[name] = os.path.expanduser(path)
    if unknown:
        print(f"unknown source(s) {', '.join(unknown)}; known: {', '.join(SOURCES)}", file=sys.stderr)
        return 2
    tokenizer = load_tokenizer(args.tokenizer)
    manifest: dict[str, dict] = {}
    failed = False
    for name in names:
        source = SOURCES[name]
        origin = local.get(name, f"{source.hub_id} ({source.split})")
        try:
            records = load_records(source, local.get(name))
        except (OSError, ValueError) as exc:
            print(f"{name}: cannot load {origin}: {exc}", file=sys.stderr)
            failed = True
            continue
        rows, stats = build_rows(source, records, tokenizer, args.max_prompt_tokens)
        out = os.path.join(args.out_dir, f"{name}.parquet")
        write_parquet(rows, out)
        manifest[name] = {"origin": origin, "file": out, "data_source": source.data_source, **stats.as_dict()}
        print(
            f"{name}: {stats.loaded} loaded, {stats.malformed} malformed, {stats.duplicates} duplicates, "
            f"{stats.conflicting} conflicting, {stats.too_long} over {args.max_prompt_tokens} tokens "
            f"-> {stats.written} rows in {out}"
        )
        for example in stats.malformed_examples:
            print(f"  malformed: {example}", file=sys.stderr)
        failed |= args.strict and stats.malformed > 0
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "manifest.json"), "w") as fh:
        json.dump({"tokenizer": args.tokenizer, "max_prompt_tokens": args.max_prompt_tokens, "sources": manifest},
                  fh, indent=2)  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
