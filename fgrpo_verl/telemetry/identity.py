"""Stable prompt identity across training steps.

verl gives every prompt a fresh random ``uid`` each time the dataloader yields it, so the
uid groups rollouts within a step but cannot follow a prompt over steps.  The stable key is
a 64-bit blake2b digest of:

* ``data_source`` + ``extra_info.index`` when the data set row carries an index (verl's
  data-preparation scripts all write one): splitmix64 of the data_source digest and the
  index, vectorised over the batch; else
* ``data_source`` + the prompt itself (the chat messages as canonical JSON, or the decoded
  text in rollout dumps).

The same function keys the online tracker and the offline analysis of rollout dumps.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

UNKNOWN_DATA_SOURCE = "unknown"


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (uint64 arithmetic wraps, as intended)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _int_index(extra_info: Any) -> int | None:
    if not isinstance(extra_info, Mapping):
        return None
    index = extra_info.get("index")
    if isinstance(index, (int, np.integer)) and not isinstance(index, bool) and 0 <= int(index) < 2**63:
        return int(index)
    return None


def _indexed_keys(data_sources: list[str], indices: np.ndarray) -> np.ndarray:
    digests = {ds: _digest(f"{ds}\x00index") for ds in set(data_sources)}
    base = np.fromiter((digests[ds] for ds in data_sources), dtype=np.uint64, count=len(data_sources))
    return _mix64(base ^ _mix64(indices.astype(np.uint64)))


def prompt_key(data_source: str, extra_info: Mapping[str, Any] | None = None, prompt: Any = None) -> int:
    """The stable 64-bit key of one prompt (see the module docstring)."""
    index = _int_index(extra_info)
    if index is not None:
        return int(_indexed_keys([str(data_source)], np.asarray([index], np.uint64))[0])
    if extra_info is not None and extra_info.get("index") is not None:
        return _digest(f"{data_source}\x00index\x00{_plain(extra_info['index'])}")
    if prompt is None:
        raise ValueError("a prompt without extra_info.index needs its prompt text or messages to be identified")
    text = prompt if isinstance(prompt, str) else json.dumps(_plain(prompt), sort_keys=True, ensure_ascii=False)
    return _digest(f"{data_source}\x00prompt\x00{text}")


def prompt_keys(
    data_sources: Iterable[Any], extra_infos: Iterable[Any] | None, prompts: Iterable[Any] | None
) -> np.ndarray:
    """:func:`prompt_key` over a batch; returns uint64 keys."""
    data_sources = list(data_sources)
    n = len(data_sources)
    extra = list(extra_infos) if extra_infos is not None else [None] * n
    texts = list(prompts) if prompts is not None else [None] * n
    if len(extra) != n or len(texts) != n:
        raise ValueError(f"prompt_keys: {n} data sources but {len(extra)} extra_info and {len(texts)} prompts")
    sources = [str(ds) for ds in data_sources]
    indices = [_int_index(e) for e in extra]
    fast = np.fromiter((i is not None for i in indices), dtype=bool, count=n)
    keys = np.zeros(n, dtype=np.uint64)
    if fast.any():
        rows = np.flatnonzero(fast)
        keys[rows] = _indexed_keys(
            [sources[r] for r in rows], np.fromiter((indices[r] for r in rows), np.uint64, rows.shape[0])
        )
    for r in np.flatnonzero(~fast).tolist():
        keys[r] = prompt_key(sources[r], extra[r] if isinstance(extra[r], Mapping) else None, texts[r])
    return keys


class IdentityBook:
    """uid -> (stable key, data_source number) for prompts handed to the rollout and not yet scored.

    Bounded (first in, first out) so a uid that never comes back (a filtered group, an
    aborted request) cannot grow it without limit.  Key 0 means "unknown" in lookups.
    """

    def __init__(self, capacity: int = 262_144):
        self.capacity = capacity
        self._book: OrderedDict[str, tuple[int, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._book)

    def remember(self, uids: Iterable[Any], keys: np.ndarray, sources: Iterable[int]) -> None:
        book = self._book
        for uid, key, source in zip(uids, keys.tolist(), sources, strict=True):
            book[str(uid)] = (key, int(source))
        while len(book) > self.capacity:
            book.popitem(last=False)

    def lookup(self, uids: Iterable[Any], missing_source: int) -> np.ndarray:
        """(G, 2) uint64 array of [key, data_source number]; key 0 where the uid is unknown."""
        missing = (0, missing_source)
        get = self._book.get
        rows = [get(str(uid), missing) for uid in uids]
        return np.asarray(rows, dtype=np.uint64).reshape(-1, 2)
