"""Tests for trac_metrics.selective (docs/method.md#selective-prediction-metrics): independent references, brute force
over tie orders, hand values."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from trac_metrics import TracWarning, selective


def _brute_force_risk(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Average of R(k/N) over ALL orderings consistent with decreasing score (each equally likely)."""
    n = scores.size
    curves = []
    for order in itertools.permutations(range(n)):
        ordered = scores[list(order)]
        if np.all(ordered[:-1] >= ordered[1:]):
            errors = 1 - labels[list(order)].astype(float)
            curves.append(np.cumsum(errors) / np.arange(1, n + 1))
    return np.mean(curves, axis=0)


def _tied_case(seed: int, n: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Small input with many ties (scores from three values) and both classes present."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    labels[:2] = [0, 1]
    return rng.integers(0, 3, n).astype(float), labels


@pytest.mark.parametrize("seed", range(5))
def test_auroc_matches_sklearn_with_many_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 400)
    scores = rng.integers(0, 6, 400) + labels * rng.integers(0, 3, 400)  # few distinct values: heavy ties
    assert selective.auroc(scores, labels) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_curve_aurc_and_risk_equal_brute_force_over_tie_orders(seed: int) -> None:
    scores, labels = _tied_case(seed)
    expected = _brute_force_risk(scores, labels)
    coverage, risk = selective.risk_coverage_curve(scores, labels)
    np.testing.assert_allclose(coverage, np.arange(1, 8) / 7)
    np.testing.assert_allclose(risk, expected, atol=1e-12)
    assert selective.aurc(scores, labels) == pytest.approx(expected.mean(), abs=1e-12)
    for c in (0.1, 0.2, 0.5, 0.6, 1.0):
        k = math.ceil(c * 7)  # c·7 is never within float noise of an integer here
        assert selective.risk_at_coverage(scores, labels, c) == pytest.approx(expected[k - 1], abs=1e-12)


def test_hand_computed_example() -> None:
    scores = [0.9, 0.8, 0.8, 0.3]
    labels = [1, 0, 1, 0]
    # Descending: 0.9 (correct) | tie group {0.8: correct, wrong} (g=2, e=1) | 0.3 (wrong).
    # k=1: 0 errors            -> R = 0
    # k=2: 0 + 1·1/2 = 0.5     -> R = 0.5/2 = 1/4
    # k=3: 0 + 2·1/2 = 1       -> R = 1/3
    # k=4: 1 + 1 = 2           -> R = 2/4 = 1/2
    # AURC = (0 + 1/4 + 1/3 + 1/2)/4 = (13/12)/4 = 13/48
    # oracle (c, c, w, w): R = 0, 0, 1/3, 2/4 -> AURC* = (5/6)/4 = 10/48, so E-AURC = 3/48
    # base error = 2/4, so excess AURC = (13/48)/(1/2) = 13/24
    # AUROC over (pos, neg) pairs: (.9,.8)=1, (.9,.3)=1, (.8,.8)=1/2, (.8,.3)=1 -> 3.5/4 = 0.875
    # risk_at_10: k=⌈0.4⌉=1 -> 0; risk_at_20: k=⌈0.8⌉=1 -> 0; risk_at_50: k=2 -> 1/4
    _, risk = selective.risk_coverage_curve(scores, labels)
    np.testing.assert_allclose(risk, [0, 1 / 4, 1 / 3, 1 / 2])
    metrics = selective.selective_metrics(scores, labels)
    expected = {
        "auroc": 0.875,
        "aurc": 13 / 48,
        "e_aurc": 3 / 48,
        "excess_aurc": 13 / 24,
        "risk_at_10": 0.0,
        "risk_at_20": 0.0,
        "risk_at_50": 0.25,
    }
    assert list(metrics) == list(expected)  # the key names are a contract
    assert metrics == pytest.approx(expected, abs=1e-12)
    assert selective.e_aurc(scores, labels) == pytest.approx(3 / 48)
    assert selective.excess_aurc(scores, labels) == pytest.approx(13 / 24)


def test_single_metric_functions_agree_with_selective_metrics() -> None:
    scores, labels = _tied_case(11, n=50)
    metrics = selective.selective_metrics(scores, labels, coverages=(0.3,))
    assert metrics["auroc"] == selective.auroc(scores, labels)
    assert metrics["aurc"] == selective.aurc(scores, labels)
    assert metrics["e_aurc"] == selective.e_aurc(scores, labels)
    assert metrics["excess_aurc"] == selective.excess_aurc(scores, labels)
    assert metrics["risk_at_30"] == selective.risk_at_coverage(scores, labels, 0.3)


def test_constant_score_gives_base_error_rate_in_any_input_order() -> None:
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 101)
    base_error = 1 - labels.mean()
    values = set()
    for _ in range(5):
        shuffled = rng.permutation(labels)
        value = selective.aurc(np.full(101, 0.4), shuffled)
        assert value == pytest.approx(base_error, abs=1e-12)
        assert selective.risk_at_coverage(np.zeros(101), shuffled, 0.1) == pytest.approx(base_error, abs=1e-12)
        values.add(value)
    assert len(values) == 1
    assert selective.excess_aurc(np.full(101, 0.4), labels) == pytest.approx(1.0)


def test_oracle_ordering_has_zero_e_aurc() -> None:
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 2, 200)
    oracle_scores = labels + rng.uniform(0, 0.5, 200)  # every correct response above every wrong one
    assert selective.e_aurc(oracle_scores, labels) == pytest.approx(0.0, abs=1e-12)
    assert selective.e_aurc(-oracle_scores, labels) > 0.1


def test_metrics_are_invariant_to_input_permutation() -> None:
    scores, labels = _tied_case(5, n=300)
    reference = selective.selective_metrics(scores, labels)
    rng = np.random.default_rng(0)
    for _ in range(3):
        order = rng.permutation(scores.size)
        assert selective.selective_metrics(scores[order], labels[order]) == pytest.approx(reference, abs=1e-12)


def test_coverage_uses_exact_ceiling_despite_float_noise() -> None:
    # 0.7 * 10 = 7.000000000000001 in floating point; ⌈0.7·10⌉ must still be 7.
    scores = np.arange(10, 0, -1)
    labels = np.array([1] * 7 + [0] * 3)
    assert selective.risk_at_coverage(scores, labels, 0.7) == 0.0
    assert selective.risk_at_coverage(scores, labels, 0.8) == pytest.approx(1 / 8)


def test_inputs_accept_lists_and_bools() -> None:
    assert selective.auroc([0.1, 0.9], [False, True]) == 1.0
    assert selective.aurc([0.1, 0.9], [0.0, 1.0]) == pytest.approx((0 + 1 / 2) / 2)


@pytest.mark.parametrize(
    ("labels", "message"),
    [([0, 2, 1], r"\[2\]"), ([0.5, 1.0, 0.0], r"0\.5"), (["yes", "no", "no"], "yes"), ([0, np.nan, 1], "nan")],
)
def test_bad_labels_raise_naming_the_values(labels: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        selective.auroc([0.1, 0.2, 0.3], labels)


def test_shape_and_argument_errors() -> None:
    with pytest.raises(ValueError, match="length"):
        selective.aurc([0.1, 0.2], [1, 0, 1])
    with pytest.raises(ValueError, match="1-D"):
        selective.auroc(np.zeros((2, 2)), np.zeros((2, 2), dtype=int))
    with pytest.raises(ValueError, match="real numbers"):
        selective.auroc(["a", "b"], [1, 0])
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="coverage"):
            selective.risk_at_coverage([0.1, 0.2], [1, 0], bad)
    with pytest.raises(ValueError, match="coverage"):
        selective.selective_metrics([0.1, 0.2], [1, 0], coverages=(0.1, 2.0))


def test_all_correct_pair() -> None:
    scores = [0.3, 0.1, 0.7]
    with pytest.warns(TracWarning, match="all 3 responses are correct"):
        assert math.isnan(selective.auroc(scores, [1, 1, 1]))
    assert selective.aurc(scores, [1, 1, 1]) == 0.0
    assert selective.e_aurc(scores, [1, 1, 1]) == 0.0
    assert selective.risk_at_coverage(scores, [1, 1, 1], 0.5) == 0.0
    with pytest.warns(TracWarning, match="base error rate is 0"):
        assert math.isnan(selective.excess_aurc(scores, [1, 1, 1]))


def test_all_wrong_pair() -> None:
    scores = [0.3, 0.1, 0.7]
    with pytest.warns(TracWarning, match="incorrect"):
        metrics = selective.selective_metrics(scores, [0, 0, 0])
    assert math.isnan(metrics["auroc"])
    assert metrics["aurc"] == 1.0
    assert metrics["e_aurc"] == 0.0
    assert metrics["excess_aurc"] == 1.0
    assert metrics["risk_at_50"] == 1.0


def test_empty_input_warns_and_returns_nan() -> None:
    for function in (selective.auroc, selective.aurc, selective.e_aurc, selective.excess_aurc):
        with pytest.warns(TracWarning, match="empty"):
            assert math.isnan(function([], []))
    with pytest.warns(TracWarning, match="empty"):
        coverage, risk = selective.risk_coverage_curve([], [])
    assert coverage.size == 0 and risk.size == 0


def test_nan_scores_make_every_metric_nan_and_say_how_many() -> None:
    scores = [0.1, np.nan, 0.4, np.nan, 0.9]
    labels = [0, 1, 0, 1, 1]
    with pytest.warns(TracWarning, match="2 of 5 scores are NaN"):
        metrics = selective.selective_metrics(scores, labels)
    assert all(math.isnan(value) for value in metrics.values())
    with pytest.warns(TracWarning, match="2 of 5"):
        assert math.isnan(selective.risk_at_coverage(scores, labels, 0.2))
    with pytest.warns(TracWarning, match="2 of 5"):
        _, risk = selective.risk_coverage_curve(scores, labels)
    assert risk.shape == (5,) and np.isnan(risk).all()
