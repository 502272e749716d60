"""The ``trac report`` folder written by ``write_report`` (trac_metrics.reporting.report_writer)."""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from full_disk import fill_disk_after, folder_bytes
from run_factory import pair_specs, write_runs

from trac_metrics._util import limits
from trac_metrics._util.limits import MemoryLimitError
from trac_metrics.reporting.analyses import all_analyses
from trac_metrics.reporting.leaderboard import main_table
from trac_metrics.reporting.report_data import bootstrap, build_report_data
from trac_metrics.reporting.report_model import build_report_model
from trac_metrics.reporting.report_writer import write_report
from trac_metrics.reporting.runs import load_pairs

# ----------------------------------------------------------------------------------------------------- renderers


# ---------------------------------------------------------------------------------------------------- the folder

SEED = 3


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    specs = pair_specs(["org/alpha", "org/beta"], ["gsm8k", "math500"], n_questions=60, seed=4)
    return load_pairs(write_runs(tmp_path_factory.mktemp("runs"), specs, k=4, seed=9))


@pytest.fixture(scope="module")
def data(pairs):
    return build_report_data(pairs, n_resamples=200, seed=SEED)


@pytest.fixture(scope="module")
def report(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    return out, write_report(data, out, latex=True)


def test_write_report_writes_every_file(report, data):
    out, markdown = report
    tables = [*build_report_model(data, with_pairs=False).tables, *all_analyses(data)]
    titles, names = [table.title for table in tables], [table.name for table in tables]
    assert names[0] == "leaderboard"
    expected = {
        "leaderboard.md",
        "risk_coverage.png",
        "rejection_curve.png",
        "reliability.png",
        "cost_quality.png",
        *(f"{name}.csv" for name in names),
        *(f"{name}.tex" for name in names),
    }
    assert {path.name for path in out.iterdir()} == expected
    assert (out / "leaderboard.md").read_text(encoding="utf-8") == markdown
    headings = [line[3:] for line in markdown.splitlines() if line.startswith("## ")]
    assert headings == [*titles, "Figures"]
    assert "![Macro risk–coverage curves](risk_coverage.png)" in markdown
    assert (out / "leaderboard.tex").read_text(encoding="utf-8").startswith("\\begin{table}")


def test_report_header_names_the_pairs_and_the_bootstrap(report, data):
    _, markdown = report
    for pair in data.pairs:
        accuracy = np.mean([evidence["correct"] for evidence in pair.evidences])
        assert f"- {pair.name}: n = 60, accuracy {accuracy:.3f}, K = 4" in markdown
    assert f"Bootstrap: 200 hierarchical resamples, seed {SEED}." in markdown
    assert markdown.index("Bootstrap:") < markdown.index("## Leaderboard")


def test_leaderboard_csv_is_the_main_table(report, data):
    out, _ = report
    back = pd.read_csv(out / "leaderboard.csv", index_col=[0, 1])
    pd.testing.assert_frame_equal(back, main_table(data).frame)


def test_same_data_same_files_and_no_tex_unless_asked(report, data, tmp_path):
    out, markdown = report
    assert write_report(data, tmp_path, latex=False) == markdown
    written = {path.name for path in tmp_path.iterdir()}
    assert not any(name.endswith(".tex") for name in written)
    for name in written:
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name


def test_a_one_class_pair_is_reported_as_nan_with_its_reason(pairs, tmp_path):
    base = pairs[0]
    one_class = replace(base, model="org/perfect", evidences=tuple(e for e in base.evidences if e["correct"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the evaluation warns about the one-class pair; the tables must say it
        data = build_report_data([base, one_class], n_resamples=50, seed=SEED)
        markdown = write_report(data, tmp_path)
    n = len(one_class.evidences)
    per_pair = pd.read_csv(tmp_path / "per_pair.csv", index_col=0)
    perfect = per_pair.loc["org/perfect / gsm8k"]
    assert perfect.drop(["n", "accuracy", "K", "probe agrees (correct)", "probe agrees (wrong)"]).isna().all()
    assert 0 <= perfect["probe agrees (correct)"] <= 1 and math.isnan(perfect["probe agrees (wrong)"])
    assert per_pair.loc["org/perfect / gsm8k", "accuracy"] == 1.0
    assert "org/perfect / gsm8k: " in markdown
    assert f"AUROC undefined (all {n} answers correct: one class only)" in markdown
    assert f"not cross-fitted ({n} correct / 0 wrong answers" in markdown


def test_a_failed_write_leaves_every_report_file_as_it_was(data, tmp_path, monkeypatch):
    out = tmp_path / "report"
    write_report(data, out, latex=True)
    before = folder_bytes(out)
    n_files = len(before)
    for complete_files in (0, 1, n_files - 3, n_files - 1):  # a CSV, a LaTeX table, a figure, the Markdown
        with monkeypatch.context() as patch:
            fill_disk_after(patch, n_bytes=50, complete_files=complete_files)
            with pytest.raises(OSError, match="No space left on device"):
                write_report(data, out, latex=True)
        assert folder_bytes(out) == before


def test_a_bootstrap_larger_than_memory_is_refused_up_front(data, monkeypatch):
    monkeypatch.setattr(limits, "memory_limit", lambda: 2**30)
    with pytest.raises(
        MemoryLimitError,
        match=r"^n_resamples=100000000 needs at least ~.* for 4 pair\(s\) with 240 "
        r"questions in all; the limit is 1\.0 GiB \(memory available now\)$",
    ):
        bootstrap(data.pairs, data.evaluations, data.common_methods, n_resamples=10**8)
