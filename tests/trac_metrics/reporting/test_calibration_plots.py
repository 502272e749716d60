"""The report's rejection and calibration parts (docs/method.md#figures, docs/method.md#hierarchical-bootstrap): the
table with its intervals, the bootstrap of the calibration metrics on every method's probabilities, the reliability
diagrams pooled over pairs and the prediction-rejection figure."""

from __future__ import annotations

import math

import numpy as np
import pytest
from run_factory import pair_specs, write_runs

from trac_metrics import selective
from trac_metrics.reporting.calibration_plots import pooled_probabilities
from trac_metrics.reporting.leaderboard import CALIBRATION_TABLE_METRICS, calibration_table
from trac_metrics.reporting.model.methods import leaderboard_methods
from trac_metrics.reporting.report_data import PROBABILITIES, bootstrap, build_report_data
from trac_metrics.reporting.runs import load_pairs

RESAMPLES = 40


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    specs = pair_specs(["org/alpha", "org/beta"], ["gsm8k", "math500"], n_questions=60, seed=4)
    pairs = load_pairs(write_runs(tmp_path_factory.mktemp("runs"), specs, k=4, seed=9))
    return build_report_data(pairs, n_resamples=RESAMPLES, seed=0, jobs=1, ece_bins=10)


def test_the_table_shows_every_metric_of_every_leaderboard_method_with_intervals(data):
    table = calibration_table(data)
    methods = [method for _, method in leaderboard_methods(data)]
    assert len(table.frame) == len(methods)
    for metric in CALIBRATION_TABLE_METRICS:
        shown = selective.METRIC_LABELS[metric]
        np.testing.assert_allclose(table.frame[f"macro {shown}"], [data.macro(m, metric) for m in methods])
        assert table.rank_columns[f"macro {shown}"] == selective.HIGHER_IS_BETTER[metric]
        if metric == "smece":
            assert f"{shown} lo" not in table.frame.columns
            continue
        lo, hi = table.frame[f"{shown} lo"].to_numpy(), table.frame[f"{shown} hi"].to_numpy()
        assert np.all(lo <= hi)
    assert "10 equal-mass bins" in table.note and "isotonic" in table.note


def test_calibration_metrics_are_bootstrapped_on_every_methods_probabilities(data):
    for metric in ("ece", "brier", "log_loss"):
        result = data.bootstraps[metric]
        assert result.samples.shape == (RESAMPLES, len(data.common_methods))
        for method in ("trac", "mean_logprob", "sc_modal"):
            assert result.point[method] == pytest.approx(data.macro(method, metric), abs=1e-12)
    brier = data.bootstraps["brier"]
    alone = bootstrap(
        data.pairs, data.evaluations, ["mean_logprob"], {"brier": selective.brier}, RESAMPLES, 0, 1, PROBABILITIES
    )["brier"]  # the same draws: a method's samples do not depend on the other methods
    np.testing.assert_array_equal(alone.samples[:, 0], brier.samples[:, brier.methods.index("mean_logprob")])


def test_rejection_metrics_are_bootstrapped_on_the_scores_with_the_leaderboards_draws(data):
    for metric in ("auprc", "prr", "prr_50"):
        result = data.bootstraps[metric]
        for method in ("trac", "sc_modal"):
            assert result.point[method] == pytest.approx(data.macro(method, metric), abs=1e-12)
    auroc, prr = data.bootstraps["auroc"], data.bootstraps["prr"]
    assert auroc.methods == prr.methods and auroc.pair_names == prr.pair_names


def test_reliability_bins_pool_every_pairs_probabilities(data):
    probabilities, labels, n_pairs = pooled_probabilities(data, "sc_modal")
    assert n_pairs == len(data.pairs)
    np.testing.assert_array_equal(probabilities, np.concatenate([e.p_correct["sc_modal"] for e in data.evaluations]))
    np.testing.assert_array_equal(labels, np.concatenate([e.labels for e in data.evaluations]))
    bins = selective.reliability_bins(probabilities, labels, data.ece_bins)
    assert bins["count"].sum() == probabilities.size and len(bins["count"]) <= data.ece_bins
    assert pooled_probabilities(data, "p_true")[2] == 0  # the runs did not record P(True)


def test_a_pair_without_a_defined_prr_is_named_in_the_note(data):
    note = calibration_table(data).note
    undefined = [
        pair.name
        for pair, evaluation in zip(data.pairs, data.evaluations)
        if math.isnan(evaluation.metrics.get("trac_prr", math.nan))
    ]
    assert all(name in note for name in undefined)
