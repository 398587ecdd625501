"""``fgrpo-verl analyze-rollouts`` on dumps written by verl's own ``_write_generations``."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from _telemetry_batches import algorithm_config, run_step

from fgrpo_verl.telemetry import hub as hub_module

REPO = Path(__file__).resolve().parents[2]
N = 4
# correct rollouts (of 4) per prompt index, per step; prompt 2 is solved once, then forgotten
SCHEDULE = {
    1: {0: 0, 1: 4, 2: 1, 3: 2, 4: 3},
    2: {0: 0, 1: 4, 2: 0, 3: 3, 4: 3},
    3: {0: 1, 1: 4, 2: 0, 3: 4, 4: 2},
    4: {0: 0, 1: 4, 2: 0, 3: 4, 4: 4},
}


def write_dumps(directory: Path, signed: bool = False) -> None:
    """One <step>.jsonl per step through verl's PPOTrainer._write_generations, V1 uid keys."""
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    wrong = -1.0 if signed else 0.0
    for step, correct_of in SCHEDULE.items():
        inputs, outputs, gts, scores, keys = [], [], [], [], []
        for index, correct in correct_of.items():
            uid = str(uuid.uuid4())  # fresh per step, as in training
            for session in range(N):
                if session == 0:  # a two-output agent loop: only the last output counts
                    inputs.append(f"user: problem {index}")
                    outputs.append("draft")
                    gts.append(str(index))
                    scores.append(1.0 if session >= correct else wrong)  # deliberately the opposite
                    keys.append(f"{uid}_{session}_0")
                    output_index = 1
                else:
                    output_index = 0
                inputs.append(f"user: problem {index}")
                outputs.append(f"answer {session}")
                gts.append(str(index))
                scores.append(1.0 if session < correct else wrong)
                keys.append(f"{uid}_{session}_{output_index}")
        PPOTrainer._write_generations(inputs, outputs, gts, scores, {"uid": keys}, str(directory), step)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "fgrpo_verl.cli", "analyze-rollouts", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_report_from_verl_dumps_matches_online_telemetry(tmp_path):
    dumps = tmp_path / "rollouts"
    write_dumps(dumps)
    assert sorted(p.name for p in dumps.iterdir()) == ["1.jsonl", "2.jsonl", "3.jsonl", "4.jsonl"]
    out = tmp_path / "report"
    proc = run_cli(str(dumps), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    # prompt 0 (1/4 at step 3, 0/4 at step 4) and prompt 2 (1/4 at step 1, then 0/4) are forgotten
    assert "5 prompts over 4 steps (success threshold 0.5); 2 forgotten" in proc.stdout

    steps = read_csv(out / "steps.csv")
    assert [int(float(r["step"])) for r in steps] == [1, 2, 3, 4]
    prompts = read_csv(out / "prompts.csv")
    forgotten = {r["prompt"]: r["history"] for r in prompts if r["forgotten"] == "True"}
    assert forgotten == {"user: problem 2": "0.25 0 0 0", "user: problem 0": "0 0 0.25 0"}
    assert [r["forgotten"] for r in prompts[:2]] == ["True", "True"]  # forgotten prompts listed first
    for name in ("success_rate_heatmap.png", "forgotten_prompts.png", "pass_at_k_proxy.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # The same batches through the live estimator + hub give the same numbers.
    hub_module.reset_hub()
    try:
        hub = hub_module.get_hub()
        algorithm = algorithm_config(gamma=0.5)
        for step, correct_of in SCHEDULE.items():
            hub.global_step = step
            run_step(algorithm, [("all", i, c) for i, c in correct_of.items()], hub, n=N)
            online = hub.drain_logger_metrics()
            offline = steps[step - 1]
            for column, value in offline.items():
                if column == "step" or value == "":
                    continue
                if value == "nan":  # no learning signal at all in the step: the online key is omitted
                    assert column not in online, (step, column)
                    continue
                assert online[column] == pytest.approx(float(value), rel=1e-6), (step, column)
    finally:
        hub_module.reset_hub()


def test_signed_rewards_need_the_matching_scheme(tmp_path):
    dumps = tmp_path / "rollouts"
    write_dumps(dumps, signed=True)
    signed = run_cli(str(dumps), "--rewards", "signed", "--out", str(tmp_path / "a"), "--no-plots")
    assert signed.returncode == 0, signed.stderr
    assert read_csv(tmp_path / "a" / "steps.csv")[0]["fgrpo/groups/all_wrong"] == "1.0"


def test_bad_dump_names_file_and_line(tmp_path):
    dumps = tmp_path / "rollouts"
    dumps.mkdir()
    (dumps / "3.jsonl").write_text('{"input": "q", "score": 1.0, "uid": "a_0_0"}\nnot json\n')
    proc = run_cli(str(dumps))
    assert proc.returncode == 2
    assert "3.jsonl:2: not a verl rollout dump line" in proc.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_cli(str(empty))
    assert proc.returncode == 2 and "no <step>.jsonl files" in proc.stderr
