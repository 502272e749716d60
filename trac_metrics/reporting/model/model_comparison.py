"""Two runs of one task, question by question, for the HTML report's side by side
(docs/guide/reports.md#the-html-report-trac-report---html): each run's accuracy on the questions both answered, with a
percentile bootstrap interval over those questions (both runs resampled together, as in
docs/method.md#paired-differences), the difference of the two with its interval, the exact McNemar test of equal
accuracy (a two-sided binomial test on the questions exactly one of them answers correctly) and those disagreements
split by direction. Pure numpy: a seeded resampling gives the same numbers every time."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AccuracyComparison:
    """Run A against run B on their ``shared`` questions: accuracies and their difference A − B, each with its
    interval ``(lo, hi)``; ``only_a`` / ``only_b`` questions only A / only B answers correctly; ``p`` the exact
    McNemar p (1 when they never disagree)."""

    shared: int
    accuracy_a: float
    accuracy_b: float
    difference: float
    interval_a: tuple[float, float]
    interval_b: tuple[float, float]
    interval_difference: tuple[float, float]
    only_a: int
    only_b: int
    p: float


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p: twice the smaller binomial tail of ``only_a`` among ``only_a + only_b`` discordant
    questions at one half, at most 1."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(only_a, only_b) + 1)) / 2**n
    return min(1.0, 2 * tail)


def compare_accuracy(
    docs_a: Sequence[str],
    correct_a: Sequence[int],
    docs_b: Sequence[str],
    correct_b: Sequence[int],
    n_resamples: int,
    seed: int,
    level: float,
) -> AccuracyComparison | None:
    """Run A (``docs_a`` with their labels ``correct_a``, 1 correct) against run B on the documents both hold, or None
    when they share none. The intervals are the ``level`` percentile intervals of ``n_resamples`` resamples of the
    shared questions, drawn with ``seed``."""
    position_b = {doc: index for index, doc in enumerate(docs_b)}
    pairs = [(correct_a[index], correct_b[position_b[doc]]) for index, doc in enumerate(docs_a) if doc in position_b]
    if not pairs:
        return None
    a, b = (np.asarray(side, dtype=float) for side in zip(*pairs, strict=True))
    draws = np.random.default_rng(seed).integers(0, a.size, size=(n_resamples, a.size))
    resampled_a, resampled_b = a[draws].mean(axis=1), b[draws].mean(axis=1)
    tails = [100 * (1 - level) / 2, 100 * (1 + level) / 2]

    def interval(values: np.ndarray) -> tuple[float, float]:
        lo, hi = np.percentile(values, tails)
        return float(lo), float(hi)

    only_a, only_b = int(np.sum((a == 1) & (b == 0))), int(np.sum((a == 0) & (b == 1)))
    return AccuracyComparison(
        shared=int(a.size),
        accuracy_a=float(a.mean()),
        accuracy_b=float(b.mean()),
        difference=float(a.mean() - b.mean()),
        interval_a=interval(resampled_a),
        interval_b=interval(resampled_b),
        interval_difference=interval(resampled_a - resampled_b),
        only_a=only_a,
        only_b=only_b,
        p=mcnemar_exact(only_a, only_b),
    )
