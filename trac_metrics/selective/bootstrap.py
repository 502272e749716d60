"""Pair-equal macro averages and the hierarchical bootstrap across (model, dataset) pairs
(docs/method.md#pair-equal-macro-average, docs/method.md#hierarchical-bootstrap).

The headline numbers of the paper (§"Protocol", Table 1) are *pair-equal* macro averages: a metric is computed
per (model, dataset) pair and the pairs are averaged without weights. Their confidence intervals come from a
hierarchical bootstrap with 2,000 resamples:

1. draw as many pairs as there are, with replacement;
2. inside every drawn pair, independently, draw questions with replacement *stratified by correctness*
   (a question's class is the label of its first response; the numbers of correct and incorrect questions
   stay fixed) and take all responses of each drawn question;
3. the statistic is the pair-equal macro of the metric over the drawn pairs.

The same draws serve every method, so differences between methods are paired. A pair on which a method's
metric is NaN (e.g. AUROC with one class only) is skipped for that method, with a ``TracWarning``.

Speed: ``selective.auroc``, ``selective.aurc``, the rejection metrics (``auprc``, ``prr``, ``prr_50``) and the
calibration metrics ``brier``, ``log_loss`` and ``ece`` (also a ``functools.partial`` of it with another number of
bins) are computed for all resamples of a pair at once from per-tie-group counts (no re-sorting per resample,
:mod:`trac_metrics.selective.grouped`); any other ``metric(scores, labels) -> float`` is called once per resampled
pair. The fast AUROC is bit-identical to ``selective.auroc``; the others equal their metric up to floating-point
rounding (the AURC and PRR through harmonic-number closed forms of the same expectations).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType

import numpy as np
from numpy.typing import ArrayLike

from trac_metrics import selective
from trac_metrics._util.limits import require_memory
from trac_metrics._util.parallel import parallel_map
from trac_metrics._warnings import TracWarning
from trac_metrics.selective import grouped

Metric = Callable[[np.ndarray, np.ndarray], float]

__all__ = [
    "BootstrapResult",
    "Metric",
    "PairData",
    "bootstrap_memory",
    "hierarchical_bootstrap",
    "hierarchical_bootstrap_many",
    "macro",
    "mean_of_defined",
]


@dataclass(frozen=True, eq=False)  # holds arrays: compare by identity
class PairData:
    """One (model, dataset) pair: per-response correctness labels, question ids, and one score array per method.

    ``labels`` (1/True = correct), ``groups`` (question id of each response; all responses of a question are
    resampled together) and every ``scores[method]`` must be 1-D of the same, non-zero length. Arrays are
    stored as read-only copies (bool labels, float64 scores); the caller's arrays are left untouched.
    """

    name: str
    labels: np.ndarray
    groups: np.ndarray
    scores: Mapping[str, np.ndarray]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"PairData.name must be a non-empty string, got {self.name!r}")
        try:
            labels = selective.as_binary_labels(self.labels).copy()
        except ValueError as error:
            raise ValueError(f"pair {self.name!r}: {error}") from error
        if labels.size == 0:
            raise ValueError(f"pair {self.name!r}: no responses")
        groups = np.array(self.groups)
        if groups.shape != labels.shape:
            raise ValueError(f"pair {self.name!r}: groups have shape {groups.shape}, labels {labels.shape}")
        try:
            np.unique(groups)
        except TypeError as error:
            raise ValueError(f"pair {self.name!r}: question ids must be mutually comparable ({error})") from error
        if not isinstance(self.scores, Mapping) or not self.scores:
            raise ValueError(f"pair {self.name!r}: scores must be a non-empty mapping method -> array")
        scores = {method: self._score_array(method, values, labels.shape) for method, values in self.scores.items()}
        for array in (labels, groups, *scores.values()):
            array.setflags(write=False)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "groups", groups)
        object.__setattr__(self, "scores", MappingProxyType(scores))

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        """Picklable (for worker processes) although the scores are a read-only mapping."""
        return (PairData, (self.name, self.labels, self.groups, dict(self.scores)))

    def _score_array(self, method: str, values: ArrayLike, shape: tuple[int, ...]) -> np.ndarray:
        """Validated float64 copy of one method's scores."""
        if not isinstance(method, str):
            raise ValueError(f"pair {self.name!r}: method names must be strings, got {method!r}")
        try:
            array = np.array(values, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError(f"pair {self.name!r}: scores of {method!r} are not real numbers ({error})") from error
        if array.shape != shape:
            raise ValueError(f"pair {self.name!r}: scores of {method!r} have shape {array.shape}, labels {shape}")
        return array


@dataclass(frozen=True, eq=False)  # holds arrays: compare by identity
class BootstrapResult:
    """Hierarchical-bootstrap output for several methods sharing the same resamples.

    ``point[method]``: pair-equal macro on the original data; ``per_pair[i, j]``: the metric of method j on
    pair i (original data, NaN where undefined); ``samples[r, j]``: the macro of method j in resample r.
    ``recentred``: intervals and paired differences read the resamples re-centred on the estimate
    (:meth:`centred`, docs/method.md#hierarchical-bootstrap), for a metric biased under resampling (the binned ECE).
    """

    methods: tuple[str, ...]
    pair_names: tuple[str, ...]
    point: Mapping[str, float]
    per_pair: np.ndarray
    samples: np.ndarray
    recentred: bool = False

    def _column(self, method: str) -> int:
        if method not in self.methods:
            raise ValueError(f"unknown method {method!r}; known: {list(self.methods)}")
        return self.methods.index(method)

    def centred(self, samples: np.ndarray, point: float) -> np.ndarray:
        """``samples`` of a statistic whose estimate is ``point``, as its intervals and p-values read them
        (docs/method.md#hierarchical-bootstrap): as drawn, or, when :attr:`recentred`, moved by point − their median
        so that their median is the estimate (the bootstrap's estimate of the statistic's bias removed)."""
        defined = samples[~np.isnan(samples)]
        if not self.recentred or defined.size == 0 or math.isnan(point):
            return samples
        return samples + (point - float(np.median(defined)))

    def _interval(self, samples: np.ndarray, point: float, level: float, what: str) -> tuple[float, float]:
        """Percentile interval of :meth:`centred` samples; when re-centred, clipped to the range of the drawn
        samples and the estimate, so it never leaves the values the metric took (an ECE never below 0)."""
        lo, hi = _percentile_interval(self.centred(samples, point), level, what)
        if not self.recentred or math.isnan(lo):
            return lo, hi
        drawn = samples[~np.isnan(samples)]
        floor, ceiling = min(float(drawn.min()), point), max(float(drawn.max()), point)
        return min(max(lo, floor), ceiling), min(max(hi, floor), ceiling)

    def ci(self, method: str, level: float = 0.95) -> tuple[float, float]:
        """Percentile confidence interval of the macro of ``method``, re-centred on it when :attr:`recentred`
        (docs/method.md#hierarchical-bootstrap)."""
        return self._interval(self.samples[:, self._column(method)], self.point[method], level, method)

    def differences(self, a: str, b: str) -> np.ndarray:
        """The per-resample differences a − b (:meth:`centred` on macro a − macro b), what the paired interval and
        the one-sided p read (docs/method.md#paired-differences)."""
        raw = self.samples[:, self._column(a)] - self.samples[:, self._column(b)]
        return self.centred(raw, self.point[a] - self.point[b])

    def paired_difference(
        self, a: str, b: str, level: float = 0.95, higher_is_better: bool = True
    ) -> dict[str, float | int]:
        """Macro difference a − b with its paired percentile interval (same resamples for both methods; re-centred
        on the difference when :attr:`recentred`).

        Returns ``point`` (macro a − macro b), ``lo``/``hi`` (percentile interval of the per-resample
        differences), ``wins`` (pairs where a's metric beats b's on the original data: larger when
        ``higher_is_better``, smaller otherwise) and ``pairs`` (pairs where both metrics are defined).
        """
        column_a, column_b = self._column(a), self._column(b)
        differences = self.samples[:, column_a] - self.samples[:, column_b]
        lo, hi = self._interval(differences, self.point[a] - self.point[b], level, f"{a} - {b}")
        value_a, value_b = self.per_pair[:, column_a], self.per_pair[:, column_b]
        compared = np.isfinite(value_a) & np.isfinite(value_b)
        beats = value_a > value_b if higher_is_better else value_a < value_b
        return {
            "point": self.point[a] - self.point[b],
            "lo": lo,
            "hi": hi,
            "wins": int((beats & compared).sum()),
            "pairs": int(compared.sum()),
        }

    def averaged(self, columns: Mapping[str, Sequence[str]]) -> BootstrapResult:
        """A result whose method m is the mean of the columns ``columns[m]``, per pair and per resample.

        For a cross-fitted head bootstrapped once per repetition: its metric is averaged over repetitions inside
        every resample (as docs/method.md#cross-fitting-protocol averages it on the original data), so the point
        estimate is the reported macro and the interval belongs to it. A pair or resample where any averaged column is
        NaN is NaN.
        """
        indices = {method: [self._column(column) for column in names] for method, names in columns.items()}
        per_pair = np.stack([self.per_pair[:, index].mean(axis=1) for index in indices.values()], axis=1)
        samples = np.stack([self.samples[:, index].mean(axis=1) for index in indices.values()], axis=1)
        point = {method: mean_of_defined(per_pair[:, j]) for j, method in enumerate(indices)}
        return BootstrapResult(
            tuple(indices), self.pair_names, MappingProxyType(point), per_pair, samples, self.recentred
        )


def macro(pairs: Sequence[PairData], metric: Metric, method: str) -> float:
    """Pair-equal macro average (docs/method.md#pair-equal-macro-average): unweighted mean over pairs of
    ``metric(scores[method], labels)``.

    Pairs on which the metric is NaN are skipped with a ``TracWarning`` naming them; NaN (+ warning) when
    no pair has a defined value.
    """
    checked = _checked_pairs(pairs, [method])
    return _mean_of_defined(_pair_values(checked, metric, method), method)


def hierarchical_bootstrap(
    pairs: Sequence[PairData],
    metric: Metric,
    methods: Sequence[str],
    n_resamples: int = 2000,
    seed: int = 0,
) -> BootstrapResult:
    """Hierarchical bootstrap of the pair-equal macro of ``metric`` for each method
    (docs/method.md#hierarchical-bootstrap).

    Each resample draws pairs with replacement, then for every drawn pair (independently, also for repeats)
    questions with replacement stratified by correctness, taking all responses of a drawn question. The same
    draws are used for every method. Seeded with ``numpy.random.default_rng(seed)``: same inputs and seed →
    identical samples. Pairs where a method's metric is NaN on the original data are skipped for that method
    (``TracWarning``); a resample whose drawn pairs are all undefined gives a NaN sample (``TracWarning``).
    """
    return hierarchical_bootstrap_many(pairs, {"metric": metric}, methods, n_resamples, seed)["metric"]


def hierarchical_bootstrap_many(
    pairs: Sequence[PairData],
    metrics: Mapping[str, Metric],
    methods: Sequence[str],
    n_resamples: int = 2000,
    seed: int = 0,
    jobs: int | None = 1,
) -> dict[str, BootstrapResult]:
    """:func:`hierarchical_bootstrap` of several metrics on the same draws (each result equals a separate call with
    the same seed), the pairs' resampled metrics computed on ``jobs`` processes (None: every CPU; the result does
    not depend on it; the metrics must then be picklable, e.g. module-level functions). AUROC and AURC of a
    method share one ordering and one pass over the draws. A request larger than the memory available
    (:func:`bootstrap_memory`) is refused up front with a :class:`~trac_metrics._util.limits.MemoryLimitError`."""
    methods = tuple(methods)
    checked = _checked_pairs(pairs, methods)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    questions = [np.unique(pair.groups).size for pair in checked]
    require_memory(
        f"n_resamples={n_resamples}",
        bootstrap_memory(questions, n_resamples, len(methods), len(metrics)),
        f"for {len(checked)} pair(s) with {sum(questions)} questions in all",
    )
    per_pair = {name: np.empty((len(checked), len(methods))) for name in metrics}
    point: dict[str, dict[str, float]] = {name: {} for name in metrics}
    for name, metric in metrics.items():
        for j, method in enumerate(methods):  # a plain loop keeps the warnings' stacklevel at the caller
            per_pair[name][:, j] = _pair_values(checked, metric, method)
            point[name][method] = _mean_of_defined(per_pair[name][:, j], method)

    rng = np.random.default_rng(seed)
    n_pairs = len(checked)
    drawn_pair = rng.integers(0, n_pairs, size=n_resamples * n_pairs)  # slot r·P + s = s-th draw of resample r
    draws = []
    for index, pair in enumerate(checked):
        question_of, strata = _question_strata(pair)
        counts = _draw_question_counts(strata, question_of.max() + 1, int((drawn_pair == index).sum()), rng)
        defined = np.stack([~np.isnan(per_pair[name][index]) for name in metrics])
        draws.append((pair, counts.astype(np.int32), defined))  # counts ≤ questions: int32 halves the memory
    computed = parallel_map(partial(_pair_draw_values, metrics=tuple(metrics.values()), methods=methods), draws, jobs)
    slot_values = np.full((len(metrics), n_resamples * n_pairs, len(methods)), math.nan)
    for index, values in enumerate(computed):
        slot_values[:, drawn_pair == index, :] = values
    results = {}
    for position, name in enumerate(metrics):
        samples = _macro_per_resample(
            slot_values[position].reshape(n_resamples, n_pairs, len(methods)),
            drawn_pair.reshape(n_resamples, n_pairs),
            per_pair[name],
            methods,
        )
        results[name] = BootstrapResult(
            methods, tuple(pair.name for pair in checked), MappingProxyType(point[name]), per_pair[name], samples
        )
    return results


def bootstrap_memory(questions: Sequence[int], n_resamples: int, n_columns: int, n_metrics: int) -> int:
    """Bytes :func:`hierarchical_bootstrap_many` holds at least, for pairs of ``questions`` questions each and
    ``n_columns`` score columns: per resample and pair the drawn question multiplicities (int32, kept and a copy
    for a worker process), the int64 temporaries of drawing them for the largest pair, the drawn pair index, and
    each metric's value of every column (float64, computed and gathered)."""
    n_pairs = len(questions)
    per_resample = 8 * sum(questions) + 24 * max(questions) + 9 * n_pairs + 16 * n_metrics * n_pairs * n_columns
    return int(n_resamples) * per_resample


def _pair_draw_values(
    draws: tuple[PairData, np.ndarray, np.ndarray], metrics: tuple[Metric, ...], methods: tuple[str, ...]
) -> np.ndarray:
    """[metrics, draws, methods] values of each metric on each draw of one pair (NaN where the metric is undefined
    on the original data: that pair is skipped for the method)."""
    pair, counts, defined = draws
    question_of, _ = _question_strata(pair)
    statistics = [_grouped_statistic(metric) for metric in metrics]
    values = np.full((len(metrics), counts.shape[0], len(methods)), math.nan)
    for j, method in enumerate(methods):
        scores = pair.scores[method]
        fast = [i for i, statistic in enumerate(statistics) if statistic is not None and defined[i, j]]
        if fast:
            values[fast, :, j] = _grouped_metric(
                [statistics[i] for i in fast], scores, pair.labels, question_of, counts
            ).T
        for i, metric in enumerate(metrics):
            if statistics[i] is None and defined[i, j]:
                values[i, :, j] = _called_metric(metric, scores, pair.labels, counts[:, question_of])
    return values


def _checked_pairs(pairs: Sequence[PairData], methods: Sequence[str]) -> tuple[PairData, ...]:
    """Non-empty tuple of PairData with unique names, each holding scores for every method."""
    checked = tuple(pairs)
    if not checked:
        raise ValueError("need at least one pair")
    if not methods:
        raise ValueError("need at least one method")
    for pair in checked:
        if not isinstance(pair, PairData):
            raise ValueError(f"pairs must be PairData, got {type(pair).__name__}")
        missing = [method for method in methods if method not in pair.scores]
        if missing:
            raise ValueError(f"pair {pair.name!r} has no scores for {missing}; it has {list(pair.scores)}")
    names = [pair.name for pair in checked]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"pair names must be unique; repeated: {duplicates}")
    return checked


def _pair_values(pairs: tuple[PairData, ...], metric: Metric, method: str) -> np.ndarray:
    """``metric`` of ``method`` on every pair's original data; one ``TracWarning`` naming the NaN pairs."""
    values = np.array([float(metric(pair.scores[method], pair.labels)) for pair in pairs])
    undefined = [pair.name for pair, value in zip(pairs, values) if np.isnan(value)]
    if undefined:
        warnings.warn(
            f"{method}: metric is NaN on {len(undefined)} of {len(pairs)} pair(s), skipped in the macro: {undefined}",
            TracWarning,
            stacklevel=3,
        )
    return values


def mean_of_defined(values: ArrayLike | Iterable[float]) -> float:
    """Pair-equal macro (docs/method.md#pair-equal-macro-average): unweighted mean of the non-NaN values; NaN when there
    are none."""
    array = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=np.float64)
    defined = array[~np.isnan(array)]
    return float(defined.mean()) if defined.size else math.nan


def _mean_of_defined(values: np.ndarray, method: str) -> float:
    """:func:`mean_of_defined`, with a warning when no value is defined."""
    if np.isnan(values).all():
        warnings.warn(f"{method}: no pair has a defined metric, macro is NaN", TracWarning, stacklevel=3)
    return mean_of_defined(values)


def _question_strata(pair: PairData) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Question index of each response, and the indices of correct / incorrect questions.

    A question's class is the label of its first response (in array order), as docs/method.md#hierarchical-bootstrap
    stratifies.
    """
    _, first_response, question_of = np.unique(pair.groups, return_index=True, return_inverse=True)
    first_correct = pair.labels[first_response]
    return question_of.ravel(), (np.flatnonzero(first_correct), np.flatnonzero(~first_correct))


def _draw_question_counts(
    strata: tuple[np.ndarray, ...], n_questions: int, n_draws: int, rng: np.random.Generator
) -> np.ndarray:
    """[n_draws, n_questions] multiplicities: each draw redraws every stratum with replacement at its own size."""
    drawn = np.concatenate(
        [stratum[rng.integers(0, stratum.size, size=(n_draws, stratum.size))] for stratum in strata if stratum.size],
        axis=1,
    )
    flat = (np.arange(n_draws)[:, None] * n_questions + drawn).ravel()
    return np.bincount(flat, minlength=n_draws * n_questions).reshape(n_draws, n_questions)


def _called_metric(metric: Metric, scores: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Any metric on each draw, given per-response multiplicities ``weights`` [n_draws, n_responses]."""
    positions = np.arange(scores.size)
    values = np.empty(weights.shape[0])
    for row, multiplicity in enumerate(weights):
        drawn = np.repeat(positions, multiplicity)
        values[row] = float(metric(scores[drawn], labels[drawn]))
    return values


GroupStatistic = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""A metric of every draw from tie-group counts ``correct``, ``total`` [draws, groups] and the groups' scores."""
_DRAWS_PER_BLOCK = 128


def _grouped_metric(
    statistics: Sequence[GroupStatistic],
    scores: np.ndarray,
    labels: np.ndarray,
    question_of: np.ndarray,
    counts: np.ndarray,
) -> np.ndarray:
    """Tie-group statistics on every draw, [draws, statistics], without re-sorting per draw.

    Responses are ordered once by decreasing score; each draw's multiplicities (from ``counts``
    [n_draws, n_questions]) are summed per tie group into correct and total counts [draws, groups], which
    is what every statistic receives with the groups' scores, in blocks of ``_DRAWS_PER_BLOCK`` draws so temporaries
    stay in cache. Integer arithmetic (int64 prefix sums are also the fast ones).
    """
    negated, group_of = np.unique(-scores, return_inverse=True)
    by_score = np.argsort(group_of, kind="stable")
    question_by_score = question_of[by_score]
    correct_by_score = labels[by_score].astype(np.int64)
    group_starts = np.flatnonzero(np.diff(group_of[by_score], prepend=-1))
    has_ties = group_starts.size < scores.size
    group_scores = -negated  # one group per distinct score, in decreasing order
    values = np.empty((counts.shape[0], len(statistics)))
    for start in range(0, counts.shape[0], _DRAWS_PER_BLOCK):
        block = slice(start, start + _DRAWS_PER_BLOCK)
        total = counts[block, question_by_score].astype(np.int64)
        correct = total * correct_by_score
        if has_ties:
            total = np.add.reduceat(total, group_starts, axis=1)
            correct = np.add.reduceat(correct, group_starts, axis=1)
        for position, statistic in enumerate(statistics):
            values[block, position] = statistic(correct, total, group_scores)
    return values


def _auroc_from_groups(correct: np.ndarray, total: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Mann–Whitney AUROC per draw from integer tie-group counts [draws, groups by decreasing score].

    With c_g, e_g the correct / incorrect counts of group g and C_g = Σ_{h≤g} c_h:
    2U = Σ_g e_g (2 (C_g − c_g) + c_g) = 2 Σ_g e_g C_g − Σ_g e_g c_g, exact in int64; halved and divided as
    ``selective.auroc`` divides U, so the result is bit-identical to it. NaN where a class is absent.
    """
    incorrect = total - correct
    correct_through = np.cumsum(correct, axis=1)
    twice_u = 2 * np.einsum("ij,ij->i", incorrect, correct_through) - np.einsum("ij,ij->i", incorrect, correct)
    n_pairs = correct_through[:, -1] * incorrect.sum(axis=1)
    auroc = np.full(n_pairs.shape, math.nan)
    np.divide(twice_u / 2, n_pairs, out=auroc, where=n_pairs > 0)
    return auroc


def _aurc_from_groups(correct: np.ndarray, total: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Expected AURC per draw from integer tie-group counts [draws, groups by decreasing score].

    An error in a tie group of size G preceded by B responses is among the top k with probability
    (k − B)/G for B < k < B + G and 1 from k = B + G on, so it adds Σ_k P/k = 1 − (B/G)(H(B+G) − H(B))
    + H(N) − H(B+G) to N · AURC (H: harmonic numbers). Summed over groups with E errors each:
    N · AURC = Σ_g E_g (1 + H(N) − H(B_g+G_g)) − Σ_g (E_g B_g / G_g)(H(B_g+G_g) − H(B_g)).
    Here B_g + G_g is the prefix sum through g and B_g the one through g − 1 (B_0 = 0, so the first group
    adds nothing to the second sum). Same expectation as ``selective.aurc``, equal up to rounding.
    """
    incorrect = total - correct
    size_through = np.cumsum(total, axis=1)
    n_responses = size_through[:, -1]
    harmonic = np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1, n_responses.max() + 1))))
    reciprocal = np.concatenate(([0.0], 1.0 / np.arange(1, total.max() + 1)))  # 1/G, and 0 for empty groups
    harmonic_through = harmonic[size_through]
    tie_share = (incorrect[:, 1:] * size_through[:, :-1]) * reciprocal[total[:, 1:]]
    tie_part = np.einsum("ij,ij->i", tie_share, np.diff(harmonic_through, axis=1))
    errors_part = incorrect.sum(axis=1) * (1.0 + harmonic[n_responses]) - np.einsum(
        "ij,ij->i", incorrect, harmonic_through
    )
    return (errors_part - tie_part) / n_responses


_GROUPED_STATISTICS: tuple[tuple[Metric, GroupStatistic], ...] = (
    (selective.auroc, _auroc_from_groups),
    (selective.aurc, _aurc_from_groups),
    (selective.auprc, grouped.auprc_from_groups),
    (selective.prr, partial(grouped.prr_from_groups, max_rejection=1.0)),
    (selective.prr_50, partial(grouped.prr_from_groups, max_rejection=0.5)),
    (selective.brier, grouped.brier_from_groups),
    (selective.log_loss, grouped.log_loss_from_groups),
    (selective.ece, grouped.ece_from_groups),
)


def _grouped_statistic(metric: Metric) -> GroupStatistic | None:
    """The vectorized twin of ``metric`` when it has one (see the module docstring), else None. A
    ``functools.partial`` of such a metric with keyword arguments only gets its twin with the same keywords
    (``partial(ece, n_bins=10)``)."""
    keywords: dict[str, object] = {}
    if isinstance(metric, partial) and not metric.args:
        metric, keywords = metric.func, metric.keywords
    statistic = next((statistic for known, statistic in _GROUPED_STATISTICS if known is metric), None)
    return partial(statistic, **keywords) if statistic is not None and keywords else statistic


def _macro_per_resample(
    values: np.ndarray, drawn_pair: np.ndarray, per_pair: np.ndarray, methods: tuple[str, ...]
) -> np.ndarray:
    """Pair-equal macro over the drawn pairs of each resample, skipping NaN values.

    ``values`` is [n_resamples, n_draws, n_methods] and ``drawn_pair`` [n_resamples, n_draws] the pair of
    each draw. NaN for pairs undefined on the original data was already reported; any other NaN (the metric
    failing on a resample) and any resample left without a defined pair is reported here.
    """
    defined = ~np.isnan(values)
    counts = defined.sum(axis=1)
    samples = np.full(counts.shape, math.nan)
    np.divide(np.where(defined, values, 0.0).sum(axis=1), counts, out=samples, where=counts > 0)
    unexpected_nan = (~np.isnan(per_pair[drawn_pair]) & ~defined).sum(axis=(0, 1))
    for j, method in enumerate(methods):
        if unexpected_nan[j]:
            warnings.warn(
                f"{method}: metric was NaN on {unexpected_nan[j]} resampled pair draw(s), skipped in their macro",
                TracWarning,
                stacklevel=3,
            )
        n_empty = int((counts[:, j] == 0).sum())
        if n_empty:
            warnings.warn(
                f"{method}: {n_empty} resample(s) drew no pair with a defined metric, their sample is NaN",
                TracWarning,
                stacklevel=3,
            )
    return samples


def _percentile_interval(samples: np.ndarray, level: float, what: str) -> tuple[float, float]:
    """Percentile interval at ``level`` of the non-NaN samples; NaN (+ warning) when there are none."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    defined = samples[~np.isnan(samples)]
    if defined.size < samples.size:
        warnings.warn(
            f"{what}: {samples.size - defined.size} of {samples.size} bootstrap samples are NaN and left out",
            TracWarning,
            stacklevel=3,
        )
    if defined.size == 0:
        return math.nan, math.nan
    lo, hi = np.percentile(defined, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)
