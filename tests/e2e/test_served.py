"""End to end: the real ``lm_eval --model local-completions`` CLI against a real ``vllm serve`` (vLLM's CPU build, the
tiny reasoner) (docs/architecture.md#served-backend).

One server (``served_model``) and one run on local rows in the MATH-500 schema with every probe variant, a prefix
probe and P(True) on, beside a task without TrAC switches. The server logs the token ids of every prompt it
receives, so the tests check what was actually sent. The last test stops that server in the middle of a second
run: a served model that goes away mid-run ends the run with a clear error after bounded retries.
"""

from __future__ import annotations

import json
import math
import subprocess
import time
from collections import Counter
from types import SimpleNamespace

import pytest
from lm_eval_runs import (
    LOCAL_TASK,
    PLAIN_TASK,
    REASONER_ROWS,
    lm_eval_command,
    run_lm_eval,
    write_local_math500_task,
)
from testenv import engine_env
from vllm_server import received_prompts, stop

from trac_metrics.records import iter_records
from trac_metrics.selective import METRIC_NAMES
from trac_tasks.generation.config import DEFAULT_CUE
from trac_tasks.generation.probe import trace_body

pytestmark = pytest.mark.engine

N_DOCS, K = 24, 2
MAX_GEN_TOKS = 256  # most of the tiny reasoner's traces close their thinking and answer within it


def served_args(model, base_url: str, *extra: str) -> str:
    """``--model_args`` of ``local-completions`` on the served tiny reasoner (its own tokenizer, its context)."""
    return ",".join(
        [f"model={model}", f"base_url={base_url}/v1/completions", *extra, f"tokenizer={model}", "max_length=1024"]
    )


VARIANTS = {"trace", "question_only", "shuffled_trace", "teacher_forced"}


@pytest.fixture(scope="module")
def server(served_model):
    served = served_model.running()
    return served.base_url, served.log_path


@pytest.fixture(scope="module")
def run(server, tmp_path_factory, reasoner_model):
    base_url, _ = server
    root = tmp_path_factory.mktemp("served")
    tasks = write_local_math500_task(
        root,
        N_DOCS,
        K,
        max_gen_toks=MAX_GEN_TOKS,
        extra_trac=f"    probe_variants: [{', '.join(sorted(VARIANTS))}]\n    p_true: true\n    prefix_probes: [0.5]",
        rows=REASONER_ROWS,
    )
    model_args = served_args(reasoner_model, base_url, "num_concurrent=4")
    return run_lm_eval(root, tasks, model_args, "local-completions", tasks=f"{LOCAL_TASK},{PLAIN_TASK}")


@pytest.fixture(scope="module")
def records(run):
    (path,) = run.record_files()
    return list(iter_records(path))


def test_results_hold_accuracy_and_finite_trac_metrics(run):
    metrics = run.task_metrics()
    assert 0.0 < metrics["acc"] < 1.0
    for method in (
        "trac",
        "pce",
        "tup",
        "mean_logprob",
        "sc_modal",
        "pce_question_only",
        "pce_shuffled_trace",
        "pce_teacher_forced",
    ):
        for name in METRIC_NAMES:
            assert math.isfinite(metrics[f"{method}_{name}"]), f"{method}_{name}"
    # the task without TrAC switches ran through lm-eval's own client, beside the TrAC task
    assert 0.0 <= run.task_metrics(PLAIN_TASK)["exact_match"] <= 1.0
    assert f"task {LOCAL_TASK}: {N_DOCS} questions, {N_DOCS * K} samples" in run.log
    # the reasoner never answers P(True)'s option letters: NaN, said in the log
    assert all(math.isnan(metrics[f"p_true_{name}"]) for name in METRIC_NAMES)
    assert f"P(True) is NaN for {N_DOCS} of {N_DOCS} questions" in run.log


def test_records_are_complete_and_probes_hit_the_servers_prefix_cache(records, reasoner_tokenizer):
    def length(text: str) -> int:
        return len(reasoner_tokenizer(text, add_special_tokens=False).input_ids)

    assert sorted(record.key[1:] for record in records) == sorted(
        (str(doc), repeat) for doc in range(N_DOCS) for repeat in range(K)
    )
    for record in records:
        assert record.num_tokens > 0 and len(record.token_logprobs) == record.num_tokens
        assert record.decoding == {"temperature": 0.7, "top_p": 0.95, "probe_temperature": 0.0}
        assert record.timing["generation_seconds"] > 0
        if record.repeat == 0:
            assert set(record.probes) == VARIANTS and math.isnan(record.p_true)  # asked; the reasoner never answers
        else:
            assert set(record.probes) == {"trace"}
        # the probe reached the server right after its trace: every whole 32-token block of prompt + trace was
        # still in the server's prefix cache (only the last partial block and the marker and cue are computed again)
        trace_probe = record.probes["trace"]
        whole_blocks = 32 * ((trace_probe.num_prompt_tokens - length(trace_probe.appended_text) - 1) // 32)
        assert whole_blocks <= trace_probe.num_cached_tokens <= trace_probe.num_prompt_tokens
        # the prefix probe (half the trace, its thinking closed by the marker) shares the prompt and the kept trace
        # with the generation: served from the cache in whole blocks too
        (prefix_probe,) = record.prefix_probes
        appended = length(prefix_probe.appended_text)
        assert prefix_probe.num_prompt_tokens == record.prompt_token_count + prefix_probe.trace_tokens + appended
        kept_blocks = 32 * ((record.prompt_token_count + prefix_probe.trace_tokens) // 32)
        assert kept_blocks <= prefix_probe.num_cached_tokens <= prefix_probe.num_prompt_tokens


def test_the_k_samples_of_a_question_are_drawn_with_their_own_seeds(records):
    texts: dict[str, set[str]] = {}
    for record in records:
        texts.setdefault(record.doc_id, set()).add(record.text)
    # one seed for all would make every pair identical; the reasoner is sure of its easier questions' traces, so
    # only part of the pairs differ
    assert sum(len(group) > 1 for group in texts.values()) >= N_DOCS // 4


def test_the_server_received_the_in_process_prompt_ids_and_exact_probe_prompts(
    run, server, records, reasoner_tokenizer
):
    """Generation prompts are the ids lm-eval's in-process ``vllm`` backend makes of the same context (its own
    ``tok_encode``), and every trace probe prompt is Q(x, r): those ids + the reasoning's generated ids (before the
    last marker; EOS dropped) + the ids of what the probe appends (the marker, the cue)."""
    tokenizer = reasoner_tokenizer
    from lm_eval.models.vllm_causallms import VLLM

    _, log_path = server
    received = {tuple(prompt) for prompt in received_prompts(log_path)}
    in_process = SimpleNamespace(
        tokenizer=tokenizer,
        add_bos_token=None,
        custom_prefix_token_id=None,
        prefix_token_id=tokenizer.bos_token_id,
    )
    context = {str(sample["doc_id"]): sample["arguments"]["gen_args_0"]["arg_0"] for sample in run.samples()}
    for record in records:
        appended = record.probes["trace"].appended_text
        assert appended == "</think>" + DEFAULT_CUE
        appended_ids = tokenizer(appended, add_special_tokens=False).input_ids
        prompt_ids = VLLM.tok_encode(in_process, context[str(record.doc_id)])
        assert len(prompt_ids) == record.prompt_token_count
        assert tuple(prompt_ids) in received
        reasoning = trace_body(record.token_ids.tolist(), {tokenizer.eos_token_id})[: record.reasoning_tokens]
        assert tuple(prompt_ids + reasoning + appended_ids) in received


def test_an_lm_eval_task_switched_on_with_metadata_runs_served_labelled_by_its_own_scoring(
    server, tmp_path, reasoner_model
):
    """``--metadata '{"trac": ...}'`` on a plain task through the served path: K samples, its own label per
    response, the TrAC metrics under the ``trac`` filter beside its own."""
    base_url, _ = server
    tasks = write_local_math500_task(tmp_path, 4, K, max_gen_toks=16, rows=REASONER_ROWS)
    model_args = served_args(reasoner_model, base_url)
    switch = json.dumps({"trac": {"repeats": 2, "answer_kind": "math"}})
    run = run_lm_eval(tmp_path, tasks, model_args, "local-completions", "--metadata", switch, tasks=PLAIN_TASK)
    records = [record for path in run.record_files(PLAIN_TASK) for record in iter_records(path)]
    assert sorted(record.key[1:] for record in records) == [(str(d), r) for d in range(4) for r in range(2)]
    assert {record.label_source for record in records} == {"exact_match,none"}
    assert all("trace" in record.probes for record in records)
    results = run.results()["results"][PLAIN_TASK]
    assert results["acc,trac"] == pytest.approx(results["exact_match,none"]), "labels are the task's own scores"
    assert "trac_auroc,trac" in results


def test_a_server_lost_mid_run_ends_in_a_clear_error_after_bounded_retries(tmp_path, reasoner_model, served_model):
    """The server stops once two questions are on disk: the client retries each open request ``max_retries`` times,
    then lm_eval exits with an error naming the server, and every question written so far is whole."""
    n_docs, k = 48, 2
    tasks = write_local_math500_task(tmp_path, n_docs, k, max_gen_toks=MAX_GEN_TOKS, rows=REASONER_ROWS)
    out = tmp_path / "out"
    served = served_model.running()
    base_url, server_process = served.base_url, served.process
    model_args = served_args(reasoner_model, base_url, "num_concurrent=2", "max_retries=2")
    command = lm_eval_command(tasks, "local-completions", model_args, out, "--apply_chat_template")
    client = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=engine_env(), cwd=tmp_path
    )
    try:
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline and client.poll() is None:
            files = list((out / "trac_records").glob(f"{LOCAL_TASK}.*.jsonl"))
            if files and files[0].read_bytes().count(b"\n") >= 2 * k:
                stop(server_process)
                break
            time.sleep(0.2)
        log, _ = client.communicate(timeout=600)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    assert client.returncode != 0, log[-4000:]
    assert f"the server at {base_url}/v1/completions did not answer" in log and "in 2 attempts" in log, log[-4000:]
    (path,) = (out / "trac_records").glob(f"{LOCAL_TASK}.*.jsonl")
    per_question = Counter(record.doc_id for record in iter_records(path))
    assert 2 <= len(per_question) < n_docs and set(per_question.values()) == {k}
