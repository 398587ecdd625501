"""Picklable entry point for pool tasks; imports math-verify only inside the worker process."""

from __future__ import annotations


def verify_answer_entry(gold_answers: tuple[str, ...], answer: str) -> tuple[bool, str]:
    from reward_fns.math.worker import verify_answer

    return verify_answer(gold_answers, answer)
