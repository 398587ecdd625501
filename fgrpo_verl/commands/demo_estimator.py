"""``fgrpo-verl demo-estimator``: F-GRPO inside verl's real ``compute_advantage``, on CPU.

Eight prompts with eight rollouts each and 0..7 correct answers go through verl's own
call site twice -- ``grpo`` and ``focal_grpo`` -- and the table shows how the focal weight
(paper Eq. 12) shrinks the update of the prompts the policy already solves.
"""

from __future__ import annotations

import argparse

from fgrpo_verl.commands.arg_types import focal_gamma, int_at_least


def build_batch(group_size: int = 8, response_len: int = 4):
    """A verl DataProto: prompt k has k correct rollouts out of ``group_size`` (0/1 rewards)."""
    import numpy as np
    import torch
    from verl import DataProto

    n_prompts = group_size
    rewards = torch.zeros(n_prompts * group_size, response_len)
    for prompt in range(n_prompts):
        rewards[prompt * group_size : prompt * group_size + prompt, -1] = 1.0
    uid = np.array([f"prompt-{i // group_size}" for i in range(n_prompts * group_size)], dtype=object)
    return DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": torch.ones_like(rewards)},
        non_tensors={"uid": uid},
    )


def run(args: argparse.Namespace) -> int:
    from omegaconf import OmegaConf
    from verl.trainer.ppo.ray_trainer import compute_advantage

    import fgrpo_verl.plugin  # noqa: F401 -- registers focal_grpo (also done by `import verl`)

    # Telemetry off: no trainer here, so it would only warn that per-prompt tracking is unavailable.
    focal = {"gamma": args.gamma, "metrics": {"enable": False}}
    algorithm = OmegaConf.create({"norm_adv_by_std_in_grpo": True, "focal": focal})
    group_size = args.group_size
    rows = {}
    for name in ("grpo", "focal_grpo"):
        data = compute_advantage(build_batch(group_size), adv_estimator=name, config=algorithm)
        rows[name] = data.batch["advantages"][:, -1].reshape(group_size, group_size)
    print(f"verl compute_advantage, N={group_size} rollouts per prompt, gamma={args.gamma}")
    print(f"{'correct':>8} {'mu_hat':>7} {'g':>7} {'A+ grpo':>9} {'A+ focal':>9} {'A- grpo':>9} {'A- focal':>9}")
    for k in range(group_size):
        mu = k / group_size
        weight = (1 - mu) ** args.gamma
        pos = (rows["grpo"][k, 0].item(), rows["focal_grpo"][k, 0].item()) if k else (0.0, 0.0)
        neg = rows["grpo"][k, -1].item(), rows["focal_grpo"][k, -1].item()
        print(f"{k:>8} {mu:>7.3f} {weight:>7.3f} {pos[0]:>9.4f} {pos[1]:>9.4f} {neg[0]:>9.4f} {neg[1]:>9.4f}")
    print("A+ / A-: advantage of a correct / wrong rollout. Easy prompts (high mu_hat) are damped most.")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo-estimator", help="show focal_grpo vs grpo in verl's compute_advantage")
    parser.add_argument("--gamma", type=focal_gamma, default=0.5, help="focal exponent (default 0.5)")
    parser.add_argument(
        "--group-size",
        type=int_at_least(2, "a group-relative advantage needs 2"),
        default=8,
        help="rollouts per prompt (default 8)",
    )
    parser.set_defaults(func=run)
