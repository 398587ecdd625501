"""Stable prompt keys: same across processes and batches, distinct across data sources and prompts."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from fgrpo_verl.telemetry.identity import IdentityBook, prompt_key, prompt_keys

CASES = [
    ("math", {"index": 7}, None),
    ("gsm8k", {"index": 7}, None),
    ("math", {"index": "q-7"}, None),
    ("math", {"split": "train"}, [{"role": "user", "content": "2+2?"}]),
    ("math", None, "user: 2+2?"),
]


def test_batch_and_scalar_agree_and_keys_are_distinct():
    keys = prompt_keys([c[0] for c in CASES], [c[1] for c in CASES], [c[2] for c in CASES])
    assert keys.dtype == np.uint64
    assert keys.tolist() == [prompt_key(*c) for c in CASES]
    assert len(set(keys.tolist())) == len(CASES)
    many = prompt_keys(["math"] * 100_000, ({"index": i} for i in range(100_000)), None)
    assert np.unique(many).shape[0] == 100_000


def test_keys_do_not_depend_on_the_process():
    code = (
        "from fgrpo_verl.telemetry.identity import prompt_key\n"
        "print(prompt_key('math', {'index': 7}), prompt_key('math', None, 'user: 2+2?'))\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="123")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(prompt_key("math", {"index": 7})), str(prompt_key("math", None, "user: 2+2?"))]


def test_identity_book_is_bounded_first_in_first_out():
    book = IdentityBook(capacity=3)
    book.remember(["a", "b", "c", "d"], np.arange(1, 5, dtype=np.uint64), [1, 1, 2, 2])
    assert len(book) == 3
    assert book.lookup(["a", "d", "zz"], missing_source=0).tolist() == [[0, 0], [4, 2], [0, 0]]
