"""Metrics split by a metadata field (trac_metrics.reporting.subsets, docs/method.md#metrics-by-field): each value's
row reads that value's questions only, with the report's own scores, and agrees with scikit-learn."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from trac_metrics.reporting.subsets import MAX_VALUES, MISSING, field_values, metrics_by_field

METHODS = ["trac", "mean_logprob", "sc_modal"]


def _with_field(report, value_of):
    """``report`` with metadata ``part`` = ``value_of(pair index, question index)`` (None: the field absent)."""
    pairs = []
    for i, pair in enumerate(report.pairs):
        evidences = []
        for j, evidence in enumerate(pair.evidences):
            metadata = dict(evidence.get("metadata", {}))
            if value_of(i, j) is not None:
                metadata["part"] = value_of(i, j)
            evidences.append({**evidence, "metadata": metadata})
        pairs.append(replace(pair, evidences=tuple(evidences)))
    return replace(report, pairs=tuple(pairs))


def _expected_auroc(evaluation, method, keep):
    """The method's AUROC on the questions ``keep``: per cross-fitting repetition for a head, then averaged."""
    labels = evaluation.labels[keep]
    if labels.min() == labels.max():
        return np.nan  # one class: undefined, left out of the macro
    rows = evaluation.scores_by_seed.get(method, evaluation.scores[method][None, :])
    return float(np.mean([roc_auc_score(labels, row[keep]) for row in rows]))


def test_each_value_reads_its_questions_only_and_agrees_with_scikit_learn(six_task_report):
    data = _with_field(six_task_report, lambda i, j: j % 3)  # integers: shown as text, sorted numerically
    table = metrics_by_field(data, "part", METHODS, reference="sc_modal")
    assert [value for value, _ in table.frame.index[:: len(METHODS)]] == ["0", "1", "2"]
    for value in (0, 1, 2):
        keeps = [np.arange(len(evaluation.labels)) % 3 == value for evaluation in data.evaluations]
        for method in METHODS:
            row = table.frame.loc[(str(value), method)]
            expected = np.nanmean([_expected_auroc(e, method, keep) for e, keep in zip(data.evaluations, keeps)])
            assert row["auroc"] == pytest.approx(expected)
            assert row["auroc_lo"] <= row["auroc"] <= row["auroc_hi"]
            assert row["aurc_lo"] <= row["aurc"] <= row["aurc_hi"]
            assert row["questions"] == sum(int(keep.sum()) for keep in keeps)
        difference = table.frame.loc[(str(value), "trac"), "auroc_minus_reference"]
        assert difference == pytest.approx(
            table.frame.loc[(str(value), "trac"), "auroc"] - table.frame.loc[(str(value), "sc_modal"), "auroc"]
        )
    # the split changes which questions a metric reads, not the scores: one value holding everything is the whole
    whole = metrics_by_field(_with_field(six_task_report, lambda i, j: "all"), "part", METHODS)
    for method in METHODS:
        assert whole.frame.loc[("all", method), "auroc"] == pytest.approx(np.nanmean(data.per_pair(method, "auroc")))


def test_a_value_only_some_pairs_hold_is_averaged_over_those_and_an_absent_field_is_its_own_value(six_task_report):
    data = _with_field(six_task_report, lambda i, j: "rare" if i == 0 else (None if j < 10 else "common"))
    table = metrics_by_field(data, "part", ["mean_logprob"])
    rare = data.evaluations[0]
    assert table.frame.loc[("rare", "mean_logprob"), "questions"] == len(rare.labels)
    assert table.frame.loc[("rare", "mean_logprob"), "auroc"] == pytest.approx(
        roc_auc_score(rare.labels, rare.scores["mean_logprob"])
    )
    assert list(dict.fromkeys(value for value, _ in table.frame.index)) == ["common", "rare", MISSING]


def test_a_field_no_question_has_or_one_with_too_many_values_is_refused_by_name(six_task_report):
    with pytest.raises(ValueError, match="no question of the report has the metadata field 'nowhere'"):
        field_values(six_task_report.pairs, "nowhere")
    per_question = _with_field(six_task_report, lambda i, j: f"q{i}-{j}")
    with pytest.raises(ValueError, match=f"at most {MAX_VALUES}"):
        field_values(per_question.pairs, "part")
