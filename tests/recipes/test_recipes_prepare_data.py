"""scripts/prepare_data.py on small fixture files the test writes, through the real ``datasets`` loaders.

The tokenizer is a real ``transformers`` fast tokenizer built locally (a whitespace WordLevel
vocabulary with a chat template) and loaded through ``AutoTokenizer.from_pretrained``, the same
path a hub model takes; there is no hub access here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import prepare_data

from fgrpo_verl.data.check import check_rows
from fgrpo_verl.data.sources import MATH_SYSTEM_PROMPT

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel(vocab={"[UNK]": 0, "[PAD]": 1}, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()  # one token per whitespace-separated word
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", pad_token="[PAD]")
    tok.chat_template = CHAT_TEMPLATE
    path = tmp_path_factory.mktemp("tokenizer")
    tok.save_pretrained(path)
    return str(path)


def _jsonl(path: Path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_prepare_all_sources(tmp_path: Path, tokenizer_dir: str) -> None:
    long_problem = " ".join(["word"] * 1100)
    deepscaler = _jsonl(
        tmp_path / "deepscaler.jsonl",
        [
            {"problem": "What is 1+2?", "answer": "3", "solution": "..."},
            {"problem": "What is  1+2?", "answer": " 3 ", "solution": "dup with other spacing"},
            {"problem": "Conflicting?", "answer": "4"},
            {"problem": "Conflicting?", "answer": "5"},
            {"problem": long_problem, "answer": "1"},
            {"problem": "No answer here", "answer": ""},
            {"problem": "Half of one?", "answer": "\\frac{1}{2}"},
        ],
    )
    dapo_prompt = (
        "Solve the following math problem step by step. The last line of your response should be of the form "
        "Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n{p}\n\n"
        'Remember to put your answer on its own line after "Answer:".'
    )
    dapo = tmp_path / "dapo.parquet"
    pd.DataFrame(
        [
            {"data_source": "math_dapo", "prompt": [{"role": "user", "content": dapo_prompt.format(p=p)}],
             "reward_model": {"style": "rule", "ground_truth": a}, "ability": "MATH"}
            for p, a in [("Find x if x+1=3.", "2"), ("Find x if x+1=3.", "2"), ("Compute 2*3.", "6")]
        ]
    ).to_parquet(dapo)  # fmt: skip
    math500 = tmp_path / "math500.parquet"
    pd.DataFrame([{"problem": "What is 10/2?", "answer": "5", "subject": "Prealgebra"}]).to_parquet(math500)
    amc = _jsonl(tmp_path / "amc.jsonl", [{"question": "AMC question?", "answer": 27.0}])
    ifeval = _jsonl(
        tmp_path / "ifeval.jsonl",
        [
            {
                "messages": [{"role": "user", "content": "Write a haiku without commas."}],
                "ground_truth": json.dumps({"func_name": "validate_no_commas"}),
                "dataset": "ifeval",
            }
        ],
    )
    multi = _jsonl(
        tmp_path / "multi.jsonl",
        [
            {
                "messages": [{"role": "user", "content": "Answer in lowercase, no commas."}],
                "ground_truth": str([{"instruction_id": ["change_case:english_lowercase", "punctuation:no_comma"],
                                      "kwargs": [{}, {}]}]),
            }
        ],
    )  # fmt: skip
    out = tmp_path / "out"
    code = prepare_data.main(
        [
            "--out-dir", str(out), "--tokenizer", tokenizer_dir,
            "--only", "deepscaler,dapo_math_17k,math500,amc23,rlvr_ifeval,if_multi_constraints",
            "--source", f"deepscaler={deepscaler}", "--source", f"dapo_math_17k={dapo}",
            "--source", f"math500={math500}", "--source", f"amc23={amc}", "--source", f"rlvr_ifeval={ifeval}",
            "--source", f"if_multi_constraints={multi}",
        ]
    )  # fmt: skip
    assert code == 0
    manifest = json.loads((out / "manifest.json").read_text())["sources"]
    assert manifest["deepscaler"] | {"file": None, "origin": None, "malformed_examples": None} == {
        "file": None, "origin": None, "malformed_examples": None, "data_source": "deepscaler",
        "loaded": 7, "malformed": 1, "duplicates": 1, "conflicting": 2, "too_long": 1, "written": 2,
    }  # fmt: skip
    assert (
        "row 5: field answer / final_answer / Answer / expected_answer is missing"
        in (manifest["deepscaler"]["malformed_examples"][0])
    )

    rows = pd.read_parquet(out / "deepscaler.parquet").to_dict("records")
    assert [r["reward_model"]["ground_truth"] for r in rows] == ["3", "\\frac{1}{2}"]
    first = rows[0]
    assert [dict(m) for m in first["prompt"]] == [
        {"role": "system", "content": MATH_SYSTEM_PROMPT},
        {"role": "user", "content": "What is 1+2?"},
    ]
    assert first["ability"] == "math" and first["data_source"] == "deepscaler"
    assert first["extra_info"]["index"] == 0 and rows[1]["extra_info"]["index"] == 1
    assert first["extra_info"]["source_row"] == 0 and rows[1]["extra_info"]["source_row"] == 6
    assert len(first["extra_info"]["uid"]) == 16 and first["extra_info"]["split"] == "train"

    dapo_rows = pd.read_parquet(out / "dapo_math_17k.parquet").to_dict("records")
    assert [r["prompt"][1]["content"] for r in dapo_rows] == ["Find x if x+1=3.", "Compute 2*3."]
    assert dapo_rows[0]["data_source"] == "math_dapo"
    amc_rows = pd.read_parquet(out / "amc23.parquet").to_dict("records")
    assert amc_rows[0]["reward_model"]["ground_truth"] == "27" and amc_rows[0]["extra_info"]["split"] == "test"
    if_rows = pd.read_parquet(out / "rlvr_ifeval.parquet").to_dict("records")
    assert [m["role"] for m in if_rows[0]["prompt"]] == ["user"]  # no boxed-answer system prompt for IF
    assert json.loads(if_rows[0]["reward_model"]["ground_truth"]) == {"func_name": "validate_no_commas"}

    import reward_fns

    multi_rows = pd.read_parquet(out / "if_multi_constraints.parquet").to_dict("records")
    assert multi_rows[0]["data_source"] == "ifevalg" and multi_rows[0]["ability"] == "instruction_following"

    for name in ("deepscaler", "dapo_math_17k", "math500", "amc23", "rlvr_ifeval", "if_multi_constraints"):
        result = check_rows(str(out / f"{name}.parquet"), reward_fns.compute_score)
        assert result.problems == [] and result.notes == [], (name, result)


def test_prompt_length_counts_the_chat_template(tmp_path: Path, tokenizer_dir: str) -> None:
    """The limit applies to the templated prompt (system prompt and role markers included), as verl counts it."""
    system_tokens = len(MATH_SYSTEM_PROMPT.split()) + 1  # "<|system|>" marker
    room = 1024 - system_tokens - 2  # "<|user|>" marker and "<|assistant|>"
    fits = " ".join(["w"] * room)
    over = " ".join(["w"] * (room + 1))
    path = _jsonl(tmp_path / "d.jsonl", [{"problem": fits, "answer": "1"}, {"problem": over, "answer": "2"}])
    out = tmp_path / "out"
    assert prepare_data.main(["--out-dir", str(out), "--tokenizer", tokenizer_dir, "--only", "deepscaler",
                              "--source", f"deepscaler={path}"]) == 0  # fmt: skip
    rows = pd.read_parquet(out / "deepscaler.parquet").to_dict("records")
    assert [r["reward_model"]["ground_truth"] for r in rows] == ["1"]
    assert rows[0]["extra_info"]["prompt_tokens"] == 1024


def test_bad_inputs_are_reported(tmp_path: Path, tokenizer_dir: str, capsys) -> None:
    assert prepare_data.main(["--out-dir", str(tmp_path), "--tokenizer", tokenizer_dir, "--only", "nope"]) == 2
    assert "unknown source(s) nope" in capsys.readouterr().err
    code = prepare_data.main(["--out-dir", str(tmp_path), "--tokenizer", tokenizer_dir, "--only", "math500",
                              "--source", f"math500={tmp_path / 'missing.jsonl'}"])  # fmt: skip
    assert code == 1
    assert "math500: cannot load" in capsys.readouterr().err
    bad = _jsonl(tmp_path / "bad.jsonl", [{"problem": "p", "answer": ""}])
    code = prepare_data.main(["--out-dir", str(tmp_path), "--tokenizer", tokenizer_dir, "--only", "aime24",
                              "--source", f"aime24={bad}", "--strict"])  # fmt: skip
    assert code == 1
    assert "aime24: row 0: field answer" in capsys.readouterr().err
