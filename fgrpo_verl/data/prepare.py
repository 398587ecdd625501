"""Build verl parquet files from the public data sets with the paper's filter.

For each source: load it with ``datasets`` (from the hub, or a local file given by the user),
extract problem and answer, drop duplicates (identical problem and answer: keep the first;
the same problem with different answers: drop every copy, they are conflicting labels), drop
prompts longer than ``max_prompt_tokens`` tokens under the model's chat template (the paper's
<= 1024), and write rows in verl's format::

    data_source, prompt=[{system}, {user}], ability, reward_model{style, ground_truth},
    extra_info{split, index, uid, source_row}

``extra_info.index`` is the row's position in the written file; ``extra_info.uid`` is a hash of
the normalised problem, a prompt identity that stays the same across runs, filters and files.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from fgrpo_verl.data.sources import Extracted, MalformedRecord, Source

LOCAL_BUILDERS = {".json": "json", ".jsonl": "json", ".parquet": "parquet", ".csv": "csv"}


@dataclass
class PrepareStats:
    """What happened to a source's rows (written to manifest.json)."""

    loaded: int = 0
    malformed: int = 0
    duplicates: int = 0
    conflicting: int = 0
    too_long: int = 0
    written: int = 0
    malformed_examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_records(source: Source, local_path: str | None = None) -> Iterable[Mapping[str, Any]]:
    """Rows of a source with ``datasets``: the hub id and split, or a local json/jsonl/parquet/csv file."""
    import datasets

    if local_path is None:
        return datasets.load_dataset(source.hub_id, name=source.config, split=source.split)
    ext = os.path.splitext(local_path)[1].lower()
    if ext not in LOCAL_BUILDERS:
        raise ValueError(f"{local_path}: unsupported file type {ext!r}; use one of {', '.join(LOCAL_BUILDERS)}")
    if not os.path.isfile(local_path):
        raise FileNotFoundError(f"{local_path}: no such file (given for source {source.name})")
    return datasets.load_dataset(LOCAL_BUILDERS[ext], data_files=local_path, split="train")


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def answer_key(answer: str) -> str:
    """Answers compared for conflicts: whitespace and a surrounding $...$ or \\boxed{} do not matter."""
    key = re.sub(r"\s+", "", answer)
    key = re.sub(r"^\$(.*)\$$", r"\1", key)
    match = re.fullmatch(r"\\boxed\{(.*)\}", key)
    return match.group(1) if match else key


def prompt_uid(problem: str) -> str:
    return hashlib.sha1(normalise(problem).encode("utf-8")).hexdigest()[:16]


def extract_all(
    source: Source, records: Iterable[Mapping[str, Any]], stats: PrepareStats
) -> list[tuple[int, Extracted]]:
    """(source row number, extracted) for every well-formed record; malformed ones counted with examples."""
    out: list[tuple[int, Extracted]] = []
    for row_number, record in enumerate(records):
        stats.loaded += 1
        try:
            out.append((row_number, source.extract(record)))
        except MalformedRecord as exc:
            stats.malformed += 1
            if len(stats.malformed_examples) < 5:
                stats.malformed_examples.append(f"{source.name}: row {row_number}: {exc}")
    return out


def deduplicate(items: Sequence[tuple[int, Extracted]], stats: PrepareStats) -> list[tuple[int, Extracted]]:
    """Keep the first copy of a repeated (problem, answer); drop every copy of a problem with several answers."""
    groups: OrderedDict[str, list[tuple[int, Extracted]]] = OrderedDict()
    for item in items:
        groups.setdefault(normalise(item[1].problem), []).append(item)
    kept: list[tuple[int, Extracted]] = []
    for copies in groups.values():
        if len({answer_key(e.answer) for _, e in copies}) > 1:
            stats.conflicting += len(copies)
            continue
        stats.duplicates += len(copies) - 1
        kept.append(copies[0])
    return kept


def chat(source: Source, problem: str) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": source.system_prompt}] if source.system_prompt else []
    return [*messages, {"role": "user", "content": problem}]


def prompt_token_counts(tokenizer: Any, conversations: Sequence[list[dict[str, str]]]) -> list[int]:
    """Prompt lengths as verl counts them: the chat template with the generation prompt, tokenised."""
    if getattr(tokenizer, "chat_template", None):
        texts = [tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=False) for c in conversations]
    else:  # base models without a template: the turns joined as plain text
        texts = ["\n\n".join(m["content"] for m in c) for c in conversations]
    encoded = tokenizer(texts, add_special_tokens=False)["input_ids"]
    return [len(ids) for ids in encoded]


def build_rows(
    source: Source, records: Iterable[Mapping[str, Any]], tokenizer: Any, max_prompt_tokens: int
) -> tuple[list[dict[str, Any]], PrepareStats]:
    stats = PrepareStats()
    items = deduplicate(extract_all(source, records, stats), stats)
    conversations = [chat(source, e.problem) for _, e in items]
    lengths = prompt_token_counts(tokenizer, conversations) if items else []
    rows: list[dict[str, Any]] = []
    for (row_number, extracted), conversation, length in zip(items, conversations, lengths, strict=True):
        if length > max_prompt_tokens:
            stats.too_long += 1
            continue
        rows.append(
            {
                "data_source": source.data_source,
                "prompt": conversation,
                "ability": source.ability,
                "reward_model": {"style": "rule", "ground_truth": extracted.answer},
                "extra_info": {
                    "split": source.role,
                    "index": len(rows),
                    "uid": prompt_uid(extracted.problem),
                    "source_row": row_number,
                    "prompt_tokens": length,
                },
            }
        )
    stats.written = len(rows)
    return rows, stats


def write_parquet(rows: list[dict[str, Any]], path: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def load_tokenizer(name_or_path: str) -> Any:
    """The model's tokenizer (hub id or local directory), as verl loads it."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(name_or_path, trust_remote_code=False)
