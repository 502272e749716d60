"""Random (scores, labels) cases with ties, for the tests of the metrics against independent references."""

from __future__ import annotations

import numpy as np

CASES = 250


TOLERANCE = 1e-9


def random_case(rng: np.random.Generator, probabilities: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A random (scores, labels) pair of 2 to 60 questions: every third case heavily tied (few distinct values),
    accuracy anywhere in [0.1, 0.9], scores in [0, 1] when ``probabilities`` (0 and 1 themselves included)."""
    n = int(rng.integers(2, 61))
    labels = (rng.random(n) < rng.uniform(0.1, 0.9)).astype(int)
    scores = rng.random(n) if probabilities else rng.normal(size=n) + labels * rng.uniform(0, 2)
    if rng.random() < 1 / 3:
        scores = np.round(scores * 4) / 4 if probabilities else np.round(scores)
    if probabilities and n > 4 and rng.random() < 0.3:
        scores[:2] = [0.0, 1.0]
    return scores, labels


def cases(seed: int, probabilities: bool = False, both_classes: bool = False):
    rng = np.random.default_rng(seed)
    produced = 0
    while produced < CASES:
        scores, labels = random_case(rng, probabilities)
        if both_classes and labels.min() == labels.max():
            continue
        produced += 1
        yield scores, labels


def tied_cases(seed: int) -> int:
    return sum(np.unique(scores).size < scores.size for scores, _ in cases(seed))
