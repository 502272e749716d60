"""Two runs of one task compared question by question (trac_metrics/reporting/model/model_comparison.py,
docs/guide/reports.md#the-html-report-trac-report---html), against reference computations: SciPy's exact binomial
test and a loop over the same resamples."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from trac_metrics.reporting.model.model_comparison import compare_accuracy, mcnemar_exact


@pytest.mark.parametrize(("only_a", "only_b"), [(0, 0), (0, 5), (7, 2), (12, 12), (30, 11), (1, 40)])
def test_the_mcnemar_p_is_the_exact_two_sided_binomial_test_on_the_disagreements(only_a: int, only_b: int) -> None:
    expected = 1.0 if only_a + only_b == 0 else binomtest(only_a, only_a + only_b, 0.5).pvalue
    assert mcnemar_exact(only_a, only_b) == pytest.approx(expected, rel=1e-12)


def test_accuracies_intervals_and_disagreements_over_the_shared_documents() -> None:
    rng = np.random.default_rng(3)
    docs = [f"d{i}" for i in range(60)]
    a = rng.integers(0, 2, 60).tolist()
    b = rng.integers(0, 2, 60).tolist()
    # B holds its documents in another order, one A lacks and lacks two of A's: only the 58 shared ones count
    order = rng.permutation(60)[2:]
    docs_b = [docs[i] for i in order] + ["extra"]
    correct_b = [b[i] for i in order] + [1]
    found = compare_accuracy(docs, a, docs_b, correct_b, n_resamples=400, seed=11, level=0.9)
    shared = sorted(order.tolist())
    a_shared, b_shared = np.array([a[i] for i in shared]), np.array([b[i] for i in shared])
    assert found.shared == 58
    assert found.accuracy_a == pytest.approx(a_shared.mean()) and found.accuracy_b == pytest.approx(b_shared.mean())
    assert found.only_a == sum(x == 1 and y == 0 for x, y in zip(a_shared, b_shared, strict=True))
    assert found.only_b == sum(x == 0 and y == 1 for x, y in zip(a_shared, b_shared, strict=True))
    assert found.p == pytest.approx(binomtest(found.only_a, found.only_a + found.only_b, 0.5).pvalue)
    # the reference: the same resamples of the shared questions (in A's order), one at a time
    a_in_order = np.array([a[docs.index(doc)] for doc in docs if doc in set(docs_b)])
    b_in_order = np.array([correct_b[docs_b.index(doc)] for doc in docs if doc in set(docs_b)])
    draws = np.random.default_rng(11).integers(0, 58, size=(400, 58))
    means_a = [sum(a_in_order[row]) / 58 for row in draws]
    means_b = [sum(b_in_order[row]) / 58 for row in draws]
    differences = [x - y for x, y in zip(means_a, means_b, strict=True)]
    for got, values in (
        (found.interval_a, means_a),
        (found.interval_b, means_b),
        (found.interval_difference, differences),
    ):
        assert got == pytest.approx(tuple(np.percentile(values, [5, 95])))
    assert found.interval_a[0] <= found.accuracy_a <= found.interval_a[1]


def test_runs_that_always_agree_or_share_nothing() -> None:
    same = compare_accuracy(["x", "y", "z"], [1, 0, 1], ["z", "y", "x"], [1, 0, 1], 200, 0, 0.95)
    assert same.difference == 0 and same.interval_difference == (0.0, 0.0)
    assert (same.only_a, same.only_b, same.p) == (0, 0, 1.0)
    assert compare_accuracy(["x"], [1], ["y"], [1], 200, 0, 0.95) is None
