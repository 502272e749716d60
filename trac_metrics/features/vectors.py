"""TrAC feature vectors computed from a stored record: TUP φ_P, PCE φ_A and the consensus statistics.

* :func:`topk_entropy` turns the per-token top-k logprobs returned by the engine into η_t
  (docs/method.md#token-summaries).
* :func:`tup_features` is the 27-number Trace Uncertainty Profile φ_P = [b(λ); b(η); g(λ); g(η); tail; low]
  with the exact conventions of docs/method.md#trace-uncertainty-profile.
* :func:`pce_features` is the 5-number Prefix-Conditioned Elicitation vector φ_A = [e, ℓ, ℓ_min, ℓ_head, c1]
  (docs/method.md#pce-features). Missing parts are NaN; the
  head pipeline adds missingness indicators and imputes inside the training fold.
* :func:`consensus_features` gives the vote statistics over K sampled answers (docs/method.md#consensus-statistics),
  plus the vote margin used by Supervised Consensus@K (docs/method.md#supervised-consensus).

Hyperparameter defaults are those of docs/method.md#hyperparameters: k = 5, J = 8, W = 30, τ = −2.0.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from trac_metrics._warnings import TracWarning
from trac_metrics.answers import answer_classes, equivalent, normalize_answer

TOP_K = 5
N_BINS = 8
TAIL_WINDOW = 30
LOW_THRESHOLD = -2.0

PCE_FEATURE_NAMES: tuple[str, ...] = (
    "pce_agree",
    "pce_loglik_mean",
    "pce_loglik_min",
    "pce_loglik_head",
    "pce_first_logprob",
)
"""Names of φ_A in order: e, ℓ, ℓ_min, ℓ_head, c1 (docs/method.md#pce-features)."""

_AUX_NAMES = (
    "tup_lp_mean",
    "tup_lp_min",
    "tup_lp_std",
    "tup_lp_slope",
    "tup_lp_r2",
    "tup_ent_mean",
    "tup_ent_max",
    "tup_ent_slope",
    "tup_ent_r2",
    "tup_lp_tail_mean",
    "tup_lp_low_frac",
)


def tup_feature_names(n_bins: int = N_BINS) -> tuple[str, ...]:
    """Names of the 2·J + 11 TUP features in the order of :func:`tup_features` (docs/method.md#tup-feature-order)."""
    lp_bins = tuple(f"tup_lp_bin{j}" for j in range(1, n_bins + 1))
    ent_bins = tuple(f"tup_ent_bin{j}" for j in range(1, n_bins + 1))
    return lp_bins + ent_bins + _AUX_NAMES


TUP_FEATURE_NAMES: tuple[str, ...] = tup_feature_names(N_BINS)
"""Names of the 27 TUP features φ_P for J = 8: b(λ)[8], b(η)[8], g(λ)[5], g(η)[4], tail mean, low fraction."""


def finite_sequence(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    """Return ``values`` as a 1-D float64 array; raise ValueError naming the first non-finite position (0-based)."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence, got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"{name} has a non-finite value {array[bad[0]]} at position {bad[0]} (0-based)")
    return array


def topk_entropy(topk_logprobs: Sequence[Sequence[float]] | np.ndarray, k: int = TOP_K) -> np.ndarray:
    """η_t for every token: entropy (natural log) of the softmax of the row's k largest finite logprobs.

    docs/method.md#token-summaries: the predictive distribution is renormalized over the top-k support. Rows are
    a [T, k'] array; NaN and -inf entries are padding and ignored, and only the ``k`` largest finite entries are
    used (the engine returns k + 1 entries when the sampled token was outside the top k). A row with a single
    finite entry has entropy 0. T = 0 gives an empty array. A row without any finite entry, or a +inf entry,
    raises ValueError naming the row.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    rows = np.asarray(topk_logprobs, dtype=np.float64)
    if rows.ndim == 1 and rows.size == 0:  # an empty list: no tokens
        rows = rows.reshape(0, 0)
    if rows.ndim != 2:
        raise ValueError(f"topk_logprobs must be a [T, k] array, got shape {rows.shape}")
    positive_inf = np.flatnonzero(np.any(rows == np.inf, axis=1))
    if positive_inf.size:
        raise ValueError(f"topk_logprobs row {positive_inf[0]} (0-based) contains +inf")
    padded = np.where(np.isfinite(rows), rows, -np.inf)
    empty = np.flatnonzero(np.all(padded == -np.inf, axis=1))
    if empty.size:
        raise ValueError(f"topk_logprobs row {empty[0]} (0-based) has no finite logprob")
    top = np.sort(padded, axis=1)[:, -k:]
    shifted = top - top[:, -1:]  # the row maximum is the last sorted entry; padding stays -inf
    weights = np.exp(shifted)
    norm = weights.sum(axis=1, keepdims=True)
    probs = weights / norm
    log_probs = np.where(weights > 0, shifted - np.log(norm), 0.0)
    return -(probs * log_probs).sum(axis=1)


def _bin_means(values: np.ndarray, n_bins: int) -> np.ndarray:
    """b_j: mean over positions t (1-based) with bin index ⌈t·J/T⌉; an empty bin takes the sequence mean."""
    n_tokens = values.size
    positions = np.arange(1, n_tokens + 1)
    bin_index = (positions * n_bins + n_tokens - 1) // n_tokens  # ⌈t·J/T⌉ in integer arithmetic, in 1..J
    counts = np.bincount(bin_index - 1, minlength=n_bins)
    sums = np.bincount(bin_index - 1, weights=values, minlength=n_bins)
    means = np.full(n_bins, values.mean())
    filled = counts > 0
    means[filled] = sums[filled] / counts[filled]
    return means


def _trend(values: np.ndarray) -> tuple[float, float]:
    """(slope, R²) of the OLS line of the values on x_t = t/T; (0, 0) when T < 2 or the values are constant."""
    n_tokens = values.size
    if n_tokens < 2 or values.max() == values.min():
        return 0.0, 0.0
    x = np.arange(1, n_tokens + 1) / n_tokens
    x_centered = x - x.mean()
    y_centered = values - values.mean()
    sxy = float(x_centered @ y_centered)
    sxx = float(x_centered @ x_centered)
    syy = float(y_centered @ y_centered)
    slope = sxy / sxx
    r_squared = min(1.0, sxy * sxy / (sxx * syy))
    return slope, r_squared


def tup_features(
    logprobs: Sequence[float] | np.ndarray,
    entropies: Sequence[float] | np.ndarray,
    n_bins: int = N_BINS,
    tail_window: int = TAIL_WINDOW,
    low_threshold: float = LOW_THRESHOLD,
) -> np.ndarray:
    """φ_P, the Trace Uncertainty Profile (docs/method.md#trace-uncertainty-profile).

    ``logprobs`` are λ_t (chosen-token logprobs) and ``entropies`` η_t (:func:`topk_entropy`) of the T generated
    tokens. Returns 2·J + 11 numbers (27 for J = 8), named by :func:`tup_feature_names`, in the order
    b(λ)[J], b(η)[J], g(λ) = [mean, min, std (ddof 0), slope, R²], g(η) = [mean, max, slope, R²],
    tail mean of λ over the last min(W, T) tokens, fraction of tokens with λ_t < τ (strict).

    T = 0 gives an all-NaN vector and a TracWarning. Arrays of different lengths, or a non-finite value in
    either array, raise ValueError.
    """
    if n_bins < 1 or tail_window < 1:
        raise ValueError(f"n_bins and tail_window must be >= 1, got {n_bins} and {tail_window}")
    lam = finite_sequence(logprobs, "logprobs")
    eta = finite_sequence(entropies, "entropies")
    if lam.size != eta.size:
        raise ValueError(f"logprobs has {lam.size} tokens but entropies has {eta.size}")
    n_features = 2 * n_bins + len(_AUX_NAMES)
    if lam.size == 0:
        warnings.warn(
            "tup_features: response has no generated tokens; returning NaN features", TracWarning, stacklevel=2
        )
        return np.full(n_features, np.nan)
    lam_slope, lam_r2 = _trend(lam)
    eta_slope, eta_r2 = _trend(eta)
    summary = [
        lam.mean(),
        lam.min(),
        lam.std(),
        lam_slope,
        lam_r2,
        eta.mean(),
        eta.max(),
        eta_slope,
        eta_r2,
        lam[-tail_window:].mean(),
        np.mean(lam < low_threshold),
    ]
    return np.concatenate([_bin_means(lam, n_bins), _bin_means(eta, n_bins), np.asarray(summary, dtype=np.float64)])


def _optional_logprob(value: float | None, name: str) -> float:
    """A single logprob that may be missing: None or NaN → NaN; ±inf → ValueError."""
    if value is None or np.isnan(value):
        return float("nan")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite or missing (None/NaN), got {value}")
    return float(value)


def pce_features(
    primary_answer: str | None,
    probe_answer: str | None,
    answer_logprobs: Sequence[float] | np.ndarray,
    first_token_logprob: float | None,
    kind: str = "math",
) -> np.ndarray:
    """φ_A = [e, ℓ, ℓ_min, ℓ_head, c1] of the PCE probe (docs/method.md#pce-features).

    ``answer_logprobs`` are the logprobs of the L tokens of the re-elicited answer ã; ``first_token_logprob``
    is the logprob of the first decoded probe token (None/NaN when nothing was decoded).
    e = 1 if ã ≡ a else 0 (:func:`trac_metrics.answers.equivalent` of ``kind``, no reference); ℓ = mean,
    ℓ_min = min, ℓ_head = mean over the first m = min(2, L) tokens; c1 = first-token logprob. Missing values are
    NaN, never 0: e when either answer is None or normalizes to nothing, ℓ/ℓ_min/ℓ_head when L = 0, c1 when no
    token was decoded.
    """
    answer_lp = finite_sequence(answer_logprobs, "answer_logprobs")
    if normalize_answer(primary_answer, kind) is None or normalize_answer(probe_answer, kind) is None:
        agree = np.nan
    else:
        agree = float(equivalent(primary_answer, probe_answer, kind=kind))
    if answer_lp.size:
        likelihood = [answer_lp.mean(), answer_lp.min(), answer_lp[:2].mean()]
    else:
        likelihood = [np.nan, np.nan, np.nan]
    first = _optional_logprob(first_token_logprob, "first_token_logprob")
    return np.asarray([agree, *likelihood, first], dtype=np.float64)


def class_shares(
    answers: Sequence[str | None],
    kind: str = "math",
    weights: Sequence[float] | np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(class id of each answer, share π_b of each class) over answer-equivalence classes
    (docs/method.md#answer-classes-and-vote-shares).

    π_b = Σ_k w_k·I[a(k) ≡ b] / Σ_k w_k with w_k = 1 by default (the paper's π_b). Class ids follow
    :func:`trac_metrics.answers.answer_classes`: order of first appearance, each None its own singleton class.
    Weights must be finite, non-negative and have a positive sum; an empty answer list raises ValueError.
    """
    if len(answers) == 0:
        raise ValueError("answers is empty: vote statistics need at least one answer")
    if weights is None:
        weight_array = np.ones(len(answers))
    else:
        weight_array = finite_sequence(weights, "weights")
        if weight_array.size != len(answers):
            raise ValueError(f"{len(answers)} answers but {weight_array.size} weights")
        if np.any(weight_array < 0) or weight_array.sum() <= 0:
            raise ValueError("weights must be non-negative with a positive sum")
    class_ids = np.asarray(answer_classes(answers, kind=kind), dtype=np.int64)
    class_weight = np.bincount(class_ids, weights=weight_array)
    return class_ids, class_weight / class_weight.sum()


def check_primary_index(primary_index: int, n_answers: int) -> None:
    """Raise ValueError unless 0 <= primary_index < n_answers."""
    if not 0 <= primary_index < n_answers:
        raise ValueError(f"primary_index {primary_index} outside 0..{n_answers - 1}")


def consensus_features(answers: Sequence[str | None], kind: str = "math", primary_index: int = 0) -> dict[str, float]:
    """Vote statistics of the K sampled answers, the primary included (docs/method.md#consensus-statistics).

    * ``q_K`` = max_b π_b, the modal vote share (SC@K);
    * ``h_K`` = −Σ_b π_b log π_b (natural log), the answer entropy (semantic entropy over equivalence classes);
    * ``vote_margin`` = π of the top class − π of the second class (the top share when there is no competitor);
    * ``q_primary`` = q_K(a), share of the answers equivalent to the primary answer, the primary included.

    A None answer (unparsable, or normalizing to nothing) is its own singleton class, so such a primary has
    q_primary = 1/K: it agrees with nothing but itself, the same convention the equivalence classes use for π_b.
    """
    class_ids, shares = class_shares(answers, kind=kind)
    check_primary_index(primary_index, len(answers))
    ranked = np.sort(shares)[::-1]
    runner_up = ranked[1] if ranked.size > 1 else 0.0
    return {
        "q_K": float(ranked[0]),
        "h_K": float(-(shares * np.log(shares)).sum()),
        "vote_margin": float(ranked[0] - runner_up),
        "q_primary": float(shares[class_ids[primary_index]]),
    }
