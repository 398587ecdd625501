"""The paper's qualitative findings on a small, fast categorical configuration, plus the CLI end to end.

Scaled-down setup: |A| = 4000 actions, 200 correct (anchor z = 5, others z = 3), lr 0.02, 300 steps,
so that the three regimes appear in a few seconds: N = 2 (rare mixed updates), N = 64 (the anchor
is sampled every step, most other correct actions are not: concentration), N = 8192 (every correct
action is sampled every step).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fgrpo_verl.cli import main as cli_main
from fgrpo_verl.sim.policy import CategoricalSetup
from fgrpo_verl.sim.runner import CategoricalRun, OptimizerSettings
from fgrpo_verl.sim.sweep import SweepConfig, findings, parse_group_sizes, run_sweep

SMALL = CategoricalSetup(num_actions=4000, num_correct=200)
SMALL_N = (2, 64, 8192)


@pytest.fixture(scope="module")
def small_sweep():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the simulate command does: extra threads only spin-wait at this size
    config = SweepConfig(
        group_sizes=SMALL_N,
        gammas=(0.0, 1.0),
        seeds=(0, 1),
        steps=300,
        setup=SMALL,
        optimizer=OptimizerSettings(lr=0.02),
    )
    try:
        return run_sweep(config, progress=False)
    finally:
        torch.set_num_threads(threads)


def _final(result, n: int, gamma: float) -> dict:
    return next(r for r in result.summary_rows() if r["group_size"] == n and r["gamma"] == gamma)


def test_q_pos_rises_for_every_group_size(small_sweep) -> None:
    for row in small_sweep.summary_rows():
        assert row["q_pos_final"] > row["q_pos_initial"] + 0.02, row


def test_m_ret_dips_at_intermediate_group_size(small_sweep) -> None:
    small, mid, large = (_final(small_sweep, n, 0.0)["m_ret_final"] for n in SMALL_N)
    assert mid < small - 0.3
    assert mid < large - 0.3
    assert large > 0.99  # every correct action sampled every step: nothing is lost


def test_focal_weight_raises_m_ret_in_the_concentration_zone(small_sweep) -> None:
    grpo, focal = _final(small_sweep, 64, 0.0), _final(small_sweep, 64, 1.0)
    assert focal["m_ret_final"] > grpo["m_ret_final"] + 0.2
    # ... at the price of a slower rise of the total correct mass (the paper's trade-off).
    assert focal["q_pos_final"] < grpo["q_pos_final"]


def test_findings_report_reads_the_numbers(small_sweep) -> None:
    lines = findings(small_sweep)
    assert lines[0] == "Q_pos rises for every N: yes"
    assert "lowest at N = 64" in lines[1] and "non-monotonic" in lines[1]
    assert "largest M_ret gain at N = 64" in lines[2]


def test_runs_are_reproducible_and_independent_of_batching() -> None:
    steps = 20
    both = CategoricalRun(SMALL, 64, 1.0, [3, 4]).run(steps)
    alone = CategoricalRun(SMALL, 64, 1.0, [4]).run(steps)
    torch.testing.assert_close(both.q_pos[1:2], alone.q_pos)
    torch.testing.assert_close(both.m_ret[1:2], alone.m_ret)
    assert not torch.equal(both.q_pos[0], both.q_pos[1])  # different seeds differ


def test_gamma_zero_focal_weight_is_one() -> None:
    history = CategoricalRun(SMALL, 8, 0.0, [0]).run(5)
    assert torch.all(history.focal_weight == 1.0)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"group_size": 0, "gamma": 1.0}, "group_size"),
        ({"group_size": 8, "gamma": -0.5}, "gamma"),
    ],
)
def test_bad_run_arguments_name_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        CategoricalRun(SMALL, seeds=[0], **kwargs)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fgrpo_verl.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_simulate_command_writes_table_json_and_plots(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    proc = _cli(
        "simulate", "--num-actions", "1000", "--num-correct", "50", "--group-sizes", "2,32",
        "--steps", "30", "--seeds", "1", "--output-dir", str(out), "--no-progress", "--threads", "1",
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "M_ret(T)" in proc.stdout and "Q_pos rises for every N" in proc.stdout
    data = json.loads((out / "simulation.json").read_text())
    assert [c["group_size"] for c in data["cells"]] == [2, 2, 32, 32]
    assert data["config"]["setup"]["num_actions"] == 1000
    assert len(data["cells"][0]["q_pos_mean"]) == len(data["steps_recorded"])
    for name in ("trajectories.png", "final_vs_group_size.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--group-sizes", "0,8"], "group size N must be an integer >= 1"),
        (["--gammas", "-1"], "gamma must be >= 0"),
        (["--num-actions", "100", "--num-correct", "100"], "num_correct must be smaller than num_actions"),
        (["--group-sizes", "2,x"], "--group-sizes must be"),
        (["--threads", "0"], "--threads must be"),
    ],
)
def test_simulate_rejects_bad_arguments(args: list[str], message: str, tmp_path: Path, capsys) -> None:
    assert cli_main(["simulate", *args, "--output-dir", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing ran, nothing written


def test_tail_miss_command(tmp_path: Path) -> None:
    plot = tmp_path / "tm.png"
    proc = _cli("tail-miss", "--mu", "0.5", "--rho", "0.1", "--n", "8", "--json", "--plot", str(plot),
                cwd=Path(__file__).resolve().parents[2])  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["peak"]["n"] == 5 and data["peak"]["probability"] == pytest.approx(0.724, abs=5e-4)
    assert plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mu", "0.3", "--tau", "0.4"], "tau must be smaller than mu"),
        (["--mu", "1.5"], "mu (total correct probability mass) must be in the open interval (0, 1)"),
        (["--mu", "0.5", "--rho", "1.2"], "rho (= tau / mu) must be in the open interval (0, 1)"),
        (["--n", "0"], "--n (your group size N) must be an integer >= 1"),
    ],
)
def test_tail_miss_rejects_bad_arguments(args: list[str], message: str, capsys) -> None:
    assert cli_main(["tail-miss", *args, "--no-plot"]) == 2
    assert message in capsys.readouterr().err


def test_group_size_parsing() -> None:
    assert parse_group_sizes("2..16") == (2, 4, 8, 16)
    assert parse_group_sizes("8, 2,8") == (2, 8)
    assert SweepConfig.full().group_sizes[-1] == 131072 and len(SweepConfig.full().group_sizes) == 17
