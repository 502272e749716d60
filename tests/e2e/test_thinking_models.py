"""A thinking-style model through the real ``lm_eval`` CLI, shipped YAML switches only (no ``trac.marker``): the
end-of-thinking marker is found from the tokenizer and a trace that never closed its thinking section is probed as
prompt + trace + marker + cue, with vLLM and with HF."""

from __future__ import annotations

import pytest
from lm_eval_runs import CLOSED_TASK, LOCAL_TASK, run_lm_eval, write_closed_thinking_task, write_local_math500_task
from testenv import THINKING_TEMPLATE_OPENER
from transformers import AutoTokenizer

from trac_metrics.cli import main
from trac_metrics.records import iter_records
from trac_tasks.generation.config import DEFAULT_CUE

pytestmark = pytest.mark.engine

N_DOCS, K, MAX_GEN_TOKS = 4, 2, 24


def _records(run, task):
    (path,) = run.record_files(task)
    return list(iter_records(path))


def _check_open_traces(records, tokenizer):
    marker_id = tokenizer.convert_tokens_to_ids("</think>")
    cue = tokenizer(DEFAULT_CUE, add_special_tokens=False).input_ids
    assert len(records) == N_DOCS * K
    for record in records:
        assert record.marker == "</think>"
        assert record.finish_reason in ("length", "eos") and marker_id not in record.token_ids.tolist()
        assert record.answer is None, "a response whose thinking never closed has no answer"
        probe = record.probes["trace"]
        assert probe.appended_text == "</think>" + DEFAULT_CUE
        body = record.num_tokens - (record.finish_reason == "eos")
        # exactly one marker id between the trace and the cue
        assert probe.num_prompt_tokens == record.prompt_token_count + body + 1 + len(cue)


def test_vllm_probes_open_traces_with_the_detected_marker_and_closed_ones_without(tmp_path, thinking_model):
    tokenizer = AutoTokenizer.from_pretrained(thinking_model)
    marker_id = tokenizer.convert_tokens_to_ids("</think>")
    tasks = write_local_math500_task(tmp_path, N_DOCS, K, max_gen_toks=MAX_GEN_TOKS)
    write_closed_thinking_task(tasks, marker_id, MAX_GEN_TOKS)
    model_args = (
        f"pretrained={thinking_model},dtype=bfloat16,max_model_len=1024,enable_prefix_caching=True,"
        "block_size=32,enforce_eager=True,distributed_executor_backend=uni,seed=1234"
    )
    run = run_lm_eval(tmp_path, tasks, model_args, tasks=f"{LOCAL_TASK},{CLOSED_TASK}")
    assert "end-of-thinking marker '</think>'" in run.log
    _check_open_traces(_records(run, LOCAL_TASK), tokenizer)
    assert THINKING_TEMPLATE_OPENER.strip() in run.samples()[0]["arguments"]["gen_args_0"]["arg_0"]
    cue = tokenizer(DEFAULT_CUE, add_special_tokens=False).input_ids
    for record in _records(run, CLOSED_TASK):
        assert record.marker == "</think>" and record.token_ids[0] == marker_id
        probe = record.probes["trace"]
        assert probe.appended_text == DEFAULT_CUE, "a trace that closed its thinking gets no marker"
        body = record.num_tokens - (record.finish_reason == "eos")
        assert probe.num_prompt_tokens == record.prompt_token_count + body + len(cue)


def test_hf_probes_open_traces_with_the_detected_marker(tmp_path, thinking_model, capsys):
    tokenizer = AutoTokenizer.from_pretrained(thinking_model)
    tasks = write_local_math500_task(tmp_path, N_DOCS, K, max_gen_toks=MAX_GEN_TOKS)
    run = run_lm_eval(tmp_path, tasks, f"pretrained={thinking_model},dtype=float32", "hf", "--device", "cpu")
    _check_open_traces(_records(run, LOCAL_TASK), tokenizer)
    main(["summary", str(run.out)])
    assert "end-of-thinking marker: '</think>'" in capsys.readouterr().out
