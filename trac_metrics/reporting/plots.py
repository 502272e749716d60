"""The two figures of ``trac report`` (docs/method.md#figures), drawn with matplotlib's Agg canvas.

- :func:`risk_coverage_plot`: the report model's macro risk–coverage curves (:mod:`trac_metrics.reporting.model
  .pooled`): each pair's expected selective risk interpolated on a common coverage grid, averaged over pairs.
- :func:`cost_quality_plot`: measured relative latency (log scale) against macro AUROC, one labelled point per method.

No pyplot and no display: figures are built on ``FigureCanvasAgg`` and written as PNG without the ``Software``
metadata, so the same data gives byte-identical files.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from trac_metrics._util.files import atomic_write
from trac_metrics.reporting.model.methods import method_label

if TYPE_CHECKING:
    from trac_metrics.reporting.report_model import ReportModel

RISK_COVERAGE_METHODS = ("trac", "sc_modal", "p_true", "mean_logprob")
"""Curves of the risk–coverage figure (docs/method.md#figures); P(True) only when the runs recorded it."""

_DPI = 120


def save_png(figure: Figure, path: str | os.PathLike[str]) -> Path:
    """Render ``figure`` as PNG in memory, then write it atomically (a failed write leaves the old file)."""
    FigureCanvasAgg(figure)
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=_DPI, metadata={"Software": None})
    atomic_write(path, png.getvalue())
    return Path(path)


def macro_value(model: ReportModel, method: str, metric: str) -> float:
    """The report model's pair-equal macro of ``method``'s ``metric`` (NaN when the leaderboard has none)."""
    macro = model.statistics.macro[metric].get(method)
    return math.nan if macro is None else macro.value


def risk_coverage_plot(model: ReportModel, path: str | os.PathLike[str]) -> Path:
    """Macro risk–coverage curves of TrAC, SC@K (modal answer), P(True) when present and mean log-probability."""
    data = model.data
    figure = Figure(figsize=(5.5, 4.0))
    axes = figure.add_subplot()
    k = model.statistics.k
    for method in RISK_COVERAGE_METHODS:
        n_pairs = model.pooled.pairs.get(method, 0)
        if n_pairs:
            share = "" if n_pairs == len(data.pairs) else f" ({n_pairs} of {len(data.pairs)} pairs)"
            axes.plot(model.pooled.grid, model.pooled.risk[method], label=method_label(method, k) + share)
    axes.set_xlabel("coverage")
    axes.set_ylabel("selective risk (error rate)")
    axes.set_xlim(0.0, 1.0)
    axes.set_title(f"Macro risk–coverage over {len(data.pairs)} pair(s)")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    return save_png(figure, path)


def spread_labels(xs: Sequence[float], ys: Sequence[float], gap: float) -> list[float]:
    """Label heights for points labelled to their right: within a column of points (the same latency bucket; buckets
    are 10% wide on the log scale) labels keep at least ``gap`` apart, pushed downward from the highest point."""
    heights = list(ys)
    order = sorted(range(len(xs)), key=lambda i: (round(math.log10(xs[i]) / math.log10(1.1)), -ys[i], i))
    previous: tuple[int, float] | None = None
    for i in order:
        column = round(math.log10(xs[i]) / math.log10(1.1))
        if previous is not None and previous[0] == column:
            heights[i] = min(ys[i], previous[1] - gap)
        previous = (column, heights[i])
    return heights


def cost_quality_plot(model: ReportModel, path: str | os.PathLike[str]) -> Path:
    """Relative latency (x, log scale) vs macro AUROC (y), one labelled point per leaderboard method: the report
    model's numbers, those of the leaderboard table.

    Methods without timings or without a defined macro AUROC are listed under the plot instead of a point.
    """
    statistics = model.statistics
    figure = Figure(figsize=(7.0, 5.0))
    axes = figure.add_subplot()
    k = statistics.k
    points, left_out = [], []
    for _, method in statistics.rows:
        latency, quality = statistics.latency[method], macro_value(model, method, "auroc")
        if math.isnan(latency) or math.isnan(quality):
            left_out.append(method_label(method, k))
        else:
            points.append((method_label(method, k), latency, quality))
    if points:
        labels, xs, ys = zip(*points)
        span = max(max(ys) - min(ys), 0.05)
        heights = spread_labels(xs, ys, gap=0.045 * span)
        axes.scatter(xs, ys, s=20, c=[f"C{i % 10}" for i in range(len(xs))])
        for label, x, y, height in zip(labels, xs, ys, heights):
            axes.annotate(
                label,
                (x, y),
                xytext=(x * 1.08, height),
                fontsize=7,
                va="center",
                arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "0.5"} if height != y else None,
            )
        axes.set_xscale("log")
        low, high = min(xs) / 1.3, max(xs) * 3.0
        axes.set_xticks([2.0**power for power in range(math.floor(math.log2(low)), math.ceil(math.log2(high)) + 1)])
        axes.set_xlim(low, high)
        axes.set_ylim(min(heights) - 0.05 * span, max(ys) + 0.05 * span)
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}×"))
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel("relative latency (generations per question, log scale)")
    axes.set_ylabel("macro AUROC")
    axes.set_title(f"Cost vs quality over {len(model.data.pairs)} pair(s)")
    axes.grid(alpha=0.3, which="both")
    if left_out:
        figure.text(0.01, 0.01, "not plotted (no timings or no AUROC): " + ", ".join(left_out), fontsize=7)
    figure.tight_layout()
    return save_png(figure, path)
