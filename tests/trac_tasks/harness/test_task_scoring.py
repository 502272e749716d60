"""TrAC on lm-eval's own tasks, without an engine (docs/method.md#task-scored-labels,
docs/architecture.md#trac-on-lm-eval-tasks): the ``--metadata`` switch, the answer kind inferred from a reference,
the task's own scoring of one response, the wrapped task object, and task-scored labels in records and evidence.
The tasks are lm-eval's installed ``gsm8k_cot_zeroshot`` YAML on local rows and a log-likelihood task."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import lm_eval.tasks
import numpy as np
import pytest
from lm_eval.tasks import TaskManager
from record_factory import synthetic_question

from trac_metrics.answers.kind_inference import infer_answer_kind, task_reference
from trac_metrics.features.evidence import EvidenceOptions, question_evidence
from trac_metrics.records import RecordFormatError, ResponseRecord
from trac_tasks.generation.config import TRAC_KEY, TracConfig
from trac_tasks.harness.lm_eval_hooks import refuse_greedy_samples
from trac_tasks.harness.task_functions import AllSamples
from trac_tasks.harness.task_scoring import TRAC_FILTER, TaskSwitch, enable_trac_on_tasks, scorer_of

GSM8K_YAML = Path(lm_eval.tasks.__file__).parent / "gsm8k" / "gsm8k-cot-zeroshot.yaml"
ROWS = [
    {"question": "What is 2 + 3?", "answer": "2 + 3 = 5\n#### 5"},
    {"question": "What is 4 + 4?", "answer": "4 + 4 = 8\n#### 8"},
]


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "gsm8k_unit.yaml").write_text(
        f"include: {GSM8K_YAML}\ntask: gsm8k_unit\ndataset_path: json\ndataset_name: null\n"
        f"dataset_kwargs:\n  data_files:\n    test: {data}\n    train: {data}\n"
    )
    (tasks / "own_trac_unit.yaml").write_text(
        "include: gsm8k_unit.yaml\ntask: own_trac_unit\ngeneration_kwargs:\n  until: []\n  do_sample: false\n"
        "  trac:\n    answer_kind: math\n    reference: '{{answer}}'\n"
    )
    (tasks / "mc_unit.yaml").write_text(
        f"task: mc_unit\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {data}\n"
        "output_type: multiple_choice\ntest_split: test\ndoc_to_text: '{{question}}'\n"
        "doc_to_choice: ['5', '8']\ndoc_to_target: 0\nmetric_list:\n  - metric: acc\n"
    )
    return tasks


def _load(tasks_dir: Path, switch, *names: str) -> dict:
    manager = TaskManager(include_path=str(tasks_dir), include_defaults=False, metadata={TRAC_KEY: switch})
    return manager.load(list(names))["tasks"]


# ------------------------------------------------------------------------------------------------- the switch
def test_the_switch_parses_every_key_and_names_the_task_in_errors():
    switch = TaskSwitch.parse(
        {"repeats": 4, "temperature": 0.6, "label_filter": {"t": "flexible-extract"}, "probe_variants": ["trace"]}, "t"
    )
    assert switch.repeats == 4 and switch.temperature == 0.6 and switch.probe_variants == ("trace",)
    assert TaskSwitch.parse(True, "t") == TaskSwitch() == TaskSwitch.parse({}, "t")
    bad = [
        ({"repeat": 4}, "unknown --metadata trac keys"),
        ({"repeats": "4"}, "trac.repeats must be an integer"),
        ({"repeats": 0}, "trac.repeats must be an integer"),
        ({"repeats": True}, "trac.repeats must be an integer"),
        ({"temperature": float("nan")}, "trac.temperature must be a finite number"),
        ({"top_p": 0}, "trac.top_p must be a number in (0, 1]"),
        ({"label_filter": {"t": 3}}, "trac.label_filter must be a string or an object"),
        ({"answer_kind": "number"}, "trac.answer_kind must be one of"),
        ({"p_true": "false"}, "trac.p_true must be true or false"),
        ({"labels": "sympy"}, "trac.labels must be one of"),
        ({"prefix_probes": [0.5, "0.75"]}, "trac.prefix_probes must be a list of numbers"),
        ("yes", "must be a JSON object"),
    ]
    for value, message in bad:
        with pytest.raises(ValueError, match="task t: .*" + message.replace("(", r"\(").replace(")", r"\)")):
            TaskSwitch.parse(value, "t")


@pytest.mark.parametrize(
    ("reference", "kind"),
    [("(B)", "mc"), ("C", "mc"), ("D.", "mc"), ("72", "math"), ("-3.5", "math"), (r"\frac{1}{2}", "math"),
     ("x^2 + 1", "math"), ("(1, 2)", "math"), (r"$\sqrt{3}$", "math"), ("Yes", "text"), ("valid", "text"),
     (r"\text{Tuesday}", "text"), ("", "text")],
)  # fmt: skip
def test_the_answer_kind_is_inferred_from_the_reference(reference, kind):
    assert infer_answer_kind(reference) == kind


def test_a_gsm8k_solution_is_read_after_its_last_final_mark():
    assert task_reference("3 + 4 = 7 apples\n#### 7") == "7"
    assert task_reference(" (B) ") == "(B)"


# ------------------------------------------------------------------------------------------ the task's scoring
def test_the_scorer_gives_the_tasks_own_filtered_answer_and_label(tasks_dir):
    task = _load(tasks_dir, {}, "gsm8k_unit")["gsm8k_unit"]
    enable_trac_on_tasks([task])
    scorer, doc = scorer_of("gsm8k_unit"), next(iter(task.test_docs()))
    assert scorer.label_source == "exact_match,strict-match"
    assert scorer.reference(doc) == "5" and scorer.kind(doc) == "math"
    assert scorer.answer(doc, "2 and 3 make 5. The answer is 5.", "math") == "5"
    assert scorer.label(doc, "2 and 3 make 5. The answer is 5.") is True
    assert scorer.label(doc, "The answer is 6.") is False
    assert scorer.answer(doc, "no answer here", "math") is None  # the regex filter's fallback "[invalid]"
    assert scorer.label(doc, "no answer here") is False


def test_a_task_without_an_extracting_filter_gets_trac_evals_extraction(tasks_dir):
    task = _load(tasks_dir, {"label_filter": {"gsm8k_unit": "flexible-extract"}}, "gsm8k_unit")["gsm8k_unit"]
    enable_trac_on_tasks([task])
    scorer, doc = scorer_of("gsm8k_unit"), next(iter(task.test_docs()))
    assert scorer.label_source == "exact_match,flexible-extract"
    assert scorer.answer(doc, "So 2 + 3 = 5", "math") == "5"
    assert scorer.label(doc, "So 2 + 3 = 5") is True


def test_unknown_label_filters_and_metrics_are_refused_naming_what_the_task_has(tasks_dir):
    for switch, message in [
        ({"label_filter": "strict"}, r"label filter 'strict' is not one of its filters \['strict-match'"),
        ({"label_metric": "acc"}, r"label metric 'acc' is not one of its metrics \['exact_match'\]"),
    ]:
        task = _load(tasks_dir, switch, "gsm8k_unit")["gsm8k_unit"]
        with pytest.raises(ValueError, match="task gsm8k_unit: " + message):
            enable_trac_on_tasks([task])


def test_a_label_metric_that_is_not_0_or_1_is_an_error(tasks_dir):
    task = _load(tasks_dir, {}, "gsm8k_unit")["gsm8k_unit"]
    enable_trac_on_tasks([task])
    task.config.task = "gsm8k_unit"
    original = type(task).process_results
    scorer = scorer_of("gsm8k_unit")
    object.__setattr__(scorer, "task", task)
    task.process_results = lambda doc, results: {**original(task, doc, results), "exact_match": 0.5}
    with pytest.raises(ValueError, match="gave 0.5 for a single response; TrAC needs a 0/1 score"):
        scorer.label(next(iter(task.test_docs())), "The answer is 5.")


# --------------------------------------------------------------------------------------------- the task object
def test_a_greedy_task_asked_for_k_samples_samples_with_stated_defaults(tasks_dir, caplog):
    task = _load(tasks_dir, {"repeats": 4}, "gsm8k_unit")["gsm8k_unit"]
    with caplog.at_level(logging.WARNING, logger="lm_eval.trac_eval"):
        enable_trac_on_tasks([task])
    kwargs = task.config.generation_kwargs
    assert task.config.repeats == 4 and kwargs["do_sample"] is True
    assert (kwargs["temperature"], kwargs["top_p"]) == (0.7, 0.95)
    assert kwargs["until"] == ["Q:", "</s>", "<|im_end|>"]
    assert "decodes greedily, but K = 4 samples need sampling" in caplog.text
    greedy = _load(tasks_dir, {"repeats": 4, "temperature": 0}, "gsm8k_unit")["gsm8k_unit"]
    with pytest.raises(ValueError, match="greedy samples would be identical"):
        enable_trac_on_tasks([greedy])


@pytest.mark.parametrize(
    ("switch", "reason"),
    [({"temperature": 0.001}, "temperature 0.001 is below 0.05"), ({"temperature": 0.7}, None)],
)
def test_k_nearly_greedy_samples_are_refused_through_the_switch(tasks_dir, switch, reason):
    task = _load(tasks_dir, {"repeats": 4, **switch}, "gsm8k_unit")["gsm8k_unit"]
    if reason is None:
        enable_trac_on_tasks([task])
        return
    with pytest.raises(ValueError, match=f"K = 4 samples would be nearly identical \\({reason}\\)"):
        enable_trac_on_tasks([task])


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [({"top_k": 1}, "top_k = 1 keeps one candidate token a step"), ({"temperature": 0.01}, "temperature 0.01")],
)
def test_a_trac_task_asked_for_k_nearly_greedy_samples_is_refused_before_generation(tasks_dir, kwargs, reason):
    task = _load(tasks_dir, {}, "own_trac_unit")["own_trac_unit"]
    task.config.generation_kwargs.update({"do_sample": True, "temperature": 0.7, **kwargs})
    task.config.repeats = 2
    with pytest.raises(ValueError, match=f"task own_trac_unit: K = 2 samples would be nearly identical \\({reason}"):
        refuse_greedy_samples({"own_trac_unit": task})
    task.config.repeats = 1  # one sample: nothing to compare
    refuse_greedy_samples({"own_trac_unit": task})


def test_k1_leaves_the_tasks_decoding_as_it_is(tasks_dir):
    task = _load(tasks_dir, {}, "gsm8k_unit")["gsm8k_unit"]
    before = dict(task.config.generation_kwargs)
    enable_trac_on_tasks([task])
    assert task.config.generation_kwargs == before and task.config.repeats == 1


def test_the_labels_switch_travels_in_every_request_block_and_replaces_the_tasks_scoring(tasks_dir):
    task = _load(tasks_dir, {"labels": "math-verify"}, "gsm8k_unit")["gsm8k_unit"]
    enable_trac_on_tasks([task])
    task.build_all_requests(limit=1, rank=0, world_size=1)
    (instance,) = task.instances
    config = TracConfig.from_gen_kwargs(instance.args[1], "gsm8k_unit")
    # Math-Verify labels the answers, not the task's own scoring: the record's labeller and its label agree
    assert (config.labels, config.label_source) == ("math-verify", "")


def test_the_prefix_probes_switch_travels_in_every_request_block_and_is_checked_there(tasks_dir):
    task = _load(tasks_dir, {"prefix_probes": [0.25, 0.5]}, "gsm8k_unit")["gsm8k_unit"]
    enable_trac_on_tasks([task])
    task.build_all_requests(limit=1, rank=0, world_size=1)
    (instance,) = task.instances
    assert TracConfig.from_gen_kwargs(instance.args[1], "gsm8k_unit").prefix_probes == (0.25, 0.5)
    unsorted = _load(tasks_dir, {"prefix_probes": [0.5, 0.25]}, "gsm8k_unit")["gsm8k_unit"]
    enable_trac_on_tasks([unsorted])
    with pytest.raises(ValueError, match="task gsm8k_unit: trac.prefix_probes must be strictly increasing"):
        unsorted.build_all_requests(limit=1, rank=0, world_size=1)


def test_requests_carry_a_per_document_trac_block_the_runner_accepts(tasks_dir):
    task = _load(tasks_dir, {"repeats": 2, "temperature": 0.5}, "gsm8k_unit")["gsm8k_unit"]
    enable_trac_on_tasks([task])
    task.build_all_requests(limit=2, rank=0, world_size=1)
    for instance in task.instances:
        block = instance.args[1][TRAC_KEY]
        config = TracConfig.from_gen_kwargs(instance.args[1], "gsm8k_unit")
        assert config.render_reference(instance.doc) == instance.doc["answer"].split("#### ")[-1]
        assert (config.kind_for(instance.doc), config.label_source) == ("math", "exact_match,strict-match")
        assert block["answer_kind"] == "math" and instance.repeats == 2


def test_the_trac_filter_and_metrics_join_the_tasks_own(tasks_dir):
    task = _load(tasks_dir, {}, "gsm8k_unit")["gsm8k_unit"]
    own_aggregation = dict(task.aggregation())
    enable_trac_on_tasks([task])
    assert {**own_aggregation, TRAC_KEY: task.aggregation()[TRAC_KEY]}.items() <= task.aggregation().items()
    assert task.higher_is_better()[TRAC_KEY] is True
    task.build_all_requests(limit=1, rank=0, world_size=1)
    (instance,) = task.instances
    instance.resps.append("The answer is 5.")
    task.apply_filters()
    assert set(instance.filtered_resps) == {"strict-match", "flexible-extract", TRAC_FILTER}
    assert isinstance(instance.filtered_resps[TRAC_FILTER], AllSamples)
    own = task.process_results(instance.doc, [instance.filtered_resps["strict-match"]])
    assert own == {"exact_match": 1.0}


def test_tasks_that_are_not_generative_or_already_trac_tasks_are_left_alone(tasks_dir, caplog):
    task = _load(tasks_dir, {"repeats": 3}, "mc_unit")["mc_unit"]
    methods = {name: getattr(task, name) for name in ("construct_requests", "process_results", "aggregation")}
    with caplog.at_level(logging.INFO, logger="lm_eval.trac_eval"):
        enable_trac_on_tasks([task])
    assert "task mc_unit is multiple_choice, not generate_until: TrAC does not apply" in caplog.text
    assert {name: getattr(task, name) for name in methods} == methods and task.config.repeats == 1


def test_a_switch_that_reaches_only_tasks_with_their_own_trac_block_is_refused_else_they_are_named(tasks_dir, caplog):
    own = _load(tasks_dir, {"repeats": 3}, "own_trac_unit")["own_trac_unit"]
    with pytest.raises(ValueError, match="--metadata trac .* own_trac_unit already have their own trac block"):
        enable_trac_on_tasks([own])
    both = _load(tasks_dir, {"repeats": 3}, "own_trac_unit", "gsm8k_unit")
    with caplog.at_level(logging.WARNING, logger="lm_eval.trac_eval"):
        enable_trac_on_tasks(list(both.values()))
    assert "task own_trac_unit has its own trac block: --metadata trac does not change it" in caplog.text
    assert both["gsm8k_unit"].config.repeats == 3 and both["own_trac_unit"].config.repeats == 1


# ------------------------------------------------------------------------------------ records and evidence
def _record(repeat: int, answer: str, **label) -> ResponseRecord:
    """Response ``repeat`` of a synthetic question whose reference is "10", with ``answer`` and the given label."""
    record = synthetic_question(np.random.default_rng(0), doc_id=0, correct=True, k=3)[repeat]
    return dataclasses.replace(record, answer=answer, **label)


def test_a_task_scored_label_travels_with_its_source_and_other_records_stay_as_before():
    plain = _record(0, "10")
    assert "label" not in plain.to_dict() and "label_source" not in plain.to_dict()
    scored = _record(0, "10", label=False, label_source="exact_match,strict-match")
    again = ResponseRecord.from_dict(json.loads(json.dumps(scored.to_dict())))
    assert (again.label, again.label_source) == (False, "exact_match,strict-match")
    with pytest.raises(RecordFormatError, match="label and label_source come together"):
        _record(0, "10", label=True)
    with pytest.raises(RecordFormatError, match="field 'label' must be true or false"):
        ResponseRecord.from_dict({**scored.to_dict(), "label": 1})


def test_evidence_uses_task_labels_unless_the_options_relabel():
    source = {"label_source": "exact_match,flexible-extract"}
    records = [_record(0, "10", label=False, **source), _record(1, "11", label=True, **source)]
    records.append(_record(2, "11", label=True, **source))
    evidence = question_evidence(records)
    assert (evidence["correct"], evidence["majority_correct"]) == (0, 1)
    relabelled = question_evidence(records, EvidenceOptions(answer_kind="math"))
    assert (relabelled["correct"], relabelled["majority_correct"]) == (1, 0)
