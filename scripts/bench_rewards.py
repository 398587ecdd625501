"""Benchmark the reward functions against verl's own math scorers on one labelled set, in one run.

    PYTHONPATH=. python scripts/bench_rewards.py [--items 1200] [--seed 0]

Math: a labelled set generated here from templates (seeded): equivalent forms of a gold answer are labelled
correct (fractions vs decimals, \\dfrac, radicals, pi, percent, scientific notation, intervals, unordered
solution sets, matrices, x=5, units and degrees, thousands separators, think tags, several boxes, DAPO
"Answer:" lines, long reasoning before the answer); different values, wrong last boxes, unclosed reasoning
and missing answers are labelled wrong. The labels are true by construction, but the set was written
alongside the scorer: read agreement as coverage of these formats, not as an independent accuracy estimate.

Scorers, each called the way verl calls a reward function (one response per call, from executor threads):
ours (reward_fns.math.compute_score), verl's math_dapo.compute_score, verl's math_verify.compute_score.
Also our batch API. Printed: agreement with the labels, throughput (sequential and 8 threads), p50/p99
latency of sequential calls. Then the time bound on pathological inputs, then instruction following.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

FILLER = (
    "We first rewrite the expression. Let $a_n = 2n + 1$, so that $a_1 = 3$ and $a_2 = 5$. "
    "Then $\\sum_{k=1}^{n} a_k = n^2 + 2n$, and checking $n = 3$ gives $15$. "
    "Using the identity $\\frac{x^2 - 1}{x - 1} = x + 1$ for $x \\neq 1$, we simplify further. "
)


def _reasoning(rng: random.Random) -> str:
    return "".join(rng.choice([FILLER, FILLER.replace("3", "4"), "Hence "]) for _ in range(rng.randint(5, 30)))


def _wrap(rng: random.Random, answer: str) -> str:
    """A final-answer sentence in one of the formats RL prompts ask for."""
    style = rng.randrange(4)
    if style == 0:
        return f"\n\nThe answer is $\\boxed{{{answer}}}$."
    if style == 1:
        return f"\n\nAnswer: {answer}"  # DAPO-Math prompt format
    if style == 2:
        return f"\n\nThe final answer is ${answer}$. I hope it is correct."
    return f"\n\nTherefore $\\boxed{{{answer}}}$"


def _answer_pairs(rng: random.Random) -> tuple[str, list[str], list[str]]:
    """(gold, equivalent renderings, wrong renderings) for one random problem."""
    kind = rng.randrange(13)
    if kind == 0:
        n = rng.randint(-50, 5000)
        same = [str(n)] + ([f"{n:,}"] if abs(n) >= 1000 else [])
        return str(n), same, [str(n + rng.randint(1, 9))]
    if kind == 1:
        a, b = rng.randint(1, 12), rng.choice([2, 4, 5, 8, 3, 7])
        f = Fraction(a, b)
        gold = f"\\frac{{{f.numerator}}}{{{f.denominator}}}"
        same = [f"\\dfrac{{{f.numerator}}}{{{f.denominator}}}", f"{f.numerator}/{f.denominator}"]
        same.append(f"\\frac{{{2 * f.numerator}}}{{{2 * f.denominator}}}")
        if f.denominator in (2, 4, 5, 8):
            same.append(str(f.numerator / f.denominator))
        wrong = [f"\\frac{{{f.numerator + 1}}}{{{f.denominator}}}", str(round(float(f) + 0.01, 3))]
        return gold, same, wrong
    if kind == 2:
        k, m = rng.randint(2, 6), rng.choice([2, 3, 5, 6, 7])
        return f"{k}\\sqrt{{{m}}}", [f"\\sqrt{{{k * k * m}}}", f"{k} \\sqrt {m}"], [f"{k}\\sqrt{{{m + 1}}}"]
    if kind == 3:
        k, m = rng.randint(1, 5), rng.randint(2, 7)
        return (
            f"\\frac{{{k}\\pi}}{{{m}}}",
            [f"\\frac{{{k}}}{{{m}}}\\pi", f"{k}\\pi/{m}"],
            [f"\\frac{{{k}\\pi}}{{{m + 1}}}"],
        )
    if kind == 4:
        a, b = rng.randint(-5, 3), rng.randint(4, 9)
        return f"[{a}, {b})", [f"[{a},{b})"], [f"({a}, {b})", f"[{a}, {b}]"]
    if kind == 5:
        a, b = rng.randint(-9, 0), rng.randint(1, 9)
        return f"{a}, {b}", [f"{b}, {a}", f"\\{{{a}, {b}\\}}"], [f"{a}, {b + 1}"]
    if kind == 6:
        n = rng.randint(1, 40)
        return str(n), [f"x = {n}", f"x={n}"], [f"x = {n + 2}"]
    if kind == 7:
        n = rng.randint(5, 95)
        return str(n), [f"{n}\\%"], [f"{n + 1}\\%"]
    if kind == 8:
        n = rng.choice([30, 45, 60, 90, 120, 12, 25])
        return str(n), [f"{n}^\\circ", f"{n}^{{\\circ}}", f"{n} \\text{{ cm}}"], [f"{n + 5}^\\circ"]
    if kind == 9:
        m, e = rng.randint(11, 99), rng.randint(3, 6)
        value = m * 10 ** (e - 1)
        return f"{m / 10}\\times 10^{{{e}}}", [str(value)], [str(value * 10)]
    if kind == 10:
        letter = rng.choice("ABCDE")
        other = rng.choice([c for c in "ABCDE" if c != letter])
        return f"\\text{{({letter})}}", [letter, f"\\text{{{letter}}}"], [other]
    if kind == 11:
        a, b = rng.randint(1, 9), rng.randint(1, 9)
        gold = f"\\begin{{pmatrix}} {a} \\\\ {b} \\end{{pmatrix}}"
        return (
            gold,
            [f"\\begin{{pmatrix}}{a}\\\\{b}\\end{{pmatrix}}"],
            [f"\\begin{{pmatrix}}{a}\\\\{b + 1}\\end{{pmatrix}}"],
        )
    n = rng.randint(2, 30)
    return f"\\frac{{\\sqrt{{{n}}}}}{{2}}", [f"\\frac{{1}}{{2}}\\sqrt{{{n}}}", f"\\sqrt{{{n}}}/2"], [f"\\sqrt{{{n}}}"]


def labelled_math_set(size: int, seed: int) -> list[tuple[str, str, bool]]:
    """(gold, response, label) triples."""
    rng = random.Random(seed)
    items: list[tuple[str, str, bool]] = []
    while len(items) < size:
        gold, same, wrong = _answer_pairs(rng)
        body = _reasoning(rng)
        situation = rng.randrange(10)
        right, bad = rng.choice(same), rng.choice(wrong)
        if situation <= 3:
            items.append((gold, body + _wrap(rng, right), True))
        elif situation <= 6:
            items.append((gold, body + _wrap(rng, bad), False))
        elif situation == 7:  # revised answer: only the last box counts
            if rng.random() < 0.5:
                items.append((gold, f"{body}\\boxed{{{bad}}} Wait, recheck.{_wrap(rng, right)}", True))
            else:
                items.append((gold, f"{body}\\boxed{{{right}}} Wait, recheck. \\boxed{{{bad}}}", False))
        elif situation == 8:  # reasoning tags
            if rng.random() < 0.5:
                items.append((gold, f"<think>{body}\\boxed{{{bad}}}</think>{_wrap(rng, right)}", True))
            else:
                items.append((gold, f"<think>{body}\\boxed{{{right}}} and then I keep thinking", False))
        else:  # no final answer at all
            items.append((gold, body + "So we are done with the computation.", False))
    return items


def grouped_math_set(prompts: int, seed: int, group: int = 8) -> list[tuple[str, str]]:
    rng = random.Random(seed + 1)
    rollouts = []
    for _ in range(prompts):
        gold, same, wrong = _answer_pairs(rng)
        rollouts += [(gold, _reasoning(rng) + _wrap(rng, rng.choice(same + wrong))) for _ in range(group)]
    return rollouts


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def run_scorer(
    name: str, score: Callable[[str, str], bool], items: list[tuple[str, str, bool]], reset: Callable[[], None]
) -> dict:
    score(items[0][0], items[0][1])  # warm-up (pool start-up is reported separately)
    reset()
    latencies, verdicts = [], []
    start = time.perf_counter()
    for gold, response, _ in items:
        t0 = time.perf_counter()
        verdicts.append(score(gold, response))
        latencies.append(time.perf_counter() - t0)
    sequential = len(items) / (time.perf_counter() - start)
    reset()  # each pass does the full work: no verdict remembered from the previous pass
    start = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        threaded = list(pool.map(lambda item: score(item[0], item[1]), items))
    threads8 = len(items) / (time.perf_counter() - start)
    agree = sum(v == label for v, (_, _, label) in zip(verdicts, items, strict=True)) / len(items)
    stable = threaded == verdicts
    return {
        "name": name,
        "agree": agree,
        "seq": sequential,
        "thr8": threads8,
        "p50": _percentile(latencies, 0.5) * 1e3,
        "p99": _percentile(latencies, 0.99) * 1e3,
        "max": max(latencies) * 1e3,
        "stable": stable,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--if-items", type=int, default=2000)
    args = parser.parse_args()

    from verl.utils.reward_score import math_dapo, math_verify

    import reward_fns.ifeval
    import reward_fns.math
    from reward_fns.bounded import DEFAULT_TIMEOUT_SECONDS, shared_pool
    from reward_fns.math.extract import extract_answer
    from reward_fns.math.fast_compare import quick_verdict

    items = labelled_math_set(args.items, args.seed)
    print(f"machine: {os.cpu_count()} cores (shared); math items: {len(items)} ({sum(i[2] for i in items)} correct)")
    t0 = time.perf_counter()
    reward_fns.math.compute_score("math", "\\boxed{\\sqrt{2}}", "\\sqrt{2}+0")
    print(f"our pool cold start (first call that needs math-verify): {time.perf_counter() - t0:.2f} s")
    in_process = sum(
        1 for g, r, _ in items if (a := extract_answer(r)) is not None and quick_verdict((g,), a) is not None
    )
    no_answer = sum(1 for _, r, _ in items if extract_answer(r) is None)
    print(f"decided in process: {in_process} exact numbers + {no_answer} without an answer; rest go to math-verify")

    scorers = [
        ("reward_fns.math", lambda g, r: reward_fns.math.compute_score("math", r, g)["acc"]),
        ("verl math_dapo", lambda g, r: math_dapo.compute_score(r, g)["score"] > 0),
        ("verl math_verify", lambda g, r: math_verify.compute_score(r, g) > 0),
    ]

    def nothing() -> None:
        return None

    resets = [reward_fns.math.clear_verdict_cache, nothing, nothing]
    rows = [run_scorer(name, fn, items, reset) for (name, fn), reset in zip(scorers, resets, strict=True)]
    reward_fns.math.clear_verdict_cache()
    start = time.perf_counter()
    batch = reward_fns.math.compute_score_batch(
        ["math"] * len(items), [r for _, r, _ in items], [g for g, _, _ in items]
    )
    batch_rate = len(items) / (time.perf_counter() - start)
    batch_agree = sum(b["acc"] == label for b, (_, _, label) in zip(batch, items, strict=True)) / len(items)

    print()
    print(f"{'scorer':<20}{'agree':>8}{'seq/s':>9}{'8thr/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}  stable")
    for row in rows:
        print(
            f"{row['name']:<20}{row['agree']:>8.3f}{row['seq']:>9.0f}{row['thr8']:>9.0f}"
            f"{row['p50']:>9.2f}{row['p99']:>9.2f}{row['max']:>9.1f}  {row['stable']}"
        )
    print(f"{'reward_fns batch API':<20}{batch_agree:>8.3f}{batch_rate:>9.0f}")
    ours, verl_mv = rows[0], rows[2]
    print(
        f"throughput vs verl math_verify: {ours['seq'] / verl_mv['seq']:.1f}x sequential, "
        f"{ours['thr8'] / verl_mv['thr8']:.1f}x on 8 threads, {batch_rate / verl_mv['thr8']:.1f}x batch API"
    )

    # GRPO shape: 8 rollouts per prompt with different reasoning, final answers drawn from a few
    # renderings of the gold and of wrong values, as in a training step.
    grouped = grouped_math_set(len(items) // 8, args.seed)
    timed = []
    for name, fn in scorers[::2]:
        reward_fns.math.clear_verdict_cache()
        start = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda item, fn=fn: fn(item[0], item[1]), grouped))
        timed.append(f"{name} {len(grouped) / (time.perf_counter() - start):.0f}/s")
    print(f"GRPO-shaped batch ({len(grouped)} rollouts, 8 per prompt, 8 threads): " + ", ".join(timed))

    print(f"\ntime bound (default {DEFAULT_TIMEOUT_SECONDS} s; here timeout_seconds=2):")
    huge = "\\boxed{" + "+".join(f"\\frac{{{i}}}{{x+{i}}}" for i in range(60_000)) + "}"
    for label, response in [
        ("power tower", "\\boxed{2003^{2002^{2001}}}"),
        (f"{len(huge) / 1e6:.1f} MB of LaTeX", huge),
    ]:
        t0 = time.perf_counter()
        result = reward_fns.math.compute_score("math", response, "1", timeout_seconds=2.0)
        print(f"  {label:<22} -> reason={result['reason']!r} in {time.perf_counter() - t0:.2f} s")

    if_items = labelled_if_set(args.if_items, args.seed)
    reward_fns.ifeval.compute_score("ifeval", *reversed(if_items[0]))  # warm-up: langdetect loads its profiles
    for mode in ("strict", "loose"):
        start = time.perf_counter()
        for gt, response in if_items:
            reward_fns.ifeval.compute_score("ifeval", response, gt, ifeval_mode=mode)
        rate = len(if_items) / (time.perf_counter() - start)
        print(f"\ninstruction following ({mode}): {rate:.0f} responses/s on one thread (one core)", end="")
    print()
    shared_pool().close()


def labelled_if_set(size: int, seed: int) -> list[tuple[str, str]]:
    """(AllenAI ground truth, response) pairs: 1-3 instructions each, responses of 50-400 words."""
    rng = random.Random(seed)
    words = [
        "the",
        "committee",
        "met",
        "on",
        "tuesday",
        "and",
        "agreed",
        "on",
        "a",
        "budget",
        "for",
        "the",
        "coming",
        "year",
        "with",
        "care",
    ]
    specs = [
        ("punctuation:no_comma", {}),
        ("keywords:existence", {"keywords": ["budget", "year"]}),
        ("length_constraints:number_words", {"num_words": 120, "relation": "at least"}),
        ("length_constraints:number_sentences", {"num_sentences": 8, "relation": "less than"}),
        ("detectable_format:number_bullet_lists", {"num_bullets": 3}),
        ("change_case:english_lowercase", {}),
        ("detectable_format:title", {}),
        ("language:response_language", {"language": "en"}),
        ("change_case:capital_word_frequency", {"capital_frequency": 2, "capital_relation": "at least"}),
        ("startend:end_checker", {"end_phrase": "Any other questions?"}),
    ]
    items = []
    for _ in range(size):
        chosen = rng.sample(specs, rng.randint(1, 3))
        gt = str([{"instruction_id": [c[0] for c in chosen], "kwargs": [c[1] for c in chosen]}])
        sentences = [
            " ".join(rng.choice(words) for _ in range(rng.randint(6, 20))) + "." for _ in range(rng.randint(3, 25))
        ]
        bullets = "\n".join(f"* {rng.choice(words)}" for _ in range(rng.randint(0, 4)))
        response = "<<a title>>\n" + " ".join(sentences) + "\n" + bullets + "\nAny other questions?"
        items.append((gt, response))
    return items


if __name__ == "__main__":
    main()
