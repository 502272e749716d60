"""Rendering of report tables (Markdown, LaTeX, CSV) and the ``trac report`` folder written by ``write_report``."""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from run_factory import pair_specs, write_runs
from test_heads_hardening import fill_disk_after, folder_bytes

from trac_metrics._util import limits
from trac_metrics._util.limits import MemoryLimitError
from trac_metrics.reporting.analyses import all_analyses
from trac_metrics.reporting.leaderboard import leaderboard_tables, main_table
from trac_metrics.reporting.report_data import bootstrap, build_report_data
from trac_metrics.reporting.report_writer import check_table_names, write_report
from trac_metrics.reporting.runs import load_pairs
from trac_metrics.reporting.summary_table import format_table, method_table
from trac_metrics.reporting.tables import ReportTable, format_value, rank_marks, to_latex, to_markdown, write_csv

# ----------------------------------------------------------------------------------------------------- renderers


@pytest.fixture
def table():
    index = pd.MultiIndex.from_tuples(
        [("A", "m_1"), ("A", "m2"), ("B", "m3"), ("B", "m4"), ("B", "m5")], names=["block", "method"]
    )
    frame = pd.DataFrame(
        {
            "score": [0.9, math.nan, 0.7, 0.9, 0.8123456789],
            "loss": [0.1, 0.2, 0.3, 0.05, math.nan],
            "n": [1, 2, 3, 4, 5],
            "text": ["a|b", "x_y", "50%", "&", "φ ≥ 1"],
        },
        index=index,
    )
    return ReportTable("demo", "Demo_table 100%", frame, {"score": True, "loss": False}, note="Read me: 5 rows.")


def test_markdown_marks_best_bold_second_underlined_and_keeps_nan(table):
    markdown = to_markdown(table)
    assert markdown.endswith(".\n")
    assert markdown.splitlines() == [
        "## Demo_table 100%",
        "",
        "| block | method | score | loss | n | text |",
        "|---|---|---:|---:|---:|---:|",
        "| A | m_1 | **0.900** | <u>0.100</u> | 1 | a\\|b |",
        "|  | m2 | nan | 0.200 | 2 | x_y |",
        "| B | m3 | 0.700 | 0.300 | 3 | 50% |",
        "|  | m4 | **0.900** | **0.050** | 4 | & |",
        "|  | m5 | <u>0.812</u> | nan | 5 | φ ≥ 1 |",
        "",
        "Read me: 5 rows.",
    ]


def test_rank_marks_follow_the_direction_and_skip_nan(table):
    assert rank_marks(table) == {
        (0, "score"): "best",
        (3, "score"): "best",
        (4, "score"): "second",
        (3, "loss"): "best",
        (0, "loss"): "second",
    }
    with pytest.raises(ValueError, match=r"rank columns \['missing'\]"):
        rank_marks(replace(table, rank_columns={"missing": True}))


def test_latex_is_booktabs_with_marks_escapes_and_block_rules(table):
    latex = to_latex(table)
    lines = latex.splitlines()
    assert lines[0] == "\\begin{table}[t]" and lines[-1] == "\\end{table}"
    assert "\\caption{Demo\\_table 100\\%}" in lines and "\\label{tab:demo}" in lines
    assert "\\begin{tabular}{llrrrr}" in lines
    body = lines[lines.index("\\toprule") + 1 : lines.index("\\bottomrule")]
    assert body == [
        "block & method & score & loss & n & text \\\\",
        "\\midrule",
        "A & m\\_1 & \\textbf{0.900} & \\underline{0.100} & 1 & a|b \\\\",
        " & m2 & nan & 0.200 & 2 & x\\_y \\\\",
        "\\midrule",
        "B & m3 & 0.700 & 0.300 & 3 & 50\\% \\\\",
        " & m4 & \\textbf{0.900} & \\textbf{0.050} & 4 & \\& \\\\",
        " & m5 & \\underline{0.812} & nan & 5 & $\\varphi$ $\\geq$ 1 \\\\",
    ]
    assert "{\\footnotesize Read me: 5 rows.}" in latex


def test_csv_holds_plain_full_precision_numbers(table, tmp_path):
    write_csv(table, tmp_path / "demo.csv")
    text = (tmp_path / "demo.csv").read_text()
    assert "**" not in text and "<u>" not in text and "0.8123456789" in text
    back = pd.read_csv(tmp_path / "demo.csv", index_col=[0, 1])
    pd.testing.assert_frame_equal(back, table.frame)


def test_format_value_cases():
    assert [format_value(v) for v in (0.12345, 3, np.int64(7), True, math.nan, None, pd.NA, "x", np.float32(0.5))] == [
        "0.123",
        "3",
        "7",
        "True",
        "nan",
        "nan",
        "nan",
        "x",
        "0.500",
    ]


def test_summary_tables_still_work():
    frame = method_table({"trac_auroc": 0.9, "trac_aurc": 0.1, "sc_modal_auroc": math.nan, "accuracy": 0.5})
    assert list(frame.index) == ["trac", "sc_modal"]
    text = format_table(frame)
    assert "0.9000" in text and "nan" in text


def test_table_names_must_be_distinct_file_stems(table):
    check_table_names([table, replace(table, name="other")])
    with pytest.raises(ValueError, match="repeated: \\['demo'\\]"):
        check_table_names([table, table])
    with pytest.raises(ValueError, match="file stems"):
        check_table_names([replace(table, name="../escape")])


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
    titles = [table.title for table in [*leaderboard_tables(data), *all_analyses(data)]]
    names = [table.name for table in [*leaderboard_tables(data), *all_analyses(data)]]
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
    assert per_pair.loc["org/perfect / gsm8k"].drop(["n", "accuracy", "K"]).isna().all()
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
