"""The figures of ``trac report``: macro risk–coverage curves recomputed by hand, valid and reproducible PNGs."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from full_disk import fill_disk_after, folder_bytes
from matplotlib.image import imread
from run_factory import pair_specs, write_runs

from trac_metrics.reporting.calibration_plots import rejection_curve_plot, reliability_plot
from trac_metrics.reporting.model.pooled import COVERAGE_GRID, macro_risk_coverage
from trac_metrics.reporting.plots import cost_quality_plot, risk_coverage_plot, spread_labels
from trac_metrics.reporting.report_data import build_report_data
from trac_metrics.reporting.report_model import build_report_model
from trac_metrics.reporting.runs import load_pairs


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    specs = pair_specs(["org/alpha", "org/beta"], ["gsm8k", "math500"], n_questions=60, seed=4)
    pairs = load_pairs(write_runs(tmp_path_factory.mktemp("runs"), specs, k=4, seed=9))
    return build_report_data(pairs, n_resamples=50, seed=0)


def _risk_by_hand(scores: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """Error rate of the k highest scores, k = 1..N (scores without ties)."""
    assert np.unique(scores).size == scores.size
    wrong = 1 - correct[np.argsort(-scores)]
    return np.cumsum(wrong) / np.arange(1, scores.size + 1)


@pytest.mark.parametrize("method", ["mean_logprob", "trac"])
def test_macro_curve_is_the_mean_of_each_pairs_interpolated_curve(data, method):
    curves = []
    for pair, evaluation in zip(data.pairs, data.evaluations):
        correct = np.asarray([evidence["correct"] for evidence in pair.evidences])
        if method == "mean_logprob":
            scores = np.asarray([evidence["baselines"]["mean_logprob"] for evidence in pair.evidences])
        else:
            scores = evaluation.scores[method]
        n = scores.size
        curves.append(np.interp(COVERAGE_GRID, np.arange(1, n + 1) / n, _risk_by_hand(scores, correct)))
    curve, n_pairs = macro_risk_coverage(data, method)
    assert n_pairs == len(data.pairs)
    np.testing.assert_allclose(curve, np.mean(curves, axis=0), rtol=0, atol=1e-12)
    accuracy = np.mean([pair.accuracy for pair in data.pairs])
    assert curve[-1] == pytest.approx(1 - accuracy)  # full coverage keeps every answer


def test_a_method_the_runs_lack_gives_no_curve(data):
    curve, n_pairs = macro_risk_coverage(data, "p_true")
    assert n_pairs == 0 and np.isnan(curve).all()


def test_plots_are_valid_pngs_identical_across_runs(data, tmp_path):
    model = build_report_model(data, with_pairs=False)
    for draw in (risk_coverage_plot, cost_quality_plot, reliability_plot, rejection_curve_plot):
        first, second = tmp_path / f"{draw.__name__}_1.png", tmp_path / f"{draw.__name__}_2.png"
        assert draw(model, first) == first
        draw(model, second)
        image = imread(first)
        assert image.ndim == 3 and image.shape[0] > 300 and image.shape[1] > 400
        assert image.std() > 0  # something was drawn
        assert first.read_bytes() == second.read_bytes()
        assert b"Software" not in first.read_bytes() and b"matplotlib" not in first.read_bytes()


def test_a_failed_figure_write_keeps_the_old_png(data, tmp_path, monkeypatch):
    path = tmp_path / "figure.png"
    risk_coverage_plot(build_report_model(data, with_pairs=False), path)
    before = folder_bytes(tmp_path)
    fill_disk_after(monkeypatch, n_bytes=1000)
    with pytest.raises(OSError, match="No space left on device"):
        cost_quality_plot(build_report_model(data, with_pairs=False), path)
    assert folder_bytes(tmp_path) == before


def test_labels_of_one_latency_column_are_spread_apart_and_others_stay():
    xs = [1.0, 1.0, 1.02, 4.0, 4.0, 8.0]
    ys = [0.80, 0.79, 0.70, 0.85, 0.85, 0.90]
    heights = spread_labels(xs, ys, gap=0.03)
    column = sorted([heights[0], heights[1], heights[2]], reverse=True)
    assert column[0] == 0.80 and all(a - b >= 0.03 - 1e-12 for a, b in pairwise(column))
    assert heights[2] == 0.70  # far enough below already
    assert sorted([heights[3], heights[4]]) == pytest.approx([0.82, 0.85])
    assert heights[5] == 0.90
