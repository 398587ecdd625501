"""Offline analysis of verl's rollout dumps (``trainer.rollout_data_dir``).

verl's trainer writes one ``<step>.jsonl`` per training step (``PPOTrainer._write_generations``)
with the fields ``input`` (decoded prompt), ``output``, ``gts``, ``score`` (sequence reward),
``step`` and ``uid`` (V1 keys ``{uid}_{session}_{index}``).  This module rebuilds each
step's groups, recomputes the focal statistics with the same functions the estimator uses
(:func:`fgrpo_verl.focal.focal_advantage`) and feeds the same :class:`PromptTracker`, keyed
by the same stable prompt key (here: the prompt text, as dumps carry no data set index).
Works on dumps copied off a cluster; CPU only, no verl import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from fgrpo_verl.focal import focal_advantage
from fgrpo_verl.settings import SCORE_TOLERANCE
from fgrpo_verl.telemetry.identity import prompt_key
from fgrpo_verl.telemetry.step_stats import RATE_BUCKETS, compute_step_stats, logger_metrics
from fgrpo_verl.telemetry.tracker import PromptTracker

DEFAULT_DATA_SOURCE = "all"
_STEP_FILE = re.compile(r"^(\d+)\.jsonl$")


class RolloutDumpError(ValueError):
    """A dump file or line cannot be read (the message names the file and line)."""


@dataclass
class StepRows:
    step: int
    prompts: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)


def _group_of(uid: str) -> tuple[str, str, int]:
    """V1 key ``{uid}_{session}_{index}`` -> (uid, session, index); a plain uid is its own group."""
    parts = str(uid).rsplit("_", 2)
    if len(parts) == 3 and parts[2].isdigit():
        return parts[0], parts[1], int(parts[2])
    return str(uid), "0", 0


def step_files(directory: Path) -> list[tuple[int, Path]]:
    files = sorted(
        (int(m.group(1)), p) for p in Path(directory).iterdir() if (m := _STEP_FILE.match(p.name)) and p.is_file()
    )
    if not files:
        raise RolloutDumpError(
            f"{directory}: no <step>.jsonl files; point at the directory given as trainer.rollout_data_dir"
        )
    return files


def read_step(path: Path, step: int, data_source_field: str | None = None) -> StepRows:
    """One dump file; multi-output agent loops keep the last output of each session (as verl's advantage)."""
    final: dict[tuple[str, str], tuple[int, str, float, str]] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                uid = row["uid"]
                score = float(row["score"])
                text = row["input"]
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise RolloutDumpError(
                    f"{path}:{lineno}: not a verl rollout dump line (needs input, score, uid): {exc}"
                ) from None
            if not np.isfinite(score):
                raise RolloutDumpError(f"{path}:{lineno}: score {row['score']!r} is not finite")
            source = str(row.get(data_source_field, DEFAULT_DATA_SOURCE)) if data_source_field else DEFAULT_DATA_SOURCE
            group, session, index = _group_of(uid)
            current = final.get((group, session))
            if current is None or current[0] <= index:
                final[(group, session)] = (index, text, score, source)
    rows = StepRows(step)
    for (group, _), (_, text, score, source) in sorted(final.items()):
        rows.groups.append(group)
        rows.prompts.append(text)
        rows.scores.append(score)
        rows.sources.append(source)
    return rows


@dataclass
class Analysis:
    """Per-step statistics (the online ``fgrpo/*`` keys) and the tracker after the last step."""

    tracker: PromptTracker
    steps: list[dict[str, float]]
    heatmap: np.ndarray  # (steps, len(RATE_BUCKETS)) share of groups per success-rate bucket
    keys_by_prompt: dict[int, str]


def analyze(
    directory: Path,
    success_threshold: float,
    gamma: float = 0.5,
    data_source_field: str | None = None,
    capacity: int = 1_000_000,
    history: int = 64,
) -> Analysis:
    tracker = PromptTracker(capacity=capacity, history=history)
    steps: list[dict[str, float]] = []
    heat: list[np.ndarray] = []
    texts: dict[int, str] = {}
    edges = np.asarray(RATE_BUCKETS)
    for step, path in step_files(directory):
        rows = read_step(path, step, data_source_field)
        if not rows.scores:
            continue
        _, group_ids = np.unique(np.asarray(rows.groups, dtype=object).astype(str), return_inverse=True)
        scores = torch.tensor(rows.scores, dtype=torch.float64)
        result = focal_advantage(
            scores,
            scores >= success_threshold - SCORE_TOLERANCE,
            torch.from_numpy(group_ids.reshape(-1).astype(np.int64)),
            gamma=gamma,
        )
        stats = compute_step_stats(result, gamma)
        first = stats.first_row
        keys = np.asarray([prompt_key(rows.sources[i], None, rows.prompts[i]) for i in first.tolist()], dtype=np.uint64)
        for i, k in zip(first.tolist(), keys.tolist(), strict=True):
            texts.setdefault(int(k), rows.prompts[i])
        ds = np.asarray([tracker.data_source_id(rows.sources[i]) for i in first.tolist()], dtype=np.int64)
        tracker.update(keys, ds, stats.success_rate, step)
        record = {"step": float(step), **logger_metrics(stats)}
        summaries = [s for s in tracker.summary().values() if s.tracked]
        tracked = sum(s.tracked for s in summaries)
        record["fgrpo/prompts/tracked"] = float(tracked)
        record["fgrpo/prompts/ever_solved"] = float(sum(s.ever_solved for s in summaries))
        record["fgrpo/prompts/solved_now"] = float(sum(s.solved_now for s in summaries))
        record["fgrpo/prompts/forgotten"] = float(sum(s.forgotten for s in summaries))
        for k in tracker.ks:
            record[f"fgrpo/prompts/pass_at_{k}_proxy"] = sum(s.pass_at_k[k] * s.tracked for s in summaries) / tracked
        steps.append(record)
        bucket = np.searchsorted(edges, stats.success_rate, side="left")
        heat.append(np.bincount(bucket, minlength=len(edges))[: len(edges)] / max(stats.groups, 1))
    return Analysis(tracker=tracker, steps=steps, heatmap=np.asarray(heat), keys_by_prompt=texts)


def prompt_rows(analysis: Analysis) -> Iterator[dict[str, object]]:
    """One row per tracked prompt: data_source, visits, latest / best rate, forgotten, history."""
    t = analysis.tracker
    for row in range(t.size):
        key = int(t.keys[row])
        hist = t.history(key)
        latest = float(t.rate[row])
        yield {
            "prompt_key": f"{key:016x}",
            "data_source": t.data_sources[int(t.ds[row])],
            "visits": int(t.visits[row]),
            "last_step": int(t.last_step[row]),
            "latest_success_rate": latest,
            "best_success_rate": max(hist) if hist else latest,
            "ever_solved": bool(t.ever[row]),
            "forgotten": bool(t.ever[row]) and latest <= 0,
            "history": " ".join(f"{h:.3g}" for h in hist),
            "prompt": analysis.keys_by_prompt.get(key, "")[:200].replace("\n", " "),
        }
