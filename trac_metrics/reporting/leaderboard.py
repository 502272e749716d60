"""The leaderboard tables of ``trac report`` and its HTML page: paper Table 1 layout, its confidence intervals,
paired differences, the ranked summary and the per-pair numbers every macro is averaged from
(docs/method.md#pair-equal-macro-average, docs/method.md#hierarchical-bootstrap), laid out from the report model's
numbers (:class:`~trac_metrics.reporting.model.statistics.ReportStatistics`); nothing here computes a number.

A pair where a method's metric is undefined (one class only, too few questions of a class to cross-fit the learned
heads, a method the pair did not record) keeps its NaN in the per-pair table, is left out of that method's macro, and
is named with the reason in the table's note.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from trac_metrics.features.probe_agreement import PAPER_AGREEMENT, format_agreement
from trac_metrics.heads.evaluate import TaskEvaluation
from trac_metrics.methods import leaderboard_rows
from trac_metrics.reporting.model.methods import method_label
from trac_metrics.reporting.model.statistics import (
    BEST,
    COMPARISONS,
    PAIRED_COLUMNS,
    TIED,
    RankedRow,
    RankedSummary,
    ReportStatistics,
    report_statistics,
    tasks,
)
from trac_metrics.reporting.report_data import BOOTSTRAP_METRICS, ReportData
from trac_metrics.reporting.tables import ReportTable
from trac_metrics.selective import (
    CALIBRATION_METRIC_NAMES,
    DEFAULT_COVERAGES,
    HIGHER_IS_BETTER,
    METRIC_LABELS,
    REJECTION_METRIC_NAMES,
    risk_key,
)
from trac_metrics.selective.rejection import MAX_REJECTION, prr_undefined

CALIBRATION_TABLE_METRICS = (*REJECTION_METRIC_NAMES, *CALIBRATION_METRIC_NAMES)
"""The metrics of :func:`calibration_table`: the rejection metrics, then the calibration metrics."""


def _statistics(report: ReportStatistics | ReportData) -> ReportStatistics:
    """The numbers of a table: the report model's, or those of a ``ReportData`` not yet modelled."""
    return report if isinstance(report, ReportStatistics) else report_statistics(report)


def undefined_reasons(
    statistics: ReportStatistics, methods: Sequence[str], metrics: Sequence[str] = ("auroc",)
) -> list[str]:
    """One line per pair where some ``<method>_<metric>`` is NaN: the methods, grouped by the reason."""
    lines = []
    for index, (pair, evaluation) in enumerate(zip(statistics.data.pairs, statistics.data.evaluations)):
        by_reason: dict[str, list[str]] = {}
        for metric in metrics:
            for method in methods:
                if math.isnan(statistics.per_pair[metric][method][index]):
                    names = by_reason.setdefault(_reason(evaluation, method, metric), [])
                    if method_label(method, statistics.k) not in names:
                        names.append(method_label(method, statistics.k))
        if by_reason:
            lines.append(
                f"{pair.name}: " + "; ".join(f"{', '.join(names)}: {reason}" for reason, names in by_reason.items())
            )
    return lines


def _reason(evaluation: TaskEvaluation, method: str, metric: str) -> str:
    """Why ``<method>_<metric>`` is NaN on the pair of ``evaluation``, from its labels and scores."""
    correct, n = int(evaluation.labels.sum()), evaluation.labels.size
    if method not in evaluation.scores:
        return "not in this pair's records"
    not_cross_fitted = (
        f"not cross-fitted ({correct} correct / {n - correct} wrong answers: too few of a class for 5-fold "
        "stratified cross-fitting)"
    )
    if np.isnan(evaluation.scores[method]).any():
        return not_cross_fitted
    if metric in CALIBRATION_METRIC_NAMES and np.isnan(evaluation.probabilities_by_seed[method]).any():
        return not_cross_fitted
    if metric in MAX_REJECTION and (why := prr_undefined(n, correct, MAX_REJECTION[metric])) is not None:
        return f"{METRIC_LABELS[metric]} undefined ({why})"
    if metric == "auprc" and correct == n:
        return f"AUPRC undefined (no wrong answer among {n} to detect)"
    if metric == "auroc" and correct in (0, n):
        return f"AUROC undefined (all {n} answers {'correct' if correct else 'wrong'}: one class only)"
    if metric == "excess_aurc" and correct == n:
        return f"excess AURC undefined (no wrong answer among {n}: base error rate 0)"
    return f"{metric} undefined on this pair"


def _notes(*parts: str) -> str:
    return " ".join(part for part in parts if part)


def _undefined_note(statistics: ReportStatistics, methods: Sequence[str], metrics: Sequence[str]) -> str:
    lines = undefined_reasons(statistics, methods, metrics)
    if not lines:
        return ""
    return "NaN per-pair values (left out of the means): " + " | ".join(lines) + "."


def _method_index(statistics: ReportStatistics) -> pd.MultiIndex:
    return pd.MultiIndex.from_tuples(
        [(block, method_label(method, statistics.k)) for block, method in statistics.rows], names=["block", "method"]
    )


def _macros(statistics: ReportStatistics, metric: str) -> list[float]:
    return [statistics.macro[metric][method].value for method in statistics.methods]


def main_table(report: ReportStatistics | ReportData) -> ReportTable:
    """Paper Table 1: per-task AUROC / AURC, pair-equal macro AUROC / AURC, excess AURC, risk at 10/20/50% coverage
    and measured relative latency, one row per method (single-trace block, then sampling block)."""
    statistics = _statistics(report)
    methods = statistics.methods
    columns: dict[str, list[float]] = {}
    for task in tasks(statistics.data):
        for metric in BOOTSTRAP_METRICS:
            columns[f"{task} {METRIC_LABELS[metric]}"] = [
                statistics.task_means[metric][method][task] for method in methods
            ]
    for metric in (*BOOTSTRAP_METRICS, "excess_aurc", *map(risk_key, DEFAULT_COVERAGES)):
        label = METRIC_LABELS[metric]
        columns[f"macro {label}" if metric in BOOTSTRAP_METRICS else label] = _macros(statistics, metric)
    columns["latency ×"] = [statistics.latency[method] for method in methods]
    columns["wall ×"] = [statistics.wall_latency.get(method, math.nan) for method in methods]
    frame = pd.DataFrame(columns, index=_method_index(statistics))
    rank = {column: column.endswith("AUROC") for column in frame.columns if column not in ("latency ×", "wall ×")}
    note = _notes(
        f"{len(statistics.data.pairs)} (model, task) pairs. Per-task columns: mean over the pairs (models) of that "
        "task; macro: pair-equal mean over all pairs; excess AURC = AURC / base error rate (1 ≈ random ranking); "
        "risk@c: error rate of the c% most confident answers. AUROC higher is better, the rest lower; best in bold, "
        "second underlined. Latency: cost per question in generations, from the runs' own timings (mean over pairs); "
        "wall: measured wall-clock wait per question over one generation's, in the runs' own batching (mean over "
        "pairs; empty for runs that did not store arrival times).",
        _missing_methods_note(statistics),
        _undefined_note(statistics, methods, ("auroc", "aurc", "excess_aurc", "risk_at_10")),
    )
    return ReportTable("leaderboard", "Leaderboard (paper Table 1 layout)", frame, rank, note)


def _missing_methods_note(statistics: ReportStatistics) -> str:
    n_pairs, k = len(statistics.data.pairs), statistics.k
    partial = [
        f"{method_label(method, k)} ({count} of {n_pairs} pairs)"
        for method in statistics.methods
        if (count := statistics.evaluated_on[method]) < n_pairs
    ]
    absent = [method.display(k) for method in leaderboard_rows() if method.name not in statistics.methods]
    return _notes(
        f"Evaluated on some pairs only (means over those, no bootstrap interval): {', '.join(partial)}."
        if partial
        else "",
        f"Not in the runs: {', '.join(absent)}." if absent else "",
    )


def _nan_samples_note(statistics: ReportStatistics, counts: dict[str, int | None]) -> str:
    shown = [f"{what} {count}" for what, count in counts.items() if count]
    if not shown:
        return ""
    return (
        f"Resamples that drew only pairs where the metric is undefined have no value and are left out of the "
        f"interval (count of {statistics.data.n_resamples}): {', '.join(shown)}."
    )


def _interval_columns(
    statistics: ReportStatistics, metric: str, columns: dict[str, list[float]], nan_counts: dict[str, int | None]
) -> None:
    """The ``<metric> lo`` and ``hi`` columns of the leaderboard methods' macros, and their resamples without one."""
    shown, macros = METRIC_LABELS[metric], [statistics.macro[metric][method] for method in statistics.methods]
    columns[f"{shown} lo"] = [macro.lo for macro in macros]
    columns[f"{shown} hi"] = [macro.hi for macro in macros]
    nan_counts.update(
        {
            f"{shown} {method_label(method, statistics.k)}": macro.nan_samples
            for method, macro in zip(statistics.methods, macros)
            if macro.nan_samples is not None
        }
    )


def ci_table(report: ReportStatistics | ReportData) -> ReportTable:
    """Macro AUROC and AURC of every leaderboard method with hierarchical-bootstrap percentile intervals."""
    statistics = _statistics(report)
    data, level = statistics.data, statistics.level
    columns: dict[str, list[float]] = {}
    nan_counts: dict[str, int | None] = {}
    for metric in BOOTSTRAP_METRICS:
        columns[f"macro {METRIC_LABELS[metric]}"] = _macros(statistics, metric)
        _interval_columns(statistics, metric, columns, nan_counts)
    without = [method_label(method, statistics.k) for method in statistics.methods if method not in data.common_methods]
    note = _notes(
        f"{level:.0%} percentile intervals of the pair-equal macro from {data.n_resamples} hierarchical bootstrap "
        f"resamples (pairs, then questions within a pair stratified by correctness; seed {data.seed}). A learned "
        "head's metric is averaged over its cross-fitting repetitions inside every resample, as on the full data, "
        "so each interval belongs to the macro shown.",
        f"No interval (not evaluated on every pair): {', '.join(without)}." if without else "",
        _nan_samples_note(statistics, nan_counts),
        _undefined_note(statistics, statistics.methods, ("auroc", "aurc")),
    )
    return ReportTable(
        "confidence_intervals",
        f"Macro AUROC / AURC with {level:.0%} bootstrap intervals",
        pd.DataFrame(columns, index=_method_index(statistics)),
        {},
        note,
    )


def paired_table(report: ReportStatistics | ReportData) -> ReportTable:
    """TrAC − SC@K and CF@K − SC@K (modal and primary): macro difference, paired bootstrap interval, one-sided
    bootstrap p-value and wins / ties / losses over pairs, for AUROC and AURC."""
    statistics = _statistics(report)
    data, k = statistics.data, statistics.k
    records, index, nan_counts = [], [], {}
    for metric in BOOTSTRAP_METRICS:
        shown = METRIC_LABELS[metric]
        for a, b in COMPARISONS:
            difference = statistics.paired[metric, a, b]
            index.append((shown, f"{method_label(a, k)} − {method_label(b, k)}"))
            records.append(difference.row())
            if difference.nan_samples is not None:
                nan_counts[f"{shown} {index[-1][1]}"] = difference.nan_samples
    frame = pd.DataFrame(records, index=pd.MultiIndex.from_tuples(index, names=["metric", "comparison"]))
    missing = [
        f"{method_label(a, k)} − {method_label(b, k)}"
        for a, b in COMPARISONS
        if a not in data.common_methods or b not in data.common_methods
    ]
    note = _notes(
        "difference: macro of the first method minus macro of the second (leaderboard numbers). AUROC: positive "
        "favours the first method; AURC: negative favours the first method (lower is better). lo / hi: "
        f"{statistics.level:.0%} percentile interval of the paired differences over the same {data.n_resamples} "
        "bootstrap resamples; p: one-sided bootstrap p-value, the share of "
        "resamples where the first method is not better (AUROC difference ≤ 0, AURC difference ≥ 0). wins / ties "
        "/ losses: pairs where the first method's per-pair value is better / equal / worse (per-pair table); pairs: "
        "pairs where both are defined.",
        f"NaN interval (a method not evaluated on every pair): {', '.join(missing)}." if missing else "",
        _nan_samples_note(statistics, nan_counts),
    )
    return ReportTable("paired_differences", "Paired differences against self-consistency", frame, {}, note)


def paired_per_pair_table(report: ReportStatistics | ReportData) -> ReportTable:
    """Each pair's own TrAC − SC@K and CF@K − SC@K AUROC difference, with the interval and one-sided p of a bootstrap
    of its questions alone (docs/method.md#paired-differences): the paper's per-pair fusion table."""
    statistics = _statistics(report)
    k = statistics.k
    records, index = [], []
    for a, b in COMPARISONS:
        for pair, difference in zip(statistics.data.pairs, statistics.paired_by_pair.get((a, b), ()), strict=True):
            index.append((pair.name, f"{method_label(a, k)} − {method_label(b, k)}"))
            records.append({name: getattr(difference, name) for name in ("difference", "lo", "hi", "p")})
    frame = pd.DataFrame(records, index=pd.MultiIndex.from_tuples(index, names=["pair", "comparison"]))
    note = _notes(
        "AUROC of the first method minus the second on each pair alone. lo / hi: "
        f"{statistics.level:.0%} percentile interval of the differences over {statistics.data.n_resamples} bootstrap "
        "resamples of the pair's questions (stratified by correctness, the report's seed); p: the share of those "
        "resamples where the first method is not better. One test per row: read many rows as many tests. NaN where "
        "either method is undefined on the pair.",
    )
    return ReportTable("paired_per_pair", "Paired differences per pair (AUROC)", frame, {}, note)


def per_pair_table(report: ReportStatistics | ReportData) -> ReportTable:
    """Every pair: questions, accuracy, K, the probe's agreement with the primary answer on correct and on wrong
    responses (docs/method.md#probe-agreement) and the AUROC of each leaderboard method (what each macro averages)."""
    statistics = _statistics(report)
    legacy = [
        pair.name for pair, counts in zip(statistics.data.pairs, statistics.pairs) if counts.agreement.reads_answer
    ]
    frame = pd.DataFrame(
        {
            "n": [pair.n for pair in statistics.pairs],
            "accuracy": [pair.accuracy for pair in statistics.pairs],
            "K": [pair.k for pair in statistics.pairs],
            "probe agrees (correct)": [pair.agreement.share_correct for pair in statistics.pairs],
            "probe agrees (wrong)": [pair.agreement.share_wrong for pair in statistics.pairs],
            **{
                method_label(method, statistics.k): statistics.per_pair["auroc"][method]
                for method in statistics.methods
            },
        },
        index=pd.Index([pair.name for pair in statistics.data.pairs], name="pair"),
    )
    note = _notes(
        "Per-pair AUROC (learned heads: mean over the cross-fitting repetitions, as lm-eval reports it).",
        "Probe agrees: share of correct / wrong primary responses whose re-elicited answer equals the primary answer "
        f"(the paper: {format_agreement(PAPER_AGREEMENT[0])} / {format_agreement(PAPER_AGREEMENT[1])}; a probe that "
        "agrees on nearly every response, correct or wrong, carries no signal in its agreement).",
        f"Probe after the answer (records of schema trac-record/1), not the paper's Q(x, r): {', '.join(legacy)}."
        if legacy
        else "",
        _undefined_note(statistics, statistics.methods, ("auroc",)),
    )
    return ReportTable("per_pair", "Per-pair AUROC", frame, {}, note)


def calibration_table(report: ReportStatistics | ReportData) -> ReportTable:
    """The rejection and calibration metrics of every leaderboard method: pair-equal macro of AUPRC (errors), PRR,
    PRR@50, ECE, Brier, log loss and smECE, with hierarchical-bootstrap percentile intervals (none for smECE)."""
    statistics = _statistics(report)
    data, level = statistics.data, statistics.level
    columns: dict[str, list[float]] = {}
    rank: dict[str, bool] = {}
    nan_counts: dict[str, int | None] = {}
    for metric in CALIBRATION_TABLE_METRICS:
        shown = METRIC_LABELS[metric]
        columns[f"macro {shown}"] = _macros(statistics, metric)
        rank[f"macro {shown}"] = HIGHER_IS_BETTER[metric]
        if metric in data.bootstraps:
            _interval_columns(statistics, metric, columns, nan_counts)
    note = _notes(
        "AUPRC (errors): average precision of flagging wrong answers from the least confident up (1 = every error "
        "below every correct answer, random ≈ the error rate); PRR: share of the oracle's gain in retained accuracy "
        "over a random order (1 = oracle, 0 = random), PRR@50 rejecting at most half of the answers. Calibration of "
        "each method's probability of correctness (heads: out-of-fold probability; baselines: their score through "
        f"its calibration map, {data.calibration_map}, cross-fitted on the heads' folds): ECE over {data.ece_bins} "
        "equal-mass bins, Brier score, log loss and smECE (relplot), 0 = calibrated, lower is better. AUPRC and PRR "
        "higher is better; best in bold, second underlined.",
        f"{level:.0%} percentile intervals from the same {data.n_resamples} hierarchical bootstrap resamples as "
        "the leaderboard; ECE's re-centred on the estimate (a binned ECE is biased upward on a resample, so its "
        "resamples are moved until their median is the estimate: the interval contains it); smECE has no interval "
        "(its estimator is too slow to resample).",
        _missing_methods_note(statistics),
        _nan_samples_note(statistics, nan_counts),
        _undefined_note(statistics, statistics.methods, CALIBRATION_TABLE_METRICS),
    )
    return ReportTable(
        "calibration_rejection",
        f"Rejection and calibration metrics with {level:.0%} bootstrap intervals",
        pd.DataFrame(columns, index=_method_index(statistics)),
        rank,
        note,
    )


RANKED_MARKS = {BEST: "best", TIED: "tied with the best"}
"""How the ranked summary writes its marks (docs/method.md#paired-differences), in ``trac report`` and on the page."""
CONSTANT_MARK = "constant score"


def ranked_verdict(row: RankedRow) -> str:
    """A ranked row's mark in words: best / tied with the best, and "constant score" for a constant method."""
    return "; ".join(part for part in (RANKED_MARKS.get(row.mark or ""), CONSTANT_MARK if row.constant else "") if part)


def ranked_table(summary: RankedSummary) -> ReportTable:
    """A :class:`~trac_metrics.reporting.model.statistics.RankedSummary` as a report table (``ranked_summary.csv``):
    rank, method, its mark (:func:`ranked_verdict`), macro, interval, the macro AUROC beside a calibration metric,
    difference to the reference with its interval and p, and the pairs compared."""
    label = METRIC_LABELS[summary.metric]
    reference = next((row.label for row in summary.rows if row.method == summary.reference), None)
    empty = dict.fromkeys(PAIRED_COLUMNS, math.nan) | {"pairs": 0}
    differences = [row.difference.row() if row.difference else empty for row in summary.rows]
    calibration = summary.metric in CALIBRATION_METRIC_NAMES
    frame = pd.DataFrame(
        {
            "mark": [ranked_verdict(row) for row in summary.rows],
            f"macro {label}": [row.value for row in summary.rows],
            f"{label} lo": [row.lo for row in summary.rows],
            f"{label} hi": [row.hi for row in summary.rows],
            **({"macro AUROC": [row.auroc for row in summary.rows]} if calibration else {}),
            "difference": [found["difference"] for found in differences],
            "difference lo": [found["lo"] for found in differences],
            "difference hi": [found["hi"] for found in differences],
            "p": [found["p"] for found in differences],
            "pairs": [int(found["pairs"]) for found in differences],
        },
        index=pd.MultiIndex.from_tuples(
            [(position + 1, row.label) for position, row in enumerate(summary.rows)], names=["rank", "method"]
        ),
    )
    direction = "higher" if summary.higher else "lower"
    note = _notes(
        f"Leaderboard methods ranked by the pair-equal macro {label} ({direction} is better), with its "
        f"{summary.level:.0%} hierarchical-bootstrap interval. mark: best only where the paired difference of every "
        "other method to the leader excludes 0; else the leader and each method whose paired interval to it includes "
        "0 are tied with the best.",
        "constant score: one value on at least 99 % of each pair's answers; it tells no answer from another (AUROC "
        "0.5) and its probability, the pair's accuracy, is calibrated by construction, so it is ranked after every "
        "other method on a calibration metric and never marked. macro AUROC: how well the score ranks right above "
        "wrong answers, beside the calibration metric."
        if calibration
        else "",
        f"difference: the method's macro minus {reference}'s, with the {summary.level:.0%} interval of the paired "
        f"differences over the same {summary.n_resamples} resamples and the one-sided p (share of resamples where the "
        "method is not better); pairs: pairs where both are defined."
        if reference
        else "No reference: neither SC@K nor a single-trace baseline is evaluated on every pair.",
    )
    title = f"Ranked by macro {label}" + (f", against {reference}" if reference else "")
    return ReportTable("ranked_summary", title, frame, {}, note)


def leaderboard_tables(report: ReportStatistics | ReportData) -> list[ReportTable]:
    """The leaderboard tables, in report order: Table 1, the ranked summary (AUROC against the default reference),
    intervals, calibration and rejection, paired differences (macro, then per pair), per pair."""
    statistics = _statistics(report)
    return [
        main_table(statistics),
        ranked_table(statistics.ranked["auroc"]),
        ci_table(statistics),
        calibration_table(statistics),
        paired_table(statistics),
        paired_per_pair_table(statistics),
        per_pair_table(statistics),
    ]
