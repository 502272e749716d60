"""What a report says beside its tables (trac_metrics.reporting.report_data.report_notes): a method some questions of
a pair lack is warned once per pair with its count and named under every table and on the page; runs labelled by
different labellers say which pair each labeller labelled."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest
from record_factory import synthetic_question, with_every_input

from trac_metrics._warnings import TracWarning
from trac_metrics.records import MATH_VERIFY_LABELLER, RecordWriter
from trac_metrics.reporting.html.page_data import page_data
from trac_metrics.reporting.report_data import ReportData, build_report_data
from trac_metrics.reporting.report_writer import write_report
from trac_metrics.reporting.runs import load_pairs

RESUMED = (
    "m / resumed: not reported, as some questions lack their scores (a run resumed without the switch that computes "
    "them?): self_certainty_full (6 of 24), p_true (6 of 24), answer_convergence (6 of 24), prefix_agreement "
    "(6 of 24), prefix_agreement_weighted (6 of 24), pce_question_only (6 of 24), pce_shuffled_trace (6 of 24), "
    "pce_teacher_forced (6 of 24), pce_after_answer (6 of 24), pce_cue_answer (6 of 24), pce_cue_therefore (6 of 24), "
    "pce_answer_support (6 of 24), trac_prefix (6 of 24), convergence_final (6 of 24), p_true_pce (6 of 24)."
)


def write_pair(root: Path, task: str, switched_on: range, labeller: str | None = None) -> None:
    """24 questions of model m on ``task``; the questions in ``switched_on`` carry P(True), the vocabulary means,
    the probe variants and prefix probes (a run resumed without those switches for the others)."""
    rng = np.random.default_rng(len(task))
    writer = RecordWriter(root / task / "trac_records" / f"{task}.2026-01-01T00-00-00.jsonl")
    for doc_id in range(24):
        question = synthetic_question(rng, doc_id, rng.random() < 0.5, k=4, signal=0.5, task=task, model="m")
        question = with_every_input(question, rng) if doc_id in switched_on else question
        writer.write_batch([dataclasses.replace(record, labeller=labeller) for record in question])


def report(root: Path, jobs: int = 1) -> tuple[ReportData, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = build_report_data(load_pairs([root], jobs=1), n_resamples=20, jobs=jobs)
    return data, [item for item in caught if issubclass(item.category, TracWarning)]


@pytest.mark.parametrize("jobs", [1, 2])  # 2: the evaluation's warnings come back from worker processes
def test_a_method_some_questions_lack_is_warned_once_per_pair_and_noted_everywhere(tmp_path: Path, jobs: int) -> None:
    write_pair(tmp_path, "resumed", range(18))
    write_pair(tmp_path, "whole", range(24))
    data, caught = report(tmp_path, jobs)
    about_resumed = [str(item.message) for item in caught if "m / resumed" in str(item.message)]
    assert about_resumed == [RESUMED]
    assert not [item for item in caught if "head not reported" in str(item.message)], "each head said twice"
    assert data.notes == (RESUMED,)
    assert "p_true" not in data.evaluations[0].scores and "p_true" in data.evaluations[1].scores
    write_report(data, tmp_path / "tables")
    markdown = (tmp_path / "tables" / "leaderboard.md").read_text(encoding="utf-8")
    tables = [section for section in markdown.split("\n## ")[1:] if not section.startswith("Figures")]
    assert tables and all(RESUMED in section for section in tables)
    page = page_data(data)
    assert page["notes"] == [RESUMED] and all(RESUMED in table["note"] for table in page["tables"])


def test_mixed_labellers_are_named_per_pair_in_every_table_and_the_page(tmp_path: Path) -> None:
    write_pair(tmp_path, "checked", range(24))
    write_pair(tmp_path, "verified", range(24), labeller=MATH_VERIFY_LABELLER)
    data, _ = report(tmp_path)
    expected = "Labellers differ between pairs (--mix-labellers): m / checked: trac; m / verified: math-verify."
    assert data.notes == (expected,)
    write_report(data, tmp_path / "tables")
    markdown = (tmp_path / "tables" / "leaderboard.md").read_text(encoding="utf-8")
    tables = [section for section in markdown.split("\n## ")[1:] if not section.startswith("Figures")]
    assert len(tables) > 5 and all(expected in section for section in tables)
    page = page_data(data)
    assert [pair["labellers"] for pair in page["pairs"]] == [["trac"], ["math-verify"]]
    assert page["notes"] == [expected] and all(expected in table["note"] for table in page["tables"])


def test_one_labeller_and_whole_pairs_say_nothing_more(tmp_path: Path) -> None:
    write_pair(tmp_path, "whole", range(24))
    data, _ = report(tmp_path)
    assert data.notes == ()


@pytest.fixture(scope="module")
def constant_selfdoubt(tmp_path_factory) -> ReportData:
    """Two pairs of 80 questions whose SelfDoubt score is one value on every answer (a method with no signal)."""
    from run_factory import pair_specs, write_runs

    root = tmp_path_factory.mktemp("constant")
    pairs = load_pairs(write_runs(root, pair_specs(["org/a", "org/b"], ["gsm8k"], n_questions=80, seed=4)), jobs=1)
    for pair in pairs:
        for evidence in pair.evidences:
            evidence["baselines"]["selfdoubt"] = 0.25
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        return build_report_data(pairs, n_resamples=200, seed=1, jobs=1)


def test_a_constant_score_is_marked_and_never_ranked_first_on_a_calibration_metric(constant_selfdoubt) -> None:
    """docs/method.md#expected-calibration-error: a constant score is calibrated by construction (ECE near 0) and
    tells nothing apart; it is marked, ranked after every other method on calibration, and shown beside its AUROC."""
    from trac_metrics.reporting.leaderboard import ranked_table
    from trac_metrics.reporting.model.statistics import report_statistics

    data = constant_selfdoubt
    assert "selfdoubt" in data.constant_methods and "trac" not in data.constant_methods
    statistics = report_statistics(data)
    ece = statistics.ranked["ece"]
    lowest = min(statistics.methods, key=lambda method: statistics.macro["ece"][method].value)
    assert lowest == "selfdoubt", "the constant score has the lowest ECE: ranking by value alone would put it first"
    assert ece.rows[0].method != "selfdoubt" and ece.rows[-1].method == "selfdoubt"
    constant = ece.rows[-1]
    assert constant.constant and constant.mark is None and constant.auroc == pytest.approx(0.5)
    table = ranked_table(ece)
    assert table.frame["mark"].iloc[-1] == "constant score"
    assert table.frame["macro AUROC"].tolist() == [row.auroc for row in ece.rows]
    auroc = statistics.ranked["auroc"]
    assert list(ranked_table(auroc).frame.columns)[:4] == ["mark", "macro AUROC", "AUROC lo", "AUROC hi"]
    assert [row.method for row in auroc.rows if row.constant] == ["selfdoubt"]


def test_every_ece_interval_contains_its_estimate(constant_selfdoubt) -> None:
    """docs/method.md#hierarchical-bootstrap: the ECE's resamples are re-centred on the estimate, so every ECE interval
    and every paired ECE difference contains its own value (and no ECE bound is negative)."""
    from trac_metrics.reporting.model.statistics import report_statistics

    statistics = report_statistics(constant_selfdoubt)
    for row in statistics.ranked["ece"].rows:
        assert 0.0 <= row.lo <= row.value <= row.hi, row.method
        if row.difference is not None:
            assert row.difference.lo <= row.difference.difference <= row.difference.hi, row.method
    raw = constant_selfdoubt.bootstraps["ece"]
    trac = raw.samples[:, raw.methods.index("trac")]
    assert np.median(trac) > raw.point["trac"], "the resampled ECE is biased upward (what re-centring removes)"
