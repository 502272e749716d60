"""End to end with ``lm_eval --model hf``: the same records through transformers, probes on the reused KV cache.

The same run also covers the too-few-questions path (three questions cannot be cross-fitted: TrAC metrics are NaN,
with a warning in the log, while accuracy is still reported) and runs the README's worked example ("Adding a
benchmark by YAML") exactly as written there, on its two-question JSON Lines file.
"""

from __future__ import annotations

import math

import pytest
from lm_eval_runs import LOCAL_TASK, run_lm_eval, write_local_math500_task, write_readme_example

from trac_metrics.records import iter_records

pytestmark = pytest.mark.engine

N_DOCS, K = 3, 2


@pytest.fixture(scope="module")
def run(tmp_path_factory, tiny_model):
    root = tmp_path_factory.mktemp("hf")
    tasks = write_local_math500_task(
        root, N_DOCS, K, max_gen_toks=24, extra_trac="    probe_variants: [trace, teacher_forced]"
    )
    write_readme_example(root, tasks)
    return run_lm_eval(
        root,
        tasks,
        f"pretrained={tiny_model},dtype=float32",
        "hf",
        "--device",
        "cpu",
        "--gen_kwargs",
        "max_gen_toks=24",
        tasks=f"{LOCAL_TASK},my_benchmark",
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
        # teacher forcing runs on the cache the probe left behind, never reusing past the prompt it scores after
        if record.repeat == 0:
            forced = record.probes["teacher_forced"]
            assert forced.num_cached_tokens < forced.num_prompt_tokens and len(forced.token_ids) > 0


def test_too_few_questions_give_nan_metrics_with_accuracy_kept(run):
    metrics = {key.split(",")[0]: value for key, value in run.results()["results"][LOCAL_TASK].items() if "," in key}
    assert 0.0 <= metrics["acc"] <= 1.0
    assert math.isnan(metrics["trac_auroc"]) and math.isnan(metrics["tup_aurc"])
    assert "every out-of-fold score is NaN" in run.log


def test_the_readme_example_benchmark_runs_from_yaml_alone(run):
    metrics = {
        key.split(",")[0]: value for key, value in run.results()["results"]["my_benchmark"].items() if "," in key
    }
    assert 0.0 <= metrics["acc"] <= 1.0 and "trac_auroc" in metrics
    (path,) = run.record_files("my_benchmark")
    records = list(iter_records(path))
    # the template's K = 8 samples of each of the two questions, the YAML's metadata field in every record
    assert sorted(record.key[1:] for record in records) == [(str(d), r) for d in range(2) for r in range(8)]
    assert {record.metadata["topic"] for record in records} == {"rates", "geometry"}
    assert {record.reference for record in records} == {"80", "720"}
