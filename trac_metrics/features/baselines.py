"""Unsupervised baseline confidence scores (docs/method.md#baselines), each oriented so that HIGHER = more likely
correct.

Single-trace scores use the per-token arrays of the stored record (``token_logprobs`` λ_t and
``topk_mean_logprob``, the mean of the k most probable tokens' logprobs) or the trace text; sampling scores use
the K answers / texts of one question, the primary included. P(True) needs an extra forward pass and is read
from the record; the supervised heads (PCE, TUP, Supervised Consensus@K) live with the head pipeline.
"""

from __future__ import annotations

import math
import re
import warnings
from collections import Counter
from collections.abc import Sequence

import numpy as np

from trac_metrics._warnings import TracWarning
from trac_metrics.features.vectors import check_primary_index, class_shares, consensus_features, finite_sequence

DEEPCONF_WINDOW = 2048
DEEPCONF_BOTTOM_FRACTION = 0.1
CISC_TEMPERATURE = 0.2
"""Softmax temperature t of :func:`cisc` (docs/method.md#cisc): the value of the CISC authors' reference notebook
(google-research ``cisc``); the paper tunes t per model on held-out questions, which an unsupervised baseline does
not do."""

SELFDOUBT_HEDGE_MARKERS: tuple[str, ...] = (
    "maybe",
    "perhaps",
    "i think",
    "not sure",
    "might",
    "possibly",
    "wait",
    "hmm",
    "alternatively",
    "i'm not certain",
)
"""Hedging phrases counted by :func:`selfdoubt` (lowercase; matched as whole words/phrases, case-insensitive)."""

SELFDOUBT_VERIFY_MARKERS: tuple[str, ...] = (
    "let me verify",
    "let me check",
    "double-check",
    "verify",
    "confirm",
    "check:",
    "plugging back",
    "substituting back",
    "indeed",
)
"""Self-verification phrases counted by :func:`selfdoubt` (lowercase; same matching rules as the hedges)."""


def _nan_with_warning(message: str) -> float:
    """Warn with ``message`` (TracWarning) and return NaN."""
    warnings.warn(message, TracWarning, stacklevel=3)
    return float("nan")


def mean_logprob(logprobs: Sequence[float] | np.ndarray) -> float:
    """Mean chosen-token logprob (1/T) Σ_t λ_t of the response (docs/method.md#mean-log-probability).

    T = 0 gives NaN and a TracWarning; a non-finite λ_t raises ValueError.
    """
    values = finite_sequence(logprobs, "logprobs")
    if values.size == 0:
        return _nan_with_warning("mean_logprob: response has no tokens")
    return float(values.mean())


def self_certainty(topk_mean_logprobs: Sequence[float] | np.ndarray, k: int) -> float:
    """Self-certainty (Kang, Zhao & Song 2025, "Scalable Best-of-N Selection ... via Self-Certainty";
    docs/method.md#self-certainty).

    Mean over tokens of KL(U ‖ p_t). Only the top-k logprobs are stored, so the KL is taken over the returned
    top-k support with the raw (not renormalized) probabilities:
    KL_t = Σ_{v ∈ top-k} (1/k)·log((1/k) / p_t(v)) = −log k − mean_{v ∈ top-k} log p_t(v).
    The input is that per-token mean over the top k (``topk_mean_logprob`` of the record); ``k`` is the number
    of tokens it averaged (k = 5 in this project, docs/method.md#hyperparameters) and must be reported with the score.
    Score = −log k − mean_t(topk_mean_logprob_t); a more peaked distribution gives a higher score.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    values = finite_sequence(topk_mean_logprobs, "topk_mean_logprobs")
    if values.size == 0:
        return _nan_with_warning("self_certainty: response has no tokens")
    return float(-math.log(k) - values.mean())


def full_self_certainty(vocabulary_mean_logprobs: Sequence[float] | np.ndarray) -> float:
    """Self-certainty over the whole vocabulary (docs/method.md#self-certainty), where the engine had the full
    distribution: KL_t(U ‖ p_t) = −log V − mean_{v ∈ V} log p_t(v), so the score −(1/T) Σ_t mean_v log p_t(v) is the
    mean KL plus log V, a constant of the model (the ranking and the calibrated probability are the KL's)."""
    values = finite_sequence(vocabulary_mean_logprobs, "vocabulary_mean_logprobs")
    if values.size == 0:
        return _nan_with_warning("full_self_certainty: response has no tokens")
    return float(-values.mean())


def deepconf_bottom(
    topk_mean_logprobs: Sequence[float] | np.ndarray,
    window: int = DEEPCONF_WINDOW,
    bottom_fraction: float = DEEPCONF_BOTTOM_FRACTION,
) -> float:
    """DeepConf-bottom (Fu, Wang, Tian & Zhao 2025, "Deep Think with Confidence"; docs/method.md#deepconf-bottom).

    Token confidence C_t = −mean of the top-k logprobs (= −``topk_mean_logprob``_t). Group confidences are the
    means of C over sliding windows of ``window`` tokens with stride 1 (one window = the whole trace when it is
    shorter); the score is the mean of the lowest ⌈bottom_fraction · #windows⌉ group confidences (at least one).
    The product is rounded to 9 decimals before the ceiling so that 0.55·100 (55.00000000000001 in
    floating point) counts 55 windows, not 56.
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    if not 0 < bottom_fraction <= 1:
        raise ValueError(f"bottom_fraction must be in (0, 1], got {bottom_fraction}")
    confidence = -finite_sequence(topk_mean_logprobs, "topk_mean_logprobs")
    if confidence.size == 0:
        return _nan_with_warning("deepconf_bottom: response has no tokens")
    width = min(window, confidence.size)
    cumulative = np.concatenate([[0.0], np.cumsum(confidence)])
    window_means = (cumulative[width:] - cumulative[:-width]) / width
    n_bottom = max(1, math.ceil(round(bottom_fraction * window_means.size, 9)))
    return float(np.partition(window_means, n_bottom - 1)[:n_bottom].mean())


def _marker_pattern(markers: Sequence[str]) -> re.Pattern[str]:
    """One regex matching any marker as a whole word/phrase; longer markers first so matches never overlap.

    A word boundary is required only at a marker edge that is a word character ("check:" may be followed by
    anything); spaces inside a phrase match any run of whitespace.
    """
    alternatives = []
    for marker in sorted(markers, key=len, reverse=True):
        body = r"\s+".join(re.escape(word) for word in marker.split())
        before = r"(?<!\w)" if re.match(r"\w", marker[0]) else ""
        after = r"(?!\w)" if re.match(r"\w", marker[-1]) else ""
        alternatives.append(before + body + after)
    return re.compile("|".join(alternatives), re.IGNORECASE)


_HEDGE_PATTERN = _marker_pattern(SELFDOUBT_HEDGE_MARKERS)
_VERIFY_PATTERN = _marker_pattern(SELFDOUBT_VERIFY_MARKERS)


def selfdoubt(text: str) -> float:
    """SelfDoubt (Pandey, Raghu & Pandey 2026, "SELFDOUBT ... via the Hedge-to-Verify Ratio";
    docs/method.md#selfdoubt).

    Score = −h / (v + 1), with h and v the numbers of non-overlapping, case-insensitive whole-word/phrase
    occurrences of :data:`SELFDOUBT_HEDGE_MARKERS` and :data:`SELFDOUBT_VERIFY_MARKERS` in the trace (a longer
    marker wins over one it contains: "let me verify" counts once). Curly apostrophes count as straight ones.
    A trace without hedges scores 0, the maximum. The marker lists are this project's fixed lists.
    """
    if not isinstance(text, str):
        raise ValueError(f"selfdoubt needs the trace text as a str, got {type(text).__name__}")
    normalized = text.replace("\u2019", "'")
    hedges = len(_HEDGE_PATTERN.findall(normalized))
    verifications = len(_VERIFY_PATTERN.findall(normalized))
    return -hedges / (verifications + 1)


def trace_length(num_tokens: int) -> float:
    """Trace length (Devic et al. 2025, "Trace Length is a Simple Uncertainty Signal in Reasoning Models",
    arXiv 2510.10409; docs/method.md#trace-length): the number T of reasoning tokens of the response (the record's
    ``reasoning_tokens``; a record written without it counts every generated token).

    A longer trace is less confident: the registry stores the negated count. T = 0 (a response that answered without
    reasoning, or wrote nothing) is the shortest trace, 0, with a TracWarning: a score of that one question, so the
    method stays defined on its pair (a NaN there left the whole pair without trace length;
    docs/guide/reliability.md#numbers-a-report-can-use). A negative count raises ValueError.
    """
    if isinstance(num_tokens, bool) or not isinstance(num_tokens, (int, np.integer)) or num_tokens < 0:
        raise ValueError(f"num_tokens must be a non-negative integer, got {num_tokens!r}")
    if num_tokens == 0:
        warnings.warn(
            "trace_length: a response with no reasoning tokens scores the shortest trace, 0", TracWarning, stacklevel=2
        )
    return float(num_tokens)


def sc_modal(answers: Sequence[str | None], kind: str = "math") -> float:
    """SC@K modal (Wang et al. 2023; docs/method.md#self-consistency): q_K = max_b π_b over the K answers."""
    return consensus_features(answers, kind=kind)["q_K"]


def sc_primary(answers: Sequence[str | None], kind: str = "math", primary_index: int = 0) -> float:
    """SC@K primary (docs/method.md#self-consistency): q_K(a), the share of the K answers equivalent to the primary
    a."""
    return consensus_features(answers, kind=kind, primary_index=primary_index)["q_primary"]


def semantic_entropy(answers: Sequence[str | None], kind: str = "math") -> float:
    """Semantic entropy@K (Farquhar, Kossen, Kuhn & Gal 2024), negated: −h_K = Σ_b π_b log π_b
    (docs/method.md#semantic-entropy).

    Clusters are the deterministic answer-equivalence classes; negated so that agreement scores higher.
    """
    return -consensus_features(answers, kind=kind)["h_K"]


def _word_tokens(text: str) -> list[str]:
    """Lowercase word tokens: maximal runs of word characters (letters, digits, underscore)."""
    return re.findall(r"\w+", text.lower())


def selfcheck_unigram(primary_text: str, other_texts: Sequence[str]) -> float:
    """SelfCheckGPT@K, unigram variant (Manakul, Liusie & Gales 2023, the n-gram method;
    docs/method.md#selfcheckgpt-unigram).

    A unigram LM with add-one smoothing is fitted on the word tokens of all K texts (the primary included, as
    in SelfCheckGPT's n-gram variant): P(w) = (count(w) + 1) / (N + V), N = total tokens, V = distinct tokens.
    Score = average log P(w) over the primary's tokens (SelfCheckGPT's "avg" score, negated so that higher =
    more consistent with the other samples). No other text, or a primary without tokens, gives NaN + TracWarning.
    """
    if len(other_texts) == 0:
        return _nan_with_warning("selfcheck_unigram: no other samples to compare the primary trace with")
    primary_tokens = _word_tokens(primary_text)
    if not primary_tokens:
        return _nan_with_warning("selfcheck_unigram: the primary trace has no word tokens")
    counts = Counter(primary_tokens)
    for text in other_texts:
        counts.update(_word_tokens(text))
    denominator = sum(counts.values()) + len(counts)
    log_probs = [math.log((counts[token] + 1) / denominator) for token in primary_tokens]
    return float(np.mean(log_probs))


def confidence_weighted_vote(
    answers: Sequence[str | None],
    confidences: Sequence[float] | np.ndarray,
    kind: str = "math",
    primary_index: int = 0,
) -> float:
    """Confidence-weighted vote share of the primary answer (Taubenfeld et al. 2025, CISC;
    docs/method.md#confidence-weighted-vote).

    Sample k has weight w_k = exp(c_k), c_k its mean token logprob (``confidences``; :func:`cisc` passes p_k / t);
    the score is Σ_k w_k·I[a(k) ≡ a] / Σ_k w_k, the primary included (a None answer agrees only with itself). The
    weights are computed as exp(c_k − max c), which leaves the share unchanged and cannot underflow to all zeros.
    Non-finite confidences or a length mismatch raise ValueError.
    """
    confidence = finite_sequence(confidences, "confidences")
    if confidence.size != len(answers):
        raise ValueError(f"{len(answers)} answers but {confidence.size} confidences")
    weights = np.exp(confidence - confidence.max()) if confidence.size else confidence
    class_ids, shares = class_shares(answers, kind=kind, weights=weights)
    check_primary_index(primary_index, len(answers))
    return float(shares[class_ids[primary_index]])


def cisc(
    answers: Sequence[str | None],
    mean_logprobs: Sequence[float] | np.ndarray,
    kind: str = "math",
    primary_index: int = 0,
    temperature: float = CISC_TEMPERATURE,
) -> float:
    """CISC@K, confidence-informed self-consistency (Taubenfeld et al., ACL Findings 2025, "Confidence Improves
    Self-Consistency in LLMs"; docs/method.md#cisc): the normalized weighted vote share of the primary answer a.

    Sample k's confidence is its length-normalized sequence probability p_k = exp(c_k), c_k its mean token logprob
    (``mean_logprobs``; the paper's "response probability"); the weights are softmax(p / t) over the K samples
    (``temperature`` t > 0, default :data:`CISC_TEMPERATURE`) and the score is Σ_k w̃_k·I[a(k) ≡ a], the primary
    included. When a wins the weighted vote this is the confidence CISC returns for its answer. Non-finite mean
    logprobs or a length mismatch raise ValueError.
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    probability = np.exp(finite_sequence(mean_logprobs, "mean_logprobs"))
    return confidence_weighted_vote(answers, probability / temperature, kind=kind, primary_index=primary_index)


def cocoa(
    primary_logprobs: Sequence[float] | np.ndarray,
    answers: Sequence[str | None],
    kind: str = "math",
    primary_index: int = 0,
) -> float:
    """CoCoA@K, perplexity variant (Vashurin et al., NeurIPS 2025, "Uncertainty Quantification for LLMs through
    Minimum Bayes Risk: Bridging Confidence and Consistency"; docs/method.md#cocoa): an uncertainty, higher = less
    confident (the registry stores it negated).

    U = u(a) · (1/(K−1)) Σ_{k≠primary} (1 − s(a, a(k))), with u(a) = −(1/T) Σ_t λ_t the primary response's
    log-perplexity (``primary_logprobs``) and s(a, a(k)) = I[a(k) ≡ a] the answer equivalence (a None answer agrees
    only with itself). The paper's similarity is a learned text similarity of the whole responses; no such model is
    available offline, so the equivalence of the extracted answers replaces it. No other sample gives NaN and a
    TracWarning (as does a primary without tokens).
    """
    check_primary_index(primary_index, len(answers))
    if len(answers) < 2:
        return _nan_with_warning("cocoa: no other samples to compare the primary answer with")
    uncertainty = -mean_logprob(primary_logprobs)
    class_ids, _ = class_shares(answers, kind=kind)
    others = np.delete(class_ids, primary_index)
    return uncertainty * float(np.mean(others != class_ids[primary_index]))
