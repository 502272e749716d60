"""The calibration and rejection figures of ``trac report`` (docs/method.md#figures), drawn like the other figures
(:func:`trac_metrics.reporting.plots.save_png`: Agg canvas, byte-identical PNGs for the same data).

- :func:`reliability_plot`: one reliability diagram per method family (TrAC, SC@K, mean log-probability, P(True)):
  every question of every pair pooled, its probability of correctness binned into the report's equal-mass ECE bins
  (:func:`trac_metrics.selective.reliability_bins`), accuracy against mean confidence with the count of each bin.
- :func:`rejection_curve_plot`: the macro prediction–rejection curves behind the PRR: the accuracy of the answers
  kept against the share rejected, with the oracle and random orders of the same pairs.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure

from trac_metrics.reporting.model.methods import method_label
from trac_metrics.reporting.plots import RISK_COVERAGE_METHODS, macro_value, save_png
from trac_metrics.reporting.report_data import ReportData
from trac_metrics.selective import ece, reliability_bins

if TYPE_CHECKING:
    from trac_metrics.reporting.report_model import ReportModel

RELIABILITY_METHODS = RISK_COVERAGE_METHODS
"""One reliability diagram per method family: TrAC, SC@K (modal answer), P(True) (when recorded), mean
log-probability."""


def pooled_probabilities(data: ReportData, method: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Every question's probability of correctness (mean over the cross-fitting repetitions) and label, pooled over
    the pairs that have the method with defined probabilities, and how many pairs those are."""
    probabilities, labels = [], []
    for evaluation in data.evaluations:
        p_correct = evaluation.p_correct.get(method)
        if p_correct is None or np.isnan(p_correct).any():
            continue
        probabilities.append(p_correct)
        labels.append(evaluation.labels)
    if not probabilities:
        return np.empty(0), np.empty(0, dtype=np.int64), 0
    return np.concatenate(probabilities), np.concatenate(labels), len(probabilities)


def reliability_plot(model: ReportModel, path: str | os.PathLike[str]) -> Path:
    """Reliability diagrams of :data:`RELIABILITY_METHODS`, pooled over pairs, with bin counts and pooled ECE; a
    method no pair has (or none with defined probabilities) gets an empty panel saying so."""
    data = model.data
    figure = Figure(figsize=(9.0, 7.5))
    k = model.statistics.k
    for position, method in enumerate(RELIABILITY_METHODS, start=1):
        axes = figure.add_subplot(2, 2, position)
        probabilities, labels, n_pairs = pooled_probabilities(data, method)
        axes.plot([0, 1], [0, 1], linestyle="--", color="0.6", linewidth=0.8)
        axes.set_xlim(0.0, 1.0)
        axes.set_ylim(0.0, 1.0)
        axes.set_xlabel("mean probability of correctness (bin)")
        axes.set_ylabel("accuracy (bin)")
        if not n_pairs:
            axes.set_title(f"{method_label(method, k)}: not in the runs", fontsize=9)
            continue
        bins = reliability_bins(probabilities, labels, data.ece_bins)
        counts = axes.twinx()
        counts.bar(bins["confidence"], bins["count"], width=0.02, color="0.85", zorder=0)
        counts.set_ylabel("questions (bin)", fontsize=8)
        axes.set_zorder(counts.get_zorder() + 1)
        axes.patch.set_visible(False)
        axes.plot(bins["confidence"], bins["accuracy"], marker="o", markersize=3)
        for x, y, count in zip(bins["confidence"], bins["accuracy"], bins["count"]):
            axes.annotate(str(count), (x, y), xytext=(2, 3), textcoords="offset points", fontsize=6)
        pooled_ece = ece(probabilities, labels, data.ece_bins)
        axes.set_title(
            f"{method_label(method, k)}: ECE {pooled_ece:.3f} ({probabilities.size} questions, {n_pairs} pair(s))",
            fontsize=9,
        )
        axes.grid(alpha=0.3)
    figure.suptitle(f"Reliability, {data.ece_bins} equal-mass bins, pooled over pairs ({data.calibration_map} maps)")
    figure.tight_layout()
    return save_png(figure, path)


def rejection_curve_plot(model: ReportModel, path: str | os.PathLike[str]) -> Path:
    """Macro accuracy of the kept answers against the share rejected for :data:`RELIABILITY_METHODS` (the report
    model's macro PRR in the legend), with the oracle and random orders averaged over the same pairs."""
    data = model.data
    figure = Figure(figsize=(5.5, 4.0))
    axes = figure.add_subplot()
    k = model.statistics.k
    pooled = model.pooled
    rejected = 1.0 - np.asarray(pooled.grid)
    for method in RELIABILITY_METHODS:
        n_pairs = pooled.pairs.get(method, 0)
        if n_pairs:
            curve = np.asarray(pooled.risk[method])
            share = "" if n_pairs == len(data.pairs) else f", {n_pairs} of {len(data.pairs)} pairs"
            prr = macro_value(model, method, "prr")
            shown = "nan" if math.isnan(prr) else f"{prr:.3f}"
            axes.plot(rejected, 1.0 - curve, label=f"{method_label(method, k)} (PRR {shown}{share})")
    axes.plot(rejected, 1.0 - np.asarray(pooled.oracle), linestyle="--", color="0.3", label="oracle")
    axes.axhline(1.0 - pooled.random, linestyle=":", color="0.5", label="random")
    axes.set_xlabel("share of answers rejected (least confident first)")
    axes.set_ylabel("accuracy of the answers kept")
    axes.set_xlim(0.0, 1.0)
    axes.set_title(f"Macro prediction–rejection curves over {len(data.pairs)} pair(s)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7)
    figure.tight_layout()
    return save_png(figure, path)
