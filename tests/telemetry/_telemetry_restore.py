"""Child process of the checkpoint test: resume a fresh trainer from the checkpoint and report."""

from __future__ import annotations

import json
import sys

from _telemetry_trainer import MemoryKV, make_trainer, report, rollout_step


def main(ckpt: str) -> None:
    from fgrpo_verl.telemetry.hub import get_hub

    kv = MemoryKV()
    trainer = make_trainer(ckpt, kv, resume_mode="auto")
    trainer._load_checkpoint()  # verl's own resume logic, then the tracker
    restored = report(get_hub())
    steps = trainer.global_steps
    metrics = rollout_step(trainer, kv, {0: 0, 1: 0, 2: 2, 3: 4, 4: 0, 5: 0})
    print(
        json.dumps(
            {"global_steps": steps, "report": restored, "after_step_3_forgotten": metrics["fgrpo/prompts/forgotten"]}
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
