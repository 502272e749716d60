"""Rendering of report tables (trac_metrics.reporting.tables): Markdown, LaTeX and CSV, rank marks, number formats,
distinct file stems."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from trac_metrics.reporting.report_writer import check_table_names
from trac_metrics.reporting.summary_table import format_table, method_table
from trac_metrics.reporting.tables import (
    ReportTable,
    format_p,
    format_value,
    rank_marks,
    to_latex,
    to_markdown,
    write_csv,
)


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


def test_a_p_value_is_written_down_to_the_step_the_resamples_can_show():
    assert format_p(0.0, 2000) == "p < 0.001"
    assert format_p(0.0, 50) == "p < 0.02"
    assert format_p(0.0004, 2000) == "p < 0.001"
    assert format_p(0.0125, 2000) == "p = 0.013"
    assert format_p(math.nan, 2000) == "p = nan"
