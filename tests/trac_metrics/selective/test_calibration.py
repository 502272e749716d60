"""The calibration metrics (trac_metrics.selective.calibration, docs/method.md#calibration) against independent
references on at least 200 random cases each, ties included: scikit-learn (Brier, log loss), a brute-force loop and
relplot's binned ECE (ECE), relplot's smECE; then the defined behaviour of ties, one class, NaN and fewer questions
than bins, and the bootstrap's vectorized twins of every metric."""

from __future__ import annotations

import itertools
import math
import warnings
from functools import partial

import numpy as np
import pytest
import relplot
from metric_cases import CASES, TOLERANCE, cases, tied_cases
from sklearn.metrics import brier_score_loss
from sklearn.metrics import log_loss as sklearn_log_loss

from trac_metrics import TracWarning, selective
from trac_metrics.selective.bootstrap import _called_metric, _grouped_metric, _grouped_statistic

# ---------------------------------------------------------------------------------- scikit-learn references


def test_the_random_cases_include_ties() -> None:
    assert tied_cases(0) > CASES // 4


def test_brier_matches_scikit_learn() -> None:
    for probabilities, labels in cases(1, probabilities=True):
        assert selective.brier(probabilities, labels) == pytest.approx(
            brier_score_loss(labels, probabilities, pos_label=1), abs=TOLERANCE
        )


def test_log_loss_matches_scikit_learn() -> None:
    for probabilities, labels in cases(2, probabilities=True):
        assert selective.log_loss(probabilities, labels) == pytest.approx(
            sklearn_log_loss(labels, probabilities, labels=[0, 1]), abs=TOLERANCE
        )


# ------------------------------------------------------------------------------------------- PRR references


"""PRR values computed by LM-Polygraph 0.7.0 (``PredictionRejectionArea`` on the uncertainty −u, normalized with
its ``normalize_metric`` by the oracle area of −z and the exact random area, the accuracy)."""


# ------------------------------------------------------------------------------------------- ECE references


def brute_force_ece(probabilities: np.ndarray, labels: np.ndarray, n_bins: int) -> float:
    """The equal-mass ECE by counting: a question whose probability has ``below`` smaller ones goes to bin
    ⌊below·B/N⌋ (its tie group's first position); then Σ_b (n_b/N) |mean p_b − accuracy_b|."""
    n = probabilities.size
    members: dict[int, list[int]] = {}
    for i in range(n):
        below = sum(1 for j in range(n) if probabilities[j] < probabilities[i])
        members.setdefault(below * n_bins // n, []).append(i)
    total = 0.0
    for bin_members in members.values():
        confidence = sum(probabilities[i] for i in bin_members) / len(bin_members)
        accuracy = sum(labels[i] for i in bin_members) / len(bin_members)
        total += len(bin_members) / n * abs(confidence - accuracy)
    return total


def test_ece_equals_a_brute_force_loop() -> None:
    rng = np.random.default_rng(6)
    small = 0
    for probabilities, labels in cases(6, probabilities=True):
        n_bins = int(rng.choice([1, 2, 5, 10, 15, 20, 80]))
        small += probabilities.size < n_bins
        assert selective.ece(probabilities, labels, n_bins) == pytest.approx(
            brute_force_ece(probabilities, labels, n_bins), abs=TOLERANCE
        )
    assert small >= 20  # fewer questions than bins is among the cases


def test_ece_equals_relplots_binned_ece_where_equal_mass_bins_are_equal_width() -> None:
    """relplot's ``binnedECE`` uses equal-width bins; with N/B questions strictly inside each width bin (ties
    included) the equal-mass bins are the same bins, so the two must agree."""
    rng = np.random.default_rng(7)
    for _ in range(CASES):
        n_bins, per_bin = int(rng.integers(1, 21)), int(rng.integers(1, 8))
        inside = [b / n_bins + (0.05 + 0.9 * rng.random(per_bin)) / n_bins for b in range(n_bins)]
        if rng.random() < 0.5:  # ties inside each bin
            inside = [np.repeat(values[:1], per_bin) if per_bin > 1 else values for values in inside]
        probabilities = np.concatenate(inside)
        labels = (rng.random(probabilities.size) < probabilities).astype(int)
        order = rng.permutation(probabilities.size)
        probabilities, labels = probabilities[order], labels[order]
        expected = relplot.metrics.binnedECE(probabilities, labels.astype(float), nbins=n_bins)
        assert selective.ece(probabilities, labels, n_bins) == pytest.approx(expected, abs=TOLERANCE)


def test_smece_is_relplots_smooth_ece() -> None:
    for probabilities, labels in itertools.islice(cases(8, probabilities=True), 200):
        assert selective.smece(probabilities, labels) == pytest.approx(
            relplot.smECE(probabilities, labels.astype(float)), abs=TOLERANCE
        )


# -------------------------------------------------------------------------------------------- defined behaviour


def test_hand_computed_example() -> None:
    probabilities, labels = np.array([0.1, 0.4, 0.4, 0.8, 0.9]), np.array([0, 1, 0, 1, 1])
    # 2 bins, N = 5: positions 0..4 → bins ⌊2i/5⌋ = 0, 0, 0, 1, 1; the tie at 0.4 starts at position 1 (bin 0).
    # bin 0: Σ(p − z) = 0.1 + (0.4 − 1) + 0.4 = −0.1; bin 1: (0.8 − 1) + (0.9 − 1) = −0.3 → ECE = 0.4 / 5
    assert selective.ece(probabilities, labels, n_bins=2) == pytest.approx(0.08, abs=1e-15)
    assert selective.brier(probabilities, labels) == pytest.approx((0.01 + 0.36 + 0.16 + 0.04 + 0.01) / 5)
    # AUPRC, errors from low scores: 0.1 (error) → precision 1; tie 0.4 flags one more error out of 3 → 2/3
    assert selective.auprc(probabilities, labels) == pytest.approx((1 + 2 / 3) / 2)


def test_one_class_of_labels() -> None:
    probabilities = np.array([0.2, 0.5, 0.9])
    for labels in ([1, 1, 1], [0, 0, 0]):
        metrics = selective.calibration_metrics(probabilities, labels)
        assert all(math.isfinite(value) for value in metrics.values())
        with pytest.warns(TracWarning, match="no ordering can gain"):
            assert math.isnan(selective.prr(probabilities, labels))
    with pytest.warns(TracWarning, match="no response is wrong"):
        assert math.isnan(selective.auprc(probabilities, [1, 1, 1]))
    assert selective.auprc(probabilities, [0, 0, 0]) == 1.0
    assert selective.ece(probabilities, [1, 1, 1], n_bins=1) == pytest.approx(1 - probabilities.mean())


def test_fewer_questions_than_bins_puts_each_distinct_probability_in_its_own_bin() -> None:
    probabilities, labels = np.array([0.9, 0.2, 0.2, 0.6]), np.array([1, 0, 1, 0])
    # groups: 0.2 (z 0, 1: gap 0.4 − 1), 0.6 (gap 0.6), 0.9 (gap −0.1) → (0.6 + 0.6 + 0.1) / 4
    assert selective.ece(probabilities, labels, n_bins=15) == pytest.approx(1.3 / 4)
    assert selective.reliability_bins(probabilities, labels, 15)["count"].tolist() == [2, 1, 1]


def test_a_constant_probability_is_one_bin() -> None:
    labels = np.array([1, 0, 1, 1, 0, 1, 1])
    assert selective.ece(np.full(7, 0.3), labels) == pytest.approx(abs(0.3 - labels.mean()))
    bins = selective.reliability_bins(np.full(7, 0.3), labels)
    assert bins["count"].tolist() == [7] and bins["accuracy"] == pytest.approx([labels.mean()])


def test_bad_probabilities_and_bins_are_errors() -> None:
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        selective.ece([0.2, 1.5], [0, 1])
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        selective.calibration_metrics([-0.1, 0.5], [0, 1])
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="ECE bins"):
            selective.ece([0.2, 0.5], [0, 1], n_bins=bad)
    with pytest.raises(ValueError, match="labels"):
        selective.brier([0.2, 0.5], [0, 2])


def test_empty_and_nan_inputs_give_nan_with_a_warning() -> None:
    for metric in (selective.ece, selective.brier, selective.log_loss, selective.smece, selective.auprc):
        with pytest.warns(TracWarning, match="empty"):
            assert math.isnan(metric([], []))
    with pytest.warns(TracWarning, match="1 of 3 scores are NaN"):
        assert all(math.isnan(value) for value in selective.calibration_metrics([0.1, np.nan, 0.3], [0, 1, 0]).values())
    with pytest.warns(TracWarning, match="NaN"):
        assert selective.reliability_bins([0.1, np.nan], [0, 1])["count"].size == 0


def test_log_loss_clips_certain_mistakes() -> None:
    assert selective.log_loss([0.0, 1.0], [1, 0]) == pytest.approx(-math.log(np.finfo(np.float64).eps))
    assert selective.log_loss(np.full(4, 0.5), [0, 1, 1, 0]) == pytest.approx(math.log(2))


# ------------------------------------------------------------------------------- the bootstrap's vectorized twins

TWINNED = [
    selective.auroc,
    selective.aurc,
    selective.auprc,
    selective.prr,
    selective.prr_50,
    selective.brier,
    selective.log_loss,
    selective.ece,
    partial(selective.ece, n_bins=4),
]


def test_every_bootstrapped_metric_has_a_vectorized_twin() -> None:
    assert all(_grouped_statistic(metric) is not None for metric in TWINNED)
    assert _grouped_statistic(selective.smece) is None


def test_the_vectorized_twins_equal_their_metric_on_every_draw() -> None:
    rng = np.random.default_rng(9)
    for index, (scores, labels) in enumerate(itertools.islice(cases(10, probabilities=True), 200)):
        if index % 7 == 0:
            labels = np.full(labels.size, index % 2)  # one class: the undefined metrics are NaN in both
        counts = rng.multinomial(labels.size, np.full(labels.size, 1 / labels.size), size=20)
        statistics = [_grouped_statistic(metric) for metric in TWINNED]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TracWarning)
            fast = _grouped_metric(statistics, scores, labels.astype(bool), np.arange(labels.size), counts)
            direct = np.stack([_called_metric(metric, scores, labels.astype(bool), counts) for metric in TWINNED], 1)
        np.testing.assert_allclose(fast, direct, rtol=0, atol=TOLERANCE, equal_nan=True)
