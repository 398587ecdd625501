"""Stage (a): sample n responses per problem with vLLM and write them as sample JSONL.

Input problems come from verl-format parquet (``data_source``, ``prompt`` chat list,
``reward_model.ground_truth``, ``extra_info.index``) or JSONL with the same fields (``prompt`` may
also be a plain string, ``ground_truth`` may be top level). The paper's system prompt is added
when the problem has none, and the chat is rendered with the model tokenizer's chat template (a
plain "role: content" layout when the tokenizer has no template).

Sampling uses vLLM's offline API: ``vllm.LLM(model, tokenizer, tensor_parallel_size, seed, ...)``
and one ``vllm.SamplingParams(n, temperature, top_p, max_tokens, seed)`` per problem, with a
per-problem seed derived from ``--seed`` and the problem id, so a problem's samples do not depend
on which other problems share the call and a resumed run reproduces them. Output is appended
problem-chunk by chunk; problems already complete in the output are skipped on a rerun.

What the CPU tests do NOT exercise (no GPU, and vLLM wheels are CUDA builds): constructing
``vllm.LLM`` and its ``generate`` call. The tests drive :func:`generate_samples` with a stand-in
engine that has ``LLM.generate``'s signature and return shape, and check everything around it:
arguments, checkpoint resolution, prompt rendering, seeds, resume and the JSONL format.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fgrpo_verl.evaluation.records import EvalInputError, iter_jsonl, location

logger = logging.getLogger(__name__)

# The paper's system prompt (F-GRPO, training and evaluation).
PAPER_SYSTEM_PROMPT = "Please reason step by step, and put your final answer within \\boxed{}."

_WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.safetensors.index.json", "*.bin.index.json")


class VLLMUnavailableError(RuntimeError):
    """vLLM cannot be imported here (CPU machine, or not installed)."""


@dataclass(frozen=True)
class ResolvedModel:
    weights: Path
    tokenizer: Path
    note: str


def _has_weights(directory: Path) -> bool:
    return directory.is_dir() and any(any(directory.glob(p)) for p in _WEIGHT_PATTERNS)


def resolve_model_path(path: str | os.PathLike) -> ResolvedModel:
    """An HF model directory, or the HF export inside a verl checkpoint.

    verl 0.9.1 layouts (``trainer.default_local_dir``):
      ``<root>/latest_checkpointed_iteration.txt`` -> ``<root>/global_step_<N>/``
      FSDP:     ``global_step_<N>/actor/huggingface/``        (config + tokenizer always;
      Megatron: ``global_step_<N>/actor/model/huggingface/``   full weights only with
                                                                checkpoint.save_contents incl. 'hf_model')
    Without exported weights the actor holds only sharded state; merge it first with
    ``python -m verl.model_merger merge --backend fsdp|megatron --local_dir <actor> --target_dir <out>``.
    Anything else (a hub id such as ``Qwen/Qwen2.5-7B``) is passed to vLLM unchanged.
    """
    root = Path(path)
    if not root.exists():
        text = str(path)
        # A hub id is "name" or "owner/name"; anything else that is missing is a local path typo.
        if root.is_absolute() or text.startswith((".", "~")) or text.count("/") > 1:
            raise EvalInputError(
                f"--model {text}: no such directory; pass a Hugging Face model directory, a verl checkpoint "
                "directory or a hub id such as Qwen/Qwen2.5-7B"
            )
        return ResolvedModel(root, root, "passed to vLLM as given (not a local directory: hub id?)")
    if _has_weights(root):
        return ResolvedModel(root, root, "Hugging Face model directory")
    step_dir = root
    tracker = root / "latest_checkpointed_iteration.txt"
    if tracker.is_file():
        step = tracker.read_text().strip()
        step_dir = root / f"global_step_{step}"
        if not step_dir.is_dir():
            raise EvalInputError(f"{tracker}: names step {step} but {step_dir} does not exist")
    actor = step_dir / "actor" if (step_dir / "actor").is_dir() else step_dir
    candidates = [actor / "huggingface", actor / "model" / "huggingface"]
    for candidate in candidates:
        if _has_weights(candidate):
            return ResolvedModel(candidate, candidate, f"verl checkpoint: HF weights in {candidate}")
    config_dirs = [c for c in candidates if (c / "config.json").is_file()]
    if config_dirs:
        backend = "megatron" if "model" in config_dirs[0].parts[-2:] else "fsdp"
        raise EvalInputError(
            f"{path}: verl checkpoint without exported HF weights ({config_dirs[0]} holds only config and "
            f"tokenizer). Merge the actor shards first: python -m verl.model_merger merge --backend {backend} "
            f"--local_dir {actor} --target_dir {actor}/merged_hf, then pass --model {actor}/merged_hf "
            "(or train with actor_rollout_ref.actor.checkpoint.save_contents including 'hf_model')"
        )
    raise EvalInputError(
        f"{path}: neither a Hugging Face model directory (config.json + *.safetensors) nor a verl checkpoint "
        f"(global_step_<N>/actor/huggingface); pass one of those"
    )


@dataclass(frozen=True)
class Problem:
    problem_id: str
    data_source: str
    messages: list[dict[str, str]]
    ground_truth: Any
    extra_info: dict[str, Any] | None
    where: str


def _rows(path: Path) -> Iterable[tuple[str, dict[str, Any]]]:
    if path.suffix == ".parquet":
        import pandas as pd

        frame = pd.read_parquet(path)
        for i, row in enumerate(frame.to_dict(orient="records")):
            yield f"{path}:row {i}", _plain(row)
    else:
        for number, record in iter_jsonl(path):
            yield location(path, number), record


def _plain(value: Any) -> Any:
    """numpy arrays / scalars from parquet -> plain Python (lists, dicts, str, int)."""
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        value = value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def problem_from_row(row: dict[str, Any], where: str, ordinal: int) -> Problem:
    data_source = row.get("data_source")
    if not isinstance(data_source, str) or not data_source:
        raise EvalInputError(f"{where}: field 'data_source' is missing or not a string")
    prompt = row.get("prompt")
    if isinstance(prompt, str):
        messages = [{"role": "user", "content": prompt}]
    elif (
        isinstance(prompt, list)
        and prompt
        and all(isinstance(m, dict) and "role" in m and "content" in m for m in prompt)
    ):
        messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in prompt]
    else:
        raise EvalInputError(f"{where}: field 'prompt' must be a string or a list of {{role, content}} messages")
    reward_model = row.get("reward_model") if isinstance(row.get("reward_model"), dict) else {}
    ground_truth = reward_model.get("ground_truth", row.get("ground_truth"))
    if ground_truth is None:
        raise EvalInputError(f"{where}: field 'reward_model.ground_truth' (or 'ground_truth') is missing")
    extra_info = row.get("extra_info") if isinstance(row.get("extra_info"), dict) else None
    problem_id = row.get("problem_id")
    if problem_id is None:
        index = (extra_info or {}).get("index", ordinal)
        problem_id = f"{data_source}/{index}"
    return Problem(str(problem_id), data_source, messages, ground_truth, extra_info, where)


def load_problems(paths: list[str | os.PathLike], limit: int | None = None) -> list[Problem]:
    """Problems of every input file in order; duplicate problem ids raise naming both places."""
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for path in map(Path, paths):
        if not path.is_file():
            raise EvalInputError(f"{path}: no such file (--data)")
        for ordinal, (where, row) in enumerate(_rows(path)):
            problem = problem_from_row(row, where, ordinal)
            if problem.problem_id in seen:
                raise EvalInputError(
                    f"{where}: field 'problem_id' {problem.problem_id!r} repeats {seen[problem.problem_id]}; "
                    "give each problem a unique extra_info.index or problem_id"
                )
            seen[problem.problem_id] = where
            problems.append(problem)
            if limit is not None and len(problems) >= limit:
                return problems
    return problems


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/N"`` -> (i, N) with 0 <= i < N: this process generates every N-th problem starting at i."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise EvalInputError(f"--shard must look like INDEX/COUNT (e.g. 0/4), got {text!r}") from None
    if not 0 <= index < count:
        raise EvalInputError(f"--shard {text!r}: need 0 <= INDEX < COUNT")
    return index, count


def select_shard(problems: list[Problem], shard: tuple[int, int] | None) -> list[Problem]:
    """Data-parallel split: run one shard per GPU group, each to its own --output; score/report read all."""
    if shard is None:
        return problems
    index, count = shard
    return problems[index::count]


def with_system_prompt(messages: list[dict[str, str]], system_prompt: str | None) -> list[dict[str, str]]:
    """Prepend ``system_prompt`` unless it is empty or the chat already starts with a system message."""
    if not system_prompt or (messages and messages[0]["role"] == "system"):
        return list(messages)
    return [{"role": "system", "content": system_prompt}, *messages]


def render_prompt(
    messages: list[dict[str, str]],
    tokenizer: Any | None,
    system_prompt: str | None = PAPER_SYSTEM_PROMPT,
    chat_template_kwargs: dict[str, Any] | None = None,
) -> str:
    """The text vLLM receives: the tokenizer's chat template with a generation prompt, or a plain fallback."""
    chat = with_system_prompt(messages, system_prompt)
    if tokenizer is not None and getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(
            chat, tokenize=False, add_generation_prompt=True, **(chat_template_kwargs or {})
        )
    # Base models without a template: the conventional plain layout, ending where the answer starts.
    return "".join(f"{m['role'].capitalize()}: {m['content']}\n\n" for m in chat) + "Assistant:"


@dataclass(frozen=True)
class SamplingSettings:
    n: int = 1024
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 8192
    seed: int = 0

    def __post_init__(self):
        for name, ok in (
            ("n", self.n >= 1),
            ("temperature", self.temperature >= 0),
            ("top_p", 0 < self.top_p <= 1),
            ("max_tokens", self.max_tokens >= 1),
        ):
            if not ok:
                raise EvalInputError(f"--{name.replace('_', '-')} is out of range: {getattr(self, name)!r}")


def problem_seed(base_seed: int, problem_id: str) -> int:
    """Stable per-problem seed (independent of order and batching; fits vLLM's int seed)."""
    digest = hashlib.sha256(f"{base_seed}:{problem_id}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def vllm_sampling_params(settings: SamplingSettings, seed: int):
    from vllm import SamplingParams

    return SamplingParams(
        n=settings.n,
        temperature=settings.temperature,
        top_p=settings.top_p,
        max_tokens=settings.max_tokens,
        seed=seed,
    )


def build_vllm_engine(
    model: ResolvedModel,
    tensor_parallel_size: int = 1,
    seed: int = 0,
    dtype: str = "auto",
    max_model_len: int | None = None,
    gpu_memory_utilization: float = 0.9,
    trust_remote_code: bool = False,
):
    """``vllm.LLM`` for the model (GPU only; not exercised by the CPU tests)."""
    try:
        from vllm import LLM
    except ImportError as exc:
        raise VLLMUnavailableError(
            "the generation stage needs vLLM on a GPU machine (pip install vllm, or use verl's GPU image); "
            "the score/report/compare stages run without it"
        ) from exc
    kwargs: dict[str, Any] = {
        "model": str(model.weights),
        "tokenizer": str(model.tokenizer),
        "tensor_parallel_size": tensor_parallel_size,
        "seed": seed,
        "dtype": dtype,
        "gpu_memory_utilization": gpu_memory_utilization,
        "trust_remote_code": trust_remote_code,
    }
    if max_model_len:
        kwargs["max_model_len"] = max_model_len
    return LLM(**kwargs)


def _completed(output: Path, n: int) -> dict[str, set[int]]:
    """Sample indices already written per problem (a torn last line is cut off first)."""
    done: dict[str, set[int]] = {}
    if not output.exists():
        return done
    raw = output.read_bytes()
    if raw and not raw.endswith(b"\n"):
        logger.warning("%s: dropping an incomplete last line (interrupted write)", output)
        with output.open("r+b") as handle:
            handle.truncate(raw.rfind(b"\n") + 1)
    for number, record in iter_jsonl(output):
        pid, idx = record.get("problem_id"), record.get("sample_index")
        if not isinstance(pid, str) or not isinstance(idx, int):
            raise EvalInputError(f"{location(output, number)}: field 'problem_id'/'sample_index' missing")
        done.setdefault(pid, set()).add(idx)
    return done


def _check_meta(meta_path: Path, meta: dict[str, Any]) -> None:
    if meta_path.exists():
        previous = json.loads(meta_path.read_text())
        changed = {k: (previous.get(k), v) for k, v in meta.items() if previous.get(k) != v and k != "model_note"}
        if changed:
            raise EvalInputError(
                f"{meta_path}: the existing output was generated with other settings {changed}; "
                "write to a new --output or restore the settings to resume"
            )
    else:
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")


def generate_samples(
    problems: list[Problem],
    prompts: list[str],
    engine: Any,
    settings: SamplingSettings,
    output: str | os.PathLike,
    make_sampling_params: Callable[[SamplingSettings, int], Any] = vllm_sampling_params,
    problems_per_call: int = 8,
    meta: dict[str, Any] | None = None,
) -> dict[str, int]:
    """Generate ``settings.n`` samples per problem with ``engine.generate`` and append them to ``output``.

    ``engine`` is a ``vllm.LLM`` (``generate(prompts, sampling_params=[...], use_tqdm=...)`` returning
    one ``RequestOutput`` per prompt whose ``.outputs`` are ``CompletionOutput``s with ``index``,
    ``text``, ``token_ids`` and ``finish_reason``).
    """
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    meta_path = output.with_name(output.name + ".meta.json")
    _check_meta(meta_path, (meta or {}) | {"sampling": dataclasses.asdict(settings)})
    done = _completed(output, settings.n)
    todo = [(p, q) for p, q in zip(problems, prompts, strict=True) if len(done.get(p.problem_id, ())) < settings.n]
    written = 0
    with output.open("a", encoding="utf-8") as out:
        for start in range(0, len(todo), problems_per_call):
            chunk = todo[start : start + problems_per_call]
            params = [make_sampling_params(settings, problem_seed(settings.seed, p.problem_id)) for p, _ in chunk]
            results = engine.generate([q for _, q in chunk], sampling_params=params, use_tqdm=False)
            if len(results) != len(chunk):
                raise RuntimeError(f"the engine returned {len(results)} results for {len(chunk)} prompts")
            for (problem, _), result in zip(chunk, results, strict=True):
                have = done.get(problem.problem_id, set())
                for position, completion in enumerate(result.outputs):
                    index = int(getattr(completion, "index", position))
                    if index in have:
                        continue
                    record = {
                        "problem_id": problem.problem_id,
                        "data_source": problem.data_source,
                        "sample_index": index,
                        "response": completion.text,
                        "ground_truth": problem.ground_truth,
                        "extra_info": problem.extra_info,
                        "finish_reason": completion.finish_reason,
                        "response_tokens": len(completion.token_ids),
                    }
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                    written += 1
            out.flush()
            os.fsync(out.fileno())
    return {"problems": len(problems), "generated_problems": len(todo), "samples_written": written}
