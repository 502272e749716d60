"""A thinking-style model through the real ``lm_eval`` CLI, shipped YAML switches only (no ``trac.marker``): the
end-of-thinking marker is found (from lm-eval's ``think_end_token`` on the shared vLLM run, from the tokenizer on
the HF run) and a trace that never closed its thinking section is probed as prompt + trace + marker + cue; one that
closed it is probed on its reasoning, then the marker and the cue, without the answer it wrote after the marker
(docs/method.md#probe-prompt)."""

from __future__ import annotations

import pytest
from lm_eval_runs import CLOSED_TASK, LOCAL_TASK, THINKING_K, THINKING_LIMIT, run_lm_eval
from testenv import THINKING_TEMPLATE_OPENER
from transformers import AutoTokenizer

from trac_metrics.cli import main
from trac_metrics.records import iter_records
from trac_tasks.generation.config import DEFAULT_CUE

pytestmark = pytest.mark.engine


def _records(run, task):
    (path,) = run.record_files(task)
    return list(iter_records(path))


def _check_open_traces(records, tokenizer):
    marker_id = tokenizer.convert_tokens_to_ids("</think>")
    cue = tokenizer(DEFAULT_CUE, add_special_tokens=False).input_ids
    assert len(records) == THINKING_LIMIT * THINKING_K
    for record in records:
        assert record.marker == "</think>"
        assert record.finish_reason in ("length", "eos") and marker_id not in record.token_ids.tolist()
        assert record.answer is None, "a response whose thinking never closed has no answer"
        probe = record.probes["trace"]
        assert probe.appended_text == "</think>" + DEFAULT_CUE
        body = record.num_tokens - (record.finish_reason == "eos")
        # exactly one marker id between the trace and the cue
        assert probe.num_prompt_tokens == record.prompt_token_count + body + 1 + len(cue)
        assert (probe.context, probe.context_tokens) == ("whole", body)


def test_vllm_probes_open_traces_whole_and_closed_ones_on_their_reasoning(thinking_vllm_run, thinking_model):
    tokenizer = AutoTokenizer.from_pretrained(thinking_model)
    marker_id = tokenizer.convert_tokens_to_ids("</think>")
    run = thinking_vllm_run
    assert "end-of-thinking marker '</think>'" in run.log
    _check_open_traces(_records(run, LOCAL_TASK), tokenizer)
    assert THINKING_TEMPLATE_OPENER.strip() in run.samples()[0]["arguments"]["gen_args_0"]["arg_0"]
    cue = tokenizer(DEFAULT_CUE, add_special_tokens=False).input_ids
    for record in _records(run, CLOSED_TASK):
        assert record.marker == "</think>" and record.token_ids[0] == marker_id
        probe = record.probes["trace"]
        assert probe.appended_text == "</think>" + DEFAULT_CUE, "the reasoning, then the marker, then the cue"
        assert (probe.context, probe.context_tokens) == ("reasoning", record.reasoning_tokens)
        assert probe.num_prompt_tokens == record.prompt_token_count + record.reasoning_tokens + 1 + len(cue)


def test_hf_probes_open_traces_with_the_detected_marker(tmp_path, thinking_model, thinking_tasks, capsys):
    tokenizer = AutoTokenizer.from_pretrained(thinking_model)
    hf_args = f"pretrained={thinking_model},dtype=float32"
    run = run_lm_eval(tmp_path, thinking_tasks, hf_args, "hf", "--device", "cpu", tasks=LOCAL_TASK)
    _check_open_traces(_records(run, LOCAL_TASK), tokenizer)
    main(["summary", str(run.out)])
    assert "end-of-thinking marker: '</think>'" in capsys.readouterr().out
