"""What the HTML report shows, computed in Python from the :class:`~trac_metrics.reporting.report_data.ReportData`
``trac report`` writes its tables from (docs/method.md#report-analyses), so the page and the tables agree number for
number; the page's script only lays the numbers out, sorts and filters them.

:func:`page_data` returns one JSON-serializable dict:

- ``tables``: the five leaderboard tables of ``trac report`` (:func:`trac_metrics.reporting.leaderboard
  .leaderboard_tables`), cell by cell with their best / second marks;
- ``pairs``: each (model, task, decoding) pair with its accuracy and every leaderboard method's metrics, and the 95 %
  hierarchical-bootstrap interval of its headline metrics over that pair's questions alone
  (docs/method.md#hierarchical-bootstrap with one pair), and its probe cache share for the page's header
  (docs/method.md#probe-cache-share: the share, the line ``trac summary`` prints, the warning below 50 %); ``macro``:
  the pair-equal macro of each with the report's interval; ``paired``: every leaderboard method against every other
  as reference, for the headline metrics (docs/method.md#paired-differences);
- ``ranked``: per bootstrapped metric, the leaderboard methods ranked by its macro with intervals, marks and the
  difference to the default reference (:func:`~trac_metrics.reporting.leaderboard.ranked_summary`, the
  ``ranked_summary`` table of ``trac report`` for AUROC);
- ``figures``: per pair and method, the expected risk at every coverage k/N
  (docs/method.md#risk-coverage-curve-and-aurc), the reliability bins of its probability of correctness
  (docs/method.md#figures) and the histogram of that probability over the correct and over the wrong answers; per
  pair the oracle's risk curve (every correct answer first) and a random order's risk (the error rate at every
  coverage), the references of docs/method.md#prediction-rejection-ratio;
- ``questions``: per pair, every question's prompt (what the search and the question list read), answers, answer
  classes, probe answer, agreement, label, each method's score and probability of correctness, and the questions in
  the top decile of each method's confidence (:func:`top_decile`).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from trac_metrics._warnings import TracWarning
from trac_metrics.features.cache_share import low_share_warning
from trac_metrics.features.evidence import task_accuracy
from trac_metrics.methods import all_methods
from trac_metrics.reporting.leaderboard import (
    RankedSummary,
    format_p,
    k_label,
    leaderboard_methods,
    leaderboard_tables,
    method_label,
    paired_row,
    ranked_summary,
)
from trac_metrics.reporting.report_data import ReportData
from trac_metrics.reporting.runs import PairRun, decoding_label
from trac_metrics.reporting.summary_table import HEADLINE_METRICS, probe_cache_line
from trac_metrics.reporting.tables import ReportTable, rank_marks, with_notes
from trac_metrics.selective import (
    HIGHER_IS_BETTER,
    METRIC_DEFINITIONS,
    METRIC_LABELS,
    METRIC_NAMES,
    reliability_bins,
    risk_coverage_curve,
)
from trac_metrics.selective.bootstrap import mean_of_defined

LEVEL = 0.95
"""The confidence level of every interval on the page."""
SCORE_DIGITS = 6
"""Significant digits of the per-question scores and probabilities on the page."""
CURVE_DECIMALS = 4
"""Decimals of the risk–coverage values on the page."""
HISTOGRAM_BINS = 20
"""Equal-width bins of [0, 1] in the histograms of the probability of correctness."""


def number(value: Any, digits: int | None = None) -> float | int | None:
    """A JSON number: None for a missing or non-finite value, an integer kept, a float to ``digits`` significant
    digits (all when None)."""
    if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
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


def top_decile(scores: np.ndarray) -> np.ndarray:
    """Whether each question is in the top decile of a method's confidence within its pair: its score is at least
    the m-th largest defined score, m = ⌈n / 10⌉ of the n defined scores (ties at the cut all included; a NaN score
    never is)."""
    scores = np.asarray(scores, dtype=np.float64)
    defined = ~np.isnan(scores)
    n = int(defined.sum())
    if not n:
        return np.zeros(scores.shape, dtype=bool)
    cut = np.sort(scores[defined])[::-1][math.ceil(n / 10) - 1]
    return defined & (scores >= cut)


def _methods(data: ReportData) -> list[dict[str, Any]]:
    """Every method scored on some pair, in registry order: name, label, leaderboard block (None when it has none),
    its one-line definition and the docs section defining it."""
    scored = {method for evaluation in data.evaluations for method in evaluation.scores}
    blocks = dict((method, block) for block, method in leaderboard_methods(data))
    k = k_label(data.pairs)
    return [
        {
            "name": method.name,
            "label": method_label(method.name, k),
            "block": blocks.get(method.name),
            "summary": method.summary,
            "doc": method.doc,
        }
        for method in all_methods()
        if method.name in scored
    ]


def _pair_intervals(data: ReportData, index: int, methods: Sequence[str]) -> dict[str, dict[str, list[Any]]]:
    """The interval of each headline metric of ``methods`` over the questions of pair ``index`` alone."""
    present = [method for method in methods if method in data.evaluations[index].scores]
    if not present:
        return {}
    with warnings.catch_warnings():
        # a pair too small or one-class has NaN intervals: the page shows "nan", as the tables do
        warnings.simplefilter("ignore", TracWarning)
        results = data.bootstrap_subset([index], present, HEADLINE_METRICS)
        return {
            metric: {method: [number(bound) for bound in result.ci(method, LEVEL)] for method in present}
            for metric, result in results.items()
        }


def _pair(data: ReportData, index: int, methods: Sequence[str]) -> dict[str, Any]:
    pair, evaluation = data.pairs[index], data.evaluations[index]
    return {
        "name": pair.name,
        "model": pair.model,
        "task": pair.task,
        "decoding": decoding_label(pair.decoding),
        "labellers": list(pair.labellers),
        "n": len(pair.evidences),
        "k": pair.num_samples,
        "accuracy": number(pair.accuracy),
        "majority_accuracy": number(task_accuracy(pair.evidences).get("maj_acc")),
        "metrics": {
            metric: {method: number(evaluation.metrics.get(f"{method}_{metric}")) for method in methods}
            for metric in METRIC_NAMES
        },
        "intervals": _pair_intervals(data, index, methods),
        "probe_cache": {
            "share": number(pair.probe_cache.share),
            "line": probe_cache_line(pair.probe_cache),
            "warning": low_share_warning(pair.name, pair.probe_cache),
        },
    }


def _macro(data: ReportData, methods: Sequence[str]) -> dict[str, Any]:
    """Pair-equal macro of accuracy and of every metric of ``methods``, with the report's interval (None where the
    metric is not bootstrapped or the method is not on every pair)."""
    macro: dict[str, Any] = {
        "accuracy": number(mean_of_defined([pair.accuracy for pair in data.pairs])),
        "majority_accuracy": number(
            mean_of_defined([task_accuracy(pair.evidences).get("maj_acc", math.nan) for pair in data.pairs])
        ),
    }
    for metric in METRIC_NAMES:
        macro[metric] = {
            method: {
                "value": number(data.macro(method, metric)),
                "interval": [number(bound) for bound in data.ci(method, metric, LEVEL)],
            }
            for method in methods
        }
    return macro


def _paired(data: ReportData, methods: Sequence[str]) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """``paired[metric][reference][method]``: :func:`~trac_metrics.reporting.leaderboard.paired_row` of every
    bootstrapped headline metric, method against reference (the other metrics' differences are shown without an
    interval)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        return {
            metric: {
                reference: {
                    method: {
                        key: number(value, SCORE_DIGITS)
                        for key, value in paired_row(data, method, reference, metric).items()
                    }
                    for method in methods
                    if method != reference
                }
                for reference in methods
            }
            for metric in HEADLINE_METRICS
            if metric in data.bootstraps
        }


def ranked_data(summary: RankedSummary) -> dict[str, Any]:
    """:func:`~trac_metrics.reporting.leaderboard.ranked_summary` for the page: the rows in rank order, each with its
    macro, interval, mark and difference to the reference (its p also as ``trac report`` words it)."""
    rows = []
    for row in summary.rows:
        difference = row.difference
        rows.append(
            {
                "method": row.method,
                "label": row.label,
                "block": row.block,
                "value": number(row.value),
                "interval": [number(row.lo), number(row.hi)],
                "mark": row.mark,
                "difference": None
                if difference is None
                else {
                    "value": number(difference["difference"]),
                    "interval": [number(difference["lo"]), number(difference["hi"])],
                    "p": number(difference["p"]),
                    "p_text": format_p(difference["p"], summary.n_resamples),
                    "wins": difference["wins"],
                    "ties": difference["ties"],
                    "losses": difference["losses"],
                    "pairs": difference["pairs"],
                },
            }
        )
    return {"metric": summary.metric, "higher": summary.higher, "reference": summary.reference, "rows": rows}


def _curve(scores: np.ndarray, labels: np.ndarray) -> list[float]:
    return [round(float(value), CURVE_DECIMALS) for value in risk_coverage_curve(scores, labels)[1]]


def _figures(data: ReportData, index: int, methods: Sequence[str]) -> dict[str, Any]:
    """The risk at every coverage k/N (k = 1..N), the reliability bins and the histograms of the probability of
    correctness over the correct and the wrong answers of each method the pair has; the oracle's risk curve and a
    random order's risk."""
    evaluation = data.evaluations[index]
    labels = np.asarray(evaluation.labels, dtype=bool)
    risk: dict[str, list[Any]] = {}
    reliability: dict[str, dict[str, Any]] = {}
    histogram: dict[str, dict[str, list[int]]] = {}
    edges = np.linspace(0.0, 1.0, HISTOGRAM_BINS + 1)
    p_correct = evaluation.p_correct
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)  # a method without defined values gets no figure
        for method in methods:
            scores = evaluation.scores.get(method)
            if scores is not None and not np.isnan(scores).any():
                risk[method] = _curve(scores, evaluation.labels)
            probabilities = p_correct.get(method)
            if probabilities is not None and not np.isnan(probabilities).any():
                histogram[method] = {
                    name: [int(count) for count in np.histogram(probabilities[chosen], bins=edges)[0]]
                    for name, chosen in (("correct", labels), ("wrong", ~labels))
                }
                bins = reliability_bins(probabilities, evaluation.labels, data.ece_bins)
                reliability[method] = {
                    "count": [int(count) for count in bins["count"]],
                    "confidence": [number(value, SCORE_DIGITS) for value in bins["confidence"]],
                    "accuracy": [number(value, SCORE_DIGITS) for value in bins["accuracy"]],
                    "ece": number(evaluation.metrics.get(f"{method}_ece")),
                }
    oracle = _curve(labels.astype(np.float64), labels) if labels.size else []
    return {
        "risk": risk,
        "reliability": reliability,
        "histogram": histogram,
        "edges": [round(float(edge), 4) for edge in edges],
        "oracle": oracle,
        "oracle_aurc": number(np.mean(oracle)) if oracle else None,
        "random": number(1.0 - labels.mean()) if labels.size else None,
    }


def _agreement(value: Any) -> int | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else int(value)


def _questions(pair: PairRun, data: ReportData, index: int, prompts: Mapping[str, str]) -> dict[str, Any]:
    """The questions of one pair, field by field (columns of equal length, in document order); ``prompts`` maps a
    document id to its prompt (:func:`~trac_metrics.reporting.html.prompts.question_prompts`; None where not stored)."""
    evaluation = data.evaluations[index]
    evidences = pair.evidences
    p_correct = evaluation.p_correct
    return {
        "doc": [str(evidence["doc_id"]) for evidence in evidences],
        "prompt": [prompts.get(str(evidence["doc_id"])) for evidence in evidences],
        "correct": [int(evidence["correct"]) for evidence in evidences],
        "majority": [int(evidence["majority_correct"]) for evidence in evidences],
        "agree": [_agreement(evidence["agree"]) for evidence in evidences],
        "answer": [evidence["primary_answer"] for evidence in evidences],
        "probe": [evidence["probe_answer"] for evidence in evidences],
        "reference": [_shown_reference(evidence["reference"]) for evidence in evidences],
        "answers": [evidence["answers"] for evidence in evidences],
        "classes": [evidence["answer_classes"] for evidence in evidences],
        "metadata": [evidence["metadata"] for evidence in evidences],
        "scores": {
            method: [number(value, SCORE_DIGITS) for value in scores] for method, scores in evaluation.scores.items()
        },
        "p_correct": {
            method: [number(value, SCORE_DIGITS) for value in values] for method, values in p_correct.items()
        },
        "top_decile": {
            method: np.flatnonzero(top_decile(scores)).tolist() for method, scores in evaluation.scores.items()
        },
    }


def page_data(
    data: ReportData, traces: Sequence[Mapping[str, Any]] = (), prompts: Sequence[Mapping[str, str]] = ()
) -> dict[str, Any]:
    """Everything the page shows (module docstring); ``traces[i]`` says how pair i's traces are shown (its mode,
    tokenizer and note, from :func:`trac_metrics.reporting.html.payloads.pair_payloads`), ``prompts[i]`` the prompt
    of each of its documents (none when not given)."""
    methods = [method for _, method in leaderboard_methods(data)]
    pairs = [_pair(data, index, methods) for index in range(len(data.pairs))]
    for pair, shown in zip(pairs, traces, strict=False):
        pair["traces"] = dict(shown)
    return {
        "schema": "trac-html/1",
        "settings": {
            "resamples": data.n_resamples,
            "seed": data.seed,
            "calibration_map": data.calibration_map,
            "ece_bins": data.ece_bins,
            "level": LEVEL,
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
        "methods": _methods(data),
        "leaderboard_methods": methods,
        "tables": [table_data(table) for table in with_notes(leaderboard_tables(data), data.notes)],
        "notes": list(data.notes),
        "pairs": pairs,
        "macro": _macro(data, methods),
        "paired": _paired(data, methods),
        "ranked": {metric: ranked_data(ranked_summary(data, metric, level=LEVEL)) for metric in data.bootstraps},
        "figures": [_figures(data, index, methods) for index in range(len(data.pairs))],
        "questions": [
            _questions(pair, data, index, prompts[index] if index < len(prompts) else {})
            for index, pair in enumerate(data.pairs)
        ],
    }


def _shown_reference(reference: str | list[str]) -> str:
    """A question's reference as the page shows it: the aliases of a list reference joined by `` | ``."""
    return " | ".join(reference) if isinstance(reference, list) else reference
