"""A real verl V1 trainer on CPU, with stand-ins only for what needs GPUs or a Ray cluster.

* TransferQueue (verl's Ray-actor key-value store between rollout and trainer) is replaced
  by :class:`MemoryKV`, which keeps the ``kv_batch_put`` / ``kv_batch_get`` contract the
  trainer uses: starting TransferQueue's Ray actors takes minutes on a shared 2-core box.
* The actor worker group (FSDP/Megatron on GPUs) is :class:`WorkerGroupStandIn`, which only
  records checkpoint calls.

Everything else -- config composition, the trainer class from verl's registry, its
``_fetch_one_gen_batch``, ``_compute_advantage``, ``_save_checkpoint``, ``_load_checkpoint``,
the dataloader and verl's ``Tracking`` -- is verl's own code.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import torch
from omegaconf import OmegaConf

N_ROLLOUTS = 4


class MemoryKV:
    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], dict] = {}

    def kv_batch_put(self, keys, partition_id, fields=None, tags=None):
        from transfer_queue import KVBatchMeta

        if fields is not None:
            for i, key in enumerate(keys):
                row = self.rows.setdefault((partition_id, key), {})
                for name in fields.keys():  # noqa: SIM118 -- TensorDict
                    row[name] = fields[name][i]
        return KVBatchMeta(partition_id=partition_id, keys=list(keys), tags=list(tags or [{}] * len(keys)))

    def kv_batch_get(self, keys, partition_id, select_fields=None):
        from verl.utils.tensordict_utils import list_of_dict_to_tensordict

        rows = [self.rows[(partition_id, k)] for k in keys]
        names = [f for f in (select_fields or list(rows[0])) if f in rows[0]]
        return list_of_dict_to_tensordict([{n: r[n] for n in names} for r in rows])


class WorkerGroupStandIn:
    def __init__(self) -> None:
        self.saved: list[str] = []
        self.loaded: list[str] = []

    def save_checkpoint(self, local_path, *args, **kwargs):
        self.saved.append(local_path)

    def load_checkpoint(self, local_path, *args, **kwargs):
        self.loaded.append(local_path)


def dataset_rows(n: int) -> list[dict]:
    return [
        {
            "data_source": "math" if i % 3 else "gsm8k",
            "raw_prompt": [{"role": "user", "content": f"question {i}"}],
            "extra_info": {"index": i, "split": "train"},
            "reward_model": {"ground_truth": str(i)},
            "dummy_tensor": torch.tensor([0], dtype=torch.uint8),
        }
        for i in range(n)
    ]


def make_trainer(
    ckpt_dir: str,
    kv: MemoryKV,
    overrides: tuple[str, ...] = (),
    resume_mode: str = "disable",
    estimator: str = "focal_grpo",
    trainer_cls: type | None = None,
):
    """verl's registered ``sync`` trainer (or ``trainer_cls``), built from verl's composed config.

    ``estimator`` is ``algorithm.adv_estimator``; ``+algorithm.focal.gamma=0.5`` is set only for focal_grpo.
    """
    from torchdata.stateful_dataloader import StatefulDataLoader
    from verl.trainer.ppo.v1 import get_trainer_cls, trainer_base
    from verl.utils.dataset.rl_dataset import collate_fn

    from fgrpo_verl.verl_config import compose_verl_config

    cfg = compose_verl_config(
        [
            f"algorithm.adv_estimator={estimator}",
            "actor_rollout_ref.rollout.name=vllm",
            f"actor_rollout_ref.rollout.n={N_ROLLOUTS}",
            "data.train_batch_size=6",
            f"trainer.default_local_dir={ckpt_dir}",
            f"trainer.resume_mode={resume_mode}",
            *(["+algorithm.focal.gamma=0.5"] if estimator == "focal_grpo" else []),
            *overrides,
        ]
    )
    OmegaConf.resolve(cfg)
    trainer_base.tq = kv  # the stand-in (see the module docstring)
    trainer = (trainer_cls or get_trainer_cls("sync"))(cfg)
    trainer.actor_rollout_wg = WorkerGroupStandIn()
    trainer.train_dataloader = StatefulDataLoader(dataset_rows(12), batch_size=6, collate_fn=collate_fn)
    trainer.train_dataloader_it = None
    trainer.global_steps = 0
    return trainer


def rollout_step(trainer, kv: MemoryKV, correct_of: dict[int, int]) -> dict:
    """Draw a batch through verl, 'generate' N_ROLLOUTS responses per prompt, compute advantages.

    ``correct_of[extra_info.index]`` = correct rollouts of that prompt (default 0).
    Returns the step's ``metrics`` dict as verl's ``_compute_advantage`` left it.
    """
    trainer.global_steps += 1
    batch = trainer._fetch_one_gen_batch()
    uids = list(batch["uid"])
    infos = list(batch["extra_info"])
    keys, fields = [], []
    for uid, info in zip(uids, infos, strict=True):
        correct = correct_of.get(int(info["index"]), 0)
        for s in range(N_ROLLOUTS):
            length = 3 + s
            scores = torch.zeros(length)
            scores[-1] = 1.0 if s < correct else 0.0
            keys.append(f"{uid}_{s}_0")
            fields.append({"uid": uid, "response_mask": torch.ones(length, dtype=torch.int64), "rm_scores": scores})
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    meta = kv.kv_batch_put(keys=keys, partition_id="train", fields=list_of_dict_to_tensordict(fields))
    metrics: dict = {}
    trainer._compute_advantage(meta, metrics)
    return metrics


def tracker_digest(tracker) -> str:
    h = hashlib.sha256()
    for name, arr in sorted(tracker.state_dict().items()):
        h.update(name.encode())
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def tracker_exposition(hub) -> str:
    """The tracker's lines of /metrics (step counters restart with the process; the tracker must not)."""
    from prometheus_client import CollectorRegistry, generate_latest

    from fgrpo_verl.telemetry.exporter import FocalCollector

    registry = CollectorRegistry(auto_describe=False)
    registry.register(FocalCollector(hub.metrics_state))
    lines = generate_latest(registry).decode().splitlines()
    keep = ("fgrpo_tracked_prompts", "fgrpo_prompts_", "fgrpo_pass_at_k_proxy", "fgrpo_tracker_")
    return "\n".join(line for line in lines if line.startswith(keep))


def report(hub) -> str:
    summary = {k: v.__dict__ for k, v in hub.tracker.summary().items()}
    return json.dumps(
        {"digest": tracker_digest(hub.tracker), "summary": summary, "exposition": tracker_exposition(hub)},
        sort_keys=True,
    )
