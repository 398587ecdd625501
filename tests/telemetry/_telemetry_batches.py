"""Known batches fed through verl's real ``compute_advantage`` into the ``focal_grpo`` estimator."""

from __future__ import annotations

import uuid

import numpy as np
import torch
from omegaconf import OmegaConf

from fgrpo_verl.telemetry.hub import TelemetryHub


def algorithm_config(gamma: float = 0.5, **metrics) -> object:
    return OmegaConf.create(
        {"adv_estimator": "focal_grpo", "norm_adv_by_std_in_grpo": True, "focal": {"gamma": gamma, "metrics": metrics}}
    )


def run_step(
    algorithm, prompts: list[tuple[str, int, int]], hub: TelemetryHub | None = None, n: int = 4, resp_len: int = 3
):
    """One estimator call through verl: ``prompts`` = [(data_source, dataset index, correct rollouts)].

    Fresh uids every call (as verl's dataloader does); the stable identity is handed to ``hub``
    the way the trainer hook does it.
    """
    from verl import DataProto
    from verl.trainer.ppo.ray_trainer import compute_advantage

    uids = [str(uuid.uuid4()) for _ in prompts]
    if hub is not None:
        hub.remember_prompts(uids, [p[0] for p in prompts], [{"index": p[1]} for p in prompts], None)
    rewards = torch.zeros(len(prompts) * n, resp_len)
    index = []
    for i, (_, _, correct) in enumerate(prompts):
        for j in range(n):
            rewards[i * n + j, -1] = 1.0 if j < correct else 0.0
            index.append(uids[i])
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": torch.ones_like(rewards)},
        non_tensors={"uid": np.asarray(index, dtype=object)},
    )
    return compute_advantage(data, adv_estimator="focal_grpo", num_repeat=n, config=algorithm)
