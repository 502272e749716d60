"""End to end: ``lm_eval --model vllm`` with ``data_parallel_size=2`` — two Ray replicas of vLLM's CPU engine, each
running the TrAC runner on its questions (docs/architecture.md#data-parallel-vllm)."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from lm_eval_runs import LOCAL_TASK, REASONER_ROWS, reasoner_vllm_args, run_lm_eval, write_local_math500_task

from trac_metrics.records import iter_records
from trac_metrics.selective import METRIC_NAMES
from trac_tasks.engines.data_parallel import question_shards

N_DOCS, K = 12, 2


def test_questions_are_dealt_whole_and_round_robin():
    repeats = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]
    assert question_shards(repeats, 2) == [[0, 1, 2, 6, 7, 8, 12, 13, 14], [3, 4, 5, 9, 10, 11]]
    assert question_shards([0, 1], 3) == [[0, 1]]


@pytest.mark.engine
def test_two_replicas_give_one_records_file_and_the_metrics_of_one_engine(tmp_path, reasoner_tokenizer):
    tasks = write_local_math500_task(tmp_path, N_DOCS, K, max_gen_toks=256, rows=REASONER_ROWS)
    run = run_lm_eval(tmp_path, tasks, reasoner_vllm_args("data_parallel_size=2", one_process=False))
    assert "on 2 vLLM replicas (Ray, 1 CPU each)" in run.log
    assert f"task {LOCAL_TASK}: {N_DOCS} questions, {N_DOCS * K} samples" in run.log

    metrics = run.task_metrics()
    assert 0.0 < metrics["acc"] < 1.0
    for method in ("trac", "pce", "tup", "mean_logprob", "sc_modal"):
        for name in METRIC_NAMES:
            assert math.isfinite(metrics[f"{method}_{name}"]), f"{method}_{name}"

    (path,) = run.record_files()
    records = list(iter_records(path))
    assert set(Counter(record.doc_id for record in records).values()) == {K} and len(records) == N_DOCS * K
    # each probe ran on the replica that generated its trace: every whole 32-token block of its prompt + trace came
    # from that engine's prefix cache (another engine would hold only the shared instruction blocks)
    for record in records:
        probe = record.probes["trace"]
        appended = len(reasoner_tokenizer(probe.appended_text, add_special_tokens=False).input_ids)
        assert probe.num_cached_tokens >= 32 * ((probe.num_prompt_tokens - appended - 1) // 32)
    # what lm-eval scored is the recorded text, in request order
    primary = {str(record.doc_id): record.text for record in records if record.repeat == 0}
    assert {str(sample["doc_id"]): sample["resps"][0][0] for sample in run.samples()} == primary
