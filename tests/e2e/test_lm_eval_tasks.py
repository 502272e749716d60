"""End to end: TrAC on lm-eval's own tasks with ``--metadata '{"trac": ...}'`` (docs/method.md#task-scored-labels,
docs/architecture.md#trac-on-lm-eval-tasks), through the real ``lm_eval --model vllm`` CLI on the CPU engine.

The tasks are lm-eval's installed YAMLs, each ``include``d by a test YAML that only points the dataset at local rows
in the hub dataset's schema: ``gsm8k_cot_zeroshot`` (regex filters + exact_match), ``minerva_math500`` (its own
``process_results``), ``gpqa_diamond_cot_zeroshot`` (a generative multiple-choice task, synthetic rows) and a
log-likelihood multiple-choice task, which TrAC does not apply to. Three runs of the same tasks and seed: without
the switch, with it at K = 1, and with it at K = 4 beside the bundled ``trac_demo`` task, run with prefix probes on
(docs/method.md#prefix-probes: the demo's YAML included as it is, ``prefix_probes`` added to its ``trac`` block).
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import lm_eval.tasks
import pytest
import yaml
from easy_rows import easy_rows, render
from lm_eval_runs import LmEvalRun, lm_eval_command
from testenv import REPO, engine_env

from trac_metrics.cli import main as trac_main
from trac_metrics.records import iter_records
from trac_tasks.generation.config import DEFAULT_CUE
from trac_tasks.generation.probe import prefix_cut, trace_body

pytestmark = pytest.mark.engine

LM_EVAL_TASKS = Path(lm_eval.tasks.__file__).parent
GSM8K_ROWS = easy_rows()[:24]
"""Easy arithmetic questions, which the tiny model gets right at times, written below in GSM8K's schema."""
GSM8K, MINERVA, GPQA, LOGLIKELIHOOD = "gsm8k_local", "minerva_math500_local", "gpqa_local", "mc_loglikelihood_local"
GENERATIVE = (GSM8K, MINERVA, GPQA)
LABEL_FILTERS = {GSM8K: "flexible-extract", GPQA: "flexible-extract", MINERVA: "none"}
LABEL_METRICS = {MINERVA: "math_verify"}
K = 4
N_DOCS = 6
DEMO, FRACTIONS, DEMO_ROWS = "trac_demo_prefix_probes", [0.25, 0.5, 0.75], 10
"""The bundled demo task with prefix probes at these fractions, on the first easy rows."""


def _write_demo_with_prefix_probes(tasks: Path) -> None:
    """:data:`DEMO`: ``trac_demo.yaml`` included, its ``generation_kwargs`` as they are plus ``prefix_probes``, on the
    easy rows (the bundled questions are the tiny reasoner's, beyond what SmolLM2 answers)."""

    class Loader(yaml.SafeLoader):
        """Reads lm-eval's ``!function`` tags as their text."""

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    demo = REPO / "task_configs" / "trac_demo.yaml"
    kwargs = yaml.load(demo.read_text(), Loader)["generation_kwargs"]  # noqa: S506 - a safe loader with one tag
    kwargs["trac"]["prefix_probes"] = FRACTIONS
    kwargs["trac"]["metadata_fields"] = ["subject", "level"]  # the fields the easy rows have
    rows = tasks.parent / "easy_rows.jsonl"
    rows.write_text(render(easy_rows()[:DEMO_ROWS]), encoding="utf-8")
    (tasks / f"{DEMO}.yaml").write_text(
        f"include: {demo}\ntask: {DEMO}\ndataset_kwargs:\n  data_file: {rows}\n"
        f"generation_kwargs: {json.dumps(kwargs)}\n"
    )


def _write_tasks(root: Path) -> Path:
    """lm-eval's own YAMLs, included as they are, with only the data swapped for local rows; the demo task with
    prefix probes."""
    gsm8k = [{"question": row["problem"], "answer": f"{row['solution']}\n#### {row['answer']}"} for row in GSM8K_ROWS]
    gpqa = [
        {
            "Question": f"Which number equals {a} + {b}?",
            "Correct Answer": str(a + b),
            **{f"Incorrect Answer {n}": str(wrong) for n, wrong in enumerate((a + b + 1, a + b + 2, a * b + 7), 1)},
        }
        for a, b in [(1, 1), (2, 2), (3, 4), (5, 5), (8, 1), (6, 3)]
    ]
    files = {"gsm8k.jsonl": gsm8k, "gpqa.jsonl": gpqa}
    for name, rows in files.items():
        (root / name).write_text("".join(json.dumps(row) + "\n" for row in rows))
    (root / "math500.jsonl").write_text(render(easy_rows()[:N_DOCS]))
    tasks = root / "tasks"
    tasks.mkdir()
    local = {
        GSM8K: (LM_EVAL_TASKS / "gsm8k" / "gsm8k-cot-zeroshot.yaml", "gsm8k.jsonl", ("test", "train")),
        MINERVA: (LM_EVAL_TASKS / "minerva_math" / "minerva_math500.yaml", "math500.jsonl", ("test",)),
        GPQA: (LM_EVAL_TASKS / "gpqa" / "cot_zeroshot" / "gpqa_diamond_cot_zeroshot.yaml", "gpqa.jsonl", ("train",)),
    }
    for task, (included, data, splits) in local.items():
        data_files = "".join(f"    {split}: {root / data}\n" for split in splits)
        (tasks / f"{task}.yaml").write_text(
            f"include: {included}\ntask: {task}\ndataset_path: json\ndataset_name: null\n"
            f"dataset_kwargs:\n  data_files:\n{data_files}"
        )
    (tasks / f"{LOGLIKELIHOOD}.yaml").write_text(
        f"""task: {LOGLIKELIHOOD}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {root / "gsm8k.jsonl"}
output_type: multiple_choice
test_split: test
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_choice: ["{{{{answer.split('#### ')[-1]}}}}", "100"]
doc_to_target: 0
metric_list:
  - metric: acc
"""
    )
    _write_demo_with_prefix_probes(tasks)
    return tasks


def _run(
    root: Path, tasks: Path, name: str, *extra: str, task_names: tuple[str, ...], gen_kwargs: str = "max_gen_toks=48"
) -> LmEvalRun:
    model_args = (
        # float32: in bfloat16 a different batch composition (the probes run beside the generations) can flip a
        # greedy near-tie of the tiny model, as between any two differently batched vLLM runs
        f"pretrained={root.parent / 'model'},dtype=float32,max_model_len=2048,enable_prefix_caching=True,"
        "block_size=32,enforce_eager=True,distributed_executor_backend=uni,seed=1234"
    )
    out = root / name
    command = lm_eval_command(
        tasks,
        "vllm",
        model_args,
        out,
        "--log_samples",
        "--batch_size",
        "auto",  # lm-eval's own path (plain tasks, log-likelihoods) as one vLLM batch, not request by request
        "--gen_kwargs",
        gen_kwargs,
        *extra,
        tasks=",".join(task_names),
    )
    result = subprocess.run(command, capture_output=True, text=True, timeout=2400, env=engine_env(), cwd=root)
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"lm_eval failed ({result.returncode}):\n{log[-6000:]}"
    return LmEvalRun(out, log)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_model):
    root = tmp_path_factory.mktemp("lm_eval_tasks")
    (root.parent / "model").symlink_to(tiny_model)
    tasks = _write_tasks(root)
    everything = (*GENERATIVE, LOGLIKELIHOOD)
    switch = {"repeats": K, "label_filter": LABEL_FILTERS, "label_metric": LABEL_METRICS}
    return {
        "plain": _run(root, tasks, "plain", task_names=everything),
        "k1": _run(root, tasks, "k1", "--metadata", json.dumps({"trac": {}}), task_names=everything),
        "k4": _run(
            root,
            tasks,
            "k4",
            "--metadata",
            json.dumps({"trac": switch}),
            task_names=(*everything, DEMO),
            gen_kwargs=f"max_gen_toks=48,repeats={K}",  # K of trac_demo too
        ),
    }


def _own_metrics(run: LmEvalRun, task: str) -> dict[str, float]:
    """The task's own results keys (``<metric>,<filter>``), without the ``trac`` filter's."""
    results = run.results()["results"][task]
    return {key: value for key, value in results.items() if "," in key and not key.endswith(",trac")}


def _records(run: LmEvalRun, task: str) -> list:
    return [record for path in run.record_files(task) for record in iter_records(path)]


def test_a_run_without_the_switch_is_plain_lm_eval(runs):
    plain = runs["plain"]
    for task in (*GENERATIVE, LOGLIKELIHOOD):
        assert not any(key.endswith(",trac") for key in plain.results()["results"][task])
        assert _records(plain, task) == []
    assert "TrAC" not in plain.log


def test_the_switch_at_k1_leaves_every_task_metric_as_it_was(runs):
    for task in (*GENERATIVE, LOGLIKELIHOOD):
        assert _own_metrics(runs["k1"], task) == _own_metrics(runs["plain"], task), task
    for task in GENERATIVE:
        samples = {(s["doc_id"], s["filter"]): s["filtered_resps"] for s in runs["plain"].samples(task)}
        switched = {(s["doc_id"], s["filter"]): s["filtered_resps"] for s in runs["k1"].samples(task)}
        assert {key: switched[key] for key in samples} == samples, task


def test_a_task_that_is_not_generative_runs_unchanged_with_one_log_line(runs):
    assert _own_metrics(runs["k4"], LOGLIKELIHOOD) == _own_metrics(runs["plain"], LOGLIKELIHOOD)
    assert not any(key.endswith(",trac") for key in runs["k4"].results()["results"][LOGLIKELIHOOD])
    lines = [line for line in runs["k4"].log.splitlines() if f"task {LOGLIKELIHOOD} is multiple_choice" in line]
    assert len(lines) == 1 and "TrAC does not apply" in lines[0]


def test_the_primary_accuracy_is_the_tasks_own_metric_for_the_label_filter(runs):
    for task in GENERATIVE:
        results = runs["k4"].results()["results"][task]
        source = f"{LABEL_METRICS.get(task, 'exact_match')},{LABEL_FILTERS[task]}"
        assert results["acc,trac"] == pytest.approx(results[source]), task
        assert runs["k4"].results()["configs"][task]["repeats"] == K


def test_records_carry_the_tasks_labels_and_name_their_source(runs):
    for task in GENERATIVE:
        records = _records(runs["k4"], task)
        assert len(records) == (len(GSM8K_ROWS) if task == GSM8K else N_DOCS) * K
        source = f"{LABEL_METRICS.get(task, 'exact_match')},{LABEL_FILTERS[task]}"
        assert {record.label_source for record in records} == {source}
        primaries = {str(record.doc_id): record for record in records if record.repeat == 0}
        own = {
            str(sample["doc_id"]): sample[source.split(",")[0]]
            for sample in runs["k4"].samples(task)
            if sample["filter"] == LABEL_FILTERS[task]
        }
        assert {doc: int(record.label) for doc, record in primaries.items()} == own, task
        assert all(record.probes["trace"].appended_text.endswith("\\boxed{") for record in records)


def test_answers_come_from_the_tasks_filter_where_it_extracts_one(runs):
    gsm8k = _records(runs["k4"], GSM8K)
    assert {record.answer_kind for record in gsm8k} == {"math"}
    assert {record.reference for record in gsm8k} == {row["answer"] for row in GSM8K_ROWS}
    answered = [record for record in gsm8k if record.answer is not None]
    assert answered and all(record.answer in record.text for record in answered)
    assert {record.answer_kind for record in _records(runs["k4"], GPQA)} == {"mc"}


def test_trac_metrics_are_finite_where_both_classes_exist(runs):
    """The baselines' ranking metrics wherever both classes exist; what is cross-fitted (the heads, the baselines'
    calibration maps) where each class has at least 5 questions (with fewer, docs/method.md#degenerate-data may make
    it NaN)."""
    supported = 0
    for task in (*GENERATIVE, DEMO):
        suffix = "none" if task == DEMO else "trac"
        results = runs["k4"].results()["results"][task]
        accuracy, n_questions = results[f"acc,{suffix}"], len(_records(runs["k4"], task)) // K
        assert f"trac_auroc,{suffix}" in results and f"trac_ece,{suffix}" in results
        if 0 < accuracy < 1:
            for key in ("sc_modal_auroc", "mean_logprob_auroc", "mean_logprob_prr"):
                assert math.isfinite(results[f"{key},{suffix}"]), (task, key)
        if min(accuracy, 1 - accuracy) * n_questions >= 5:  # cross-fitted: heads and calibration maps
            supported += 1
            for key in ("trac_auroc", "trac_aurc", "trac_ece", "trac_prr", "mean_logprob_ece"):
                assert math.isfinite(results[f"{key},{suffix}"]), (task, key)
    assert supported >= 1, "a task must have both classes with >= 5 questions each"


@pytest.fixture(scope="module")
def leaderboard(runs, tmp_path_factory) -> str:
    """``trac report`` of the K = 4 run: its leaderboard."""
    report = tmp_path_factory.mktemp("report")
    trac_main(["report", str(runs["k4"].out / "trac_records"), "--out", str(report), "--resamples", "200"])
    return (report / "leaderboard.md").read_text()


def test_trac_report_reads_lm_eval_tasks_beside_a_trac_task(leaderboard):
    pairs = [line for line in leaderboard.splitlines() if line.startswith("- ")]
    for task in (*GENERATIVE, DEMO):
        assert sum(task in line for line in pairs) == 1, (task, pairs)


def test_every_demo_record_holds_its_prefix_probes_served_from_the_prefix_cache(runs, tiny_tokenizer):
    """docs/method.md#prefix-probes: each of the K samples is probed after its trace cut at each fraction (the cut of
    its trace body, the EOS dropped), as prompt + kept trace + cue, submitted as its trace finishes: every whole
    32-token block of prompt + kept trace is still cached, only the last partial block and the cue are computed."""
    records = _records(runs["k4"], DEMO)
    assert len(records) == DEMO_ROWS * K
    cue = len(tiny_tokenizer(DEFAULT_CUE, add_special_tokens=False).input_ids)
    decode = lambda ids: tiny_tokenizer.decode(list(ids), skip_special_tokens=True)  # noqa: E731
    for record in records:
        body = trace_body(record.token_ids.tolist(), {tiny_tokenizer.eos_token_id})  # no thinking section
        assert [probe.fraction for probe in record.prefix_probes] == FRACTIONS, record.key
        for probe in record.prefix_probes:
            assert probe.trace_tokens == prefix_cut(body, probe.fraction, decode), record.key
            assert probe.num_prompt_tokens == record.prompt_token_count + probe.trace_tokens + cue
            assert probe.variant == "prefix" and probe.appended_text == DEFAULT_CUE
            assert probe.num_cached_tokens >= 32 * ((probe.num_prompt_tokens - cue - 1) // 32)
    probes = [probe for record in records for probe in record.prefix_probes]
    assert sum(probe.trace_tokens > 0 for probe in probes) >= len(probes) // 10, "too few traces to cut"
    assert all(probe.num_cached_tokens > 0 for probe in probes), "the demo's prompts alone fill a 32-token block"
    cached = sum(probe.num_cached_tokens for probe in probes) / sum(probe.num_prompt_tokens for probe in probes)
    assert f"(prefix probes {100 * cached:.1f} %)" in runs["k4"].log


def test_the_prefix_probe_methods_are_scored_beside_trac(runs, leaderboard):
    """The demo's results and the report's leaderboard hold the prefix-probe methods next to TrAC; the lm-eval
    tasks run without the switch do not compute them."""
    results = runs["k4"].results()["results"]
    methods = ("answer_convergence", "prefix_agreement", "prefix_agreement_weighted", "trac_prefix")
    for method in methods:
        assert f"{method}_auroc,none" in results[DEMO]
        assert all(f"{method}_auroc,trac" not in results[task] for task in GENERATIVE)
    rows = [line.split("|")[2].strip() for line in leaderboard.splitlines() if line.startswith("| ")]
    labels = ("Prefix convergence (Liu & Wang)", "Prefix agreement", "Prefix agreement (likelihood-weighted)")
    assert rows.index("TrAC + prefix probes") == rows.index("TrAC") + 1 and set(labels) <= set(rows)
