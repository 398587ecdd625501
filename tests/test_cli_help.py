"""Every documented ``fgrpo-verl`` command exists and its ``--help`` works in a fresh process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from fgrpo_verl.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "BENCHMARKS.md"]

# Runs in a child process: `fgrpo-verl --help`, then `<command> --help` and `eval-passk <stage> --help`
# for every registered command, recording each exit status and whether the usage line was printed.
_CHILD = """
import contextlib, io, json, sys
from fgrpo_verl.cli import build_parser, main
def run(argv):
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return {"code": code, "usage": out.getvalue().startswith("usage: fgrpo-verl")}
sub = next(a for a in build_parser()._actions if a.dest == "command")
argvs = [["--help"]] + [[name, "--help"] for name in sub.choices]
stages = next(a for a in sub.choices["eval-passk"]._actions if a.dest == "stage")
argvs += [["eval-passk", stage, "--help"] for stage in stages.choices]
print(json.dumps({" ".join(argv): run(argv) for argv in argvs}))
"""


def _commands() -> dict[str, object]:
    action = next(a for a in build_parser()._actions if a.dest == "command")
    return dict(action.choices)


def test_every_command_help_exits_zero_in_a_fresh_process():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = {"--help"} | {f"{name} --help" for name in _commands()}
    assert expected <= set(results)
    assert {"eval-passk generate --help", "eval-passk score --help"} <= set(results)
    failed = {argv: r for argv, r in results.items() if r != {"code": 0, "usage": True}}
    assert not failed, failed


def test_documented_commands_exist():
    """``fgrpo-verl <verb>`` and ``eval-passk <stage>`` in the user docs name real sub-commands."""
    commands = _commands()
    stage_action = next(a for a in commands["eval-passk"]._actions if a.dest == "stage")
    mentioned: set[str] = set()
    for doc in USER_DOCS:
        text = doc.read_text()
        for verb in re.findall(r"(?:^\s*|`)fgrpo-verl\s+(?!is NOT active)([a-z][a-z-]*)", text, re.M):
            assert verb in commands, f"{doc.name} mentions `fgrpo-verl {verb}`, which is not a command"
            mentioned.add(verb)
        for stage in re.findall(r"(?:^\s*|`)fgrpo-verl\s+eval-passk\s+([a-z]+)", text, re.M):
            assert stage in stage_action.choices, f"{doc.name} mentions `eval-passk {stage}`, not a stage"
    assert set(commands) <= mentioned, f"undocumented commands: {set(commands) - mentioned}"


def test_bad_numeric_arguments_are_argument_errors_not_tracebacks():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cases = [("demo-estimator", "--gamma", "-1"), ("demo-estimator", "--gamma", "nan")]
    cases += [("demo-estimator", "--group-size", "1"), ("analyze-rollouts", "--gamma", "-1")]
    cases += [("analyze-rollouts", "--success-threshold", "nan")]
    report = ["eval-passk", "report", "--scores", "s.jsonl", "--out-dir", "out"]
    compare = ["eval-passk", "compare", "--a", "a.jsonl", "--b", "b.jsonl", "--out-dir", "out"]
    cases += [(report, "--confidence", "2"), (report, "--resamples", "0"), (compare, "--m", "0")]
    cases += [(["eval-passk", "score", "--samples", "s.jsonl", "--output", "o.jsonl"], "--scorer-kwargs", "{bad")]
    for command, flag, value in cases:
        command = command if isinstance(command, list) else [command]
        extra = [str(ROOT)] if command == ["analyze-rollouts"] else []
        proc = subprocess.run(
            [sys.executable, "-m", "fgrpo_verl.cli", *command, *extra, flag, value],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
            env=env,
        )
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert f"argument {flag}: must be" in proc.stderr and "Traceback" not in proc.stderr
