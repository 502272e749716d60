"""The rejection metrics (trac_metrics.selective.rejection; docs/method.md#auprc-of-errors,
docs/method.md#prediction-rejection-ratio) against independent references on at least 200 random cases each, ties
included: scikit-learn's average precision, LM-Polygraph's own ``PredictionRejectionArea`` (its module loaded from an
installed ``lm-polygraph`` distribution, with three of its values fixed here for when it is absent) and a brute force
over tie orders."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import itertools
import math
import sys
import types

import numpy as np
import pytest
from metric_cases import CASES, TOLERANCE, cases
from sklearn.metrics import average_precision_score

from trac_metrics import TracWarning, selective


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


def test_prr_needs_two_kept_coverages() -> None:
    with pytest.warns(TracWarning, match="only full coverage"):
        assert math.isnan(selective.prr_50([0.9, 0.1, 0.5], [1, 0, 1]))  # ⌊3/2⌋ = 1
    assert selective.prr_50([0.9, 0.1, 0.5, 0.3], [1, 0, 1, 0]) == 1.0
    with pytest.raises(ValueError, match="max_rejection"):
        selective.prr([0.1, 0.2], [0, 1], max_rejection=0.0)
