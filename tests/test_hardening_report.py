"""Hardening of ``trac report``: a label-efficiency retention over a zero full-label AUROC is NaN
with a warning (docs/method.md#label-efficiency), and the per-pair work of the transfer tables and the leaderboard
is one pass over the pairs, not one per task or per target (docs/method.md#transfer-heads)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from run_factory import pair_specs, write_runs

from trac_metrics._warnings import TracWarning
from trac_metrics.reporting import analyses, leaderboard
from trac_metrics.reporting.report_data import ReportData, build_report_data
from trac_metrics.reporting.runs import load_pairs


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> ReportData:
    """1 model × 6 tasks × 30 questions (K = 4), 20 resamples."""
    root = tmp_path_factory.mktemp("runs")
    write_runs(root, pair_specs(["m1"], [f"t{j}" for j in range(6)], 30, seed=2), k=4, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        return build_report_data(load_pairs([root], jobs=1), n_resamples=20, seed=0, jobs=1)


def test_retention_over_a_zero_full_label_auroc_is_nan_with_a_warning(data, monkeypatch):
    """Features that rank the training questions right and every test question wrong: AUROC 0 at 100% labels."""

    def inverted(report: ReportData, method: str) -> list[np.ndarray]:
        matrices = []
        for pair in report.pairs:
            x = pair.labels.astype(float)
            test = analyses.label_split(pair.labels, 0.4, 0, pair.name).test
            x[test] = 1.0 - x[test]
            matrices.append(x[:, None])
        return matrices

    monkeypatch.setattr(analyses, "_feature_rows", inverted)
    with pytest.warns(TracWarning, match=r"retention is NaN: the full-label AUROC is 0 on m1 / t0") as caught:
        table = analyses.label_efficiency(data, (0.5, 1.0))
    assert table.frame.loc["100%", "TrAC"] == 0.0
    assert all(
        math.isnan(table.frame.loc[row, f"{label} retention"])
        for row in ("50%", "100%")
        for label in "TUP PCE TrAC".split()
    )
    assert {str(w.message).split(" retention")[0] for w in caught} == {
        f"label efficiency: {label}" for label in ("TUP", "PCE", "TrAC")
    }


def test_transfer_groups_pairs_by_key_in_one_pass(data, monkeypatch):
    """Each scheme's key is read a bounded number of times per pair, not once per (target, source)."""
    calls = {"n": 0}

    def counted(key_of):
        def key(pair):
            calls["n"] += 1
            return key_of(pair)

        return key

    schemes = {name: (counted(key_of), needs) for name, (key_of, needs) in analyses.SCHEMES.items()}
    monkeypatch.setattr(analyses, "SCHEMES", schemes)
    matrices = analyses._feature_rows(data, "pce")
    for scheme in schemes:
        calls["n"] = 0
        analyses._transfer_aurocs(data, "pce", matrices, scheme)
        assert calls["n"] <= 3 * len(data.pairs), scheme


def test_the_leaderboard_reads_each_method_metric_once_whatever_the_tasks(data, monkeypatch):
    calls = []
    per_pair = ReportData.per_pair
    monkeypatch.setattr(ReportData, "per_pair", lambda self, m, k: calls.append((m, k)) or per_pair(self, m, k))
    leaderboard.main_table(data)
    assert len({pair.task for pair in data.pairs}) == 6
    assert len(calls) <= 2 * len(set(calls))  # per-task means, then the macro: not once per task


def test_transfer_fits_at_most_ten_heads_and_never_shows_a_target_its_key(data, monkeypatch):
    """With more held-out keys than MAX_TRANSFER_FOLDS, keys are dealt into folds: few fits, and no source row of a
    target's own key (docs/method.md#transfer-heads)."""
    monkeypatch.setattr(analyses, "MAX_TRANSFER_FOLDS", 4)  # 6 tasks: LODO and Global deal 6 keys into 4 folds
    matrices = analyses._feature_rows(data, "pce")
    tagged = [np.column_stack([matrix, np.full(len(matrix), j)]) for j, matrix in enumerate(matrices)]
    fits = []

    def recording(source_rows, source_labels, target_rows, names):
        fits.append(({int(j) for j in source_rows[:, -1]}, {int(j) for j in target_rows[:, -1]}))
        return np.zeros(len(target_rows))

    monkeypatch.setattr(analyses, "transfer_scores", recording)
    for scheme in ("LODO", "Global"):
        fits.clear()
        analyses._transfer_aurocs(data, "pce", tagged, scheme)
        key_of = analyses.SCHEMES[scheme][0]
        assert len(fits) == 4
        assert sorted(j for _, targets in fits for j in targets) == list(range(len(matrices)))
        for sources, targets in fits:
            assert not {key_of(data.pairs[j]) for j in sources} & {key_of(data.pairs[j]) for j in targets}
