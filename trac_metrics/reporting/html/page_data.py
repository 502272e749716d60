"""What the HTML report shows: the report model (:mod:`~trac_metrics.reporting.report_model`) ``trac report`` writes
its tables from (docs/method.md#report-analyses), serialized to the page's JSON, so the page and the tables agree
number for number; nothing is computed here, and the page's script only lays the numbers out, sorts and filters them.

:func:`page_data` returns one JSON-serializable dict:

- ``tables``: the leaderboard tables of ``trac report`` (the model's), cell by cell with their best / second marks;
  ``analyses``: its analysis tables (docs/method.md#report-analyses) the same way;
- ``pairs``: each (model, task, decoding) pair with its accuracy and every leaderboard method's metrics, and the 95 %
  hierarchical-bootstrap interval of its headline metrics over that pair's questions alone
  (docs/method.md#hierarchical-bootstrap with one pair), and its probe cache share for the page's header
  (docs/method.md#probe-cache-share: the share, the line ``trac summary`` prints, the warning below 50 %); ``macro``:
  the pair-equal macro of each with the report's interval; ``paired``: every leaderboard method against every other
  as reference, for the headline metrics (docs/method.md#paired-differences);
- ``ranked``: per bootstrapped metric, the leaderboard methods ranked by its macro with intervals, marks (best or
  tied with the best, by the paired differences to the leader; constant scores flagged), the macro AUROC beside a
  calibration metric and the difference to the default reference
  (:class:`~trac_metrics.reporting.model.statistics.RankedSummary`, the ``ranked_summary`` table of ``trac report``
  for AUROC);
- ``figures``: per pair and method, the expected risk at every coverage k/N
  (docs/method.md#risk-coverage-curve-and-aurc), the reliability bins of its probability of correctness
  (docs/method.md#figures) and the histogram of that probability over the correct and over the wrong answers; per
  pair the oracle's risk curve (every correct answer first) and a random order's risk (the error rate at every
  coverage), the references of docs/method.md#prediction-rejection-ratio; ``pooled``: over all pairs, each
  leaderboard method's macro risk–coverage curve on the common coverage grid with the number of pairs it averages,
  and the macro oracle and random references (:mod:`~trac_metrics.reporting.model.pooled`, the points of
  ``risk_coverage.png``); ``cost``: each leaderboard method's relative latency and measured latency
  (docs/method.md#relative-latency, #measured-latency), the x of the cost–quality figure;
- ``comparisons``: every two pairs of one task, question by question on the documents both answered: each one's
  accuracy with its bootstrap interval, the difference with its interval, the exact McNemar p and the disagreements
  split by direction (:func:`~trac_metrics.reporting.model.model_comparison.compare_accuracy`), for side by side;
- ``questions``: per pair, every question's prompt (what the search and the question list read), answers, answer
  classes, probe answer, agreement, label, each method's score and probability of correctness, and the questions in
  the top decile of each method's confidence (:func:`~trac_metrics.reporting.model.pairs.top_decile`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from trac_metrics.features.cache_share import low_share_warning
from trac_metrics.features.probe_agreement import UNINFORMATIVE_NOTE
from trac_metrics.reporting.leaderboard import ranked_verdict
from trac_metrics.reporting.model.model_comparison import compare_accuracy
from trac_metrics.reporting.model.pairs import CURVE_DECIMALS, PairFigures, QuestionRows
from trac_metrics.reporting.model.pooled import PooledCurves
from trac_metrics.reporting.model.statistics import RankedSummary, ReportStatistics
from trac_metrics.reporting.report_data import ReportData
from trac_metrics.reporting.report_model import ReportModel, report_model
from trac_metrics.reporting.runs import decoding_label
from trac_metrics.reporting.summary_table import HEADLINE_METRICS, probe_cache_line
from trac_metrics.reporting.tables import ReportTable, format_p, rank_marks
from trac_metrics.selective import (
    CALIBRATION_METRIC_NAMES,
    HIGHER_IS_BETTER,
    METRIC_DEFINITIONS,
    METRIC_LABELS,
    METRIC_NAMES,
)

SCORE_DIGITS = 6
"""Significant digits of the per-question scores and probabilities on the page."""


MAX_EXACT = 2**53
"""The largest integer a browser's ``JSON.parse`` reads exactly (a double): a larger one travels as its digits."""


def exact(value: Any) -> Any:
    """A JSON value the page reads as written: every integer beyond ±2**53 in it (a metadata value, a table's count),
    which the browser would round (9007199254740993 read as 9007199254740992), turned into the string of its digits,
    which the page shows as it is (docs/guide/reports.md#the-html-report-trac-report---html)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value) if abs(value) <= MAX_EXACT else str(int(value))
    if isinstance(value, Mapping):
        return {key: exact(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [exact(item) for item in value]
    return value


def number(value: Any, digits: int | None = None) -> float | int | str | None:
    """A JSON number: None for a missing or non-finite value, an integer kept (beyond ±2**53 as its digits,
    :func:`exact`), a float to ``digits`` significant digits (all when None)."""
    if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral):
        return exact(value)
    value = float(value)
    if not math.isfinite(value):
        return None
    return float(f"{value:.{digits}g}") if digits is not None else value


def _cell(value: Any) -> Any:
    return value if isinstance(value, str) else number(value)


def table_data(table: ReportTable) -> dict[str, Any]:
    """A report table cell by cell: row labels (one per index level), column labels, values (None for NaN), the
    best / second mark of each cell, which columns hold integers and which way each ranked column is better."""
    frame = table.frame
    marks = rank_marks(table)
    labels = [label if isinstance(label, tuple) else (label,) for label in frame.index]
    return {
        "name": table.name,
        "title": table.title,
        "note": table.note,
        "index": [str(name or "") for name in frame.index.names],
        "columns": [" ".join(map(str, column)) if isinstance(column, tuple) else str(column) for column in frame],
        "rows": [[str(part) for part in label] for label in labels],
        "values": [[_cell(value) for value in row] for row in frame.itertuples(index=False)],
        "marks": [[marks.get((position, column)) for column in frame.columns] for position in range(len(frame))],
        "integer": [bool(pd.api.types.is_integer_dtype(dtype)) for dtype in frame.dtypes],
        "higher": {str(column): higher for column, higher in table.rank_columns.items()},
    }


def _methods(model: ReportModel) -> list[dict[str, Any]]:
    """Every method scored on some pair, in the report's one order (the leaderboard's, then registry order): name,
    label, leaderboard block (None when it has none), its one-line definition and the docs section defining it."""
    return [
        {
            "name": method.name,
            "label": method.label,
            "block": method.block,
            "summary": method.summary,
            "doc": method.doc,
        }
        for method in model.methods
    ]


def _interval(bounds: tuple[float, float]) -> list[float | int | None]:
    return [number(bound) for bound in bounds]


def _pair(model: ReportModel, index: int) -> dict[str, Any]:
    pair, statistics, counts = model.data.pairs[index], model.statistics, model.statistics.pairs[index]
    return {
        "name": pair.name,
        "model": pair.model,
        "task": pair.task,
        "decoding": decoding_label(pair.decoding),
        "labellers": list(pair.labellers),
        "n": counts.n,
        "k": counts.k,
        "accuracy": number(counts.accuracy),
        "majority_accuracy": number(counts.majority_accuracy),
        "metrics": {
            metric: {method: number(statistics.per_pair[metric][method][index]) for method in statistics.methods}
            for metric in METRIC_NAMES
        },
        "intervals": {
            metric: {method: _interval(bounds) for method, bounds in by_method.items()}
            for metric, by_method in model.pairs[index].intervals.items()
        },
        "probe_cache": {
            "share": number(pair.probe_cache.share),
            "line": probe_cache_line(pair.probe_cache),
            "warning": low_share_warning(pair.name, pair.probe_cache),
        },
        "probe_agreement": {
            "correct": number(counts.agreement.share_correct),
            "wrong": number(counts.agreement.share_wrong),
            "line": counts.agreement.line(),
            "warning": counts.agreement.reads_answer or counts.agreement.uninformative,
            "note": UNINFORMATIVE_NOTE if counts.agreement.uninformative else None,
        },
    }


def _macro(statistics: ReportStatistics) -> dict[str, Any]:
    """Pair-equal macro of accuracy and of every metric of the leaderboard methods, with the report's interval (None
    where the metric is not bootstrapped or the method is not on every pair)."""
    macro: dict[str, Any] = {
        "accuracy": number(statistics.macro_accuracy),
        "majority_accuracy": number(statistics.macro_majority_accuracy),
    }
    for metric in METRIC_NAMES:
        macro[metric] = {
            method: {"value": number(found.value), "interval": _interval((found.lo, found.hi))}
            for method in statistics.methods
            for found in (statistics.macro[metric][method],)
        }
    return macro


def _paired(statistics: ReportStatistics) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """``paired[metric][reference][method]``: the paired difference of every bootstrapped headline metric, method
    against reference (the other metrics' differences are shown without an interval)."""
    methods = statistics.methods
    return {
        metric: {
            reference: {
                method: {
                    key: number(value, SCORE_DIGITS)
                    for key, value in statistics.paired[metric, method, reference].row().items()
                }
                for method in methods
                if method != reference
            }
            for reference in methods
        }
        for metric in HEADLINE_METRICS
        if metric in statistics.data.bootstraps
    }


def ranked_data(summary: RankedSummary) -> dict[str, Any]:
    """A :class:`~trac_metrics.reporting.model.statistics.RankedSummary` for the page: the rows in rank order, each
    with its macro, interval, mark and difference to the reference (its p also as ``trac report`` words it)."""
    rows = []
    for row in summary.rows:
        difference = row.difference
        rows.append(
            {
                "method": row.method,
                "label": row.label,
                "block": row.block,
                "value": number(row.value),
                "interval": _interval((row.lo, row.hi)),
                "mark": row.mark,
                "verdict": ranked_verdict(row),
                "constant": row.constant,
                "auroc": number(row.auroc),
                "difference": None
                if difference is None
                else {
                    "value": number(difference.difference),
                    "interval": _interval((difference.lo, difference.hi)),
                    "p": number(difference.p),
                    "p_text": format_p(difference.p, summary.n_resamples),
                    "wins": difference.wins,
                    "ties": difference.ties,
                    "losses": difference.losses,
                    "pairs": difference.pairs,
                },
            }
        )
    return {
        "metric": summary.metric,
        "higher": summary.higher,
        "calibration": summary.metric in CALIBRATION_METRIC_NAMES,
        "reference": summary.reference,
        "rows": rows,
    }


def _figures(figures: PairFigures) -> dict[str, Any]:
    """A pair's figure points (:class:`~trac_metrics.reporting.model.pairs.PairFigures`)."""
    return {
        "risk": dict(figures.risk),
        "reliability": {
            method: {
                "count": [int(count) for count in bins.count],
                "confidence": [number(value, SCORE_DIGITS) for value in bins.confidence],
                "accuracy": [number(value, SCORE_DIGITS) for value in bins.accuracy],
                "ece": number(bins.ece),
            }
            for method, bins in figures.reliability.items()
        },
        "histogram": {method: dict(counts) for method, counts in figures.histogram.items()},
        "edges": figures.edges,
        "oracle": figures.oracle,
        "oracle_aurc": number(figures.oracle_aurc),
        "random": number(figures.random),
    }


def _points(values: Sequence[float]) -> list[float | None]:
    """Curve points rounded as a pair's figure points (a NaN point as None)."""
    return [number(round(value, CURVE_DECIMALS)) for value in values]


def _pooled(pooled: PooledCurves, methods: Sequence[str]) -> dict[str, Any]:
    """The macro risk–coverage curves of the leaderboard's ``methods`` over all pairs."""
    return {
        "grid": _points(pooled.grid),
        "risk": {method: _points(pooled.risk[method]) for method in methods if method in pooled.risk},
        "pairs": {method: pooled.pairs[method] for method in methods if method in pooled.pairs},
        "oracle": _points(pooled.oracle),
        "random": number(pooled.random),
    }


def _comparisons(model: ReportModel) -> list[dict[str, Any]]:
    """Every two pairs of one task (``left`` before ``right`` in the report's order) compared question by question
    (:func:`~trac_metrics.reporting.model.model_comparison.compare_accuracy`, with the report's resamples, seed and
    level); two pairs that share no document are left out."""
    pairs, data = model.data.pairs, model.data
    rows = [details.questions for details in model.pairs]
    comparisons = []
    for left in range(len(pairs)):
        for right in range(left + 1, len(pairs)):
            if pairs[left].task != pairs[right].task:
                continue
            found = compare_accuracy(
                rows[left].doc,
                rows[left].correct,
                rows[right].doc,
                rows[right].correct,
                data.n_resamples,
                data.seed,
                model.level,
            )
            if found is not None:
                comparisons.append(
                    {
                        "left": left,
                        "right": right,
                        "shared": found.shared,
                        "accuracy": [number(found.accuracy_a), number(found.accuracy_b)],
                        "intervals": [_interval(found.interval_a), _interval(found.interval_b)],
                        "difference": number(found.difference),
                        "difference_interval": _interval(found.interval_difference),
                        "only": [found.only_a, found.only_b],
                        "p": number(found.p),
                    }
                )
    return comparisons


def _questions(rows: QuestionRows, prompts: Mapping[str, str]) -> dict[str, Any]:
    """The questions of one pair, field by field (columns of equal length, in document order); ``prompts`` maps a
    document id to its prompt (:func:`~trac_metrics.reporting.html.prompts.question_prompts`; None where not stored)."""
    return {
        "doc": rows.doc,
        "prompt": [prompts.get(doc) for doc in rows.doc],
        "correct": rows.correct,
        "majority": rows.majority,
        "agree": rows.agree,
        "answer": rows.answer,
        "probe": rows.probe,
        "reference": [_shown_reference(reference) for reference in rows.reference],
        "answers": rows.answers,
        "classes": rows.classes,
        "metadata": [exact(entry) for entry in rows.metadata],
        "scores": {method: [number(value, SCORE_DIGITS) for value in scores] for method, scores in rows.scores.items()},
        "p_correct": {
            method: [number(value, SCORE_DIGITS) for value in values] for method, values in rows.p_correct.items()
        },
        "top_decile": dict(rows.top_decile),
    }


def page_data(
    data: ReportData | ReportModel,
    traces: Sequence[Mapping[str, Any]] = (),
    prompts: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """Everything the page shows (module docstring), from the report model of ``data`` (built here from a
    ``ReportData``); ``traces[i]`` says how pair i's traces are shown (its mode, tokenizer and note, from
    :func:`trac_metrics.reporting.html.payloads.pair_payloads`), ``prompts[i]`` the prompt of each of its documents
    (none when not given)."""
    model = report_model(data)
    statistics = model.statistics
    pairs = [_pair(model, index) for index in range(len(model.data.pairs))]
    for pair, shown in zip(pairs, traces, strict=False):
        pair["traces"] = dict(shown)
    return {
        "schema": "trac-html/1",
        "settings": {
            "resamples": model.data.n_resamples,
            "seed": model.data.seed,
            "calibration_map": model.data.calibration_map,
            "ece_bins": model.data.ece_bins,
            "level": model.level,
        },
        "metrics": [
            {
                "name": name,
                "label": METRIC_LABELS[name],
                "higher": HIGHER_IS_BETTER[name],
                "summary": METRIC_DEFINITIONS[name][0],
                "doc": METRIC_DEFINITIONS[name][1],
            }
            for name in METRIC_NAMES
        ],
        "headline_metrics": list(HEADLINE_METRICS),
        "methods": _methods(model),
        "leaderboard_methods": statistics.methods,
        "tables": [table_data(table) for table in model.tables],
        "analyses": [table_data(table) for table in model.analyses],
        "notes": list(model.data.notes),
        "pairs": pairs,
        "macro": _macro(statistics),
        "paired": _paired(statistics),
        "ranked": {metric: ranked_data(summary) for metric, summary in statistics.ranked.items()},
        "comparisons": _comparisons(model),
        "figures": [_figures(details.figures) for details in model.pairs],
        "pooled": _pooled(model.pooled, statistics.methods),
        "cost": {
            method: {
                "relative": number(statistics.latency[method]),
                "measured": number(statistics.wall_latency.get(method)),
            }
            for method in statistics.methods
        },
        "questions": [
            _questions(details.questions, prompts[index] if index < len(prompts) else {})
            for index, details in enumerate(model.pairs)
        ],
    }


def _shown_reference(reference: str | list[str]) -> str:
    """A question's reference as the page shows it: the aliases of a list reference joined by `` | ``."""
    return " | ".join(reference) if isinstance(reference, list) else reference
