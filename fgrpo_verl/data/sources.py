"""The public data sets the recipes train and evaluate on, and how to read a problem and its answer from each.

Field names are those of the data sets on the Hugging Face hub; every extractor accepts the
common alternatives (``problem`` / ``question``, ``answer`` / ``final_answer``) so mirrors and
local exports with the same content work too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# The paper's system prompt for every math prompt (F-GRPO, section 6).
MATH_SYSTEM_PROMPT = "Please reason step by step, and put your final answer within \\boxed{}."

# DAPO-Math-17k wraps every problem in an "Answer:" instruction; the paper's prompt replaces it.
_DAPO_PREFIX = re.compile(r"^\s*Solve the following math problem.*?\n\n", re.DOTALL)
_DAPO_SUFFIX = re.compile(r"\n\s*Remember to put your answer on its own line.*$", re.DOTALL)


class MalformedRecord(ValueError):
    """A source record lacks a field the verl row needs; the message names the field."""


@dataclass(frozen=True)
class Extracted:
    problem: str  # the user turn
    answer: str  # reward_model.ground_truth (a final answer, or an IF constraint spec as JSON text)


@dataclass(frozen=True)
class Source:
    """One data set: where it lives, which split, how rows are extracted and labelled."""

    name: str  # output file stem: <out-dir>/<name>.parquet
    hub_id: str
    split: str
    data_source: str  # verl's data_source, which reward_fns.compute_score dispatches on
    ability: str  # "math" or "instruction_following"
    role: str  # "train" or "test" (extra_info.split)
    extract: Callable[[Mapping[str, Any]], Extracted]
    config: str | None = None

    @property
    def system_prompt(self) -> str | None:
        # The boxed-answer instruction would contradict instruction-following constraints.
        return MATH_SYSTEM_PROMPT if self.ability == "math" else None


def _first(record: Mapping[str, Any], fields: tuple[str, ...]) -> Any:
    for name in fields:
        value = record.get(name)
        if value is not None and not (isinstance(value, str) and not value.strip()):
            return value
    raise MalformedRecord(f"field {' / '.join(fields)} is missing or empty")


def _text(value: Any, fields: tuple[str, ...]) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format(value, "g") if isinstance(value, float) else str(value)
    if not isinstance(value, str):
        raise MalformedRecord(f"field {' / '.join(fields)} must be text, got {type(value).__name__}")
    return value.strip()


def plain_math(record: Mapping[str, Any]) -> Extracted:
    """``problem`` / ``question`` and ``answer`` columns (DeepScaleR, MATH-500, AIME, AMC)."""
    problem_fields = ("problem", "question", "Problem", "Question")
    answer_fields = ("answer", "final_answer", "Answer", "expected_answer")
    problem = _text(_first(record, problem_fields), problem_fields)
    answer = _text(_first(record, answer_fields), answer_fields)
    return Extracted(problem, answer)


def dapo_math(record: Mapping[str, Any]) -> Extracted:
    """DAPO-Math-17k: the problem inside its chat prompt, the answer in ``reward_model.ground_truth``."""
    if record.get("prompt") is not None and not isinstance(record.get("prompt"), str):
        messages = list(record["prompt"])
        user = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
        if not user or not isinstance(user[-1].get("content"), str):
            raise MalformedRecord("field prompt has no user message with text content")
        content = user[-1]["content"]
    else:
        content = _text(_first(record, ("prompt", "problem")), ("prompt", "problem"))
    problem = _DAPO_SUFFIX.sub("", _DAPO_PREFIX.sub("", content)).strip()
    if not problem:
        raise MalformedRecord("field prompt is empty once DAPO's answer-format instruction is removed")
    reward_model = record.get("reward_model")
    if isinstance(reward_model, Mapping) and reward_model.get("ground_truth") not in (None, ""):
        answer = _text(reward_model["ground_truth"], ("reward_model.ground_truth",))
    else:
        answer = _text(_first(record, ("solution", "answer")), ("reward_model.ground_truth", "solution", "answer"))
    return Extracted(problem, answer)


def instruction_following(record: Mapping[str, Any]) -> Extracted:
    """AllenAI's IF sets: the last user turn of ``messages`` and the constraint spec in ``ground_truth``."""
    messages = record.get("messages")
    if messages is not None and not isinstance(messages, str):
        user = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
        if not user or not isinstance(user[-1].get("content"), str) or not user[-1]["content"].strip():
            raise MalformedRecord("field messages has no user message with text content")
        problem = user[-1]["content"].strip()
    else:
        problem = _text(_first(record, ("prompt", "instruction")), ("messages", "prompt", "instruction"))
    truth = _first(record, ("ground_truth",))
    if not isinstance(truth, str):  # keep the spec as the JSON text the reward function parses
        truth = json.dumps(truth)
    return Extracted(problem, truth.strip())


SOURCES: dict[str, Source] = {
    s.name: s
    for s in (
        Source("deepscaler", "agentica-org/DeepScaleR-Preview-Dataset", "train", "deepscaler", "math", "train",
               plain_math),
        Source("dapo_math_17k", "BytedTsinghua-SIA/DAPO-Math-17k", "train", "math_dapo", "math", "train", dapo_math),
        Source("math500", "HuggingFaceH4/MATH-500", "test", "math500", "math", "test", plain_math),
        Source("aime24", "HuggingFaceH4/aime_2024", "train", "aime24", "math", "test", plain_math),
        Source("aime25", "math-ai/aime25", "test", "aime25", "math", "test", plain_math),
        Source("amc23", "math-ai/amc23", "test", "amc23", "math", "test", plain_math),
        Source("rlvr_ifeval", "allenai/RLVR-IFeval", "train", "allenai/RLVR-IFeval", "instruction_following",
               "train", instruction_following),
        Source("if_multi_constraints", "allenai/IF_multi_constraints_upto5", "train", "ifevalg",
               "instruction_following", "train", instruction_following),
    )
}  # fmt: skip
