"""End to end: the real ``lm_eval --model vllm`` CLI with vLLM's CPU engine and the bundled tiny reasoner
(docs/architecture.md#vllm-backend).

One engine run (module fixture) on local rows in the MATH-500 schema, with every probe variant and P(True) on,
beside a task without TrAC switches; the tests check what a user gets from it.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from lm_eval_runs import (
    LOCAL_TASK,
    PLAIN_TASK,
    REASONER_ROWS,
    reasoner_vllm_args,
    run_lm_eval,
    write_local_math500_task,
    write_variant_task,
)

from trac_metrics.cli import evaluate_records, main
from trac_metrics.records import iter_records
from trac_metrics.selective import METRIC_NAMES
from trac_tasks.generation.config import DEFAULT_CUE
from trac_tasks.generation.probe import trace_body

pytestmark = pytest.mark.engine

N_DOCS, K = 24, 3
MAX_GEN_TOKS = 256  # most of the tiny reasoner's traces close their thinking and answer within it
MATH_VERIFY_TASK, MATH_VERIFY_DOCS = "math_verify_labels_local", 8


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("vllm")
    tasks = write_local_math500_task(
        root,
        N_DOCS,
        K,
        max_gen_toks=MAX_GEN_TOKS,
        extra_trac="    probe_variants: [trace, question_only, shuffled_trace, teacher_forced]\n    p_true: true",
        rows=REASONER_ROWS,
    )
    write_variant_task(
        tasks,
        MATH_VERIFY_TASK,
        MAX_GEN_TOKS,
        trac_extra="    labels: math-verify",
        n_rows=MATH_VERIFY_DOCS,
        rows=REASONER_ROWS,
    )
    # the plain task through lm-eval's own path as one vLLM batch (--batch_size auto), not request by request
    names = f"{LOCAL_TASK},{PLAIN_TASK},{MATH_VERIFY_TASK}"
    return run_lm_eval(root, tasks, reasoner_vllm_args(), "vllm", "--batch_size", "auto", tasks=names)


@pytest.fixture(scope="module")
def records(run):
    (path,) = run.record_files()
    return list(iter_records(path))


def test_results_hold_accuracy_and_finite_trac_metrics(run):
    metrics = run.task_metrics()
    assert 0.0 < metrics["acc"] < 1.0, "the demo rows must give both correct and incorrect primary answers"
    assert 0.0 <= metrics["maj_acc"] <= 1.0
    for method in (
        "trac",
        "pce",
        "tup",
        "cf",
        "sup_consensus",
        "mean_logprob",
        "self_certainty",
        "deepconf_bottom",
        "selfdoubt",
        "sc_modal",
        "sc_primary",
        "semantic_entropy",
        "selfcheck",
        "cw_vote",
        "pce_question_only",
        "pce_shuffled_trace",
        "pce_teacher_forced",
    ):
        for name in METRIC_NAMES:
            value = metrics[f"{method}_{name}"]
            assert math.isfinite(value), f"{method}_{name} = {value}"
    assert 0.0 <= metrics["trac_auroc"] <= 1.0 and metrics["trac_e_aurc"] >= 0.0
    # the reasoner, trained on arithmetic only, never answers P(True)'s option letters: NaN, said in the log
    assert all(math.isnan(metrics[f"p_true_{name}"]) for name in METRIC_NAMES)
    assert f"P(True) is NaN for {N_DOCS} of {N_DOCS} questions" in run.log


def test_the_run_shows_progress_a_summary_and_no_engine_deprecation(run):
    generations = (N_DOCS + MATH_VERIFY_DOCS) * K  # one progress bar over every TrAC task of the call
    assert "TrAC generations" in run.log and f"{generations}/{generations}" in run.log
    assert f"task {LOCAL_TASK}: {N_DOCS} questions, {N_DOCS * K} samples" in run.log
    assert "probe prompts served from the prefix cache" in run.log
    assert "end-of-thinking marker '</think>'" in run.log  # the reasoner's special token, found in its tokenizer
    # vLLM logs its deprecations as WARNING lines (torch's own FutureWarning at engine start is not vLLM's API)
    deprecations = [line for line in run.log.splitlines() if "WARNING" in line and "deprecated" in line.lower()]
    assert not deprecations, "vLLM must be driven through its current API"


def test_records_are_complete(records, reasoner_tokenizer):
    tokenizer = reasoner_tokenizer
    assert sorted(record.key[1:] for record in records) == sorted(
        (str(doc), repeat) for doc in range(N_DOCS) for repeat in range(K)
    )
    for record in records:
        assert record.num_tokens > 0 and len(record.token_logprobs) == record.num_tokens
        assert np.all(record.token_logprobs <= 0) and np.all(np.isfinite(record.topk_entropy))
        # every sample is probed; the ablation probes and P(True) serve the primary sample only
        if record.repeat == 0:
            assert set(record.probes) == {"trace", "question_only", "shuffled_trace", "teacher_forced"}
            assert math.isnan(record.p_true)  # asked, and undefined (the reasoner never answers A / B)
        else:
            assert set(record.probes) == {"trace"} and record.p_true is None
        assert record.metadata["subject"] == "Arithmetic" and record.reference
        probe = record.probes["trace"]
        assert 0 < len(probe.token_ids) <= 16 and probe.finish_reason in ("stop", "eos", "length")
        # the probe prompt is Q(x, r): prompt + the reasoning (the ids before the last </think>, or the whole trace
        # body, EOS dropped, where the thinking was left open) + the marker + the cue, nothing re-tokenized
        body = trace_body(record.token_ids.tolist(), {tokenizer.eos_token_id})
        appended = tokenizer(probe.appended_text, add_special_tokens=False).input_ids
        assert probe.appended_text == "</think>" + DEFAULT_CUE
        assert probe.context == ("reasoning" if record.reasoning_tokens < len(body) else "whole")
        assert probe.context_tokens == record.reasoning_tokens
        assert probe.num_prompt_tokens == record.prompt_token_count + record.reasoning_tokens + len(appended)
        # run-level fields: K, the decoding the engine applied, engine seconds attributed to this response
        assert record.num_samples == K
        assert record.decoding == {"temperature": 0.7, "top_p": 0.95, "probe_temperature": 0.0}
        assert record.timing["generation_seconds"] > 0 and probe.seconds > 0
        # arrival times on the chunk's clock (docs/method.md#measured-latency): the probe arrives after its trace
        assert 0 < record.timing["wall_generation"] < record.timing["wall_probe_trace"]


def test_probe_prefix_is_served_from_the_prefix_cache(records, reasoner_tokenizer):
    """Each probe is submitted as its trace finishes: every whole 32-token block of its prompt + trace is still
    cached; only the last partial block and what is appended (marker, cue) are computed again."""
    for probe in (record.probes["trace"] for record in records):
        appended = len(reasoner_tokenizer(probe.appended_text, add_special_tokens=False).input_ids)
        assert probe.num_cached_tokens >= 32 * ((probe.num_prompt_tokens - appended - 1) // 32)


def test_the_k_samples_of_a_question_differ(records):
    texts = defaultdict(set)
    for record in records:
        texts[record.doc_id].add(record.text)
    assert sum(len(group) > 1 for group in texts.values()) >= N_DOCS // 2


def test_samples_file_carries_the_per_document_trac_fields(run, records):
    samples = run.samples()
    assert len(samples) == N_DOCS
    primary_text = {record.doc_id: record.text for record in records if record.repeat == 0}
    for sample in samples:
        trac = sample["trac"]
        assert 0.0 <= trac["scores"]["trac"] <= 1.0
        assert {"primary_answer", "probe_answer", "agree", "correct"} <= set(trac)
        # what lm-eval stored as the response is exactly the recorded text
        assert sample["resps"][0][0] == primary_text[sample["doc_id"]]


def test_stored_records_reproduce_the_reported_metrics(run):
    recomputed = evaluate_records(run.record_files())[LOCAL_TASK]
    reported = run.task_metrics()
    for key, value in recomputed.items():
        assert reported[key] == pytest.approx(value, nan_ok=True, abs=1e-12), key


def test_trac_report_on_the_run_shows_lm_evals_numbers(run, tmp_path, capsys):
    """`trac report` over the real run: the pair's numbers are lm-eval's aggregation, every analysis the run has
    data for (all probe variants and P(True) are on) is filled, and the relative latencies come from its timings."""
    (records,) = run.record_files()
    main(["report", str(records), "--out", str(tmp_path), "--resamples", "200"])
    printed = capsys.readouterr().out
    reported = run.task_metrics()
    per_pair = pd.read_csv(tmp_path / "per_pair.csv", index_col=0)
    (pair,) = per_pair.index
    leaderboard = pd.read_csv(tmp_path / "leaderboard.csv").set_index("method")
    for method, label in (
        ("trac", "TrAC"),
        ("pce", "PCE"),
        ("mean_logprob", "Mean log-probability"),
        ("sc_modal", f"SC@{K} (modal answer)"),
    ):
        assert per_pair.loc[pair, label] == pytest.approx(reported[f"{method}_auroc"], abs=1e-12), method
        assert leaderboard.loc[label, "macro AUROC"] == pytest.approx(reported[f"{method}_auroc"], abs=1e-12)
        assert leaderboard.loc[label, "macro AURC"] == pytest.approx(reported[f"{method}_aurc"], abs=1e-12)
    assert leaderboard.loc["Mean log-probability", "latency ×"] == 1.0
    assert 1.0 < leaderboard.loc["TrAC", "latency ×"] < 2.0
    assert leaderboard.loc[f"SC@{K} (modal answer)", "latency ×"] == K
    assert leaderboard.loc["Mean log-probability", "wall ×"] == 1.0  # measured: waits for its own generation only
    assert leaderboard.loc["TrAC", "wall ×"] > 1.0 and leaderboard.loc[f"SC@{K} (modal answer)", "wall ×"] >= 1.0
    controls = pd.read_csv(tmp_path / "ablation_trace_controls.csv", index_col=0)
    assert controls.loc["Question-only probe", "AUROC"] == pytest.approx(reported["pce_question_only_auroc"])
    assert (tmp_path / "risk_coverage.png").stat().st_size > 0 and "Paired differences" in printed


def test_a_task_without_trac_switches_runs_as_in_plain_lm_eval(run):
    metrics = run.task_metrics(PLAIN_TASK)
    assert set(metrics) == {"exact_match", "exact_match_stderr"}
    samples = run.samples(PLAIN_TASK)
    assert len(samples) == N_DOCS and all("trac" not in sample for sample in samples)
    assert all(isinstance(sample["resps"][0][0], str) and len(sample["resps"][0]) == 1 for sample in samples)
    assert run.record_files(PLAIN_TASK) == []


def test_a_task_switched_to_math_verify_labels_is_labelled_by_math_verify(run, tmp_path, capsys):
    """``labels: math-verify`` (docs/method.md#labels): every record names Math-Verify as its labeller, the task's
    accuracy is Math-Verify's own verdict on the whole primary responses, and ``trac report`` refuses to rank it beside
    the checker-labelled task unless told to."""
    from math_verify import parse, verify

    records = [record for path in run.record_files(MATH_VERIFY_TASK) for record in iter_records(path)]
    assert len(records) == MATH_VERIFY_DOCS * K and {record.labeller for record in records} == {"math-verify"}
    assert {record.labeller for path in run.record_files() for record in iter_records(path)} == {None}
    primaries = [record for record in records if record.repeat == 0]
    verdicts = [bool(verify(parse(f"${record.reference}$"), parse(record.text))) for record in primaries]
    assert run.task_metrics(MATH_VERIFY_TASK)["acc"] == pytest.approx(np.mean(verdicts))

    with pytest.raises(SystemExit) as refused:
        main(["report", str(run.out), "--out", str(tmp_path / "mixed"), "--resamples", "20"])
    assert refused.value.code == 2 and "different labellers" in capsys.readouterr().err
    main(["report", str(run.out), "--out", str(tmp_path / "mixed"), "--resamples", "20", "--mix-labellers"])
    assert len(pd.read_csv(tmp_path / "mixed" / "per_pair.csv", index_col=0).index) == 2
