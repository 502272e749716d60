"""End to end: ``lm_eval --model vllm`` with ``data_parallel_size=2`` — two Ray replicas of vLLM's CPU engine, each
running the TrAC runner on its questions (docs/architecture.md#data-parallel-vllm)."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from lm_eval_runs import LOCAL_TASK, run_lm_eval, write_local_math500_task

from trac_metrics.records import iter_records
from trac_metrics.selective import METRIC_NAMES
from trac_tasks.engines.data_parallel import question_shards
from trac_tasks.generation.config import DEFAULT_CUE

N_DOCS, K = 12, 2


def test_questions_are_dealt_whole_and_round_robin():
    repeats = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]
    assert question_shards(repeats, 2) == [[0, 1, 2, 6, 7, 8, 12, 13, 14], [3, 4, 5, 9, 10, 11]]
    assert question_shards([0, 1], 3) == [[0, 1]]


@pytest.mark.engine
def test_two_replicas_give_one_records_file_and_the_metrics_of_one_engine(tmp_path, tiny_model, tiny_tokenizer):
    tasks = write_local_math500_task(tmp_path, N_DOCS, K, max_gen_toks=96)
    model_args = (
        f"pretrained={tiny_model},dtype=bfloat16,max_model_len=2048,enable_prefix_caching=True,"
        "block_size=32,enforce_eager=True,seed=1234,data_parallel_size=2"
    )
    run = run_lm_eval(tmp_path, tasks, model_args)
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
    cue_tokens = len(tiny_tokenizer(DEFAULT_CUE, add_special_tokens=False).input_ids)
    for record in records:
        probe = record.probes["trace"]
        assert probe.num_cached_tokens >= 32 * ((probe.num_prompt_tokens - cue_tokens - 1) // 32)
    # what lm-eval scored is the recorded text, in request order
    primary = {str(record.doc_id): record.text for record in records if record.repeat == 0}
    assert {str(sample["doc_id"]): sample["resps"][0][0] for sample in run.samples()} == primary
