"""Dry run of a cluster recipe on CPU: compose, check, validate, summarise -- before any GPU is touched.

The recipes (``recipes/*.sh``) call this with the exact Hydra overrides they would hand to
``python -m verl.trainer.main_ppo``. Steps, each failing with a message that names the knob
and the fix:

1. compose verl's own Hydra config with the overrides (unknown keys fail here);
2. check the cluster layout: Megatron TP x PP x CP against the training GPUs, rollout replica
   size against a node and its GPU pool, batch arithmetic per data-parallel rank, the async
   actor-learner constraints, node count against the cluster;
3. check files: data parquet files, local model paths, the reward function, and a sample of
   data rows run through the reward function (file, row and field on failure);
4. verl's ``validate_config`` (extended by the plugin to check ``algorithm.focal``);
5. print the resolved key settings.

Recipe knobs (``TRAIN_TP`` ...) are passed as ``NAME=hydra.key`` pairs so that every message
names both the environment variable a user sets and the key verl reads.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

ACTOR = "actor_rollout_ref.actor"
ROLLOUT = "actor_rollout_ref.rollout"
MEGATRON = f"{ACTOR}.megatron"


class DryRunError(ValueError):
    """The recipe's config cannot run; the message lists every problem with its fix."""


@dataclass(frozen=True)
class Cluster:
    """The machines a recipe is launched on (``NNODES`` x ``GPUS_PER_NODE`` in the recipes)."""

    nnodes: int
    gpus_per_node: int


@dataclass
class Knobs:
    """Map between recipe environment variables and the Hydra keys they set."""

    by_key: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, pairs: Iterable[str]) -> Knobs:
        by_key: dict[str, str] = {}
        for pair in pairs:
            name, sep, key = pair.partition("=")
            if not sep or not name or not key:
                raise ValueError(f"--knob expects NAME=hydra.key, got {pair!r}")
            by_key[key.lstrip("+")] = name
        return cls(by_key)

    def name(self, key: str) -> str:
        """``TRAIN_TP (actor_rollout_ref.actor.megatron.tensor_model_parallel_size)`` or just the key."""
        knob = self.by_key.get(key)
        return f"{knob} ({key})" if knob else key

    def short(self, key: str) -> str:
        """The environment variable if the recipe exposes one, else the Hydra key."""
        return self.by_key.get(key, key)


def _get(cfg: DictConfig, key: str, default: Any = None) -> Any:
    value = OmegaConf.select(cfg, key, default=default, throw_on_missing=False)
    return default if value is None else value


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, ListConfig | list | tuple):
        return [str(v) for v in value]
    return [str(value)]


# ---------------------------------------------------------------- composition


def _generated_config(config_name: str, overrides: Sequence[str]) -> DictConfig | None:
    """verl's flattened reference config (for spelling suggestions), or None if absent."""
    from fgrpo_verl.verl_config import verl_config_dir

    megatron = config_name == "ppo_megatron_trainer" or any(o.strip() == "model_engine=megatron" for o in overrides)
    name = "_generated_ppo_megatron_trainer.yaml" if megatron else "_generated_ppo_trainer.yaml"
    path = os.path.join(verl_config_dir(), name)
    return OmegaConf.load(path) if os.path.exists(path) else None


def explain_composition_error(exc: Exception, overrides: Sequence[str], config_name: str) -> str:
    """Turn Hydra's "Could not override" into: which key, the closest real keys, and how to add one."""
    text = str(exc)
    taken = re.search(r"An item is already at '([^']+)'", text)
    if taken:
        key = taken.group(1)
        return (
            f"{key} is already set (by the recipe or verl's config), so +{key}=... cannot add it again; "
            f"fix: override it without the plus, {key}=VALUE (or ++{key}=VALUE)."
        )
    match = re.search(r"Could not override '([^']+)'", text) or re.search(r"Key '([^']+)' is not in struct", text)
    if not match:
        return f"verl's Hydra config could not be composed: {text}"
    key = match.group(1)
    parent, _, leaf = key.rpartition(".")
    hint = ""
    reference = _generated_config(config_name, overrides)
    if reference is not None:
        node = OmegaConf.select(reference, parent) if parent else reference
        if isinstance(node, DictConfig):
            close = difflib.get_close_matches(leaf, [str(k) for k in node], n=3, cutoff=0.6)
            if close:
                hint = " Did you mean " + " or ".join(f"{parent + '.' if parent else ''}{c}" for c in close) + "?"
        elif parent:
            hint = f" ({parent} itself is not a section of verl's config.)"
    return (
        f"unknown config key {key}: verl {_verl_version()}'s config has no such key.{hint} "
        f"Fix the spelling in the recipe or your trailing overrides; to add a key that verl reads "
        f"but does not declare, write +{key}=VALUE."
    )


def _verl_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("verl")
    except metadata.PackageNotFoundError:  # pragma: no cover - verl is a dependency
        return "?"


def compose(overrides: Sequence[str], config_name: str = "ppo_trainer") -> DictConfig:
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from fgrpo_verl.verl_config import compose_verl_config

    try:
        return compose_verl_config(overrides, config_name=config_name)
    except (HydraException, OmegaConfBaseException) as exc:
        raise DryRunError(explain_composition_error(exc, overrides, config_name)) from exc


# ---------------------------------------------------------------- layout


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def layout_problems(cfg: DictConfig, knobs: Knobs, cluster: Cluster | None = None) -> list[str]:
    """Parallel sizes, GPU pools and batch arithmetic that verl would reject (or hang on) on the cluster."""
    problems: list[str] = []
    k = knobs.name
    nnodes = int(_get(cfg, "trainer.nnodes", 1))
    gpn = int(_get(cfg, "trainer.n_gpus_per_node", 8))
    if nnodes < 1 or gpn < 1:
        problems.append(
            f"{k('trainer.nnodes')}={nnodes} x {k('trainer.n_gpus_per_node')}={gpn}: the learner needs at least "
            "one node with at least one GPU; fix NNODES / GPUS_PER_NODE (and ROLLOUT_NNODES for async runs)."
        )
        return problems
    train_gpus = nnodes * gpn
    strategy = str(_get(cfg, f"{ACTOR}.strategy", "fsdp"))
    mode = str(_get(cfg, "trainer.v1.trainer_mode", "sync")) if _get(cfg, "trainer.use_v1", True) else "v0"
    separate = mode == "separate_async"
    hybrid = bool(_get(cfg, "actor_rollout_ref.hybrid_engine", True))

    # Learner model parallelism.
    if strategy == "megatron":
        tp = int(_get(cfg, f"{MEGATRON}.tensor_model_parallel_size", 1))
        pp = int(_get(cfg, f"{MEGATRON}.pipeline_model_parallel_size", 1))
        cp = int(_get(cfg, f"{MEGATRON}.context_parallel_size", 1))
        model_parallel = tp * pp * cp
        if train_gpus % model_parallel:
            fits = [f"{t}x{p}" for t in _divisors(gpn) for p in _divisors(train_gpus // t) if t * p * cp <= train_gpus]
            problems.append(
                f"{k(f'{MEGATRON}.tensor_model_parallel_size')}={tp} x "
                f"{k(f'{MEGATRON}.pipeline_model_parallel_size')}={pp} x context parallel {cp} = {model_parallel} "
                f"does not divide the {train_gpus} training GPUs ({k('trainer.nnodes')}={nnodes} x "
                f"{k('trainer.n_gpus_per_node')}={gpn}); fix: pick "
                f"{knobs.short(f'{MEGATRON}.tensor_model_parallel_size')} x "
                f"{knobs.short(f'{MEGATRON}.pipeline_model_parallel_size')} from "
                f"{', '.join(fits[:8])}, or change the node count."
            )
            dp = 0
        else:
            dp = train_gpus // model_parallel
        if tp > gpn:
            problems.append(
                f"{k(f'{MEGATRON}.tensor_model_parallel_size')}={tp} is larger than a node "
                f"({k('trainer.n_gpus_per_node')}={gpn}): tensor parallelism across nodes runs its all-reduces "
                f"over the network; fix: {knobs.short(f'{MEGATRON}.tensor_model_parallel_size')}<={gpn} and split "
                f"the model further with {knobs.short(f'{MEGATRON}.pipeline_model_parallel_size')}."
            )
        vpp = _get(cfg, f"{MEGATRON}.virtual_pipeline_model_parallel_size")
        if vpp is not None and int(vpp) > 1 and pp < 2:
            problems.append(
                f"{k(f'{MEGATRON}.virtual_pipeline_model_parallel_size')}={vpp} needs pipeline parallelism; "
                f"fix: set {knobs.short(f'{MEGATRON}.pipeline_model_parallel_size')}>=2 or unset it (null)."
            )
    else:
        sp = int(_get(cfg, f"{ACTOR}.ulysses_sequence_parallel_size", 1))
        if train_gpus % sp:
            problems.append(
                f"{k(f'{ACTOR}.ulysses_sequence_parallel_size')}={sp} does not divide the {train_gpus} training GPUs; "
                f"fix: use a divisor of {train_gpus}."
            )
            dp = 0
        else:
            dp = train_gpus // sp

    # Rollout replicas: one vLLM server spans rollout TP x DP x PP GPUs and must sit inside one node.
    rtp = int(_get(cfg, f"{ROLLOUT}.tensor_model_parallel_size", 1))
    replica = (
        rtp
        * int(_get(cfg, f"{ROLLOUT}.data_parallel_size", 1))
        * int(_get(cfg, f"{ROLLOUT}.pipeline_model_parallel_size", 1))
    )
    rollout_key = f"{ROLLOUT}.tensor_model_parallel_size"
    pools: list[tuple[str, int, int]] = []  # (description, gpus per node, total gpus)
    if hybrid:
        pools.append(("the colocated (hybrid engine) rollout on the training GPUs", gpn, train_gpus))
    if separate:
        rnodes = int(_get(cfg, f"{ROLLOUT}.nnodes", 0))
        rgpn = int(_get(cfg, f"{ROLLOUT}.n_gpus_per_node", gpn))
        if rnodes < 1 or rgpn < 1:
            problems.append(
                f"{k(f'{ROLLOUT}.nnodes')}={rnodes} x {k(f'{ROLLOUT}.n_gpus_per_node')}={rgpn}: the asynchronous "
                "actor-learner mode (trainer.v1.trainer_mode=separate_async) needs its own rollout GPUs; "
                "fix: ROLLOUT_NNODES>=1 (nodes taken out of NNODES for vLLM)."
            )
        else:
            pools.append(("the separate rollout nodes", rgpn, rnodes * rgpn))
    elif not hybrid:
        problems.append(
            f"{k('actor_rollout_ref.hybrid_engine')}=False leaves no GPU for rollouts unless "
            f"{k('trainer.v1.trainer_mode')}=separate_async; fix: ROLLOUT_MODE=async, or hybrid_engine=True."
        )
    for where, pool_gpn, pool_total in pools:
        if replica > pool_gpn:
            problems.append(
                f"{k(rollout_key)}={rtp} gives vLLM replicas of {replica} GPUs, more than a node of {where} "
                f"({pool_gpn} GPUs): a replica must sit inside one node; fix: {knobs.short(rollout_key)}<={pool_gpn}."
            )
        elif pool_total % replica:
            problems.append(
                f"{k(rollout_key)}={rtp}: vLLM replicas of {replica} GPUs do not tile {where} ({pool_total} GPUs); "
                f"fix: {knobs.short(rollout_key)} from {', '.join(map(str, _divisors(pool_gpn)))}."
            )

    # Batch arithmetic (what the workers split per data-parallel rank).
    train_bs = int(_get(cfg, "data.train_batch_size", 0))
    mini = int(_get(cfg, f"{ACTOR}.ppo_mini_batch_size", 0))
    n = int(_get(cfg, f"{ROLLOUT}.n", 1))
    micro = _get(cfg, f"{ACTOR}.ppo_micro_batch_size_per_gpu")
    dynamic = bool(_get(cfg, f"{ACTOR}.use_dynamic_bsz", False))
    bs_key, mini_key, n_key = "data.train_batch_size", f"{ACTOR}.ppo_mini_batch_size", f"{ROLLOUT}.n"
    if train_bs < 1 or mini < 1:
        problems.append(f"{k(bs_key)}={train_bs} and {k(mini_key)}={mini} must both be >= 1.")
    elif train_bs % mini:
        problems.append(
            f"{k(bs_key)}={train_bs} is not a multiple of {k(mini_key)}={mini}: the last update of every step "
            f"would use a partial mini-batch; fix: {knobs.short(mini_key)} from "
            f"{', '.join(map(str, [d for d in _divisors(train_bs) if d >= 8][:8]))}."
        )
    elif dp:
        per_update = mini * n
        if per_update % dp:
            problems.append(
                f"{k(mini_key)}={mini} x {k(n_key)}={n} = {per_update} responses per update do not split over "
                f"{dp} data-parallel ranks ({train_gpus} GPUs / model parallel); fix: make "
                f"{knobs.short(mini_key)} x {knobs.short(n_key)} a multiple of {dp}, or change TP/PP/nodes."
            )
        elif micro is not None and not dynamic and (per_update // dp) % int(micro):
            problems.append(
                f"{k(f'{ACTOR}.ppo_micro_batch_size_per_gpu')}={micro} does not divide the {per_update // dp} "
                f"responses each rank gets per update; fix: a divisor of {per_update // dp}."
            )

    if separate:
        sync = int(_get(cfg, "trainer.v1.separate_async.parameter_sync_step", 1))
        if mini and train_bs != sync * mini:
            problems.append(
                f"{k('trainer.v1.separate_async.parameter_sync_step')}={sync} x {k(mini_key)}={mini} must equal "
                f"{k(bs_key)}={train_bs} in the asynchronous mode (a step trains parameter_sync_step "
                "mini-batches, then syncs weights); "
                f"fix: parameter_sync_step={train_bs // mini if mini and train_bs % mini == 0 else '?'}."
            )
        backend = str(_get(cfg, f"{ROLLOUT}.checkpoint_engine.backend", "naive"))
        if backend == "naive":
            problems.append(
                f"{k(f'{ROLLOUT}.checkpoint_engine.backend')}=naive cannot ship weights to separate rollout nodes; "
                "fix: nccl (or nixl / mooncake)."
            )
        staleness = _get(cfg, "trainer.v1.sampler.max_off_policy_threshold")
        if staleness is not None and int(staleness) < 1:
            problems.append(
                f"{k('trainer.v1.sampler.max_off_policy_threshold')}={staleness}: the staleness bound counts model "
                "versions a trajectory may span and must be >= 1 (or null for unbounded)."
            )

    # DAPO overlong shaping must agree with the response length it shapes.
    overlong = _get(cfg, "reward.reward_kwargs.overlong_buffer_cfg")
    if _get(cfg, "reward.reward_manager.name") == "dapo" and overlong is not None and overlong.get("enable", False):
        max_resp = int(_get(cfg, "data.max_response_length", 0))
        kw_len = _get(cfg, "reward.reward_kwargs.max_resp_len")
        buf = int(overlong.get("len", 0))
        if kw_len is None or int(kw_len) != max_resp:
            problems.append(
                f"{k('reward.reward_kwargs.max_resp_len')}={kw_len} must equal {k('data.max_response_length')}="
                f"{max_resp}, or the overlong penalty is measured against the wrong length."
            )
        if not 0 < buf < max_resp:
            problems.append(
                f"{k('reward.reward_kwargs.overlong_buffer_cfg.len')}={buf} must be in (0, max_response_length="
                f"{max_resp}); DAPO uses 4096 of 20480."
            )

    if cluster is not None:
        needed = nnodes + (int(_get(cfg, f"{ROLLOUT}.nnodes", 0)) if separate else 0)
        if needed != cluster.nnodes:
            problems.append(
                f"the run places {needed} nodes ({k('trainer.nnodes')}={nnodes}"
                + (f" + {k(f'{ROLLOUT}.nnodes')}={needed - nnodes}" if separate else "")
                + f") but the cluster has NNODES={cluster.nnodes}; fix the node counts so they add up."
            )
        if gpn > cluster.gpus_per_node:
            problems.append(
                f"{k('trainer.n_gpus_per_node')}={gpn} exceeds the GPUs of a node (GPUS_PER_NODE="
                f"{cluster.gpus_per_node})."
            )
    return problems


# ---------------------------------------------------------------- files


def _looks_local(path: str) -> bool:
    """A filesystem path rather than a hub id (hub ids are ``org/name``; verl downloads those at start)."""
    return path.startswith(("/", "./", "../", "~")) or (os.sep in path and path.count("/") != 1)


def file_problems(cfg: DictConfig, knobs: Knobs) -> list[str]:
    problems: list[str] = []
    k = knobs.name
    for key, what in (("data.train_files", "training data"), ("data.val_files", "validation data")):
        files = _as_list(_get(cfg, key))
        if not files:
            problems.append(
                f"{k(key)} is empty: no {what}; fix: point it at parquet files from scripts/prepare_data.py."
            )
        for path in files:
            if not os.path.isfile(os.path.expanduser(path)):
                problems.append(
                    f"{k(key)}: {what} file {path} does not exist; fix: run "
                    "`python scripts/prepare_data.py --out-dir $DATA_DIR` (or set DATA_DIR / the file knob)."
                )
    for key in ("actor_rollout_ref.model.path", "data.tokenizer"):
        path = _get(cfg, key)
        if path and _looks_local(str(path)) and not os.path.exists(os.path.expanduser(str(path))):
            problems.append(
                f"{k(key)}={path} does not exist; fix: download the model there, or use a hub id such as "
                "Qwen/Qwen2.5-7B (set MODEL_PATH)."
            )
    return problems


def load_reward_function(cfg: DictConfig, knobs: Knobs) -> tuple[Any, dict[str, Any]]:
    """The configured compute_score and its reward_kwargs (verl's own loader), or raise DryRunError."""
    path = _get(cfg, "reward.custom_reward_function.path")
    if not path:
        return None, {}
    name = str(_get(cfg, "reward.custom_reward_function.name", "compute_score"))
    from verl.utils.import_utils import load_extern_object

    try:
        fn = load_extern_object(module_path=str(path), object_name=name)
    except (ImportError, FileNotFoundError, AttributeError, RuntimeError) as exc:
        raise DryRunError(
            f"{knobs.name('reward.custom_reward_function.path')}={path} with name={name} cannot be loaded "
            f"({type(exc).__name__}: {exc}); fix: install fgrpo-verl in this environment (it ships reward_fns) "
            "or point REWARD_FN_PATH at your module."
        ) from exc
    kwargs = _get(cfg, "reward.custom_reward_function.reward_kwargs") or {}
    return fn, dict(OmegaConf.to_container(kwargs, resolve=True) if isinstance(kwargs, DictConfig) else kwargs)


# ---------------------------------------------------------------- summary


def _overlong_text(cfg: DictConfig) -> str:
    buffer = _get(cfg, "reward.reward_kwargs.overlong_buffer_cfg")
    if _get(cfg, "reward.reward_manager.name") != "dapo" or buffer is None or not buffer.get("enable", False):
        return "off"
    return (
        f"last {buffer.get('len')} of {_get(cfg, 'reward.reward_kwargs.max_resp_len')} tokens, "
        f"penalty up to {buffer.get('penalty_factor')}"
    )


def summary(cfg: DictConfig) -> list[tuple[str, str]]:
    """The settings an engineer checks before spending cluster hours, resolved."""
    g = lambda key, default=None: _get(cfg, key, default)  # noqa: E731
    strategy = g(f"{ACTOR}.strategy")
    nnodes, gpn = int(g("trainer.nnodes")), int(g("trainer.n_gpus_per_node"))
    train_gpus = nnodes * gpn
    mode = g("trainer.v1.trainer_mode", "sync")
    separate = mode == "separate_async"
    focal = g("algorithm.focal") or {}
    rows = [
        ("estimator", f"{g('algorithm.adv_estimator')} (base={focal.get('base', 'grpo')})"),
        ("gamma", str(focal.get("gamma", "-"))),
        (
            "rewards",
            f"{focal.get('rewards', 'binary')} via {g('reward.reward_manager.name')} manager, "
            f"{g('reward.custom_reward_function.path')}:{g('reward.custom_reward_function.name')}",
        ),
        ("loss", f"{g(f'{ACTOR}.policy_loss.loss_mode')} / {g(f'{ACTOR}.loss_agg_mode')}"),
        (
            "clip",
            f"low={g(f'{ACTOR}.clip_ratio_low')} high={g(f'{ACTOR}.clip_ratio_high')} c={g(f'{ACTOR}.clip_ratio_c')}",
        ),
        ("kl", f"loss={g(f'{ACTOR}.use_kl_loss')} in_reward={g('algorithm.use_kl_in_reward')}"),
        ("overlong shaping", _overlong_text(cfg)),
        ("dynamic sampling", f"{g('algorithm.filter_groups.enable')} (metric={g('algorithm.filter_groups.metric')})"),
        ("model", str(g("actor_rollout_ref.model.path"))),
    ]
    if strategy == "megatron":
        tp = int(g(f"{MEGATRON}.tensor_model_parallel_size"))
        pp = int(g(f"{MEGATRON}.pipeline_model_parallel_size"))
        cp = int(g(f"{MEGATRON}.context_parallel_size"))
        dp = train_gpus // (tp * pp * cp)
        rows.append(
            (
                "learner",
                f"megatron TP={tp} PP={pp} CP={cp} DP={dp} "
                f"SP={g(f'{MEGATRON}.sequence_parallel')} "
                f"offload(param={g(f'{MEGATRON}.param_offload')}, "
                f"optim={g(f'{MEGATRON}.optimizer_offload')})",
            )
        )
    else:
        sp = int(g(f"{ACTOR}.ulysses_sequence_parallel_size", 1))
        dp = train_gpus // sp
        rows.append(
            (
                "learner",
                f"{strategy} DP={dp} ulysses_SP={sp} "
                f"offload(param={g(f'{ACTOR}.fsdp_config.param_offload')}, "
                f"optim={g(f'{ACTOR}.fsdp_config.optimizer_offload')})",
            )
        )
    rollout = f"{g(f'{ROLLOUT}.name')} TP={g(f'{ROLLOUT}.tensor_model_parallel_size')}"
    if separate:
        rnodes, rgpn = int(g(f"{ROLLOUT}.nnodes")), int(g(f"{ROLLOUT}.n_gpus_per_node"))
        rows.append(
            (
                "rollout mode",
                f"async actor-learner (separate_async): staleness <= "
                f"{g('trainer.v1.sampler.max_off_policy_threshold')} versions "
                f"({g('trainer.v1.sampler.max_off_policy_strategy')}), weight sync "
                f"{g(f'{ROLLOUT}.checkpoint_engine.backend')}",
            )
        )
        rows.append(
            (
                "GPUs per role",
                f"learner {nnodes}x{gpn}={train_gpus}, rollout {rnodes}x{rgpn}={rnodes * rgpn}"
                + (" (+ colocated replicas)" if g("actor_rollout_ref.hybrid_engine") else ""),
            )
        )
    else:
        rows.append(("rollout mode", f"colocated hybrid engine ({mode})"))
        rows.append(("GPUs per role", f"learner + rollout share {nnodes}x{gpn}={train_gpus}"))
    rows.append(
        (
            "rollout",
            f"{rollout} n={g(f'{ROLLOUT}.n')} T={g(f'{ROLLOUT}.temperature')} "
            f"top_p={g(f'{ROLLOUT}.top_p')} gpu_mem={g(f'{ROLLOUT}.gpu_memory_utilization')}",
        )
    )
    train_bs, mini, n = int(g("data.train_batch_size")), int(g(f"{ACTOR}.ppo_mini_batch_size")), int(g(f"{ROLLOUT}.n"))
    rows.append(
        (
            "batch",
            f"{train_bs} prompts x n={n} = {train_bs * n} responses/step; mini-batch {mini} prompts "
            f"-> {train_bs // mini} updates/step, {mini * n // max(dp, 1)} responses per DP rank "
            f"per update, micro {g(f'{ACTOR}.ppo_micro_batch_size_per_gpu')}"
            f"{' (dynamic bsz)' if g(f'{ACTOR}.use_dynamic_bsz') else ''}",
        )
    )
    rows.append(("lengths", f"prompt <= {g('data.max_prompt_length')}, response <= {g('data.max_response_length')}"))
    template_kwargs = g("data.apply_chat_template_kwargs") or {}
    if template_kwargs:
        rows.append(("chat template", ", ".join(f"{key}={value}" for key, value in template_kwargs.items())))
    rows.append(
        (
            "optim",
            f"lr={g(f'{ACTOR}.optim.lr')} warmup={g(f'{ACTOR}.optim.lr_warmup_steps')} "
            f"wd={g(f'{ACTOR}.optim.weight_decay')} epochs={g('trainer.total_epochs')}",
        )
    )
    rows.append(("data", f"train={_as_list(g('data.train_files'))} val={_as_list(g('data.val_files'))}"))
    rows.append(
        (
            "logging",
            f"{_as_list(g('trainer.logger'))} project={g('trainer.project_name')} "
            f"experiment={g('trainer.experiment_name')}",
        )
    )
    metrics = focal.get("metrics") or {}
    if metrics:
        rows.append(("focal metrics", ", ".join(f"{key}={value}" for key, value in metrics.items())))
    return rows


# ---------------------------------------------------------------- driver


@dataclass
class DryRunReport:
    config: DictConfig
    rows: list[tuple[str, str]]
    notes: list[str]


def dry_run(
    overrides: Sequence[str],
    *,
    config_name: str = "ppo_trainer",
    knobs: Knobs | None = None,
    cluster: Cluster | None = None,
    sample_rows: int = 16,
) -> DryRunReport:
    """Everything ``main_ppo`` checks before Ray starts, plus the cluster's own constraints; raise on problems."""
    from fgrpo_verl.data.check import check_rows

    knobs = knobs or Knobs()
    cfg = compose(overrides, config_name)
    problems = layout_problems(cfg, knobs, cluster) + file_problems(cfg, knobs)
    notes: list[str] = []
    reward_fn, reward_kwargs = None, {}
    try:
        reward_fn, reward_kwargs = load_reward_function(cfg, knobs)
    except DryRunError as exc:
        problems.append(str(exc))
    required: tuple[str, ...] = ()
    metric = str(_get(cfg, "algorithm.filter_groups.metric", "reward"))
    if _get(cfg, "algorithm.filter_groups.enable", False) and metric != "reward":
        required = (metric,)
    if reward_fn is not None and sample_rows > 0:
        for key in ("data.train_files", "data.val_files"):
            for path in _as_list(_get(cfg, key)):
                if os.path.isfile(os.path.expanduser(path)):
                    result = check_rows(
                        os.path.expanduser(path), reward_fn, reward_kwargs, sample=sample_rows, required_keys=required
                    )
                    problems.extend(result.problems)
                    notes.extend(result.notes)
    if problems:
        raise DryRunError("\n".join(f"  - {p}" for p in problems))
    settings = _validate_with_verl(cfg)
    rows = summary(cfg)
    if settings is not None:
        rows.insert(
            3,
            (
                "success",
                f"reward >= {settings.success_threshold:g} counts as correct for mu_hat "
                f"(max overlong penalty {settings.overlong_penalty:g})",
            ),
        )
    return DryRunReport(config=cfg, rows=rows, notes=notes)


def _validate_with_verl(cfg: DictConfig) -> Any:
    """verl's start-up validation plus the plugin's; returns the focal settings (None without focal_grpo)."""
    from fgrpo_verl.settings import FocalConfigError
    from fgrpo_verl.startup_check import validate_focal_config
    from fgrpo_verl.verl_config import validate_verl_config

    try:
        validate_verl_config(cfg)
        settings = validate_focal_config(cfg)
        OmegaConf.to_container(cfg, resolve=True)  # every ${...} must resolve, as main_ppo resolves them
    except FocalConfigError as exc:
        raise DryRunError(f"  - {exc}") from exc
    except (AssertionError, ValueError, TypeError, KeyError) as exc:
        raise DryRunError(f"  - verl's validate_config rejected the config: {exc}") from exc
    return settings


def format_report(report: DryRunReport, header: str | None = None) -> str:
    width = max(len(name) for name, _ in report.rows)
    lines = [header] if header else []
    lines += [f"  {name:<{width}}  {value}" for name, value in report.rows]
    lines += [f"  note: {note}" for note in report.notes]
    return "\n".join(lines)
