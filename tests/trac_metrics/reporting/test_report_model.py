"""The report model: one object computed once from the report's data, from which the Markdown / CSV writer and the HTML
page's data both read their numbers (docs/architecture.md#report)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from trac_metrics.heads.evaluate import TaskEvaluation
from trac_metrics.reporting import report_model as report_model_module
from trac_metrics.reporting.analyses import all_analyses
from trac_metrics.reporting.calibration_plots import rejection_curve_plot
from trac_metrics.reporting.html.page_data import page_data, table_data
from trac_metrics.reporting.leaderboard import leaderboard_tables
from trac_metrics.reporting.model import pairs as model_pairs
from trac_metrics.reporting.plots import cost_quality_plot
from trac_metrics.reporting.report_data import ReportData
from trac_metrics.reporting.report_model import ReportModel, build_report_model
from trac_metrics.reporting.report_writer import write_report
from trac_metrics.selective.bootstrap import BootstrapResult


@pytest.fixture(scope="module")
def model(six_task_report: ReportData) -> ReportModel:
    return build_report_model(six_task_report)


@pytest.fixture(scope="module")
def rendered(model: ReportModel, tmp_path_factory: pytest.TempPathFactory):
    """The page's data and the ``trac report`` folder, both from the one model."""
    out = tmp_path_factory.mktemp("report")
    write_report(model, out)
    return page_data(model), out


def _csv(out, name: str, levels: int) -> pd.DataFrame:
    return pd.read_csv(out / f"{name}.csv", index_col=list(range(levels)))


def test_the_ranked_summary_is_one_list_on_the_page_and_in_the_csv(model: ReportModel, rendered) -> None:
    page, out = rendered
    summary = model.statistics.ranked["auroc"]
    csv = _csv(out, "ranked_summary", 2)
    shown = page["ranked"]["auroc"]["rows"]
    assert [row["method"] for row in shown] == [row.method for row in summary.rows]
    assert [label for _, label in csv.index] == [row.label for row in summary.rows] == [row["label"] for row in shown]
    for row, on_page, (_, in_csv) in zip(summary.rows, shown, csv.iterrows(), strict=True):
        assert on_page["value"] == row.value == pytest.approx(in_csv["macro AUROC"], rel=1e-12)
        assert on_page["interval"] == [row.lo, row.hi]
        assert (in_csv["AUROC lo"], in_csv["AUROC hi"]) == pytest.approx((row.lo, row.hi), rel=1e-12)
        if row.difference is None:
            assert on_page["difference"] is None and math.isnan(in_csv["difference"])
            continue
        assert on_page["difference"]["value"] == row.difference.difference
        assert in_csv["difference"] == pytest.approx(row.difference.difference, rel=1e-12)
        assert on_page["difference"]["p"] == row.difference.p == in_csv["p"]
        assert on_page["difference"]["pairs"] == row.difference.pairs == in_csv["pairs"]


def test_a_per_pair_auroc_and_a_macro_interval_are_the_same_numbers_everywhere(model: ReportModel, rendered) -> None:
    page, out = rendered
    statistics = model.statistics
    label = next(method.label for method in model.methods if method.name == "trac")
    per_pair = _csv(out, "per_pair", 1)
    for index, pair in enumerate(model.data.pairs):
        value = statistics.per_pair["auroc"]["trac"][index]
        assert value == model.data.evaluations[index].metrics["trac_auroc"]
        assert page["pairs"][index]["metrics"]["auroc"]["trac"] == value
        assert per_pair.loc[pair.name, label] == pytest.approx(value, rel=1e-12)
    macro = statistics.macro["auroc"]["sc_modal"]
    assert (macro.lo, macro.hi) == model.data.ci("sc_modal", "auroc") and macro.lo < macro.hi
    assert page["macro"]["auroc"]["sc_modal"]["interval"] == [macro.lo, macro.hi]
    intervals = _csv(out, "confidence_intervals", 2).xs(
        next(method.label for method in model.methods if method.name == "sc_modal"), level="method"
    )
    assert (intervals["AUROC lo"].item(), intervals["AUROC hi"].item()) == pytest.approx(
        (macro.lo, macro.hi), rel=1e-12
    )


def test_the_page_shows_the_models_tables(model: ReportModel, rendered) -> None:
    page, out = rendered
    assert page["tables"] == [table_data(table) for table in model.tables]
    assert page["analyses"] == [table_data(table) for table in model.analyses]
    assert [table.name for table in model.analyses] == [table.name for table in all_analyses(model.data)]
    markdown = (out / "leaderboard.md").read_text(encoding="utf-8")
    assert all(f"## {table.title}\n" in markdown for table in [*model.tables, *model.analyses])


def _count(monkeypatch: pytest.MonkeyPatch, owner: object, name: str, key) -> Counter:
    """Calls of the real ``owner.name``, counted by ``key(*args)``."""
    calls: Counter = Counter()
    real = getattr(owner, name)

    def counted(*args, **kwargs):
        calls[key(*args)] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def _count_p_correct(monkeypatch: pytest.MonkeyPatch) -> Counter:
    calls: Counter = Counter()
    real = TaskEvaluation.p_correct.fget

    def counted(evaluation):
        calls[id(evaluation)] += 1
        return real(evaluation)

    monkeypatch.setattr(TaskEvaluation, "p_correct", property(counted))
    return calls


def _watch(monkeypatch: pytest.MonkeyPatch) -> dict[str, Counter]:
    return {
        "interval": _count(monkeypatch, ReportData, "ci", lambda data, method, metric, *_: (method, metric)),
        "macro": _count(monkeypatch, ReportData, "macro", lambda data, method, metric: (method, metric)),
        "per pair": _count(monkeypatch, ReportData, "per_pair", lambda data, method, metric: (method, metric)),
        "pair bootstrap": _count(monkeypatch, ReportData, "bootstrap_subset", lambda data, indices, *_: tuple(indices)),
        "paired": _count(
            monkeypatch, BootstrapResult, "paired_difference", lambda result, a, b, *_: (id(result), a, b)
        ),
        "risk curve": _count(monkeypatch, model_pairs, "risk_coverage_curve", lambda scores, labels: id(scores)),
        "reliability": _count(
            monkeypatch, model_pairs, "reliability_bins", lambda probabilities, *_: id(probabilities)
        ),
        "p_correct": _count_p_correct(monkeypatch),
        "analyses": _count(monkeypatch, report_model_module, "all_analyses", lambda data, *_: id(data)),
    }


def test_building_the_model_computes_each_number_once_and_rendering_computes_none(
    six_task_report: ReportData, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    data = six_task_report
    calls = _watch(monkeypatch)
    model = build_report_model(data)
    repeated = {what: [key for key, count in counted.items() if count > 1] for what, counted in calls.items()}
    assert not any(repeated.values()), repeated
    methods = model.statistics.methods
    assert len(calls["pair bootstrap"]) == len(calls["p_correct"]) == len(data.pairs)
    assert calls["analyses"] == {id(data): 1}
    assert set(calls["interval"]) >= {(method, "auroc") for method in methods}
    assert len(calls["paired"]) > len(methods)  # every method against each reference, each difference once
    oracles = len(data.pairs)
    defined = sum(
        not np.isnan(evaluation.scores[method]).any()
        for evaluation in data.evaluations
        for method in methods
        if method in evaluation.scores
    )
    assert sum(calls["risk curve"].values()) == defined + oracles
    assert sum(calls["reliability"].values()) == sum(len(details.figures.reliability) for details in model.pairs) > 0

    for counted in calls.values():
        counted.clear()
    page_data(model)
    leaderboard_tables(model.statistics)
    cost_quality_plot(model, tmp_path / "cost_quality.png")  # the figures with leaderboard numbers read the model's
    rejection_curve_plot(model, tmp_path / "rejection_curve.png")
    assert not any(calls.values()), {what: dict(counted) for what, counted in calls.items() if counted}
    write_report(model, tmp_path / "report")  # the writer's analysis tables are the model's
    assert not calls["analyses"]


def test_a_model_without_the_pairs_details_serves_the_writer_not_the_page(
    six_task_report: ReportData, tmp_path
) -> None:
    tables_only = build_report_model(six_task_report, with_pairs=False)
    assert tables_only.pairs == ()
    write_report(tables_only, tmp_path)
    assert (tmp_path / "leaderboard.csv").is_file()
    with pytest.raises(ValueError, match="built without its pairs' details"):
        page_data(tables_only)
