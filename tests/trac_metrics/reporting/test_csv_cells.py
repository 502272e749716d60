"""``trac report``'s CSV files are safe to open in a spreadsheet program (docs/guide/reports.md#csv-files): a text
cell that would start a formula gets a leading ``'`` and is quoted, numbers stay plain numbers."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from run_factory import pair_specs, write_runs

from trac_metrics.cli import main
from trac_metrics.reporting.tables import ReportTable, write_csv

FORMULA = '=HYPERLINK("http://x")'


def rows(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_text_that_starts_a_formula_is_neutralised_and_numbers_stay_numbers(tmp_path: Path) -> None:
    starts = [FORMULA, "+1", "-cmd", "@SUM(A1)", "\tx", "\rx", "plain", "a=b"]
    frame = pd.DataFrame(
        {"text": starts, "value": [-0.5, 1.0, -2.0, math.nan, 0.25, -1e-9, 3.0, 4.0], "n": list(range(-4, 4))},
        index=pd.Index([f"={index}" if index % 2 else f"m{index}" for index in range(8)], name="pair"),
    )
    write_csv(ReportTable("t", "T", frame.rename(columns={"n": "-n"})), tmp_path / "t.csv")
    header, *body = rows(tmp_path / "t.csv")
    assert header == ["pair", "text", "value", "'-n"]
    assert [row[1] for row in body] == [f"'{FORMULA}", "'+1", "'-cmd", "'@SUM(A1)", "'\tx", "'\rx", "plain", "a=b"]
    assert [row[0] for row in body[:2]] == ["m0", "'=1"]
    text = (tmp_path / "t.csv").read_text(encoding="utf-8")
    assert f'"\'={FORMULA[1:].replace(chr(34), chr(34) * 2)}"' in text  # quoted, inner quotes doubled
    assert '"m0","\'=HYPERLINK(""http://x"")",-0.5,-4\n' in text  # the numbers unquoted, -0.5 untouched
    back = pd.read_csv(tmp_path / "t.csv", index_col=0)
    np.testing.assert_array_equal(back["value"].to_numpy(), frame["value"].to_numpy())
    assert back["'-n"].tolist() == list(range(-4, 4))


def test_a_report_never_writes_a_model_name_as_a_formula(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run,) = write_runs(tmp_path / "runs", pair_specs([FORMULA], ["t1"], 20, seed=1), seed=2)
    out = tmp_path / "report"
    main(["report", str(run), "--out", str(out), "--resamples", "20"])
    capsys.readouterr()
    cells = [cell for path in sorted(out.glob("*.csv")) for row in rows(path) for cell in row]
    assert f"'{FORMULA} / t1" in cells
    assert not [cell for cell in cells if cell.startswith(("=", "+", "@", "\t", "\r"))]
    assert not [cell for cell in cells if cell.startswith("-") and not _is_number(cell)]


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
