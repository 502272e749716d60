"""The methods a report shows: registry order, display labels (``@K`` filled in) and leaderboard blocks
(docs/architecture.md#method-registry); the rows of every leaderboard table and of the HTML page's method lists."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trac_metrics.methods import all_methods, get, leaderboard_rows
from trac_metrics.reporting.report_data import ReportData
from trac_metrics.reporting.runs import PairRun


@dataclass(frozen=True)
class ShownMethod:
    """A method scored on some pair: its registry name, display label, leaderboard block (None when it has no
    leaderboard row), one-line definition and the docs section defining it."""

    name: str
    label: str
    block: str | None
    summary: str
    doc: str


def k_label(pairs: Sequence[PairRun]) -> str:
    """K of the sampling methods' labels: the number when every pair has the same K, else ``K``."""
    ks = {pair.num_samples for pair in pairs}
    return str(ks.pop()) if len(ks) == 1 else "K"


def method_label(method: str, k: str) -> str:
    """Display label of a registered method (paper Table 1 wording), ``@k`` filled in for sampling methods."""
    return get(method).display(k)


def leaderboard_methods(data: ReportData) -> list[tuple[str, str]]:
    """``(block, method)`` of every leaderboard method of the registry (:func:`trac_metrics.methods.leaderboard_rows`,
    paper Table 1 order) evaluated on at least one pair."""
    evaluated = {method for evaluation in data.evaluations for method in evaluation.scores}
    k = k_label(data.pairs)
    blocks = {"single-trace": "single-trace", "sampling": f"sampling (K={k})" if k != "K" else "sampling (K per pair)"}
    return [(blocks[method.block], method.name) for method in leaderboard_rows() if method.name in evaluated]


def shown_methods(data: ReportData) -> tuple[ShownMethod, ...]:
    """Every method scored on some pair (:class:`ShownMethod`), in the one order every view of the report lists them:
    the leaderboard's (paper Table 1: single-trace, then sampling), then the other methods in registry order."""
    scored = {method for evaluation in data.evaluations for method in evaluation.scores}
    blocks = dict((method, block) for block, method in leaderboard_methods(data))
    k = k_label(data.pairs)
    others = [method.name for method in all_methods() if method.name in scored and method.name not in blocks]
    return tuple(
        ShownMethod(name, method_label(name, k), blocks.get(name), get(name).summary, get(name).doc)
        for name in [*blocks, *others]
    )
