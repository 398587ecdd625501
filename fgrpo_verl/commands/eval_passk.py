"""``fgrpo-verl eval-passk {generate,score,report,compare}``: the paper's pass@k evaluation in stages.

generate  n samples per problem with vLLM (GPU)          -> samples.jsonl
score     samples with a verl-style compute_score (CPU)   -> scores.jsonl (resumable)
report    pass@k table + bootstrap CIs + curves (CPU)     -> passk.{md,json,png}
compare   two runs, paired m-out-of-n subsampling test    -> compare.{md,json,png}
"""

from __future__ import annotations

import argparse
import json
import sys

from fgrpo_verl.commands.arg_types import int_at_least
from fgrpo_verl.evaluation.records import EvalInputError

positive_int = int_at_least(1)


def _json_object(text: str) -> str:
    """A JSON object (kept as text; parsed where it is used)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f"must be a JSON object such as '{{\"key\": 1}}', got {text!r} ({exc})"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object such as '{{\"key\": 1}}', got {text!r}")
    return text


def _confidence(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in the open interval (0, 1), e.g. 0.95, got {text}")
    return value


def _ks(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--ks must be comma-separated integers, got {text!r}") from None


def run_generate(args: argparse.Namespace) -> int:
    from fgrpo_verl.evaluation import generation as gen

    settings = gen.SamplingSettings(
        n=args.n, temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens, seed=args.seed
    )
    if args.tensor_parallel_size < 1:
        raise EvalInputError(f"--tensor-parallel-size must be >= 1, got {args.tensor_parallel_size}")
    model = gen.resolve_model_path(args.model)
    shard = gen.parse_shard(args.shard) if args.shard else None
    problems = gen.select_shard(gen.load_problems(args.data, limit=args.limit), shard)
    tokenizer = None
    if not args.plain_prompt:
        from transformers import AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(str(model.tokenizer), trust_remote_code=args.trust_remote_code)
        except (OSError, ValueError) as exc:
            raise EvalInputError(
                f"--model {args.model}: cannot load its tokenizer for the chat template ({exc}); pass a model "
                "directory with tokenizer files, or --plain-prompt to skip the chat template"
            ) from None
    template_kwargs = json.loads(args.chat_template_kwargs) if args.chat_template_kwargs else None
    system_prompt = args.system_prompt or None
    prompts = [gen.render_prompt(p.messages, tokenizer, system_prompt, template_kwargs) for p in problems]
    print(f"model: {model.weights} ({model.note}); {len(problems)} problems x {settings.n} samples", file=sys.stderr)
    if args.dry_run:
        print(json.dumps({"problem_id": problems[0].problem_id, "prompt": prompts[0]}, ensure_ascii=False, indent=2))
        return 0
    engine = gen.build_vllm_engine(
        model,
        tensor_parallel_size=args.tensor_parallel_size,
        seed=args.seed,
        dtype=args.dtype,
        max_model_len=args.max_model_len,
        gpu_memory_utilization=args.gpu_memory_utilization,
        trust_remote_code=args.trust_remote_code,
    )
    meta = {
        "model": str(model.weights),
        "model_note": model.note,
        "system_prompt": system_prompt,
        "chat_template": None if tokenizer is None else getattr(tokenizer, "chat_template", None),
        "chat_template_kwargs": template_kwargs,
    }
    summary = gen.generate_samples(
        problems, prompts, engine, settings, args.output, problems_per_call=args.problems_per_call, meta=meta
    )
    print(json.dumps(summary))
    return 0


def run_score(args: argparse.Namespace) -> int:
    from fgrpo_verl.evaluation.scoring import score_file

    summary = score_file(
        args.samples,
        args.output,
        scorer=args.scorer,
        workers=args.workers,
        timeout=args.timeout,
        batch_size=args.batch_size,
        mode=args.mode,
        scorer_kwargs=json.loads(args.scorer_kwargs) if args.scorer_kwargs else None,
    )
    print(summary.describe())
    return 0


def run_report(args: argparse.Namespace) -> int:
    from fgrpo_verl.evaluation.report import passk_report, report_markdown, write_report

    report = passk_report(
        args.scores,
        max_k=args.max_k or None,
        ks=args.ks,
        n_resamples=args.resamples,
        confidence=args.confidence,
        seed=args.seed,
    )
    paths = write_report(report, args.out_dir, plot=not args.no_plot)
    print(report_markdown(report))
    for warning in report["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    print("wrote " + ", ".join(map(str, paths)), file=sys.stderr)
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from fgrpo_verl.evaluation.report import compare_runs, comparison_markdown, write_comparison

    result = compare_runs(
        args.a,
        args.b,
        labels=(args.label_a, args.label_b),
        max_k=args.max_k or None,
        ks=args.ks,
        m=args.m,
        n_resamples=args.resamples,
        confidence=args.confidence,
        resample_problems=not args.fixed_problems,
        seed=args.seed,
        data_sources=args.data_source,
    )
    paths = write_comparison(result, args.out_dir, plot=not args.no_plot)
    print(comparison_markdown(result))
    print("wrote " + ", ".join(map(str, paths)), file=sys.stderr)
    return 0


def _guarded(fn):
    def run(args: argparse.Namespace) -> int:
        from fgrpo_verl.evaluation.generation import VLLMUnavailableError
        from fgrpo_verl.evaluation.scoring import ScorerError

        try:
            return fn(args)
        except (EvalInputError, ScorerError, VLLMUnavailableError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2

    return run


def register(subparsers: argparse._SubParsersAction) -> None:
    from fgrpo_verl.evaluation.generation import PAPER_SYSTEM_PROMPT
    from fgrpo_verl.evaluation.scoring import DEFAULT_SCORER

    parser = subparsers.add_parser(
        "eval-passk",
        help="unbiased pass@k evaluation: generate, score, report, compare",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    stages = parser.add_subparsers(dest="stage", required=True, metavar="STAGE")

    gen = stages.add_parser("generate", help="sample n responses per problem with vLLM (GPU)")
    gen.add_argument(
        "--model", required=True, help="HF model dir, hub id, or verl checkpoint (global_step_N or its root)"
    )
    gen.add_argument("--data", required=True, nargs="+", help="verl-format parquet or JSONL problem files")
    gen.add_argument("--output", required=True, help="sample JSONL to append to (resumes if present)")
    gen.add_argument("--n", type=int, default=1024, help="samples per problem (paper: 1024)")
    gen.add_argument("--temperature", type=float, default=1.0)
    gen.add_argument("--top-p", type=float, default=1.0)
    gen.add_argument("--max-tokens", type=int, default=8192, help="max response tokens (paper: 8192; 4096 Qwen3-4B)")
    gen.add_argument("--seed", type=int, default=0, help="base seed; each problem gets a stable derived seed")
    gen.add_argument("--tensor-parallel-size", type=int, default=1)
    gen.add_argument("--dtype", default="auto")
    gen.add_argument("--max-model-len", type=int, default=None)
    gen.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    gen.add_argument("--problems-per-call", type=int, default=8, help="problems per vLLM call (= per write)")
    gen.add_argument("--system-prompt", default=PAPER_SYSTEM_PROMPT, help="'' for none (default: the paper's)")
    gen.add_argument(
        "--chat-template-kwargs", type=_json_object, default=None, help="JSON, e.g. '{\"enable_thinking\": true}'"
    )
    gen.add_argument("--plain-prompt", action="store_true", help="skip the chat template: plain role: content text")
    gen.add_argument("--trust-remote-code", action="store_true")
    gen.add_argument("--limit", type=int, default=None, help="first N problems only")
    gen.add_argument(
        "--shard", default=None, help="INDEX/COUNT: every COUNT-th problem from INDEX (one shard per GPU group)"
    )
    gen.add_argument("--dry-run", action="store_true", help="resolve the model, render the first prompt, stop")
    gen.set_defaults(func=_guarded(run_generate))

    score = stages.add_parser("score", help="score samples on CPU (resumable)")
    score.add_argument("--samples", required=True, help="sample JSONL from 'generate'")
    score.add_argument("--output", required=True, help="score JSONL to append to (already scored samples are skipped)")
    score.add_argument("--scorer", default=DEFAULT_SCORER, help="module:function or file.py:function")
    score.add_argument("--workers", type=int, default=None, help="scoring processes (default: cores - 1)")
    score.add_argument(
        "--timeout", type=float, default=30.0, help="seconds per sample before it counts as wrong (default 30)"
    )
    score.add_argument("--batch-size", type=int, default=16, help="samples per worker task")
    score.add_argument(
        "--mode",
        choices=("auto", "batch", "pool"),
        default="auto",
        help="batch: the scorer module's compute_score_batch (auto-selected if present); pool: process pool here",
    )
    score.add_argument(
        "--scorer-kwargs",
        type=_json_object,
        default=None,
        help="JSON passed to every call, e.g. '{\"timeout_seconds\": 10}'",
    )
    score.set_defaults(func=_guarded(run_score))

    for name, help_text in (("report", "pass@k table, CIs and curves"), ("compare", "compare two runs")):
        stage = stages.add_parser(name, help=help_text)
        if name == "report":
            stage.add_argument("--scores", required=True, nargs="+", help="score JSONL file(s)")
            stage.add_argument(
                "--resamples", type=positive_int, default=2000, help="bootstrap resamples (default 2000)"
            )
            stage.set_defaults(func=_guarded(run_report))
        else:
            stage.add_argument("--a", required=True, nargs="+", help="score JSONL file(s) of run A")
            stage.add_argument("--b", required=True, nargs="+", help="score JSONL file(s) of run B")
            stage.add_argument("--label-a", default="A")
            stage.add_argument("--label-b", default="B")
            stage.add_argument(
                "--m",
                type=positive_int,
                default=256,
                help="samples per problem per subsample (default and paper: 256)",
            )
            stage.add_argument("--resamples", type=positive_int, default=1000, help="subsamples (default 1000)")
            stage.add_argument("--fixed-problems", action="store_true", help="do not resample problems")
            stage.add_argument("--data-source", nargs="+", default=None, help="only these benchmarks")
            stage.set_defaults(func=_guarded(run_compare))
        stage.add_argument("--out-dir", required=True)
        stage.add_argument(
            "--max-k",
            type=int,
            default=256,
            help="largest k of the 1, 2, 4, ... grid (default 256; 0: the largest every problem supports)",
        )
        stage.add_argument("--ks", type=_ks, default=None, help="explicit k list, e.g. 1,8,64 (overrides --max-k)")
        stage.add_argument("--confidence", type=_confidence, default=0.95, help="CI level (default 0.95)")
        stage.add_argument("--seed", type=int, default=0)
        stage.add_argument("--no-plot", action="store_true")
