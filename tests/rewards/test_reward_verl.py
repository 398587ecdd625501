"""verl 0.9.1 loads and calls reward_fns through its own code: config composition, loader, reward loop.

Nothing is mocked. The tokenizer is a byte-level one built in the test and saved to a temporary directory
(verl's RewardLoopWorker loads it from ``actor_rollout_ref.model.path``), because no model hub is
reachable here; it decodes the response bytes exactly, like a real model tokenizer would.
"""

from __future__ import annotations

import numpy as np
import pytest
import ray
import torch

from fgrpo_verl.verl_config import compose_verl_config
from reward_fns import compute_score

MATH_WRONG = "Let me think... the answer is \\boxed{7}"
MATH_RIGHT = "<think>\\boxed{7}?</think>So the answer is \\boxed{\\dfrac{1}{2}}."
IF_GT = str([{"instruction_id": ["punctuation:no_comma", "startend:quotation"], "kwargs": [{}, {}]}])


def _byte_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    core = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="!")


def _overrides(tokenizer_dir: str) -> list[str]:
    return [
        "actor_rollout_ref.rollout.name=vllm",
        f"actor_rollout_ref.model.path={tokenizer_dir}",
        "reward.num_workers=1",
        "reward.custom_reward_function.path=pkg://reward_fns",
        "reward.custom_reward_function.name=compute_score",
        "+reward.custom_reward_function.reward_kwargs.score_scheme=signed",
        "+reward.custom_reward_function.reward_kwargs.timeout_seconds=3",
        # Batch sizes verl's validate_config insists on (unrelated to rewards).
        "algorithm.adv_estimator=grpo",
        "data.train_batch_size=8",
        "actor_rollout_ref.rollout.n=2",
        "actor_rollout_ref.actor.ppo_mini_batch_size=4",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
    ]


@pytest.fixture(scope="module")
def verl_config(tmp_path_factory):
    tokenizer_dir = str(tmp_path_factory.mktemp("tokenizer"))
    _byte_tokenizer().save_pretrained(tokenizer_dir)
    return compose_verl_config(_overrides(tokenizer_dir))


@pytest.fixture(scope="module")
def local_ray():
    if ray.is_initialized():  # another module of the session already runs a local Ray: share it
        yield
        return
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _batch(rows: list[tuple[str, str, str]]):
    """A DataProto shaped like the rollout output verl hands to the reward loop."""
    from verl import DataProto

    tokenizer = _byte_tokenizer()
    prompt_len = 4
    encoded = [tokenizer.encode(response, add_special_tokens=False) for _, response, _ in rows]
    response_len = max(len(ids) for ids in encoded)
    responses = torch.zeros(len(rows), response_len, dtype=torch.long)
    attention = torch.zeros(len(rows), prompt_len + response_len, dtype=torch.long)
    attention[:, :prompt_len] = 1
    for i, ids in enumerate(encoded):
        responses[i, : len(ids)] = torch.tensor(ids)
        attention[i, prompt_len : prompt_len + len(ids)] = 1
    return DataProto.from_dict(
        tensors={
            "prompts": torch.ones(len(rows), prompt_len, dtype=torch.long),
            "responses": responses,
            "attention_mask": attention,
        },
        non_tensors={
            "data_source": np.array([source for source, _, _ in rows], dtype=object),
            "reward_model": np.array([{"style": "rule", "ground_truth": gt} for _, _, gt in rows], dtype=object),
            "extra_info": np.array([{"index": i} for i in range(len(rows))], dtype=object),
        },
    )


def test_verl_loader_passes_reward_kwargs(verl_config) -> None:
    from verl.trainer.ppo.reward import get_custom_reward_fn

    fn = get_custom_reward_fn(verl_config)
    assert fn.func.__name__ == "_call_with_kwargs"  # verl's own kwargs-merging wrapper
    assert fn.args[0] is compute_score
    assert fn(data_source="math_dapo", solution_str=MATH_WRONG, ground_truth="1/2", extra_info={}) == {
        "score": -1.0,
        "acc": False,
        "reason": "mismatch",
    }


def test_verl_config_validates(verl_config) -> None:
    from fgrpo_verl.verl_config import validate_verl_config

    validate_verl_config(verl_config)


def test_verl_reward_loop_in_a_ray_actor_scores_mixed_batch(verl_config, local_ray) -> None:
    """verl's RewardLoopManager: Ray actor, naive reward manager, sync compute_score on an executor thread."""
    from verl.experimental.reward_loop import RewardLoopManager, migrate_legacy_reward_impl

    config = migrate_legacy_reward_impl(verl_config.copy())
    manager = RewardLoopManager(config, rm_resource_pool=None)
    rows = [
        ("math_dapo", MATH_WRONG, "\\frac{1}{2}"),
        ("math_dapo", MATH_RIGHT, "\\frac{1}{2}"),
        ("ifeval", '"No commas here."', IF_GT),
        ("ifeval", "No commas here.", IF_GT),
        ("aime24", "\\boxed{2003^{2002^{2001}}}", "1"),
    ]
    data = _batch(rows)
    out = manager.compute_rm_score(data)
    scores = out.batch["rm_scores"].sum(dim=-1).tolist()
    # signed scheme reached the function; the IF row with one of two instructions is -1 under "signed".
    assert scores == [-1.0, 1.0, 1.0, -1.0, -1.0]
    assert list(out.non_tensor_batch["acc"]) == [False, True, True, False, False]
    assert list(out.non_tensor_batch["reason"]) == [
        "mismatch",
        "",
        "",
        "not_followed:startend:quotation",
        "timeout",
    ]
    assert set(out.meta_info["reward_extra_keys"]) == {"score", "acc", "reason"}


@ray.remote(num_cpus=0)
class _Scorer:
    def score(self, jobs: list[tuple[str, str, str]]) -> list[dict]:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(4) as pool:
            return list(pool.map(lambda job: compute_score(*job, timeout_seconds=1.0), jobs))


def test_plain_ray_actor_with_threads_and_a_timeout(local_ray) -> None:
    actor = _Scorer.remote()
    jobs = [
        ("math", "\\boxed{\\sqrt{2}^2}", "2"),
        ("math", "\\boxed{2003^{2002^{2001}}}", "1"),
        ("ifeval", "a b", IF_GT),
    ]
    results = ray.get(actor.score.remote(jobs), timeout=120)
    assert [r["reason"] for r in results] == ["", "timeout", "not_followed:startend:quotation"]
    assert ray.get(actor.score.remote(jobs[:1]), timeout=60)[0]["acc"]  # still healthy after the kill


def test_dapo_reward_manager_adds_overlong_shaping_to_our_score(tmp_path) -> None:
    """verl's `dapo` reward manager (used by DAPO recipes) calls our function and adds its overlong penalty."""
    from verl.experimental.reward_loop import migrate_legacy_reward_impl
    from verl.trainer.ppo.reward import load_reward_manager

    _byte_tokenizer().save_pretrained(str(tmp_path))
    overrides = [
        *_overrides(str(tmp_path)),
        "reward.reward_manager.name=dapo",
        "+reward.reward_kwargs.overlong_buffer_cfg.enable=true",
        "+reward.reward_kwargs.overlong_buffer_cfg.len=20",
        "+reward.reward_kwargs.overlong_buffer_cfg.penalty_factor=1.0",
        "+reward.reward_kwargs.overlong_buffer_cfg.log=false",
        "+reward.reward_kwargs.max_resp_len=60",
    ]
    config = migrate_legacy_reward_impl(compose_verl_config(overrides))
    manager = load_reward_manager(config, _byte_tokenizer())
    assert type(manager).__name__ == "DAPORewardManager"
    short = manager.loop.run_until_complete(manager.run_single(_batch([("math_dapo", "Answer: 1/2", "0.5")])))
    assert short["reward_score"] == 1.0 and short["reward_extra_info"]["reason"] == ""
    # 49 response tokens (bytes): 9 past the 40 allowed before the buffer -> penalty 9/20.
    long_response = "x" * 37 + "\nAnswer: 1/2"
    result = manager.loop.run_until_complete(manager.run_single(_batch([("math_dapo", long_response, "0.5")])))
    assert result["reward_score"] == pytest.approx(1.0 - (len(long_response) - 40) / 20)
