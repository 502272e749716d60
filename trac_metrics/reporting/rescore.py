"""``trac rescore``: labels, features and metrics of stored runs under changed evidence options, with what changed.

Nothing is regenerated: the records stored at generation time are read twice
(:func:`trac_metrics.reporting.runs.load_pairs`), once with the default configuration and once with the given
:class:`~trac_metrics.features.evidence.EvidenceOptions` (answer kind, user equivalence relation, TUP's J / W / τ;
docs/method.md#answers-and-labels, docs/method.md#trace-uncertainty-profile), and every pair is evaluated both ways with
the same cross-fitted protocol (docs/method.md#cross-fitting-protocol). Per pair the result says which labels flipped (z
= 1[a ≡ a*], docs/method.md#labels), the accuracy before → after and the change of the main methods' AUROC / AURC.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trac_metrics._util.parallel import Progress
from trac_metrics.features.evidence import DEFAULT_OPTIONS, EvidenceOptions
from trac_metrics.reporting.runs import PairRun, evaluate_pairs, load_pairs

MAIN_METHODS = ("trac", "pce", "tup", "sc_modal", "mean_logprob")
MAIN_METRICS = ("auroc", "aurc")
SHOWN_FLIPS = 5
"""Flipped labels listed per pair in the text output (all of them are in the JSON output)."""


@dataclass(frozen=True)
class LabelFlip:
    """A question whose label z changed: the stored primary answer and reference, and the verdict before → after."""

    doc_id: str
    primary_answer: str | None
    reference: str | None
    before: int
    after: int


@dataclass(frozen=True)
class PairChange:
    """One pair under the default configuration (``before``) and the given options (``after``).

    ``undecided_before`` / ``undecided_after`` count the comparisons of answers that ran out of the symbolic work
    budget while the labels were computed (undecided, counted as not equivalent;
    docs/method.md#the-symbolic-work-budget).
    ``metrics_before`` / ``metrics_after`` hold ``<method>_<metric>`` for :data:`MAIN_METHODS` × :data:`MAIN_METRICS`;
    a method the pair does not have (e.g. ``sc_modal`` with K = 1) or an undefined metric is NaN.
    """

    name: str
    model: str
    task: str
    decoding: Mapping[str, float]
    questions: int
    flips: tuple[LabelFlip, ...]
    accuracy_before: float
    accuracy_after: float
    metrics_before: Mapping[str, float]
    metrics_after: Mapping[str, float]
    undecided_before: int = 0
    undecided_after: int = 0

    def delta(self, method: str, metric: str) -> float:
        """after − before of ``<method>_<metric>`` (NaN when either is NaN)."""
        key = f"{method}_{metric}"
        return self.metrics_after[key] - self.metrics_before[key]

    @property
    def note(self) -> str | None:
        """Why AUROC and the learned heads are NaN after the change, when every label is now of one class."""
        if self.accuracy_after in (0.0, 1.0):
            return (
                f"all {self.questions} labels are now {int(self.accuracy_after)}: AUROC and the learned heads are "
                "undefined (NaN)"
            )
        return None


def rescore(
    paths: Iterable[str | os.PathLike[str]],
    options: EvidenceOptions,
    progress: Callable[[str], Progress] | None = None,
) -> list[PairChange]:
    """Every pair of the runs under ``paths``, evaluated with the default options and with ``options``.

    ``progress(phase)`` gives the wrapper of one phase's stream, the record files of each read and the pairs of each
    evaluation (e.g. a tqdm bar named ``phase``); the phases, in order, are :func:`rescore_phases`.
    """
    paths = [Path(path) for path in paths]
    read_before, read_after, evaluate_before, evaluate_after = (
        progress(phase) if progress is not None else None for phase in rescore_phases(options)
    )
    before = load_pairs(paths, read_before, DEFAULT_OPTIONS)
    after = load_pairs(paths, read_after, options)
    evaluations_before = evaluate_pairs(before, progress=evaluate_before)
    evaluations_after = evaluate_pairs(after, progress=evaluate_after)
    changes = []
    for old, new, old_eval, new_eval in zip(before, after, evaluations_before, evaluations_after, strict=True):
        changes.append(
            PairChange(
                name=old.name,
                model=old.model,
                task=old.task,
                decoding=dict(old.decoding),
                questions=len(old.evidences),
                flips=label_flips(old, new),
                accuracy_before=old.accuracy,
                accuracy_after=new.accuracy,
                metrics_before=_main_metrics(old_eval.metrics),
                metrics_after=_main_metrics(new_eval.metrics),
                undecided_before=old.undecided_comparisons,
                undecided_after=new.undecided_comparisons,
            )
        )
    return changes


def rescore_phases(options: EvidenceOptions) -> tuple[str, str, str, str]:
    """The names of :func:`rescore`'s four phases: reading and evaluating with the default configuration, then with
    ``options`` (named by :func:`describe_options`)."""
    default, given = describe_options(DEFAULT_OPTIONS), describe_options(options)
    return (f"reading ({default})", f"reading ({given})", f"evaluating ({default})", f"evaluating ({given})")


def label_flips(before: PairRun, after: PairRun) -> tuple[LabelFlip, ...]:
    """The questions of one pair whose label differs between two readings of the same records, in document order."""
    if before.name != after.name or len(before.evidences) != len(after.evidences):
        raise ValueError(f"{before.name} and {after.name} are not two readings of the same records")
    flips = []
    for old, new in zip(before.evidences, after.evidences, strict=True):
        if old["doc_id"] != new["doc_id"]:
            raise ValueError(f"{before.name}: question order differs ({old['doc_id']} vs {new['doc_id']})")
        if old["correct"] != new["correct"]:
            flips.append(
                LabelFlip(
                    str(old["doc_id"]),
                    old["primary_answer"],
                    old["reference"],
                    int(old["correct"]),
                    int(new["correct"]),
                )
            )
    return tuple(flips)


def _main_metrics(metrics: Mapping[str, float]) -> dict[str, float]:
    keys = (f"{method}_{metric}" for method in MAIN_METHODS for metric in MAIN_METRICS)
    return {key: float(metrics.get(key, math.nan)) for key in keys}


def _verdict(label: int) -> str:
    return "correct" if label else "wrong"


def _number(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.4f}"


def _signed(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:+.4f}"


def describe_options(options: EvidenceOptions) -> str:
    """``answer_kind=text, n_bins=4`` style summary of the non-default options ("default configuration" if none)."""
    changes = options.changes()
    return ", ".join(f"{name}={value}" for name, value in changes.items()) or "default configuration"


def format_changes(changes: Sequence[PairChange], options: EvidenceOptions) -> str:
    """Plain-text report: per pair the flipped labels (first :data:`SHOWN_FLIPS`), accuracy and metric changes."""
    lines = [f"rescored with {describe_options(options)} (compared with the default configuration)"]
    for change in changes:
        lines.append(
            f"\n{change.name}: {len(change.flips)} of {change.questions} labels flipped; accuracy "
            f"{_number(change.accuracy_before)} → {_number(change.accuracy_after)}; comparisons undecided (work "
            f"budget ran out, not equivalent) {change.undecided_before} → {change.undecided_after}"
        )
        for flip in change.flips[:SHOWN_FLIPS]:
            lines.append(
                f"  doc {flip.doc_id}: answer {flip.primary_answer!r} vs reference {flip.reference!r}: "
                f"{_verdict(flip.before)} → {_verdict(flip.after)}"
            )
        if len(change.flips) > SHOWN_FLIPS:
            lines.append(f"  ... and {len(change.flips) - SHOWN_FLIPS} more (--json lists all)")
        if change.note:
            lines.append(f"  note: {change.note}")
        header = "".join(f" | {metric.upper() + ' before → after (Δ)':>29}" for metric in MAIN_METRICS)
        lines.append(f"  {'method':<14}{header}")
        for method in MAIN_METHODS:
            cells = "".join(f" | {_cell(change, method, metric):>29}" for metric in MAIN_METRICS)
            lines.append(f"  {method:<14}{cells}")
    return "\n".join(lines)


def _cell(change: PairChange, method: str, metric: str) -> str:
    key = f"{method}_{metric}"
    return (
        f"{_number(change.metrics_before[key])} → {_number(change.metrics_after[key])} "
        f"({_signed(change.delta(method, metric))})"
    )


def _json_number(value: float) -> float | None:
    return None if math.isnan(value) else value


def changes_to_json(changes: Sequence[PairChange], options: EvidenceOptions) -> dict[str, Any]:
    """JSON form of :func:`format_changes` (every flip listed; NaN as null)."""
    return {
        "options": options.to_dict(),
        "changed_options": options.changes(),
        "pairs": [
            {
                "pair": change.name,
                "model": change.model,
                "task": change.task,
                "decoding": dict(change.decoding),
                "questions": change.questions,
                "labels_flipped": len(change.flips),
                "flips": [vars(flip) for flip in change.flips],
                "accuracy": {"before": change.accuracy_before, "after": change.accuracy_after},
                "undecided_comparisons": {"before": change.undecided_before, "after": change.undecided_after},
                "note": change.note,
                "metrics": {
                    method: {
                        metric: {
                            "before": _json_number(change.metrics_before[f"{method}_{metric}"]),
                            "after": _json_number(change.metrics_after[f"{method}_{metric}"]),
                            "delta": _json_number(change.delta(method, metric)),
                        }
                        for metric in MAIN_METRICS
                    }
                    for method in MAIN_METHODS
                },
            }
            for change in changes
        ],
    }
