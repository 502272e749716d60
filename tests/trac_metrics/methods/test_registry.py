"""The method registry's common tests (docs/architecture.md#method-registry), in the spirit of scikit-learn's common
estimator checks: every registered method appears in every place derived from the registry (lm-eval's results and
samples, ``trac summary``, the leaderboard, the ``trac_math`` group, latency, saved heads), a method registered
the user guide's way (docs/guide/extending.md) shows up everywhere with no other edit, and every metric function
passes the same generic checks (orientation, ties, NaN handling, determinism).

Results keys are unique by construction, and a method that reads another's score by name declares it, so the
dependency cannot be unregistered under it.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from record_factory import synthetic_question, with_every_input
from testenv import REPO

from trac_metrics import TracWarning, selective
from trac_metrics.cli import summary
from trac_metrics.features.cross_model import Judgement, judgements_file, write_judgements
from trac_metrics.features.evidence import question_evidence
from trac_metrics.methods import (
    ACCURACY_KEYS,
    Family,
    Method,
    Question,
    Scope,
    all_methods,
    get,
    group_methods,
    register,
    register_all,
    unregister,
)
from trac_metrics.methods.group_yaml import GROUP_FILE, group_yaml
from trac_metrics.records import RecordWriter, iter_records
from trac_metrics.reporting.leaderboard import CALIBRATION_TABLE_METRICS, calibration_table, main_table
from trac_metrics.reporting.report_data import build_report_data
from trac_metrics.reporting.runs import load_pairs
from trac_metrics.reporting.summary_table import method_table
from trac_metrics.selective import METRIC_NAMES
from trac_tasks.harness.task_functions import aggregate_trac, process_results

GUIDE = REPO / "docs" / "guide" / "extending.md"
K, N_QUESTIONS, TASK = 4, 30, "trac_gsm8k"
METHODS = [method.name for method in all_methods()]


def write_runs(root: Path) -> list[Path]:
    """Two models' records of one task, every optional input present (P(True), the ablation probes, a judge's
    judgements)."""
    rng = np.random.default_rng(7)
    folders = []
    for model in ("model-a", "model-b"):
        writer = RecordWriter(root / model / "trac_records" / f"{TASK}.2026-01-01T00-00-00.jsonl")
        judgements = []
        for doc_id in range(N_QUESTIONS):
            question = synthetic_question(rng, doc_id, rng.random() < 0.5, k=K, signal=0.5, task=TASK, model=model)
            writer.write_batch(with_every_input(question, rng))
            value = -float(rng.uniform(0.01, 3.0))
            judgements.append(Judgement(TASK, model, doc_id, "judge", value, 2, None, False, 0.01))
        write_judgements(judgements_file(root / model, TASK, "judge"), judgements)
        folders.append(root / model)
    return folders


def derived_outputs(root: Path) -> SimpleNamespace:
    """Everything the registry feeds, computed from the runs under ``root`` with the methods registered now: the
    lm-eval aggregation (results keys, samples' scores), ``trac summary`` of that results file, the leaderboard of
    ``trac report`` and the report's evaluation."""
    folders = write_runs(root)
    records = sorted(
        iter_records(next(folders[0].rglob("trac_records/*.jsonl"))), key=lambda record: (record.doc_id, record.repeat)
    )
    per_doc = [
        process_results({}, [[SimpleNamespace(record=record) for record in records[i : i + K]]])
        for i in range(0, len(records), K)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        results = aggregate_trac([document["trac"] for document in per_doc])
        data = build_report_data(load_pairs(folders, jobs=1), n_resamples=20, jobs=1)
    out = root / "lm_eval_out"
    (out / "model").mkdir(parents=True)
    (out / "model" / "results_2026-01-01T00-00-00.json").write_text(
        json.dumps({"results": {TASK: {"acc,none": 0.5, **{f"{key},none": value for key, value in results.items()}}}})
    )
    return SimpleNamespace(
        results=dict(results),
        samples=per_doc[0]["trac"]["scores"],
        samples_p_correct=per_doc[0]["trac"].get("p_correct", {}),
        summary=summary(out),
        leaderboard=main_table(data).frame.index.tolist(),
        calibration_table=calibration_table(data).frame,
        data=data,
        evaluation=data.evaluations[0],
        pair=data.pairs[0],
    )


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    return derived_outputs(tmp_path_factory.mktemp("registry"))


def summary_rows(text: str, table: int = 0) -> list[str]:
    """The method rows of a table of ``trac summary``: 0 the ranking metrics, 1 the calibration metrics after it."""
    shown = text.split("\ncalibration:\n")[table]
    return re.findall(r"^\s*(\w+) \|\s+(?:-?\d|nan)", shown, flags=re.MULTILINE)


# ------------------------------------------------------------------------------- every method, every consumer


@pytest.mark.parametrize("name", METHODS)
def test_every_task_method_is_in_lm_evals_results_and_samples(outputs: SimpleNamespace, name: str) -> None:
    reported = get(name).scope is Scope.TASK
    assert all((f"{name}_{metric}" in outputs.results) == reported for metric in METRIC_NAMES)
    assert (name in outputs.samples) == reported


@pytest.mark.parametrize("name", METHODS)
def test_every_task_method_is_a_row_of_trac_summary_in_registry_order(outputs: SimpleNamespace, name: str) -> None:
    rows = summary_rows(outputs.summary)
    assert (name in rows) == (get(name).scope is Scope.TASK)
    assert rows == [method.name for method in all_methods() if method.scope is Scope.TASK]


@pytest.mark.parametrize("name", METHODS)
def test_every_task_method_has_a_probability_in_lm_evals_samples(outputs: SimpleNamespace, name: str) -> None:
    reported = get(name).scope is Scope.TASK
    assert (name in outputs.samples_p_correct) == reported
    if reported:
        assert 0.0 <= outputs.samples_p_correct[name] <= 1.0


@pytest.mark.parametrize("name", METHODS)
def test_every_task_method_is_a_row_of_both_summary_tables(outputs: SimpleNamespace, name: str) -> None:
    header = next(line for line in outputs.summary.split("\ncalibration:\n")[1].splitlines() if "method" in line)
    assert header.replace("|", " ").split() == ["method", *selective.CALIBRATION_METRIC_NAMES]
    assert (name in summary_rows(outputs.summary, 1)) == (get(name).scope is Scope.TASK)
    assert summary_rows(outputs.summary, 1) == summary_rows(outputs.summary, 0)


@pytest.mark.parametrize("name", METHODS)
def test_every_leaderboard_method_has_the_new_metrics_with_intervals(outputs: SimpleNamespace, name: str) -> None:
    method = get(name)
    labels = [label for _, label in outputs.calibration_table.index]
    assert (method.display(str(K)) in labels) == (method.leaderboard_row is not None)
    for metric in CALIBRATION_TABLE_METRICS:
        assert f"macro {selective.METRIC_LABELS[metric]}" in outputs.calibration_table.columns
        assert np.isfinite(outputs.data.macro(name, metric))
        if metric != "smece":  # relplot's smECE is too slow to resample: no interval
            lo, hi = outputs.data.ci(name, metric)
            assert lo <= hi and name in outputs.data.bootstraps[metric].methods


@pytest.mark.parametrize("name", METHODS)
def test_every_ranked_method_is_a_leaderboard_row_of_its_block(outputs: SimpleNamespace, name: str) -> None:
    method = get(name)
    rows = [(block, label) for block, label in outputs.leaderboard if label == method.display(str(K))]
    if method.leaderboard_row is None:
        assert rows == []
    else:
        assert len(rows) == 1 and rows[0][0].startswith(method.block)


@pytest.mark.parametrize("name", METHODS)
def test_every_method_is_evaluated_by_a_report_and_has_a_finite_latency(outputs: SimpleNamespace, name: str) -> None:
    assert name in outputs.evaluation.scores
    assert math.isfinite(outputs.pair.relative_latency(name))


@pytest.mark.parametrize("name", METHODS)
def test_every_method_without_a_switch_is_averaged_by_the_math_group(name: str) -> None:
    method = get(name)
    in_group = method.scope is Scope.TASK and method.switch is None
    committed = GROUP_FILE.read_text(encoding="utf-8")
    assert all((f"{{metric: {name}_{metric}," in committed) == in_group for metric in METRIC_NAMES)
    assert (method in group_methods()) == in_group


@pytest.mark.parametrize("name", [method.name for method in all_methods() if method.feature_names is not None])
def test_a_saved_heads_columns_name_its_feature_row(outputs: SimpleNamespace, name: str) -> None:
    method = get(name)
    for n_bins in (8, 3):
        assert len(set(method.feature_names(n_bins))) == len(method.feature_names(n_bins))
    evidence = next(iter(outputs.pair.evidences))
    assert len(method.features(evidence)) == len(method.feature_names(8))


def test_the_committed_group_yaml_is_the_generated_one() -> None:
    assert GROUP_FILE.read_text(encoding="utf-8") == group_yaml(), (
        "task_configs/trac_math.yaml is out of date: run python -m trac_metrics.methods.group_yaml"
    )


def test_method_declarations_are_checked() -> None:
    score = get("mean_logprob").score
    with pytest.raises(ValueError, match="lowercase"):
        Method("Mean", "Mean", Family.SINGLE_TRACE, get("mean_logprob").cost, score=score)
    with pytest.raises(ValueError, match="a head has features"):
        Method("odd", "Odd", Family.HEAD, get("tup").cost, score=score)
    with pytest.raises(ValueError, match="registered already"):
        register(get("trac"))
    with pytest.raises(ValueError, match="no registered method 'nope'"):
        get("nope")


# ------------------------------------------------------------ the user guide's "Adding an uncertainty method" example


def guide_example() -> str:
    """The Python block of the user guide's section "Adding an uncertainty method" (docs/guide/extending.md)."""
    section = GUIDE.read_text(encoding="utf-8").split("## Adding an uncertainty method", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, flags=re.DOTALL).group(1)


@pytest.fixture
def guide_method():
    """The guide's method, registered for one test by exactly the guide's code, then removed."""
    before = set(METHODS)
    exec(guide_example(), {})  # noqa: S102 - the repository's own user guide
    (name,) = [method.name for method in all_methods() if method.name not in before]
    try:
        yield get(name)
    finally:
        unregister(name)


def test_a_method_registered_the_guide_way_shows_up_everywhere(guide_method: Method, tmp_path: Path) -> None:
    name = guide_method.name
    assert guide_method.family is Family.SINGLE_TRACE and not guide_method.higher_is_confident
    found = derived_outputs(tmp_path)
    assert {f"{name}_{metric}" for metric in METRIC_NAMES} <= set(found.results)
    assert name in found.samples and summary_rows(found.summary)[-1] == name
    single_trace = [label for block, label in found.leaderboard if block == "single-trace"]
    assert single_trace[-1] == guide_method.display(str(K))
    assert f"{{metric: {name}_auroc, filter_list: none, weight_by_size: false}}" in group_yaml()
    assert found.pair.relative_latency(name) == 1.0


def test_a_lower_is_confident_score_is_stored_negated(guide_method: Method) -> None:
    records = synthetic_question(np.random.default_rng(3), 0, True, k=K)
    raw = guide_method.score(Question(tuple(records), "math"))
    assert question_evidence(records)["baselines"][guide_method.name] == -raw != 0


def test_an_unregistered_method_is_gone_from_every_consumer() -> None:
    copy = register(dataclasses.replace(get("selfdoubt"), name="selfdoubt_copy"))
    metrics = {f"{copy.name}_{metric}": 0.5 for metric in METRIC_NAMES}
    try:
        assert method_table(metrics).index.tolist() == [copy.name] and copy in group_methods()
    finally:
        unregister(copy.name)
    assert method_table(metrics).empty and copy not in group_methods() and copy.name not in group_yaml()


# ------------------------------------------------------------------- generic checks of every metric function

COVERAGE = {selective.risk_key(c): c for c in selective.DEFAULT_COVERAGES}
HIGHER_IS_BETTER = {
    "auroc": True,
    **dict.fromkeys(("aurc", "e_aurc", "excess_aurc", *COVERAGE), False),
    **dict.fromkeys(("auprc", "prr", "prr_50"), True),
    **dict.fromkeys(("ece", "brier", "log_loss", "smece"), False),
}
RANKING = [name for name in METRIC_NAMES if name in selective.RANKING_METRIC_NAMES]
CALIBRATION = [name for name in METRIC_NAMES if name in selective.CALIBRATION_METRIC_NAMES]


def single_metric(name: str):
    """The stand-alone function of metric ``name`` (``risk_at_coverage`` at its coverage)."""
    if name in COVERAGE:
        return lambda scores, labels: selective.risk_at_coverage(scores, labels, COVERAGE[name])
    return getattr(selective, name)


def from_all_metrics(name: str):
    """Metric ``name`` from the function computing all metrics of its kind at once."""
    every = selective.ranking_metrics if name in RANKING else selective.calibration_metrics
    return lambda scores, labels: every(scores, labels)[name]


def params(names: list[str]) -> list:
    return [
        pytest.param(name, factory(name), id=f"{factory.__name__}-{name}")
        for name in names
        for factory in (single_metric, from_all_metrics)
    ]


def sample(seed: int, n: int = 60, ties: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < 0.55
    scores = labels * 0.8 + rng.normal(0, 1, n)
    return (np.round(scores * ties) / ties if ties else scores), labels.astype(int)


def probability_sample(seed: int, n: int = 60, ties: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Scores of :func:`sample` squashed into probabilities (ties kept)."""
    scores, labels = sample(seed, n, ties)
    return 1 / (1 + np.exp(-scores)), labels


def test_metric_names_cover_exactly_the_metrics_checked_here() -> None:
    assert set(HIGHER_IS_BETTER) == set(METRIC_NAMES) == set(RANKING) | set(CALIBRATION)
    assert HIGHER_IS_BETTER == selective.HIGHER_IS_BETTER
    assert list(selective.ranking_metrics([1.0, 0.0, 0.5, 0.2], [1, 0, 1, 0])) == RANKING
    assert list(selective.calibration_metrics([1.0, 0.0], [1, 0])) == CALIBRATION
    assert METRIC_NAMES == (*RANKING, *CALIBRATION)


@pytest.mark.parametrize(("name", "metric"), params(RANKING))
def test_orientation_perfect_ranking_is_best_and_reversed_is_worst(name: str, metric) -> None:
    scores, labels = sample(1)
    perfect, reversed_ = labels + 0.0, -(labels + 0.0)
    values = [metric(s, labels) for s in (perfect, scores, reversed_)]
    ordered = values[::-1] if HIGHER_IS_BETTER[name] else values  # ascending: worst to best or best to worst
    assert ordered[0] <= ordered[1] + 1e-12 and ordered[1] <= ordered[2] + 1e-12
    if name == "auroc":
        assert metric(-scores, labels) == pytest.approx(1 - metric(scores, labels), abs=1e-12)
        assert (values[0], values[2]) == (1.0, 0.0)
    if name in ("auprc", "prr", "prr_50"):
        assert values[0] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(("name", "metric"), params(CALIBRATION))
def test_orientation_certain_and_right_is_best_and_certain_and_wrong_is_worst(name: str, metric) -> None:
    probabilities, labels = probability_sample(1)
    right, wrong = labels + 0.0, 1.0 - labels
    values = [metric(p, labels) for p in (right, probabilities, wrong)]
    assert values[0] == pytest.approx(0.0, abs=1e-3 if name == "smece" else 1e-12)
    assert values[0] <= values[1] + 1e-12 <= values[2] + 2e-12


@pytest.mark.parametrize(("name", "metric"), params(RANKING))
def test_ties_are_averaged_so_the_order_of_tied_rows_never_matters(name: str, metric) -> None:
    scores, labels = sample(2, ties=2)
    rng = np.random.default_rng(0)
    values = {
        round(metric(scores[order], labels[order]), 12) for order in (rng.permutation(labels.size) for _ in range(5))
    }
    assert len(values) == 1
    constant = np.zeros(labels.size)
    base_error = 1 - labels.mean()
    expected = {
        "auroc": 0.5,
        "excess_aurc": 1.0,
        "e_aurc": base_error - selective.aurc(labels + 0.0, labels),
        "prr": 0.0,
        "prr_50": 0.0,
    }
    assert metric(constant, labels) == pytest.approx(expected.get(name, base_error), abs=1e-12)


@pytest.mark.parametrize(("name", "metric"), params(CALIBRATION))
def test_tied_probabilities_give_the_same_value_in_any_order(name: str, metric) -> None:
    probabilities, labels = probability_sample(2, ties=2)
    rng = np.random.default_rng(0)
    orders = [rng.permutation(labels.size) for _ in range(5)]
    assert len({round(metric(probabilities[order], labels[order]), 12) for order in orders}) == 1
    if name != "smece":  # a constant at the accuracy is calibrated: one bin, no gap
        accuracy = np.full(labels.size, labels.mean())
        expected = {"ece": 0.0, "brier": labels.mean() * (1 - labels.mean())}
        if name in expected:
            assert metric(accuracy, labels) == pytest.approx(expected[name], abs=1e-12)


@pytest.mark.parametrize(("name", "metric"), params(RANKING) + params(CALIBRATION))
def test_a_nan_score_gives_an_explicit_nan_with_a_warning(name: str, metric) -> None:
    scores, labels = probability_sample(3)
    scores[5] = np.nan
    with pytest.warns(TracWarning, match="NaN"):
        assert math.isnan(metric(scores, labels))


@pytest.mark.parametrize(("name", "metric"), params(RANKING) + params(CALIBRATION))
def test_metrics_are_deterministic_and_leave_their_inputs_alone(name: str, metric) -> None:
    scores, labels = probability_sample(4, ties=3)
    kept_scores, kept_labels = scores.copy(), labels.copy()
    first = metric(scores, labels)
    assert metric(scores, labels) == first == metric(list(scores), list(labels))
    np.testing.assert_array_equal(scores, kept_scores)
    np.testing.assert_array_equal(labels, kept_labels)


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_the_two_ways_of_computing_a_metric_agree(name: str) -> None:
    scores, labels = probability_sample(5, ties=4)
    assert single_metric(name)(scores, labels) == pytest.approx(from_all_metrics(name)(scores, labels), abs=1e-15)


# ----------------------------------------------------------------------------- former module paths still import

FORMER_PUBLIC_NAMES = [
    ("trac_metrics.answers", "extract_answer"),
    ("trac_metrics.answers", "equivalent"),
    ("trac_metrics.features", "tup_features"),
    ("trac_metrics.heads", "cross_fit"),
    *(
        ("trac_metrics.selective", name)
        for name in (
            "DEFAULT_COVERAGES",
            "as_binary_labels",
            "aurc",
            "auroc",
            "e_aurc",
            "excess_aurc",
            "risk_at_coverage",
            "risk_coverage_curve",
            "selective_metrics",
        )
    ),
]


@pytest.mark.parametrize(("module", "name"), FORMER_PUBLIC_NAMES)
def test_public_names_import_from_their_former_paths(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is not None


def _colliding_names() -> Iterator[tuple[str, str]]:
    """(new name, results key it would overwrite) for every registered key and accuracy key: each split of the key
    into ``<name>_<metric>`` whose name is a fresh valid method name."""
    keys = [key for method in all_methods() for key in method.results_keys] + list(ACCURACY_KEYS)
    registered = {method.name for method in all_methods()}
    for key in keys:
        for metric in METRIC_NAMES:
            name = key.removesuffix(f"_{metric}")
            if name != key and name not in registered and name[:1].isalpha():
                yield name, key


COLLIDING = sorted(set(_colliding_names()))


def test_the_issue_s_collisions_are_among_the_checked_names() -> None:
    assert ("trac_e", "trac_e_aurc") in COLLIDING
    assert ("mean_logprob_excess", "mean_logprob_excess_aurc") in COLLIDING


@pytest.mark.parametrize(("name", "key"), COLLIDING)
def test_a_name_whose_results_key_is_taken_is_refused(name: str, key: str) -> None:
    before = all_methods()
    copy = dataclasses.replace(get("selfdoubt"), name=name)
    owner = next(method.name for method in before if key in method.results_keys)
    with pytest.raises(ValueError, match=f"'{owner}' and '{name}' would both write the results key '{key}'"):
        register(copy)
    assert all_methods() == before


def test_every_registered_results_key_is_unique_and_no_accuracy_key() -> None:
    keys = [key for method in all_methods() for key in method.results_keys]
    assert len(keys) == len(set(keys)) == len(all_methods()) * len(METRIC_NAMES)
    assert not set(keys) & set(ACCURACY_KEYS)


def test_register_all_is_all_or_nothing() -> None:
    before = all_methods()
    fine = dataclasses.replace(get("selfdoubt"), name="selfdoubt_fine")
    clash = dataclasses.replace(get("selfdoubt"), name="selfdoubt_fine_e")  # selfdoubt_fine_e_aurc: fine's E-AURC
    with pytest.raises(ValueError, match="'selfdoubt_fine' and 'selfdoubt_fine_e'"):
        register_all((fine, clash))
    assert all_methods() == before


# ----------------------------------------------------------------------------- dependencies (issue item 17)


def test_unregistering_a_dependency_is_refused_naming_the_dependants() -> None:
    before = all_methods()
    with pytest.raises(ValueError, match="cannot unregister 'mean_logprob': required by 'sup_consensus'"):
        unregister("mean_logprob")
    with pytest.raises(ValueError, match="cannot unregister 'p_true': required by 'p_true_pce'"):
        unregister("p_true")
    assert all_methods() == before


def test_a_dependant_goes_first_then_its_dependency_may_go() -> None:
    base = register(dataclasses.replace(get("selfdoubt"), name="selfdoubt_base"))
    reader = register(
        Method("reads_base", "Reads base", Family.HEAD, base.cost, features=lambda e: [0.0], requires=(base.name,))
    )
    try:
        with pytest.raises(ValueError, match="required by 'reads_base'"):
            unregister(base.name)
    finally:
        unregister(reader.name)
        unregister(base.name)
    assert base.name not in {method.name for method in all_methods()}


def test_a_method_requiring_an_unregistered_one_is_refused() -> None:
    head = Method("needs_nope", "Needs", Family.HEAD, get("tup").cost, features=lambda e: [0.0], requires=("nope",))
    with pytest.raises(ValueError, match="'needs_nope' requires 'nope': not registered"):
        register(head)
    with pytest.raises(ValueError, match="cannot require itself"):
        dataclasses.replace(head, requires=("needs_nope",))


class _Recording(dict):
    """A baselines dict that records which method scores are read."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)


def test_every_head_declares_the_method_scores_it_reads() -> None:
    records = synthetic_question(np.random.default_rng(0), 0, True, k=4)
    records[0] = dataclasses.replace(records[0], p_true=0.7)
    evidence = question_evidence(records)
    methods = {method.name for method in all_methods()}
    for method in all_methods():
        if method.family is Family.HEAD:
            baselines = _Recording(evidence["baselines"])
            method.features({**evidence, "baselines": baselines})
            assert baselines.read & methods <= set(method.requires), method.name


def test_every_built_in_method_is_defined_in_one_line_with_its_docs_section() -> None:
    # the HTML report's header help; tests/test_docs.py checks that each docs section exists
    for method in all_methods():
        assert method.summary and "\n" not in method.summary and len(method.summary) <= 110, method.name
        assert method.doc.startswith("docs/method.md#"), method.name
    with pytest.raises(ValueError, match="must read docs/<page>.md#<heading>"):
        dataclasses.replace(get("selfdoubt"), name="selfdoubt_linked", doc="https://example.org/x")
