"""The HF backend's prompts and texts (docs/guide/reliability.md#lm-eval-flags): a prompt that does not fit beside
``max_gen_toks`` is left-truncated as lm-eval does, with a warning naming the request, and ``generated_text`` is
stored as the other engines store it, without the closing end-of-sequence token (``<|im_end|>``)."""

from __future__ import annotations

import logging

import pytest

from trac_metrics.records import iter_records
from trac_tasks.engines.hf_batching import fitted_prompt

TRAC = {"answer_kind": "math", "reference": "81", "probe_variants": ["trace"]}


def test_a_prompt_that_fits_is_kept_whole_without_a_word(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="lm_eval.trac_eval"):
        assert fitted_prompt([5, 6, 7], 3, "task t doc 0") == [5, 6, 7]
    assert caplog.records == []


def test_a_prompt_too_long_keeps_its_last_tokens_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="lm_eval.trac_eval"):
        assert fitted_prompt(list(range(10)), 4, "task t doc 7") == [6, 7, 8, 9]
        assert fitted_prompt(list(range(10)), 1, "task t doc 8") == [9]
    first, second = (record.getMessage() for record in caplog.records)
    assert first.startswith("trac-eval: --model hf: the prompt of task t doc 7 has 10 tokens, more than the 4 that fit")
    assert "left-truncated to its last 4 tokens, as lm-eval does" in first and "doc 8" in second


@pytest.mark.engine
def test_a_run_warns_of_a_cut_prompt_and_stores_no_end_token_in_its_text(
    reasoner_model, reasoner_tokenizer, tmp_path, monkeypatch, caplog: pytest.LogCaptureFixture
) -> None:
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    from trac_tasks.engines.hf_backend import HfTracRunner

    monkeypatch.setenv("TRAC_RECORDS_DIR", str(tmp_path))
    question = "Eva has 3 marbles. Eva gives 2 marbles to Zoe. Eva finds 8 more marbles. How many marbles now?"
    prompts = [
        reasoner_tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
        for text in (question, "Say it again. " * 60 + question)
    ]
    requests = []
    for doc_id, prompt in enumerate(prompts):
        arguments = (prompt, {"until": [], "do_sample": False, "max_gen_toks": 160, "trac": TRAC})
        instance = Instance("generate_until", {}, arguments, idx=0, metadata=("hf_prompts", doc_id, 1))
        instance.repeats = 1
        requests.append(instance)
    lm = HFLM(pretrained=str(reasoner_model), device="cpu", dtype="float32", batch_size=2, max_length=320)
    assert len(lm.tok_encode(prompts[0])) < 160 < len(lm.tok_encode(prompts[1]))
    with caplog.at_level(logging.WARNING, logger="lm_eval.trac_eval"):
        HfTracRunner(lm).run(requests, disable_tqdm=True)
    cut = [record.getMessage() for record in caplog.records if "left-truncated" in record.getMessage()]
    assert len(cut) == 1 and "the prompt of task hf_prompts doc 1 has" in cut[0]
    (path,) = tmp_path.glob("hf_prompts.*.jsonl")
    records = list(iter_records(path))
    assert [record.prompt_token_count for record in records if str(record.doc_id) == "1"] == [160]
    ended = [record for record in records if record.finish_reason == "eos"]
    assert ended, "the tiny reasoner closes its responses with <|im_end|>"
    for record in ended:
        stored = record.generated_text if record.generated_text is not None else record.text
        assert "<|im_end|>" not in stored and "</think>" in stored
