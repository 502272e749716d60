"""Worker-process maps: same results as a sequential run, warnings and errors reach the caller."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from run_factory import pair_specs, write_runs

from trac_metrics import selective
from trac_metrics._util.parallel import parallel_map
from trac_metrics._warnings import TracWarning
from trac_metrics.reporting.runs import evaluate_pairs, load_pairs
from trac_metrics.selective.bootstrap import PairData, hierarchical_bootstrap, hierarchical_bootstrap_many


def _square_and_warn(value: int) -> int:
    if value % 2:
        warnings.warn(f"odd value {value}", TracWarning, stacklevel=2)
    return value * value


def _fail_on_three(value: int) -> int:
    if value == 3:
        raise ValueError("three is not allowed")
    return value


def test_results_come_back_in_order_with_the_workers_warnings():
    with pytest.warns(TracWarning) as caught:
        assert parallel_map(_square_and_warn, list(range(6)), jobs=2) == [0, 1, 4, 9, 16, 25]
    assert sorted(str(item.message) for item in caught) == ["odd value 1", "odd value 3", "odd value 5"]


def test_a_workers_error_reaches_the_caller():
    with pytest.raises(ValueError, match="three is not allowed"):
        parallel_map(_fail_on_three, list(range(5)), jobs=2)


def test_progress_sees_every_result_and_the_total():
    seen = []

    def progress(stream):
        seen.append(len(stream))
        yield from stream

    assert parallel_map(_square_and_warn, [2, 4], jobs=2, progress=progress) == [4, 16]
    assert seen == [2]


def test_reading_and_evaluating_on_two_processes_equals_one(tmp_path):
    folders = write_runs(tmp_path, pair_specs(["a", "b"], ["t1", "t2"], 40, seed=5), k=3, seed=5)
    sequential, parallel = load_pairs(folders, jobs=1), load_pairs(folders, jobs=2)
    assert [pair.name for pair in sequential] == [pair.name for pair in parallel]
    for one, two in zip(sequential, parallel, strict=True):
        assert one.evidences == two.evidences and one.seconds == two.seconds and one.responses == two.responses
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        by_one, by_two = evaluate_pairs(sequential, jobs=1), evaluate_pairs(sequential, jobs=2)
    for one, two in zip(by_one, by_two, strict=True):
        assert one.metrics.keys() == two.metrics.keys()
        assert all(
            np.isclose(one.metrics[key], two.metrics[key], equal_nan=True, rtol=0, atol=0) for key in one.metrics
        )


def test_the_bootstrap_on_two_processes_equals_one():
    rng = np.random.default_rng(11)
    pairs = []
    for index in range(4):
        labels = rng.random(60) < 0.6
        scores = {"good": labels + rng.normal(0, 0.8, 60), "coarse": np.round(rng.random(60), 1)}
        pairs.append(PairData(f"pair {index}", labels, np.arange(60), scores))
    metrics = {"auroc": selective.auroc, "aurc": selective.aurc}
    one = hierarchical_bootstrap_many(pairs, metrics, ["good", "coarse"], n_resamples=300, seed=3, jobs=1)
    two = hierarchical_bootstrap_many(pairs, metrics, ["good", "coarse"], n_resamples=300, seed=3, jobs=2)
    for name, metric in metrics.items():
        np.testing.assert_array_equal(one[name].samples, two[name].samples)
        # and each metric equals its own single-metric bootstrap on the same seed
        alone = hierarchical_bootstrap(pairs, metric, ["good", "coarse"], n_resamples=300, seed=3)
        np.testing.assert_array_equal(one[name].samples, alone.samples)
