"""Unit tables for the dry run's layout and data-row checks (fast, no Hydra composition).

The configs here hold only the keys the checks read, in verl's layout; the recipe tests run the same
checks on configs composed by verl's own Hydra config.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf
from recipes_support import math_row, write_parquet

from fgrpo_verl.data.check import check_rows, row_field_problems, sample_indices
from fgrpo_verl.dryrun import Cluster, DryRunError, Knobs, compose, layout_problems


def config(**changes: object):
    base = {
        "trainer": {"nnodes": 2, "n_gpus_per_node": 8, "use_v1": True,
                    "v1": {"trainer_mode": "sync", "separate_async": {"parameter_sync_step": 4},
                           "sampler": {"max_off_policy_threshold": 1}}},
        "data": {"train_batch_size": 256, "max_response_length": 8192},
        "actor_rollout_ref": {
            "hybrid_engine": True,
            "actor": {"strategy": "megatron", "ppo_mini_batch_size": 64, "ppo_micro_batch_size_per_gpu": 4,
                      "use_dynamic_bsz": False,
                      "megatron": {"tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 2,
                                   "context_parallel_size": 1}},
            "rollout": {"n": 8, "tensor_model_parallel_size": 2, "data_parallel_size": 1,
                        "pipeline_model_parallel_size": 1, "nnodes": 0, "n_gpus_per_node": 8,
                        "checkpoint_engine": {"backend": "naive"}},
        },
        "reward": {"reward_manager": {"name": "naive"}},
    }  # fmt: skip
    cfg = OmegaConf.create(base)
    for key, value in changes.items():
        OmegaConf.update(cfg, key, value)
    return cfg


KNOBS = Knobs.parse(["TRAIN_TP=actor_rollout_ref.actor.megatron.tensor_model_parallel_size"])

PROBLEMS = [
    ({}, None, []),
    (
        {"actor_rollout_ref.actor.megatron.tensor_model_parallel_size": 16},
        None,
        ["does not divide the 16 training GPUs", "larger than a node"],
    ),
    ({"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": 3}, None, ["does not divide the 256 responses"]),
    ({"actor_rollout_ref.rollout.tensor_model_parallel_size": 3}, None, ["do not tile"]),
    ({"actor_rollout_ref.hybrid_engine": False}, None, ["leaves no GPU for rollouts"]),
    (
        {
            "trainer.v1.trainer_mode": "separate_async",
            "actor_rollout_ref.rollout.nnodes": 1,
            "trainer.v1.separate_async.parameter_sync_step": 2,
        },
        None,
        ["must equal data.train_batch_size=256 in the asynchronous mode", "naive cannot ship weights"],
    ),
    (
        {
            "trainer.v1.trainer_mode": "separate_async",
            "actor_rollout_ref.rollout.nnodes": 1,
            "actor_rollout_ref.rollout.checkpoint_engine.backend": "nccl",
        },
        Cluster(2, 8),
        ["the run places 3 nodes (trainer.nnodes=2 + actor_rollout_ref.rollout.nnodes=1) but the cluster has NNODES=2"],
    ),
    (
        {"actor_rollout_ref.actor.strategy": "fsdp2", "actor_rollout_ref.actor.ulysses_sequence_parallel_size": 3},
        None,
        ["ulysses_sequence_parallel_size=3 does not divide the 16 training GPUs"],
    ),
    (
        {
            "reward.reward_manager.name": "dapo",
            "reward.reward_kwargs": {"overlong_buffer_cfg": {"enable": True, "len": 9000}, "max_resp_len": 4096},
        },
        None,
        ["max_resp_len=4096 must equal data.max_response_length=8192", "overlong_buffer_cfg.len=9000"],
    ),
]


@pytest.mark.parametrize(("changes", "cluster", "expected"), PROBLEMS)
def test_layout_problems(changes, cluster, expected) -> None:
    """One problem per expected fragment, in order; a sound layout has none."""
    problems = layout_problems(config(**changes), KNOBS, cluster)
    assert len(problems) == len(expected), problems
    for problem, fragment in zip(problems, expected, strict=True):
        assert fragment in problem, problem


def test_tp_knob_named() -> None:
    problems = layout_problems(config(**{"actor_rollout_ref.actor.megatron.tensor_model_parallel_size": 16}), KNOBS)
    assert problems[1].startswith("TRAIN_TP (actor_rollout_ref.actor.megatron.tensor_model_parallel_size)=16")


def test_sample_indices_cover_both_ends() -> None:
    assert sample_indices(5, 16) == [0, 1, 2, 3, 4]
    picked = sample_indices(1000, 16)
    assert picked[0] == 0 and picked[-1] == 999 and len(picked) == 16


def test_row_field_problems() -> None:
    good = math_row("deepscaler", 0, "p", "1")
    assert row_field_problems(good) == []
    assert row_field_problems({**good, "prompt": "text"}) == [
        ("prompt", "must be a non-empty list of chat messages {role, content}")
    ]
    assert ("reward_model.ground_truth", "missing") in row_field_problems({**good, "reward_model": {"style": "r"}})
    assert ("prompt[0].role", "must be system/user/assistant, got 'bot'") in row_field_problems(
        {**good, "prompt": [{"role": "bot", "content": "x"}]}
    )


def test_check_rows_reports_unreadable_file_and_bad_scores(tmp_path: Path) -> None:
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet at all")
    result = check_rows(str(junk), None)
    assert len(result.problems) == 1 and result.problems[0].startswith(f"{junk}: cannot be read as parquet")

    data = write_parquet(tmp_path / "d.parquet", [math_row("deepscaler", i, "p", str(i)) for i in range(3)])
    result = check_rows(str(data), lambda **kw: "not a number")
    assert len(result.problems) == 3
    assert result.problems[0].startswith(f"{data}: row 0: the reward function returned 'not a number'")

    result = check_rows(str(data), lambda **kw: {"score": 0.0, "acc": False}, required_keys=("acc",))
    assert result.problems == [] and "3 of 3 sampled math rows are not scored correct" in result.notes[0]

    result = check_rows(str(data), lambda **kw: 1.0, required_keys=("acc",))
    assert len(result.problems) == 3 and "result has no acc (algorithm.filter_groups.metric" in result.problems[0]


def test_check_rows_with_reward_fns(tmp_path: Path) -> None:
    """The real reward_fns: a bad ground truth and an unknown data_source are reported with file, row, field."""
    import reward_fns

    rows = [math_row("deepscaler", 0, "p", "\\frac{1}{2}"), math_row("deepscaler", 1, "p", "   "),
            math_row("no_such_source", 2, "p", "3")]  # fmt: skip
    data = write_parquet(tmp_path / "d.parquet", rows)
    result = check_rows(str(data), reward_fns.compute_score, {"score_scheme": "signed"})
    assert len(result.problems) == 2, result.problems
    assert result.problems[0].startswith(f"{data}: row 1: field reward_model.ground_truth (data_source='deepscaler')")
    assert "row 2: field reward_model.ground_truth (data_source='no_such_source')" in result.problems[1]
    assert "has no reward function" in result.problems[1]


def test_adding_a_key_twice_names_the_fix() -> None:
    """Hydra's "Could not append" (a trailing ``+key`` the recipe already set), through verl's real composition."""
    with pytest.raises(DryRunError) as caught:
        compose(["actor_rollout_ref.rollout.name=vllm", "+algorithm.focal.gamma=0.5", "+algorithm.focal.gamma=2"])
    assert str(caught.value) == (
        "algorithm.focal.gamma is already set (by the recipe or verl's config), so +algorithm.focal.gamma=... cannot "
        "add it again; fix: override it without the plus, algorithm.focal.gamma=VALUE "
        "(or ++algorithm.focal.gamma=VALUE)."
    )
