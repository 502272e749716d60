"""Scores of a response's prefix probes, the answer probe after its trace cut at fractions of its reasoning
(docs/method.md#prefix-probes): prefix convergence, Liu & Wang's answer convergence
(docs/method.md#prefix-convergence), and prefix agreement, plain and likelihood-weighted
(docs/method.md#prefix-agreement).

Each reads the agreement g_i of probe i: 1 when its answer ã_i ≡ a (the equivalence the PCE agreement e uses), 0
otherwise, a probe without an answer included (it does not state a). Every score is NaN when a is missing (None or
normalizing to nothing: there is nothing to agree with) or when no prefix probe ran.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from trac_metrics.answers import equivalent, normalize_answer
from trac_metrics.records import ProbeRecord


def prefix_agreements(answer: str | None, probes: Sequence[ProbeRecord], kind: str) -> np.ndarray | None:
    """g_i of each probe, in the probes' order; None when the scores are NaN (module docstring)."""
    if not probes or normalize_answer(answer, kind) is None:
        return None
    return np.asarray(
        [
            normalize_answer(probe.answer, kind) is not None and equivalent(answer, probe.answer, kind=kind)
            for probe in probes
        ],
        dtype=np.float64,
    )


def answer_convergence(answer: str | None, probes: Sequence[ProbeRecord], kind: str) -> float:
    """τ, the smallest fraction f_i from which every probe agrees (g_j = 1 for all j ≥ i); 1 when the last probe
    disagrees (no converged run of probes). Higher: the answer settled later, a less confident response."""
    agreements = prefix_agreements(answer, probes, kind)
    if agreements is None:
        return math.nan
    converged = 1.0
    for probe, agrees in zip(reversed(probes), agreements[::-1], strict=True):
        if not agrees:
            break
        converged = float(probe.fraction)
    return converged


def prefix_agreement(answer: str | None, probes: Sequence[ProbeRecord], kind: str) -> float:
    """PA = (1/m) Σ_i g_i, the share of the m prefix probes that agree with a."""
    agreements = prefix_agreements(answer, probes, kind)
    return math.nan if agreements is None else float(agreements.mean())


def weighted_prefix_agreement(answer: str | None, probes: Sequence[ProbeRecord], kind: str) -> float:
    """PA_ℓ = (1/m) Σ_i g_i · exp(ℓ_i), each agreement weighted by its probe's answer likelihood exp(ℓ_i), ℓ_i the
    mean log-probability of the L_i tokens that spell ã_i (the PCE ℓ of that probe)."""
    agreements = prefix_agreements(answer, probes, kind)
    if agreements is None:
        return math.nan
    likelihoods = [math.exp(probe.answer_logprobs.mean()) if probe.answer_token_count else 0.0 for probe in probes]
    return float(np.mean(agreements * np.asarray(likelihoods)))
