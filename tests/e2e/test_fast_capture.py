"""End to end: a seeded ``lm_eval --model vllm`` run gives the same results, samples and records on vLLM's fast output
path (flat logprobs, no detokenization in the engine loop, vectorized token summaries) as on the detokenizing path,
which the runner takes on a vLLM release without the fast path (docs/architecture.md#vllm-backend):
``scripts/compare_runs.py`` finds them identical but for wall-clock fields. The fast run is the thinking model's
shared run (``thinking_vllm_run``), which covers the bundled demo task and a thinking model's traces, open (probed
with the marker appended) and closed (``</think>`` generated, a special token the generated text keeps and
lm-eval's post-processing, given ``think_end_token``, splits at); this module adds its detokenizing twin."""

from __future__ import annotations

import importlib.util

import pytest
from lm_eval_runs import (
    CLOSED_TASK,
    LOCAL_TASK,
    THINKING_DEMO_REPEATS,
    THINKING_K,
    THINKING_LIMIT,
    THINKING_TASKS,
    thinking_run,
)
from testenv import REPO
from transformers import AutoTokenizer

from trac_metrics.records import iter_records
from trac_tasks.engines.vllm_backend import fast_capture_supported

pytestmark = pytest.mark.engine

SPEC = importlib.util.spec_from_file_location("compare_runs", REPO / "scripts" / "compare_runs.py")
compare_runs = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(compare_runs)


def test_the_fast_path_records_what_the_detokenizing_path_records(
    tmp_path, thinking_model, thinking_tasks, thinking_vllm_run, capsys
):
    assert fast_capture_supported(), (
        "the installed vLLM must have the fast output path for this comparison to mean anything"
    )
    marker_id = AutoTokenizer.from_pretrained(thinking_model).convert_tokens_to_ids("</think>")
    detokenizing = thinking_run(tmp_path, thinking_tasks, thinking_model, fast=False)
    fast = thinking_vllm_run
    assert compare_runs.main([str(detokenizing.out), str(fast.out)]) == 0, capsys.readouterr().out
    lines = capsys.readouterr().out.splitlines()
    n_tasks = len(THINKING_TASKS)
    assert lines == [
        f"results: identical ({n_tasks} tasks)",
        f"samples: identical ({n_tasks * THINKING_LIMIT} lines)",
        f"records: identical ({THINKING_LIMIT * (THINKING_DEMO_REPEATS + 2 * THINKING_K)} lines)",
    ]
    records = {
        task: [record for path in fast.record_files(task) for record in iter_records(path)]
        for task in (LOCAL_TASK, CLOSED_TASK)
    }
    # both kinds of thinking trace are among what was compared
    assert [len(one) for one in records.values()] == [THINKING_LIMIT * THINKING_K] * 2
    assert all(record.answer is None and marker_id not in record.token_ids for record in records[LOCAL_TASK])
    for record in records[CLOSED_TASK]:  # lm-eval's post-processing (think_end_token) scored the part after it
        assert record.token_ids[0] == marker_id and record.generated_text.startswith("</think>")
        assert "</think>" not in record.text
