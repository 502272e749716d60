"""Metrics split by a metadata field of the questions (docs/method.md#metrics-by-field): ``trac report --by FIELD``.

Every method's scores are the ones the whole report uses (a head's out-of-fold scores, cross-fitted on all of a
pair's questions): a split changes which questions a metric reads, never what a head was fitted on. Each value of the
field gets AUROC and AURC per method with their hierarchical-bootstrap intervals (the report's resample count and
seed, over the pairs that hold questions of that value), and the paired difference of each method to a reference
(SC@K modal by default), so a researcher can read "which method sees which error" (docs/guide/failure-modes.md) or
MATH-500 by level from one table.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from trac_metrics._warnings import TracWarning
from trac_metrics.heads.evaluate import TaskEvaluation
from trac_metrics.reporting.report_data import BOOTSTRAP_METRICS, ReportData, bootstrap
from trac_metrics.reporting.runs import PairRun
from trac_metrics.reporting.tables import ReportTable

MISSING = "(none)"
"""The value a question shows for a field its metadata lacks."""
MAX_VALUES = 50
"""A field with more distinct values than this is refused: a split per question id tells nothing."""


def field_values(pairs: Sequence[PairRun], field: str) -> list[list[str]]:
    """Per pair, each question's value of metadata ``field`` as text (:data:`MISSING` where absent); a clear error
    when no question has the field or it has too many values to group by."""
    values = [
        [_text(evidence.get("metadata", {}).get(field, MISSING)) for evidence in pair.evidences] for pair in pairs
    ]
    found = {value for pair in values for value in pair}
    if found == {MISSING}:
        raise ValueError(
            f"--by {field}: no question of the report has the metadata field {field!r} (a task names the fields it "
            "stores under trac.metadata_fields)"
        )
    if len(found) > MAX_VALUES:
        raise ValueError(f"--by {field}: {len(found)} distinct values (at most {MAX_VALUES}): not a grouping field")
    return values


def _text(value: object) -> str:
    return value if isinstance(value, str) else str(value)


def _restricted(evaluation: TaskEvaluation, keep: np.ndarray) -> TaskEvaluation:
    """``evaluation`` on the questions ``keep`` (a boolean mask): the same scores, fewer questions."""
    return replace(
        evaluation,
        scores={method: values[keep] for method, values in evaluation.scores.items()},
        labels=evaluation.labels[keep],
        doc_ids=[doc for doc, kept in zip(evaluation.doc_ids, keep, strict=True) if kept],
        scores_by_seed={method: values[:, keep] for method, values in evaluation.scores_by_seed.items()},
        probabilities_by_seed={method: values[:, keep] for method, values in evaluation.probabilities_by_seed.items()},
    )


def _sort_key(value: str) -> tuple[int, float, str]:
    try:
        return (0, float(value), value)
    except ValueError:
        return (1 if value != MISSING else 2, math.nan, value)


def metrics_on(
    data: ReportData, masks: Sequence[np.ndarray], methods: Sequence[str], reference: str | None, level: float
) -> dict[str, dict[str, float]]:
    """Per method, the row of :func:`metrics_by_field` on the questions ``masks[i]`` of each pair i (boolean masks in
    the order of the pair's questions; a pair whose mask is empty is left out): questions, wrong answers, accuracy,
    AUROC and AURC with their intervals, and the paired AUROC difference to ``reference``."""
    chosen = [i for i, mask in enumerate(masks) if mask.any()]
    pairs = [data.pairs[i] for i in chosen]
    evaluations = [_restricted(data.evaluations[i], masks[i]) for i in chosen]
    labels = np.concatenate([evaluation.labels for evaluation in evaluations])
    with warnings.catch_warnings():
        # questions all right (or all wrong) have no AUROC: their NaN row says so in the table's note
        warnings.filterwarnings("ignore", category=TracWarning)
        results = bootstrap(pairs, evaluations, methods, BOOTSTRAP_METRICS, data.n_resamples, data.seed, 1)
    auroc, aurc = results["auroc"], results["aurc"]
    rows = {}
    for method in methods:
        row = {
            "questions": int(labels.size),
            "wrong": int((labels == 0).sum()),
            "accuracy": float(labels.mean()),
            "auroc": auroc.point[method],
            "auroc_lo": auroc.ci(method, level)[0],
            "auroc_hi": auroc.ci(method, level)[1],
            "aurc": aurc.point[method],
            "aurc_lo": aurc.ci(method, level)[0],
            "aurc_hi": aurc.ci(method, level)[1],
        }
        if reference is not None and reference in methods and method != reference:
            difference = auroc.paired_difference(method, reference, level)
            row |= {
                "auroc_minus_reference": difference["point"],
                "diff_lo": difference["lo"],
                "diff_hi": difference["hi"],
            }
        rows[method] = row
    return rows


def metrics_by_field(
    data: ReportData, field: str, methods: Sequence[str], reference: str | None = None, level: float = 0.95
) -> ReportTable:
    """One row per (value of ``field``, method): questions, accuracy, AUROC and AURC with intervals, and the paired
    AUROC difference to ``reference`` (docs/method.md#metrics-by-field). ``methods`` must be scored on every pair."""
    values = field_values(data.pairs, field)
    rows, index = [], []
    for value in sorted({v for pair in values for v in pair}, key=_sort_key):
        masks = [np.asarray([v == value for v in pair], dtype=bool) for pair in values]
        for method, row in metrics_on(data, masks, methods, reference, level).items():
            rows.append(row)
            index.append((value, method))
    frame = pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(index, names=[field, "method"]))
    note = (
        f"Each value of the metadata field {field!r}: the report's scores on that value's questions only (heads "
        "cross-fitted on all questions). Intervals: hierarchical bootstrap over the pairs holding the value. NaN: "
        "the value's questions are all right or all wrong in every pair."
    )
    if reference is not None:
        note += f" auroc_minus_reference: the method's AUROC − {reference}'s, paired on the same resamples."
    # no best / second marks: the rows of different values answer different questions
    return ReportTable(f"by_{field}", f"Metrics by {field}", frame, {}, note)
