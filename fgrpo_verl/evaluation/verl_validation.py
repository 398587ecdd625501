"""Unbiased pass@k in verl's validation metrics (the plugin's second and last patch of verl).

verl 0.9.1 turns validation rollouts into metrics in
``verl.trainer.ppo.metric_utils.process_validation_metrics``, called by ``_val_metrics_update`` of
both the V1 trainer (``verl.trainer.ppo.v1.trainer_base.PPOTrainer``, every trainer mode) and the
legacy ``RayPPOTrainer``. It reports ``best@k``: the mean over bootstrap draws WITH replacement of
the max reward, a biased (low) estimate of pass@k. verl offers no hook for extra validation
metrics (the trainer's ``on_validate_end`` gets no data, the logger list is closed), so
:func:`install_validation_passk` wraps that one function: it calls verl's original unchanged and
adds, for every data source whose reward function reports ``acc``,

    val-aux/<data_source>/acc/pass@<k>      k = 1, 2, 4, ..., n   (n = actor_rollout_ref.rollout.val_kwargs.n)

computed with the unbiased estimator (Chen et al. 2021) over the validation prompts. Samples that
failed to materialise count as wrong, as in verl's own ``acc`` (``expected_acc_counts``). The
values travel in the metrics dict that verl hands to its ``Tracking`` logger, so they appear in
console/wandb/tensorboard/file logs; other code (e.g. a Prometheus exporter) can subscribe with
:func:`add_validation_listener`. ``FGRPO_VERL_VALIDATION_PASSK=0`` turns the addition off.

``tests/evaluation/test_passk_verl_validation.py`` fails loudly if verl stops calling the function
this way. Nothing here ever breaks validation: any error is logged and verl's result returned.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fgrpo_verl.evaluation.passk import default_ks, pass_at_k

logger = logging.getLogger(__name__)

ENV_SWITCH = "FGRPO_VERL_VALIDATION_PASSK"
METRIC_VARIABLE = "acc"
_WRAPPED_MARK = "__fgrpo_verl_passk__"
# Modules that bind process_validation_metrics by name at import time.
TRAINER_MODULES = ("verl.trainer.ppo.v1.trainer_base", "verl.trainer.ppo.ray_trainer")


@dataclass
class ValidationPassAtK:
    """One validation round: ``pass_at_k[data_source][k]``, with problems and samples per problem."""

    pass_at_k: dict[str, dict[int, float]] = field(default_factory=dict)
    problems: dict[str, int] = field(default_factory=dict)
    samples_per_problem: dict[str, int] = field(default_factory=dict)


ValidationListener = Callable[[ValidationPassAtK], None]
_listeners: list[ValidationListener] = []


def add_validation_listener(listener: ValidationListener) -> None:
    """Call ``listener(ValidationPassAtK)`` after every validation round (errors logged, never raised)."""
    if listener not in _listeners:
        _listeners.append(listener)


def remove_validation_listener(listener: ValidationListener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def _ks_for(n_min: int) -> list[int]:
    ks = default_ks(n_min)
    return ks if ks[-1] == n_min else [*ks, n_min]


def validation_pass_at_k(
    data_sources: list[str],
    sample_uids: list[str],
    infos_dict: dict[str, list[Any]],
    expected_acc_counts: dict[tuple[str, str], int] | None = None,
) -> ValidationPassAtK:
    """Unbiased pass@k per data source from verl's validation lists (``infos_dict['acc']``)."""
    result = ValidationPassAtK()
    acc_values = infos_dict.get(METRIC_VARIABLE)
    if not acc_values:
        return result
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for data_source, uid, acc in zip(data_sources, sample_uids, acc_values, strict=False):
        if acc is None:
            continue
        cell = counts[str(data_source)][str(uid)]
        cell[0] += 1
        cell[1] += int(bool(acc))
    for (data_source, uid), expected in (expected_acc_counts or {}).items():
        if str(data_source) in counts:  # only sources that report acc, as verl does
            cell = counts[str(data_source)][str(uid)]
            cell[0] = max(cell[0], int(expected))
    for data_source, per_uid in counts.items():
        n = np.fromiter((v[0] for v in per_uid.values()), dtype=np.int64)
        c = np.fromiter((v[1] for v in per_uid.values()), dtype=np.int64)
        if n.size == 0 or n.min() < 1:
            continue
        ks = _ks_for(int(n.min()))
        values = pass_at_k(n[None, :], c[None, :], np.asarray(ks)[:, None]).mean(axis=1)
        result.pass_at_k[data_source] = {k: float(v) for k, v in zip(ks, values, strict=True)}
        result.problems[data_source] = int(n.size)
        result.samples_per_problem[data_source] = int(n.min())
    return result


def _add_to_verl_result(verl_result: Any, computed: ValidationPassAtK) -> None:
    for data_source, values in computed.pass_at_k.items():
        variables = verl_result.get(data_source)
        if variables is None or METRIC_VARIABLE not in variables:
            continue
        for k, value in values.items():
            variables[METRIC_VARIABLE][f"pass@{k}"] = value


def _notify(computed: ValidationPassAtK) -> None:
    for listener in list(_listeners):
        try:
            listener(computed)
        except Exception:
            logger.exception("fgrpo_verl validation listener %r failed; training continues", listener)


def wrap_process_validation_metrics(original: Callable[..., Any]) -> Callable[..., Any]:
    """verl's function, plus ``<var>=acc`` metrics ``pass@k`` in its nested result."""
    if getattr(original, _WRAPPED_MARK, False):
        return original

    @functools.wraps(original)
    def process_validation_metrics(data_sources, sample_uids, infos_dict, *args, **kwargs):
        verl_result = original(data_sources, sample_uids, infos_dict, *args, **kwargs)
        try:
            expected = kwargs.get("expected_acc_counts", args[1] if len(args) > 1 else None)
            computed = validation_pass_at_k(data_sources, sample_uids, infos_dict, expected)
            _add_to_verl_result(verl_result, computed)
            _notify(computed)
        except Exception:
            logger.exception("fgrpo_verl: unbiased validation pass@k failed; verl's own metrics are unaffected")
        return verl_result

    setattr(process_validation_metrics, _WRAPPED_MARK, True)
    process_validation_metrics.__fgrpo_verl_original__ = original
    return process_validation_metrics


def install_validation_passk() -> bool:
    """Wrap verl's ``process_validation_metrics`` where the trainers look it up; never raises.

    Returns True when installed (or already installed), False when switched off or impossible.
    """
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in {"0", "false", "off", "no"}:
        return False
    try:
        import verl.trainer.ppo.metric_utils as metric_utils

        original = metric_utils.process_validation_metrics
        wrapped = wrap_process_validation_metrics(original)
        metric_utils.process_validation_metrics = wrapped
        # Trainer modules imported before us hold their own reference.
        for name in TRAINER_MODULES:
            module = sys.modules.get(name)
            if module is not None and getattr(module, "process_validation_metrics", None) is original:
                module.process_validation_metrics = wrapped
        return True
    except Exception:
        logger.exception("fgrpo_verl: could not add unbiased pass@k to verl's validation metrics")
        return False
