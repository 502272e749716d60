"""The report model (docs/architecture.md#report): every number ``trac report`` shows, computed once from the
report's :class:`~trac_metrics.reporting.report_data.ReportData` and rendered alike by the Markdown / CSV / LaTeX
writer (:mod:`~trac_metrics.reporting.report_writer`) and the HTML page's data
(:mod:`~trac_metrics.reporting.html.page_data`), which compute nothing of their own.

:func:`build_report_model` gathers the methods shown (:mod:`~trac_metrics.reporting.model.methods`), the leaderboard's
numbers (:mod:`~trac_metrics.reporting.model.statistics`: per-pair values, macros with intervals, paired differences,
ranked summaries), the leaderboard tables laid out from them (:func:`~trac_metrics.reporting.leaderboard
.leaderboard_tables`, with the report's notes), the paper's analysis tables (:func:`~trac_metrics.reporting.analyses
.all_analyses`, docs/method.md#report-analyses) and each pair's own intervals, figure points and question rows
(:mod:`~trac_metrics.reporting.model.pairs`) and the macro risk–coverage curves over all pairs
(:mod:`~trac_metrics.reporting.model.pooled`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trac_metrics.reporting.analyses import all_analyses
from trac_metrics.reporting.leaderboard import leaderboard_tables
from trac_metrics.reporting.model.methods import ShownMethod, shown_methods
from trac_metrics.reporting.model.pairs import PairDetails, pair_details
from trac_metrics.reporting.model.pooled import PooledCurves, pooled_curves
from trac_metrics.reporting.model.statistics import ReportStatistics, StatisticsFirst, report_statistics
from trac_metrics.reporting.report_data import ReportData
from trac_metrics.reporting.subsets import metrics_by_field
from trac_metrics.reporting.tables import ReportTable, with_notes

LEVEL = 0.95
"""The confidence level of every interval of the report."""


@dataclass(frozen=True)
class ReportModel:
    """What ``trac report`` and its page show: the report's ``data``, the interval ``level``, the ``methods`` scored
    on some pair (registry order), the leaderboard's ``statistics``, the leaderboard ``tables`` (report order, the
    report's notes under each), the ``analyses`` tables (the paper's order, the notes under each) and each pair's
    ``pairs`` details (same order as ``data.pairs``; empty when built without them) and the macro risk–coverage
    curves over all pairs (``pooled``) of every method shown."""

    data: ReportData
    level: float
    methods: tuple[ShownMethod, ...]
    statistics: ReportStatistics
    tables: tuple[ReportTable, ...]
    analyses: tuple[ReportTable, ...]
    pairs: tuple[PairDetails, ...]
    pooled: PooledCurves


def build_report_model(
    data: ReportData,
    level: float = LEVEL,
    with_pairs: bool = True,
    classifier_capacity: bool = False,
    by_fields: Sequence[str] = (),
) -> ReportModel:
    """The :class:`ReportModel` of ``data`` at interval ``level``; without ``with_pairs`` the pairs' own intervals,
    figure points and question rows (what only the page shows) are left out; ``classifier_capacity`` adds that
    analysis (docs/method.md#classifier-capacity), each of ``by_fields`` a table of every method's metrics (those
    scored on every pair, in the report's order) split by that metadata field, against the ranked summary's
    reference (docs/method.md#metrics-by-field)."""
    statistics = report_statistics(data, level)
    pairs = (
        tuple(pair_details(data, index, statistics.methods, level) for index in range(len(data.pairs)))
        if with_pairs
        else ()
    )
    tables = tuple(with_notes(leaderboard_tables(statistics), data.notes))
    reference = statistics.ranked["auroc"].reference
    methods = shown_methods(data)
    common = [method.name for method in methods if method.name in data.common_methods]
    by_field = [metrics_by_field(data, name, common, reference, level) for name in by_fields]
    analyses = all_analyses(data, StatisticsFirst(statistics), classifier_capacity)
    analyses = tuple(with_notes([*analyses, *by_field], data.notes))
    pooled = pooled_curves(data, [method.name for method in methods])
    return ReportModel(data, level, methods, statistics, tables, analyses, pairs, pooled)


def report_model(report: ReportData | ReportModel, with_pairs: bool = True) -> ReportModel:
    """``report`` itself when it is a model (with the pairs' details when ``with_pairs``), else its model."""
    if not isinstance(report, ReportModel):
        return build_report_model(report, with_pairs=with_pairs)
    if with_pairs and len(report.pairs) != len(report.data.pairs):
        raise ValueError("this report model was built without its pairs' details (with_pairs=False)")
    return report
