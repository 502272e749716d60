"""End to end with ``lm_eval --model hf`` on the tiny reasoner: the same records through transformers, probes on the
reused KV cache. Its traces are cut at 24 tokens, inside their thinking section: every probe closes it with the
``</think>`` marker before the cue.

The same run also covers the too-few-questions path (three questions cannot be cross-fitted: TrAC metrics are NaN,
with a warning in the log, while accuracy is still reported), runs the user guide's worked example ("Adding a
benchmark by YAML", docs/guide/running.md) exactly as written there, on its two-question JSON Lines file, sets K of
every TrAC task with ``--gen_kwargs repeats=2`` (the local YAML says 3, the guide's template 8), and warns once about
a task whose ``trac.marker`` the model never writes; the local task also runs a prefix probe at half of each trace.
"""

from __future__ import annotations

import math

import pytest
from lm_eval_runs import (
    LOCAL_TASK,
    REASONER_ROWS,
    run_lm_eval,
    write_guide_example,
    write_local_math500_task,
    write_variant_task,
)

from trac_metrics.records import iter_records
from trac_tasks.generation.config import DEFAULT_CUE
from trac_tasks.generation.probe import prefix_cut, trace_body

pytestmark = pytest.mark.engine

N_DOCS, YAML_REPEATS, K = 3, 3, 2
MARKER_TASK = "unknown_marker_local"


@pytest.fixture(scope="module")
def run(tmp_path_factory, reasoner_model):
    root = tmp_path_factory.mktemp("hf")
    tasks = write_local_math500_task(
        root,
        N_DOCS,
        YAML_REPEATS,
        max_gen_toks=24,
        extra_trac="    probe_variants: [trace, teacher_forced]\n    prefix_probes: [0.5]",
        rows=REASONER_ROWS,
    )
    write_variant_task(tasks, MARKER_TASK, 16, trac_extra='    marker: "FINAL:"')
    write_guide_example(root, tasks)
    return run_lm_eval(
        root,
        tasks,
        f"pretrained={reasoner_model},dtype=float32",
        "hf",
        "--device",
        "cpu",
        "--gen_kwargs",
        f"max_gen_toks=24,repeats={K}",
        tasks=f"{LOCAL_TASK},my_benchmark,{MARKER_TASK}",
    )


def test_hf_records_match_the_vllm_schema_and_reuse_the_kv_cache(run):
    (path,) = run.record_files()
    records = list(iter_records(path))
    assert sorted(record.key[1:] for record in records) == [(str(d), r) for d in range(N_DOCS) for r in range(K)]
    for record in records:
        assert 0 < record.num_tokens <= 24 and len(record.topk_entropy) == record.num_tokens
        probe = record.probes["trace"]
        assert 0 < len(probe.token_ids) <= 16
        # the probe computed only what follows prompt + trace body: the rest came from the generation's cache
        body = record.num_tokens - (record.finish_reason == "eos")
        assert probe.num_cached_tokens == record.prompt_token_count + body - (record.finish_reason != "eos")
        assert probe.num_cached_tokens < probe.num_prompt_tokens
        # teacher forcing runs on the generation's cache too, never reusing past the prompt it scores after
        if record.repeat == 0:
            forced = record.probes["teacher_forced"]
            assert forced.num_cached_tokens < forced.num_prompt_tokens and len(forced.token_ids) > 0


def test_prefix_probes_run_on_hf_after_the_cut_the_rule_gives(run, reasoner_tokenizer):
    tokenizer = reasoner_tokenizer
    (path,) = run.record_files()
    closed_cue_ids = tokenizer("</think>" + DEFAULT_CUE, add_special_tokens=False).input_ids
    decode = lambda ids: tokenizer.decode(list(ids), skip_special_tokens=True)  # noqa: E731
    for record in iter_records(path):
        body = trace_body(record.token_ids.tolist(), {tokenizer.eos_token_id})
        assert record.reasoning_tokens == len(body), "thinking left open: the whole trace body is reasoning"
        (probe,) = record.prefix_probes
        assert (probe.variant, probe.fraction) == ("prefix", 0.5)
        assert probe.trace_tokens == prefix_cut(body, 0.5, decode) <= len(body) // 2
        assert probe.appended_text == record.probes["trace"].appended_text == "</think>" + DEFAULT_CUE
        assert probe.num_prompt_tokens == record.prompt_token_count + probe.trace_tokens + len(closed_cue_ids)
        assert 0 < len(probe.token_ids) <= 16
    assert "prefix_agreement_auroc" in run.task_metrics()


def test_too_few_questions_give_nan_metrics_with_accuracy_kept(run):
    metrics = {key.split(",")[0]: value for key, value in run.results()["results"][LOCAL_TASK].items() if "," in key}
    assert 0.0 <= metrics["acc"] <= 1.0
    assert math.isnan(metrics["trac_auroc"]) and math.isnan(metrics["tup_aurc"])
    assert "every out-of-fold score is NaN" in run.log


def test_the_guide_example_benchmark_runs_from_yaml_alone(run):
    metrics = {
        key.split(",")[0]: value for key, value in run.results()["results"]["my_benchmark"].items() if "," in key
    }
    assert 0.0 <= metrics["acc"] <= 1.0 and "trac_auroc" in metrics
    (path,) = run.record_files("my_benchmark")
    records = list(iter_records(path))
    # K samples of each of the two questions (--gen_kwargs repeats; the template's 8 otherwise), the YAML's metadata
    # field in every record
    assert sorted(record.key[1:] for record in records) == [(str(d), r) for d in range(2) for r in range(K)]
    assert {record.metadata["topic"] for record in records} == {"rates", "geometry"}
    assert {record.reference for record in records} == {"80", "720"}


def test_gen_kwargs_repeats_sets_k_of_every_trac_task(run):
    assert run.results()["configs"][LOCAL_TASK]["repeats"] == K != YAML_REPEATS
    for task in (LOCAL_TASK, "my_benchmark", MARKER_TASK):
        records = [record for path in run.record_files(task) for record in iter_records(path)]
        assert {record.num_samples for record in records} == {K}, task
        assert "maj_acc" in run.task_metrics(task)


def test_a_marker_the_model_never_writes_is_warned_once(run):
    warning = f"task {MARKER_TASK}: no answer was read from any of its {N_DOCS} primary responses"
    assert run.log.count(warning) == 1
    assert "trac.marker" in run.log
