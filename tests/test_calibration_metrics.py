"""The rejection and calibration metrics (docs/method.md#auprc-of-errors, docs/method.md#prediction-rejection-ratio,
docs/method.md#calibration) against independent references on at least 200 random cases each, ties included:
scikit-learn (Brier, log loss, average precision), LM-Polygraph's own ``PredictionRejectionArea`` (its module
loaded from an installed ``lm-polygraph`` distribution, with three of its values fixed here for when it is absent),
a brute force over tie orders (PRR), a brute-force loop and relplot's binned ECE (ECE), relplot's smECE; then the
defined behaviour of ties, one class, NaN and fewer questions than bins, and the bootstrap's vectorized twins."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import itertools
import math
import sys
import types
import warnings
from functools import partial

import numpy as np
import pytest
import relplot
from sklearn.metrics import average_precision_score, brier_score_loss
from sklearn.metrics import log_loss as sklearn_log_loss

from trac_metrics import TracWarning, selective
from trac_metrics.selective.bootstrap import _called_metric, _grouped_metric, _grouped_statistic

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


def test_auprc_is_scikit_learns_average_precision_of_errors_from_low_scores() -> None:
    checked = 0
    for scores, labels in cases(3):
        if labels.all():
            continue  # no error to detect: NaN (tested below)
        checked += 1
        assert selective.auprc(scores, labels) == pytest.approx(
            average_precision_score(1 - labels, -scores), abs=TOLERANCE
        )
    assert checked >= 200


# ------------------------------------------------------------------------------------------- PRR references


def lm_polygraph_modules() -> tuple[types.ModuleType, types.ModuleType] | None:
    """LM-Polygraph's ``ue_metric`` and ``pred_rej_area`` modules from the installed distribution, loaded without
    its package ``__init__`` (which imports torch and transformers): ``pip install --no-deps lm-polygraph``."""
    try:
        distribution = importlib.metadata.distribution("lm-polygraph")
    except importlib.metadata.PackageNotFoundError:
        return None
    package = types.ModuleType("_lm_polygraph_ue_metrics")
    package.__path__ = [str(distribution.locate_file("lm_polygraph/ue_metrics"))]
    sys.modules.setdefault(package.__name__, package)
    loaded = []
    for name in ("ue_metric", "pred_rej_area"):
        spec = importlib.util.spec_from_file_location(
            f"{package.__name__}.{name}", distribution.locate_file(f"lm_polygraph/ue_metrics/{name}.py")
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        loaded.append(module)
    return loaded[0], loaded[1]


def tie_groups(scores: np.ndarray) -> list[np.ndarray]:
    """Positions of each group of equal scores, groups in decreasing score."""
    return [np.flatnonzero(scores == value) for value in np.unique(scores)[::-1]]


def polygraph_prr(scores: np.ndarray, labels: np.ndarray, max_rejection: float) -> float:
    """LM-Polygraph's normalized PRR, ties averaged over their orders.

    Its ``PredictionRejectionArea`` sees one order at a time (the estimator is the position in that order, so its
    ``argsort`` follows it). The area is linear in the ordered labels, so its mean over all orders of the tie groups
    is the base order's area plus, per group, the mean change over that group's cyclic shifts (each member takes each
    of the group's positions once). Normalized as LM-Polygraph's benchmark does, with its random score replaced by
    that score's exact expectation, the accuracy."""
    ue_metric, pred_rej_area = lm_polygraph_modules()
    metric = pred_rej_area.PredictionRejectionArea(max_rejection=max_rejection)
    target = labels.astype(float)
    groups = tie_groups(scores)

    def area(order: list[np.ndarray]) -> float:
        positions = np.empty(labels.size)
        positions[np.concatenate(order)] = np.arange(labels.size)
        return metric(positions, target)

    base = area(groups)
    expected = base
    for index, group in enumerate(groups):
        shifted = [area([*groups[:index], np.roll(group, shift), *groups[index + 1 :]]) for shift in range(group.size)]
        expected += np.mean(shifted) - base
    return ue_metric.normalize_metric(expected, metric(-target, target), target.mean())


@pytest.mark.parametrize(("name", "max_rejection"), [("prr", 1.0), ("prr_50", 0.5)])
def test_prr_matches_lm_polygraphs_implementation_with_ties_averaged(name: str, max_rejection: float) -> None:
    assert lm_polygraph_modules() is not None, "install the reference: pip install --no-deps lm-polygraph==0.7.0"
    checked = 0
    for scores, labels in cases(4, both_classes=True):
        if int(max_rejection * labels.size) < 2:
            continue  # only full coverage compared: NaN here, LM-Polygraph's raw area there (tested below)
        checked += 1
        expected = polygraph_prr(scores, labels, max_rejection)
        assert getattr(selective, name)(scores, labels) == pytest.approx(expected, abs=TOLERANCE)
    assert checked >= 200


LM_POLYGRAPH_VALUES = [
    ([0.9, 0.8, 0.7, 0.6, 0.5, 0.4], [1, 1, 0, 1, 0, 0], "prr", 0.81981981981982),
    ([3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.0, 6.0], [0, 1, 1, 0, 1, 1, 0, 1], "prr", 0.7654794520547945),
    ([0.2, 0.7, 0.1, 0.9, 0.4, 0.3, 0.8, 0.65, 0.05], [1, 0, 0, 1, 1, 0, 1, 0, 0], "prr_50", 0.5882352941176473),
]
"""PRR values computed by LM-Polygraph 0.7.0 (``PredictionRejectionArea`` on the uncertainty −u, normalized with
its ``normalize_metric`` by the oracle area of −z and the exact random area, the accuracy)."""


@pytest.mark.parametrize(("scores", "labels", "name", "value"), LM_POLYGRAPH_VALUES)
def test_prr_reproduces_values_computed_by_lm_polygraph(scores, labels, name, value) -> None:
    assert getattr(selective, name)(scores, labels) == pytest.approx(value, abs=1e-12)


def brute_force_prr(scores: np.ndarray, labels: np.ndarray, max_rejection: float) -> float:
    """The PRR definition over every order consistent with the scores (each equally likely): mean accuracy of the
    kept answers at coverages N − m + 1..N, against the oracle and the accuracy."""
    n, kept = labels.size, int(max_rejection * labels.size)
    groups = tie_groups(scores)
    areas = []
    for order in itertools.product(*(itertools.permutations(group) for group in groups)):
        ordered = labels[np.concatenate(order).astype(int)]
        accuracy_kept = np.cumsum(ordered) / np.arange(1, n + 1)
        areas.append(accuracy_kept[n - kept :].mean())
    oracle = np.cumsum(np.sort(labels)[::-1]) / np.arange(1, n + 1)
    random_area = labels.mean()
    return (np.mean(areas) - random_area) / (oracle[n - kept :].mean() - random_area)


@pytest.mark.parametrize(("name", "max_rejection"), [("prr", 1.0), ("prr_50", 0.5)])
def test_prr_equals_the_brute_force_over_tie_orders(name: str, max_rejection: float) -> None:
    rng = np.random.default_rng(5)
    checked = tied = 0
    while checked < CASES:
        n = int(rng.integers(4, 9))
        labels = (rng.random(n) < 0.5).astype(int)
        scores = rng.integers(0, int(rng.integers(2, 6)), n).astype(float)
        orders = math.prod(math.factorial(group.size) for group in tie_groups(scores))
        if labels.min() == labels.max() or orders > 2000:
            continue
        checked += 1
        tied += np.unique(scores).size < n
        expected = brute_force_prr(scores, labels, max_rejection)
        assert getattr(selective, name)(scores, labels) == pytest.approx(expected, abs=TOLERANCE)
    assert tied >= CASES // 2


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


def test_prr_needs_two_kept_coverages() -> None:
    with pytest.warns(TracWarning, match="only full coverage"):
        assert math.isnan(selective.prr_50([0.9, 0.1, 0.5], [1, 0, 1]))  # ⌊3/2⌋ = 1
    assert selective.prr_50([0.9, 0.1, 0.5, 0.3], [1, 0, 1, 0]) == 1.0
    with pytest.raises(ValueError, match="max_rejection"):
        selective.prr([0.1, 0.2], [0, 1], max_rejection=0.0)


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
