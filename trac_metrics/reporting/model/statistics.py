"""The leaderboard's numbers, each computed once: per-pair values, pair-equal macros with their hierarchical-bootstrap
intervals, paired differences and ranked summaries (docs/method.md#pair-equal-macro-average,
docs/method.md#hierarchical-bootstrap, docs/method.md#paired-differences).

Every point number is the pair-equal macro of the per-pair ``TaskEvaluation.metrics`` (the numbers lm-eval's
aggregation reports for each task); intervals and p-values come from the shared hierarchical bootstrap of
:class:`~trac_metrics.reporting.report_data.ReportData`. A resample that drew only pairs where a method's metric is
undefined has no value; those resamples are counted (``nan_samples``) for the tables' notes instead of warned.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from trac_metrics._warnings import TracWarning
from trac_metrics.features.evidence import task_accuracy
from trac_metrics.features.probe_agreement import ProbeAgreement
from trac_metrics.methods import Family, get
from trac_metrics.reporting.model.methods import k_label, leaderboard_methods, method_label
from trac_metrics.reporting.report_data import BOOTSTRAP_METRICS, ReportData, bootstrap_all, bootstrapped_metrics
from trac_metrics.reporting.summary_table import HEADLINE_METRICS
from trac_metrics.selective import CALIBRATION_METRIC_NAMES, HIGHER_IS_BETTER, METRIC_NAMES
from trac_metrics.selective.bootstrap import BootstrapResult, mean_of_defined

COMPARISONS = (("trac", "sc_modal"), ("trac", "sc_primary"), ("cf", "sc_modal"), ("cf", "sc_primary"))
"""Paired differences (docs/method.md#paired-differences): TrAC − SC@K and Consensus Fusion@K − SC@K (modal and
primary-answer SC)."""
SC_REFERENCE = "sc_modal"
"""The ranked summary's default reference: SC@K on the modal answer (docs/method.md#paired-differences)."""

_TIE_TOLERANCE = 1e-12
ANALYSIS_LEVEL = 0.95
"""The level of the analysis tables' intervals (their "95% CI" columns), whatever the leaderboard's."""


@dataclass(frozen=True)
class Macro:
    """A pair-equal macro with its percentile interval (NaN when the method is not on every pair or the metric is not
    bootstrapped) and the resamples that had no macro (None without an interval)."""

    value: float
    lo: float
    hi: float
    nan_samples: int | None


@dataclass(frozen=True)
class PairedDifference:
    """A method against a reference: macro difference, paired-bootstrap interval, one-sided bootstrap p (the share of
    resamples where the method is not better), wins / ties / losses over the pairs where both are defined, and the
    resamples without a difference (None without an interval)."""

    difference: float
    lo: float
    hi: float
    p: float
    wins: int
    ties: int
    losses: int
    pairs: int
    nan_samples: int | None

    def row(self) -> dict[str, float]:
        """The numbers a paired table row shows: difference, lo, hi, p, wins, ties, losses, pairs."""
        return {name: getattr(self, name) for name in PAIRED_COLUMNS}


PAIRED_COLUMNS = ("difference", "lo", "hi", "p", "wins", "ties", "losses", "pairs")


BEST, TIED = "best", "tied"
"""The marks of a ranked summary (docs/method.md#paired-differences): ``best`` when the paired difference of every
other method to the leader excludes 0, else ``tied`` on the leader and every method whose difference includes 0."""


@dataclass(frozen=True)
class RankedRow:
    """One method of a :class:`RankedSummary`: its pair-equal macro with the bootstrap interval, its mark
    (:data:`BEST`, :data:`TIED` with the best, or None), its paired difference to the reference (None for the
    reference itself), whether its score is constant (:meth:`ReportData.constant_methods`) and its macro AUROC (the
    discrimination shown beside a calibration metric)."""

    method: str
    label: str
    block: str
    value: float
    lo: float
    hi: float
    mark: str | None
    difference: PairedDifference | None
    constant: bool = False
    auroc: float = math.nan


@dataclass(frozen=True)
class RankedSummary:
    """The leaderboard methods ranked by the macro of ``metric`` (best first, NaN last, ties in the paper's row
    order), against ``reference`` (None when no method can be one)."""

    metric: str
    reference: str | None
    level: float
    n_resamples: int
    rows: tuple[RankedRow, ...]

    @property
    def higher(self) -> bool:
        return HIGHER_IS_BETTER[self.metric]


@dataclass(frozen=True)
class PairCounts:
    """A pair's questions, K, accuracy and majority-vote accuracy (NaN when the records have none), and how often its
    probe's answer agrees with the primary on correct and on wrong responses (docs/method.md#probe-agreement)."""

    n: int
    k: int
    accuracy: float
    majority_accuracy: float
    agreement: ProbeAgreement = ProbeAgreement()


@dataclass(frozen=True)
class ReportStatistics:
    """Every number the leaderboard tables and the page's summaries show, for the leaderboard methods (and the methods
    of :data:`COMPARISONS`): ``per_pair[metric][method]`` (one value per pair, NaN where undefined),
    ``macro[metric][method]``, ``task_means[metric][method][task]`` (of :data:`BOOTSTRAP_METRICS`),
    ``latency[method]``, ``evaluated_on[method]`` (the pairs that scored it), ``paired[metric, method, reference]``,
    ``paired_by_pair[method, reference]`` (each pair's own AUROC difference of the :data:`COMPARISONS`, from a
    bootstrap of that pair's questions alone) and ``ranked[metric]`` (every bootstrapped metric), all at one interval
    ``level``."""

    data: ReportData
    level: float
    k: str
    rows: tuple[tuple[str, str], ...]
    pairs: tuple[PairCounts, ...]
    per_pair: Mapping[str, Mapping[str, np.ndarray]]
    macro: Mapping[str, Mapping[str, Macro]]
    task_means: Mapping[str, Mapping[str, Mapping[str, float]]]
    latency: Mapping[str, float]
    evaluated_on: Mapping[str, int]
    paired: Mapping[tuple[str, str, str], PairedDifference]
    ranked: Mapping[str, RankedSummary]
    paired_by_pair: Mapping[tuple[str, str], tuple[PairedDifference, ...]] = field(default_factory=dict)
    wall_latency: Mapping[str, float] = field(default_factory=dict)
    """Per method, the mean over pairs of its measured latency (docs/method.md#measured-latency)."""

    @property
    def methods(self) -> list[str]:
        """The leaderboard methods, in row order."""
        return [method for _, method in self.rows]

    @property
    def macro_accuracy(self) -> float:
        return mean_of_defined([pair.accuracy for pair in self.pairs])

    @property
    def macro_majority_accuracy(self) -> float:
        return mean_of_defined([pair.majority_accuracy for pair in self.pairs])


@contextmanager
def nan_samples_in_note() -> Iterator[None]:
    """Silence the bootstrap's "samples are NaN and left out" warning: the tables' notes give those counts."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*bootstrap samples are NaN and left out", category=TracWarning)
        yield


def nan_samples(data: ReportData, metric: str, a: str, b: str | None = None) -> int:
    """Resamples without a macro of ``a`` (of ``a`` − ``b``): every pair they drew is undefined for the method."""
    bootstrap = data.bootstraps[metric]
    values = bootstrap.samples[:, bootstrap.methods.index(a)]
    if b is not None:
        values = values - bootstrap.samples[:, bootstrap.methods.index(b)]
    return int(np.isnan(values).sum())


def mean_latency(data: ReportData, method: str, measured: bool = False) -> float:
    """Mean over the pairs that evaluated ``method`` (and stored timings) of its relative latency (``measured``: its
    measured wall-clock latency, docs/method.md#measured-latency)."""
    return mean_of_defined(
        pair.measured_latency(method) if measured else pair.relative_latency(method)
        for pair, evaluation in zip(data.pairs, data.evaluations)
        if method in evaluation.scores
    )


def tasks(data: ReportData) -> list[str]:
    """Tasks of the pairs, in the pairs' (sorted) order."""
    return list(dict.fromkeys(pair.task for pair in data.pairs))


def task_means(data: ReportData, values: np.ndarray) -> dict[str, float]:
    """Task → mean of the per-pair ``values`` over the pairs of the task where they are defined (the models of that
    task), in :func:`tasks` order; one pass over the pairs."""
    by_task: dict[str, list[float]] = {task: [] for task in tasks(data)}
    for pair, value in zip(data.pairs, values):
        by_task[pair.task].append(value)
    return {task: mean_of_defined(found) for task, found in by_task.items()}


def _macro(data: ReportData, values: np.ndarray, method: str, metric: str, level: float) -> Macro:
    lo, hi = data.ci(method, metric, level)
    bootstrapped = metric in data.bootstraps and method in data.bootstraps[metric].methods
    return Macro(mean_of_defined(values), lo, hi, nan_samples(data, metric, method) if bootstrapped else None)


def paired_difference(
    data: ReportData,
    metric: str,
    a: str,
    b: str,
    per_pair: Mapping[str, np.ndarray],
    macro: Mapping[str, Macro],
    level: float,
) -> PairedDifference:
    """``a`` against ``b`` on ``metric`` (:class:`PairedDifference`), from their per-pair values and macros of
    ``metric`` and the shared bootstrap's resamples."""
    higher = HIGHER_IS_BETTER[metric]
    value_a, value_b = per_pair[a], per_pair[b]
    compared = ~np.isnan(value_a) & ~np.isnan(value_b)
    tied = compared & (np.abs(value_a - value_b) <= _TIE_TOLERANCE)
    better = compared & ~tied & ((value_a > value_b) if higher else (value_a < value_b))
    lo = hi = p = math.nan
    missing = None
    bootstrap = data.bootstraps.get(metric)
    if bootstrap is not None and a in bootstrap.methods and b in bootstrap.methods:
        interval = bootstrap.paired_difference(a, b, level, higher_is_better=higher)
        lo, hi = interval["lo"], interval["hi"]
        differences = bootstrap.differences(a, b)
        defined = differences[~np.isnan(differences)]
        if defined.size:
            p = float(np.mean(defined <= 0 if higher else defined >= 0))
        missing = nan_samples(data, metric, a, b)
    return PairedDifference(
        macro[a].value - macro[b].value,
        lo,
        hi,
        p,
        int(better.sum()),
        int(tied.sum()),
        int((compared & ~tied & ~better).sum()),
        int(compared.sum()),
        missing,
    )


def default_reference(data: ReportData, macro: Mapping[str, Macro], metric: str) -> str | None:
    """SC@K (modal answer) when it has an interval (evaluated on every pair), else the single-trace baseline (not a
    learned head) with the best macro of ``metric`` (``macro``: the leaderboard methods' macros of it, in row order)
    among those that have one; None when there is neither."""
    common = data.bootstraps[metric].methods
    if SC_REFERENCE in common:
        return SC_REFERENCE
    baselines = [
        (value, method)
        for method, found in macro.items()
        if method in common and get(method).family is Family.SINGLE_TRACE and not math.isnan(value := found.value)
    ]
    if not baselines:
        return None
    sign = 1.0 if HIGHER_IS_BETTER[metric] else -1.0
    return max(baselines, key=lambda found: sign * found[0])[1]


def ranked_order(
    rows: Sequence[tuple[str, str]], metric: str, macro: Mapping[str, Macro], constant: frozenset[str]
) -> list[tuple[str, str]]:
    """``rows`` best first by their macro of ``metric`` (NaN last, ties in the paper's row order); on a calibration
    metric a method with a constant score comes after every other (docs/method.md#expected-calibration-error: a
    constant probability is calibrated and tells nothing apart), so it is never ranked first on it alone."""
    higher = HIGHER_IS_BETTER[metric]
    demoted = constant if metric in CALIBRATION_METRIC_NAMES else frozenset()

    def rank_key(row: tuple[str, str]) -> tuple[bool, bool, float]:
        value = macro[row[1]].value
        return (math.isnan(value), row[1] in demoted, 0.0 if math.isnan(value) else (-value if higher else value))

    return sorted(rows, key=rank_key)


def _tied(difference: PairedDifference | None) -> bool:
    """Whether a method's paired difference to the leader has an interval that includes 0."""
    return difference is not None and difference.lo <= 0.0 <= difference.hi


def winner_marks(
    ordered: Sequence[str], to_leader: Mapping[str, PairedDifference], excluded: frozenset[str]
) -> dict[str, str]:
    """The marks of a ranked list (docs/method.md#paired-differences): the leader ``ordered[0]`` is :data:`BEST` when
    the paired difference (``to_leader[method]``: method − leader) of every other method excludes 0 and the runner-up
    has one; otherwise the leader and every method whose interval includes 0 are :data:`TIED` with the best. The
    ``excluded`` methods (constant scores on a calibration metric) and a leader without an interval get no mark."""
    if not ordered or ordered[0] in excluded:
        return {}
    leader, others = ordered[0], [method for method in ordered[1:] if method not in excluded]
    if not others or others[0] not in to_leader or math.isnan(to_leader[others[0]].lo):
        return {}
    tied = [method for method in others if _tied(to_leader.get(method))]
    return {method: TIED for method in (leader, *tied)} if tied else {leader: BEST}


def ranked_summary(
    data: ReportData,
    rows: Sequence[tuple[str, str]],
    metric: str,
    macro: Mapping[str, Macro],
    differences: Mapping[str, PairedDifference],
    reference: str | None,
    level: float,
    to_leader: Mapping[str, PairedDifference],
    auroc: Mapping[str, Macro],
) -> RankedSummary:
    """Who wins and by how much: the leaderboard ``rows`` in :func:`ranked_order`, marked by :func:`winner_marks`
    from their paired differences to the leader (``to_leader[method]``), each with its difference to ``reference``
    (``differences[method]``), its constant-score flag and its macro AUROC (``auroc``). What the ``ranked_summary``
    table of ``trac report`` and the HTML page's summary both show."""
    constant = data.constant_methods
    ordered = ranked_order(rows, metric, macro, constant)
    excluded = constant if metric in CALIBRATION_METRIC_NAMES else frozenset()
    marks = winner_marks([method for _, method in ordered], to_leader, excluded)
    k = k_label(data.pairs)
    ranked = tuple(
        RankedRow(
            method,
            method_label(method, k),
            block,
            macro[method].value,
            macro[method].lo,
            macro[method].hi,
            marks.get(method),
            differences.get(method),
            method in constant,
            auroc[method].value,
        )
        for block, method in ordered
    )
    return RankedSummary(metric, reference, level, data.n_resamples, ranked)


def _paired_keys(
    methods: Sequence[str],
    bootstrapped: Iterable[str],
    references: Mapping[str, str | None],
    leaders: Mapping[str, str | None],
) -> list[tuple[str, str, str]]:
    """The differences a report shows: every leaderboard method against every other on the bootstrapped headline
    metrics (the page), every method against each bootstrapped metric's reference and leader (the ranked summaries)
    and :data:`COMPARISONS` on :data:`BOOTSTRAP_METRICS` (the paired table), each once."""
    bootstrapped = list(bootstrapped)
    keys = [
        (metric, method, reference)
        for metric in HEADLINE_METRICS
        if metric in bootstrapped
        for reference in methods
        for method in methods
        if method != reference
    ]
    keys += [
        (metric, method, reference)
        for chosen in (references, leaders)
        for metric, reference in chosen.items()
        if reference is not None
        for method in methods
        if method != reference
    ]
    keys += [(metric, a, b) for metric in BOOTSTRAP_METRICS for a, b in COMPARISONS]
    return list(dict.fromkeys(keys))


def report_statistics(data: ReportData, level: float = 0.95) -> ReportStatistics:
    """Every number of :class:`ReportStatistics`, each computed once from ``data`` at interval ``level``."""
    rows = tuple(leaderboard_methods(data))
    methods = [method for _, method in rows]
    computed = list(dict.fromkeys([*methods, *(method for pair in COMPARISONS for method in pair)]))
    per_pair = {metric: {method: data.per_pair(method, metric) for method in computed} for metric in METRIC_NAMES}
    with nan_samples_in_note():
        macro = {
            metric: {method: _macro(data, per_pair[metric][method], method, metric, level) for method in computed}
            for metric in METRIC_NAMES
        }
        references = {
            metric: default_reference(data, {method: macro[metric][method] for method in methods}, metric)
            for metric in data.bootstraps
        }
        leaders = {
            metric: leader
            if (leader := ranked_order(rows, metric, macro[metric], data.constant_methods)[0][1])
            in data.bootstraps[metric].methods
            else None
            for metric in data.bootstraps
        }
        paired = {
            (metric, a, b): paired_difference(data, metric, a, b, per_pair[metric], macro[metric], level)
            for metric, a, b in _paired_keys(methods, data.bootstraps, references, leaders)
        }
    ranked = {
        metric: ranked_summary(
            data,
            rows,
            metric,
            macro[metric],
            {method: paired[metric, method, reference] for method in methods if reference and method != reference},
            reference,
            level,
            {method: paired[metric, method, leaders[metric]] for method in methods if method != leaders[metric]}
            if leaders[metric]
            else {},
            macro["auroc"],
        )
        for metric, reference in references.items()
    }
    counts = tuple(
        PairCounts(
            len(pair.evidences),
            pair.num_samples,
            pair.accuracy,
            task_accuracy(pair.evidences).get("maj_acc", math.nan),
            pair.probe_agreement,
        )
        for pair in data.pairs
    )
    return ReportStatistics(
        data,
        level,
        k_label(data.pairs),
        rows,
        counts,
        per_pair,
        macro,
        {
            metric: {method: task_means(data, per_pair[metric][method]) for method in methods}
            for metric in BOOTSTRAP_METRICS
        },
        {method: mean_latency(data, method) for method in methods},
        {method: sum(method in evaluation.scores for evaluation in data.evaluations) for method in methods},
        paired,
        ranked,
        per_pair_differences(data, per_pair["auroc"], level),
        {method: mean_latency(data, method, measured=True) for method in methods},
    )


def per_pair_differences(
    data: ReportData, auroc: Mapping[str, np.ndarray], level: float
) -> dict[tuple[str, str], tuple[PairedDifference, ...]]:
    """Each comparison of :data:`COMPARISONS` on each pair alone, in AUROC (docs/method.md#paired-differences): the
    pair's difference (``auroc``: the per-pair values), and the percentile interval and one-sided p of the differences
    over one bootstrap of that pair's questions (stratified by correctness, the report's resample count and seed, a
    head's repetitions averaged as in the macro's); NaN where a method is undefined on the pair or missing from it."""
    methods = list(dict.fromkeys(method for comparison in COMPARISONS for method in comparison))
    metric = {"auroc": bootstrapped_metrics(data.ece_bins)["auroc"]}
    results = []
    for pair, evaluation in zip(data.pairs, data.evaluations, strict=True):
        present = [method for method in methods if method in evaluation.scores]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TracWarning)
            found = bootstrap_all([pair], [evaluation], present, metric, data.n_resamples, data.seed, jobs=1)
        results.append(found["auroc"] if present else None)
    return {
        (a, b): tuple(_pair_difference(result, index, auroc, a, b, level) for index, result in enumerate(results))
        for a, b in COMPARISONS
    }


def _pair_difference(
    result: BootstrapResult | None, index: int, auroc: Mapping[str, np.ndarray], a: str, b: str, level: float
) -> PairedDifference:
    difference = auroc[a][index] - auroc[b][index]
    if math.isnan(difference) or result is None or not {a, b} <= set(result.methods):
        return PairedDifference(difference, math.nan, math.nan, math.nan, 0, 0, 0, 0, None)
    interval = result.paired_difference(a, b, level, higher_is_better=True)
    differences = result.samples[:, result.methods.index(a)] - result.samples[:, result.methods.index(b)]
    defined = differences[~np.isnan(differences)]
    tied = abs(difference) <= _TIE_TOLERANCE
    better = not tied and difference > 0
    return PairedDifference(
        difference,
        interval["lo"],
        interval["hi"],
        float(np.mean(defined <= 0)) if defined.size else math.nan,
        int(better),
        int(tied),
        int(not tied and not better),
        1,
        None,
    )


@dataclass(frozen=True)
class StatisticsFirst:
    """What the analysis tables read (:class:`~trac_metrics.reporting.analyses.Numbers`): a method's per-pair values
    and 95% macro interval from ``statistics`` where it holds them (computed once, for the leaderboard), else from the
    report's data."""

    statistics: ReportStatistics

    def per_pair(self, method: str, metric: str) -> np.ndarray:
        held = self.statistics.per_pair.get(metric, {})
        return held[method] if method in held else self.statistics.data.per_pair(method, metric)

    def ci(self, method: str, metric: str) -> tuple[float, float]:
        held = self.statistics.macro.get(metric, {})
        if method in held and self.statistics.level == ANALYSIS_LEVEL:
            return held[method].lo, held[method].hi
        return self.statistics.data.ci(method, metric, ANALYSIS_LEVEL)
