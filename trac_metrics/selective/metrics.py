"""Selective-prediction metrics for one (model, dataset) pair
(docs/method.md#selective-prediction-metrics).

Conventions shared by every function here:

- ``scores``: one real number per response, higher = more likely correct.
- ``labels``: 1 / ``True`` = the response is correct, 0 / ``False`` = incorrect (bool, or numbers equal to
  0 or 1; anything else is a ``ValueError`` naming the offending values).
- Ties in the score are resolved by the *expected value over uniformly random orderings inside each tie
  group* (docs/method.md#tie-handling), computed in closed form: inside a tie group of ``g`` responses holding ``e``
  errors, taking the first ``j`` of them contributes ``j * e / g`` expected errors. A constant score therefore
  gives every coverage the base error rate, independent of the input order.

Two AURC normalisations exist in the literature and both are reported, under different names:

- ``e_aurc`` (Geifman et al., "excess-AURC" in their paper): ``aurc - aurc(oracle)``, the oracle ranking
  every correct response above every incorrect one on the same labels. 0 = perfect ranking.
- ``excess_aurc`` (the TrAC paper's Table 1 column "Excess AURC"): ``aurc / base error rate``.
  1.0 ≈ a random ranking, lower is better.

Degenerate input never crashes and never yields a made-up number: empty input or NaN scores give NaN for
every metric; a single class makes AUROC (and, with no errors, ``excess_aurc``) NaN; each NaN comes with a
``TracWarning`` saying why.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import rankdata

from trac_metrics._warnings import TracWarning

DEFAULT_COVERAGES: tuple[float, ...] = (0.1, 0.2, 0.5)
"""The coverages c of the reported risk at coverage (docs/method.md#risk-at-coverage)."""


def risk_key(coverage: float) -> str:
    """The one name of the risk at ``coverage`` everywhere (keys, results, columns): ``risk_at_10`` for c = 0.1."""
    return f"risk_at_{round(coverage * 100, 6):g}"


SELECTIVE_METRIC_NAMES: tuple[str, ...] = ("auroc", "aurc", "e_aurc", "excess_aurc", *map(risk_key, DEFAULT_COVERAGES))
"""The keys of :func:`selective_metrics` with the default coverages, in order: the first metrics reported per method
(docs/method.md#metric-names)."""

SELECTIVE_METRIC_LABELS: dict[str, str] = {
    "auroc": "AUROC",
    "aurc": "AURC",
    "e_aurc": "E-AURC",
    "excess_aurc": "excess AURC",
    **{risk_key(c): f"risk@{round(c * 100, 6):g}" for c in DEFAULT_COVERAGES},
}
"""How rendered report tables name each metric (the one place display labels come from)."""


def as_binary_labels(labels: ArrayLike) -> np.ndarray:
    """Return ``labels`` as a 1-D bool array (True = correct); ``ValueError`` for anything but 0/1 values."""
    array = np.asarray(labels)
    if array.ndim != 1:
        raise ValueError(f"labels must be a 1-D array, got shape {array.shape}")
    if array.dtype == bool:
        return array
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        shown = np.unique(array.astype(str))[:5].tolist()
        raise ValueError(f"labels must be bool or 0/1 integers; got dtype {array.dtype} with values {shown}")
    bad = array[(array != 0) & (array != 1)]
    if bad.size:
        shown = np.unique(bad)[:5].tolist()
        raise ValueError(f"labels must be 1 (correct) or 0 (incorrect); got {bad.size} other value(s), e.g. {shown}")
    return array == 1


def _as_scores(scores: ArrayLike) -> np.ndarray:
    """Return ``scores`` as a 1-D float64 array; ``ValueError`` for non-numeric or multi-dimensional input."""
    array = np.asarray(scores)
    if array.ndim != 1:
        raise ValueError(f"scores must be a 1-D array, got shape {array.shape}")
    if not (array.dtype == bool or np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise ValueError(f"scores must be real numbers, got dtype {array.dtype}")
    return array.astype(np.float64)


def checked_inputs(
    scores: ArrayLike, labels: ArrayLike, metric: str, stacklevel: int = 3
) -> tuple[np.ndarray, np.ndarray] | None:
    """Validate one pair's inputs; ``None`` (after a ``TracWarning`` at ``stacklevel``) when every metric must be NaN.

    Raises ``ValueError`` for malformed input (bad labels, shapes, lengths). Returns ``None`` for empty
    input or NaN scores, which are well-formed but leave nothing to rank.
    """
    score_array, label_array = _as_scores(scores), as_binary_labels(labels)
    if score_array.size != label_array.size:
        raise ValueError(f"scores and labels differ in length: {score_array.size} vs {label_array.size}")
    if score_array.size == 0:
        warnings.warn(f"{metric}: empty input, returning NaN", TracWarning, stacklevel=stacklevel)
        return None
    n_nan = int(np.isnan(score_array).sum())
    if n_nan:
        warnings.warn(
            f"{metric}: {n_nan} of {score_array.size} scores are NaN, returning NaN",
            TracWarning,
            stacklevel=stacklevel,
        )
        return None
    return score_array, label_array


def _checked_coverage(coverage: float) -> float:
    """Return ``coverage`` as a float in (0, 1]; ``ValueError`` otherwise."""
    value = float(coverage)
    if not 0.0 < value <= 1.0:
        raise ValueError(f"coverage must lie in (0, 1], got {coverage!r}")
    return value


def _coverage_count(coverage: float, n: int) -> int:
    """Number of responses kept at ``coverage``: ⌈c·N⌉ (docs/method.md#risk-at-coverage), at least 1.

    ``c·N`` is rounded to 9 decimals first so that float noise (0.7 · 10 = 7.000000000000001) does not
    push an exact integer up by one.
    """
    return max(1, math.ceil(round(coverage * n, 9)))


def _auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Mann–Whitney AUROC of validated inputs; NaN (+ warning) when one class is missing."""
    n_pos = int(labels.sum())
    n_neg = labels.size - n_pos
    if n_pos == 0 or n_neg == 0:
        kind = "correct" if n_neg == 0 else "incorrect"
        warnings.warn(
            f"auroc: all {labels.size} responses are {kind}, AUROC is undefined (NaN)", TracWarning, stacklevel=3
        )
        return math.nan
    ranks = rankdata(scores)  # average ranks: a tie counts ½ in the U statistic
    u_statistic = ranks[labels].sum() - n_pos * (n_pos + 1) / 2
    return float(u_statistic / (n_pos * n_neg))


def expected_risk(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Expected selective risk R(k/N), k = 1..N, of validated inputs, ties averaged in closed form.

    Sort by decreasing score; position k (1-based) lies in tie group g (``size_g`` responses, ``err_g``
    errors) as its j-th member; expected errors in the top k = errors of all earlier groups + j·err_g/size_g.
    """
    n = scores.size
    order = np.argsort(-scores, kind="stable")
    sorted_scores = scores[order]
    errors = (~labels[order]).astype(np.float64)
    opens_group = np.empty(n, dtype=bool)
    opens_group[0] = True
    np.not_equal(sorted_scores[1:], sorted_scores[:-1], out=opens_group[1:])
    group_of = np.cumsum(opens_group) - 1
    starts = np.flatnonzero(opens_group)
    sizes = np.diff(np.append(starts, n))
    group_errors = np.add.reduceat(errors, starts)
    errors_before = np.cumsum(group_errors) - group_errors
    rank_in_group = np.arange(n) - starts[group_of] + 1
    expected_errors = errors_before[group_of] + rank_in_group * group_errors[group_of] / sizes[group_of]
    return expected_errors / np.arange(1, n + 1)


def _aurc(scores: np.ndarray, labels: np.ndarray) -> float:
    """AURC (docs/method.md#risk-coverage-curve-and-aurc) of validated inputs: mean of the expected risk curve."""
    return float(expected_risk(scores, labels).mean())


def _e_aurc(aurc_value: float, labels: np.ndarray) -> float:
    """Geifman E-AURC: ``aurc_value`` minus the AURC of the oracle ranking (all correct first)."""
    return aurc_value - _aurc(labels.astype(np.float64), labels)


def _excess_aurc(aurc_value: float, labels: np.ndarray) -> float:
    """TrAC Table 1 excess AURC: ``aurc_value / base error rate``; NaN (+ warning) when nothing is wrong."""
    base_error = 1.0 - labels.mean()
    if base_error == 0.0:
        warnings.warn("excess_aurc: base error rate is 0, excess AURC is undefined (NaN)", TracWarning, stacklevel=3)
        return math.nan
    return float(aurc_value / base_error)


def auroc(scores: ArrayLike, labels: ArrayLike) -> float:
    """AUROC = P(u+ > u−) + ½ P(u+ = u−) (docs/method.md#auroc), via Mann–Whitney U on average ranks.

    O(n log n). NaN with a ``TracWarning`` for empty input, NaN scores, or labels of one class only.
    """
    checked = checked_inputs(scores, labels, "auroc")
    return math.nan if checked is None else _auroc(*checked)


def risk_coverage_curve(scores: ArrayLike, labels: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Coverage k/N and expected selective risk R(k/N) for k = 1..N (docs/method.md#risk-coverage-curve-and-aurc).

    R(k/N) is the error rate of the k highest scores, averaged over random orders inside tie groups.
    O(n log n). Defined for one-class labels (risk 0 or 1 throughout). Empty input gives two empty arrays,
    NaN scores give a risk of NaN at every coverage; both with a ``TracWarning``.
    """
    checked = checked_inputs(scores, labels, "risk_coverage_curve")
    n = np.asarray(scores).shape[0]
    coverage = np.arange(1, n + 1) / n if n else np.empty(0)
    risk = np.full(n, math.nan) if checked is None else expected_risk(*checked)
    return coverage, risk


def aurc(scores: ArrayLike, labels: ArrayLike) -> float:
    """AURC = mean over k = 1..N of the expected selective risk R(k/N) (docs/method.md#risk-coverage-curve-and-aurc).
    Lower is better.

    Defined for one-class labels (0 when all correct, 1 when all wrong). NaN with a ``TracWarning`` for
    empty input or NaN scores.
    """
    checked = checked_inputs(scores, labels, "aurc")
    return math.nan if checked is None else _aurc(*checked)


def e_aurc(scores: ArrayLike, labels: ArrayLike) -> float:
    """E-AURC (Geifman et al.) = AURC − AURC of the oracle ordering on the same labels (docs/method.md#e-aurc).

    Not the paper's "excess AURC" (see ``excess_aurc``). 0 for a perfect ranking; defined (0) for one-class
    labels. NaN with a ``TracWarning`` for empty input or NaN scores.
    """
    checked = checked_inputs(scores, labels, "e_aurc")
    return math.nan if checked is None else _e_aurc(_aurc(*checked), checked[1])


def excess_aurc(scores: ArrayLike, labels: ArrayLike) -> float:
    """Excess AURC as the TrAC paper's Table 1 reports it: AURC / base error rate (docs/method.md#excess-aurc).

    Not Geifman's E-AURC (see ``e_aurc``). 1.0 ≈ random ranking, lower is better. NaN with a
    ``TracWarning`` when the base error rate is 0 (all correct), for empty input, or for NaN scores.
    """
    checked = checked_inputs(scores, labels, "excess_aurc")
    return math.nan if checked is None else _excess_aurc(_aurc(*checked), checked[1])


def risk_at_coverage(scores: ArrayLike, labels: ArrayLike, coverage: float) -> float:
    """Expected error rate of the ⌈c·N⌉ highest scores, ties averaged as in ``risk_coverage_curve``
    (docs/method.md#risk-at-coverage).

    ``coverage`` must lie in (0, 1] (``ValueError`` otherwise). Defined for one-class labels. NaN with a
    ``TracWarning`` for empty input or NaN scores.
    """
    fraction = _checked_coverage(coverage)
    checked = checked_inputs(scores, labels, "risk_at_coverage")
    if checked is None:
        return math.nan
    return float(expected_risk(*checked)[_coverage_count(fraction, checked[0].size) - 1])


def selective_metrics(
    scores: ArrayLike, labels: ArrayLike, coverages: Sequence[float] = DEFAULT_COVERAGES
) -> dict[str, float]:
    """All per-pair metrics of docs/method.md#selective-prediction-metrics at once.

    Keys (a contract): ``auroc``, ``aurc``, ``e_aurc``, ``excess_aurc`` and :func:`risk_key` of each coverage
    (``risk_at_10``, ``risk_at_20``, ``risk_at_50`` by default). Degenerate input follows the single-metric
    functions: one class → ``auroc`` NaN (and ``excess_aurc`` NaN when all are correct), the others
    defined; empty input or NaN scores → every value NaN; one ``TracWarning`` per cause.
    """
    fractions = [_checked_coverage(c) for c in coverages]
    risk_keys = [risk_key(c) for c in fractions]
    keys = ["auroc", "aurc", "e_aurc", "excess_aurc", *risk_keys]
    checked = checked_inputs(scores, labels, "selective_metrics")
    if checked is None:
        return dict.fromkeys(keys, math.nan)
    score_array, label_array = checked
    risk = expected_risk(score_array, label_array)
    aurc_value = float(risk.mean())
    result = {
        "auroc": _auroc(score_array, label_array),
        "aurc": aurc_value,
        "e_aurc": _e_aurc(aurc_value, label_array),
        "excess_aurc": _excess_aurc(aurc_value, label_array),
    }
    for key, fraction in zip(risk_keys, fractions):
        result[key] = float(risk[_coverage_count(fraction, label_array.size) - 1])
    return result
