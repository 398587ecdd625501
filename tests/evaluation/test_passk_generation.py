"""The generation stage on CPU, up to the point where vLLM needs a GPU.

Exercised for real: checkpoint layout resolution (HF dir, verl FSDP/Megatron checkpoint dirs),
problem loading from verl-format parquet and JSONL, prompt rendering with the paper's system
prompt through a real (small, locally built) Hugging Face tokenizer's chat template, per-problem
seeds, the sample JSONL format, resume, and the command line (``--dry-run``, bad arguments).

NOT exercised (needs CUDA + a vLLM wheel): ``vllm.LLM(...)`` and ``LLM.generate``. In its place
``StandInEngine`` below has ``LLM.generate``'s signature and returns objects shaped like
``RequestOutput``/``CompletionOutput`` (``outputs[i].index/.text/.token_ids/.finish_reason``);
``vllm.SamplingParams`` is replaced by a recording factory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from fgrpo_verl.evaluation import generation as gen
from fgrpo_verl.evaluation.records import EvalInputError

REPO = Path(__file__).resolve().parents[2]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tokenizer(directory: Path, with_template: bool = True) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "<|im_start|>": 1, "<|im_end|>": 2, "what": 3, "is": 4}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", eos_token="<|im_end|>")
    if with_template:
        tokenizer.chat_template = CHAT_TEMPLATE
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(directory)
    return directory


def write_verl_parquet(path: Path) -> None:
    rows = [
        {
            "data_source": "aime24",
            "prompt": [{"role": "user", "content": f"What is {i} + {i}?"}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": str(2 * i)},
            "extra_info": {"split": "test", "index": i},
        }
        for i in range(3)
    ]
    pd.DataFrame(rows).to_parquet(path)


class StandInEngine:
    """``vllm.LLM.generate`` stand-in (no GPU here): deterministic text per (prompt, seed, index)."""

    def __init__(self):
        self.calls = []

    def generate(self, prompts, sampling_params=None, use_tqdm=True):
        self.calls.append((list(prompts), list(sampling_params)))
        results = []
        for prompt, params in zip(prompts, sampling_params, strict=True):
            outputs = [
                SimpleNamespace(
                    index=i, text=f"seed {params['seed']} sample {i}", token_ids=[1] * (i + 1), finish_reason="stop"
                )
                for i in range(params["n"])
            ]
            results.append(SimpleNamespace(prompt=prompt, outputs=outputs))
        return results


def recording_params(settings, seed):
    return {"n": settings.n, "temperature": settings.temperature, "top_p": settings.top_p, "seed": seed}


def test_resolves_hf_dirs_and_verl_checkpoint_layouts(tmp_path):
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text("{}")
    (hf / "model.safetensors").write_bytes(b"")
    assert gen.resolve_model_path(hf).weights == hf

    root = tmp_path / "ckpts"
    exported = root / "global_step_40" / "actor" / "huggingface"
    exported.mkdir(parents=True)
    (exported / "config.json").write_text("{}")
    (root / "latest_checkpointed_iteration.txt").write_text("40")
    with pytest.raises(
        EvalInputError, match=r"verl\.model_merger merge --backend fsdp --local_dir .*global_step_40/actor"
    ):
        gen.resolve_model_path(root)
    (exported / "model-00001-of-00002.safetensors").write_bytes(b"")
    assert gen.resolve_model_path(root).weights == exported
    assert gen.resolve_model_path(root / "global_step_40").weights == exported
    assert gen.resolve_model_path(root / "global_step_40" / "actor").weights == exported

    megatron = tmp_path / "mg" / "global_step_5" / "actor" / "model" / "huggingface"
    megatron.mkdir(parents=True)
    (megatron / "config.json").write_text("{}")
    with pytest.raises(EvalInputError, match="--backend megatron"):
        gen.resolve_model_path(tmp_path / "mg" / "global_step_5")

    (root / "latest_checkpointed_iteration.txt").write_text("99")
    with pytest.raises(EvalInputError, match="global_step_99 does not exist"):
        gen.resolve_model_path(root)
    assert gen.resolve_model_path("Qwen/Qwen2.5-7B").note.startswith("passed to vLLM")


@pytest.mark.parametrize("missing", ["/no/such/model", "./no_such_model", "runs/a/global_step_5"])
def test_missing_local_model_path_is_named_not_passed_to_vllm(missing):
    with pytest.raises(EvalInputError, match=r"--model .*: no such directory"):
        gen.resolve_model_path(missing)


def test_generate_cli_reports_unloadable_tokenizer_without_traceback(tmp_path):
    """A model directory without tokenizer files stops with exit 2 and the --plain-prompt hint."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"")
    problems = tmp_path / "p.jsonl"
    problems.write_text(json.dumps({"data_source": "math500", "prompt": "1+1?", "ground_truth": "2"}) + "\n")
    command = [sys.executable, "-m", "fgrpo_verl.cli", "eval-passk", "generate", "--model", str(model)]
    command += ["--data", str(problems), "--output", str(tmp_path / "s.jsonl"), "--dry-run"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr
    assert "cannot load its tokenizer" in result.stderr and "--plain-prompt" in result.stderr
    assert "Traceback" not in result.stderr


def test_loads_verl_parquet_and_jsonl_problems(tmp_path):
    write_verl_parquet(tmp_path / "aime.parquet")
    (tmp_path / "extra.jsonl").write_text(
        json.dumps({"data_source": "amc23", "prompt": "2+2?", "ground_truth": "4", "problem_id": "amc23/x"}) + "\n"
    )
    problems = gen.load_problems([tmp_path / "aime.parquet", tmp_path / "extra.jsonl"])
    assert [p.problem_id for p in problems] == ["aime24/0", "aime24/1", "aime24/2", "amc23/x"]
    assert problems[1].messages == [{"role": "user", "content": "What is 1 + 1?"}]
    assert problems[1].ground_truth == "2" and problems[1].extra_info["index"] == 1
    assert problems[3].messages == [{"role": "user", "content": "2+2?"}]
    assert len(gen.load_problems([tmp_path / "aime.parquet"], limit=2)) == 2

    (tmp_path / "bad.jsonl").write_text(json.dumps({"data_source": "x", "prompt": "q"}) + "\n")
    with pytest.raises(EvalInputError, match=r"bad\.jsonl:1: field 'reward_model.ground_truth'"):
        gen.load_problems([tmp_path / "bad.jsonl"])
    with pytest.raises(EvalInputError, match=r"repeats .*aime\.parquet:row 0"):
        gen.load_problems([tmp_path / "aime.parquet", tmp_path / "aime.parquet"])


def test_prompt_uses_the_chat_template_and_the_paper_system_prompt(tmp_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(build_tokenizer(tmp_path / "tok"))
    messages = [{"role": "user", "content": "What is 1 + 1?"}]
    text = gen.render_prompt(messages, tokenizer)
    assert text == (
        f"<|im_start|>system\n{gen.PAPER_SYSTEM_PROMPT}<|im_end|>\n"
        "<|im_start|>user\nWhat is 1 + 1?<|im_end|>\n<|im_start|>assistant\n"
    )
    own_system = [{"role": "system", "content": "Be brief."}, *messages]
    assert gen.PAPER_SYSTEM_PROMPT not in gen.render_prompt(own_system, tokenizer)
    assert "system" not in gen.render_prompt(messages, tokenizer, system_prompt=None)
    plain = gen.render_prompt(messages, AutoTokenizer.from_pretrained(build_tokenizer(tmp_path / "bare", False)))
    assert plain == f"System: {gen.PAPER_SYSTEM_PROMPT}\n\nUser: What is 1 + 1?\n\nAssistant:"


def test_generate_writes_samples_and_resumes(tmp_path):
    write_verl_parquet(tmp_path / "aime.parquet")
    problems = gen.load_problems([tmp_path / "aime.parquet"])
    prompts = [gen.render_prompt(p.messages, None) for p in problems]
    settings = gen.SamplingSettings(n=4, temperature=1.0, top_p=1.0, max_tokens=16, seed=7)
    out = tmp_path / "run" / "samples.jsonl"
    engine = StandInEngine()
    summary = gen.generate_samples(
        problems, prompts, engine, settings, out, make_sampling_params=recording_params, problems_per_call=2
    )
    assert summary == {"problems": 3, "generated_problems": 3, "samples_written": 12}
    assert [len(call[0]) for call in engine.calls] == [2, 1]
    seeds = [params["seed"] for call in engine.calls for params in call[1]]
    assert seeds == [gen.problem_seed(7, p.problem_id) for p in problems] and len(set(seeds)) == 3
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert set(records[0]) == {
        "problem_id",
        "data_source",
        "sample_index",
        "response",
        "ground_truth",
        "extra_info",
        "finish_reason",
        "response_tokens",
    }
    assert records[5]["problem_id"] == "aime24/1" and records[5]["sample_index"] == 1
    assert records[5]["ground_truth"] == "2" and records[5]["response_tokens"] == 2

    # crash after the first problem plus half a line: the rerun completes exactly what is missing
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:6]) + "\n" + lines[6][:10])
    again = gen.generate_samples(
        problems, prompts, StandInEngine(), settings, out, make_sampling_params=recording_params
    )
    assert again["generated_problems"] == 2 and again["samples_written"] == 6
    assert out.read_text().splitlines() == lines

    with pytest.raises(EvalInputError, match="generated with other settings"):
        gen.generate_samples(
            problems,
            prompts,
            StandInEngine(),
            gen.SamplingSettings(n=4, seed=8),
            out,
            make_sampling_params=recording_params,
        )


def test_shards_split_problems_without_overlap(tmp_path):
    write_verl_parquet(tmp_path / "aime.parquet")
    problems = gen.load_problems([tmp_path / "aime.parquet"])
    shards = [gen.select_shard(problems, gen.parse_shard(f"{i}/2")) for i in range(2)]
    assert [p.problem_id for p in shards[0]] == ["aime24/0", "aime24/2"]
    assert [p.problem_id for p in shards[1]] == ["aime24/1"]
    for bad in ("2/2", "x", "1/0"):
        with pytest.raises(EvalInputError, match="--shard"):
            gen.parse_shard(bad)


def test_sampling_settings_validation_and_vllm_absent_message(tmp_path):
    with pytest.raises(EvalInputError, match="--top-p is out of range"):
        gen.SamplingSettings(top_p=0)
    with pytest.raises(gen.VLLMUnavailableError, match="needs vLLM on a GPU machine"):
        gen.build_vllm_engine(gen.ResolvedModel(tmp_path, tmp_path, "test"))


def test_command_line_dry_run_renders_from_a_verl_checkpoint(tmp_path):
    exported = build_tokenizer(tmp_path / "ckpt" / "global_step_3" / "actor" / "huggingface")
    (exported / "config.json").write_text("{}")
    (exported / "model.safetensors").write_bytes(b"")
    write_verl_parquet(tmp_path / "aime.parquet")
    cmd = [
        sys.executable,
        str(REPO / "scripts" / "eval_passk.py"),
        "generate",
        "--model",
        str(tmp_path / "ckpt" / "global_step_3"),
    ]
    cmd += ["--data", str(tmp_path / "aime.parquet"), "--output", str(tmp_path / "s.jsonl"), "--dry-run"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["problem_id"] == "aime24/0" and shown["prompt"].endswith("<|im_start|>assistant\n")
    assert "verl checkpoint" in done.stderr and "3 problems x 1024 samples" in done.stderr

    bad = subprocess.run([*cmd[:-1], "--top-p", "1.5"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--top-p is out of range" in bad.stderr
    # the real run stops where the GPU is needed, with a clear message and nothing written
    real = subprocess.run(cmd[:-1], capture_output=True, text=True, timeout=120)
    assert real.returncode == 2 and "needs vLLM on a GPU machine" in real.stderr
    assert not (tmp_path / "s.jsonl").exists()
