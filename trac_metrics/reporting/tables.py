"""Report tables: a titled frame plus how to rank its columns, rendered to Markdown, CSV and LaTeX.

Every table of ``trac report`` (the paper's Table 1 layout, its appendix analyses) is a :class:`ReportTable`; the
renderers here are the only place that formats numbers, so all tables read alike: 3 decimals, NaN written ``nan``
(a value that could not be computed is shown, never left out), the best cell of each rank column in bold and the
second best underlined (paper Table 1: "Best results are bold with second-best results underlined").
"""

from __future__ import annotations

import csv
import dataclasses
import math
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from trac_metrics._util.files import atomic_write


@dataclass(frozen=True)
class ReportTable:
    """One table of ``trac report``.

    ``name`` is the file stem (``leaderboard`` → ``leaderboard.csv``); ``title`` the section heading; ``frame``
    the values (index = row labels); ``rank_columns`` maps a column to True when higher is better, False when
    lower is better: the best and second-best cells of those columns are marked when rendered; ``note`` says how
    to read the table or why rows are NaN (it is printed under the table, never dropped).
    """

    name: str
    title: str
    frame: pd.DataFrame
    rank_columns: Mapping[str, bool] = field(default_factory=dict)
    note: str = ""


BEST, SECOND = "best", "second"


def with_notes(tables: Sequence[ReportTable], notes: Sequence[str]) -> list[ReportTable]:
    """``tables`` with ``notes`` (what the whole report says: methods a pair lacks, its labellers) after each one's
    own note, so no table is read without them."""
    if not notes:
        return list(tables)
    return [
        dataclasses.replace(table, note=" ".join(part for part in (table.note, *notes) if part)) for table in tables
    ]


def rank_marks(table: ReportTable) -> dict[tuple[int, str], str]:
    """``{(row position, column): "best" | "second"}`` for every rank column of ``table``.

    Best = the highest value (lowest when the column is lower-is-better); second = the next distinct value. Equal
    values share a mark; NaN cells are never marked; a column with fewer than two distinct values marks only its
    best. A rank column missing from the frame is an error naming it.
    """
    missing = [column for column in table.rank_columns if column not in table.frame.columns]
    if missing:
        raise ValueError(
            f"table {table.name!r}: rank columns {missing} are not in its columns {list(table.frame.columns)}"
        )
    marks: dict[tuple[int, str], str] = {}
    for column, higher_is_better in table.rank_columns.items():
        values = pd.to_numeric(table.frame[column], errors="coerce").to_numpy(dtype=float)
        distinct = sorted({value for value in values if not math.isnan(value)}, reverse=higher_is_better)
        for mark, target in zip((BEST, SECOND), distinct):
            for position, value in enumerate(values):
                if value == target:
                    marks[(position, column)] = mark
    return marks


def format_value(value: object) -> str:
    """A cell as text: floats with 3 decimals, integers as integers, NaN / missing as ``nan``, anything else str."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "nan"
    if isinstance(value, (bool, numbers.Integral)):
        return str(value)
    if isinstance(value, numbers.Real):
        return f"{float(value):.3f}"
    return str(value)


def format_p(p: float, n_resamples: int) -> str:
    """A bootstrap p-value as the report words it: ``p < 0.001`` below the finest step the resamples can show
    (1 / resamples, at least 0.001), else ``p = 0.012``; ``p = nan`` when there is none."""
    if math.isnan(p):
        return "p = nan"
    floor = max(1.0 / n_resamples, 0.001)
    return f"p < {floor:.3g}" if p < floor else f"p = {p:.3f}"


def _row_labels(frame: pd.DataFrame) -> tuple[list[str], list[tuple[str, ...]]]:
    """Header cells of the index levels and each row's label cells (a repeated outer level is left blank)."""
    names = [name or "" for name in frame.index.names]
    rows = [tuple(str(part) for part in (label if isinstance(label, tuple) else (label,))) for label in frame.index]
    shown = []
    for position, row in enumerate(rows):
        if len(row) > 1 and position and rows[position - 1][0] == row[0]:
            row = ("", *row[1:])
        shown.append(row)
    return [str(name) for name in names], shown


def _column_label(column: object) -> str:
    return " ".join(str(part) for part in column) if isinstance(column, tuple) else str(column)


def _rendered_cells(
    table: ReportTable, marked: Mapping[str, Callable[[str], str]], escape: Callable[[str], str]
) -> tuple[list[str], list[list[str]]]:
    """Header and body cells (index levels first), escaped, with rank marks applied."""
    marks = rank_marks(table)
    index_names, row_labels = _row_labels(table.frame)
    header = [escape(name) for name in index_names] + [escape(_column_label(c)) for c in table.frame.columns]
    body = []
    for position, labels in enumerate(row_labels):
        cells = [escape(label) for label in labels]
        for column_position, column in enumerate(table.frame.columns):
            text = escape(format_value(table.frame.iat[position, column_position]))
            mark = marks.get((position, column))
            cells.append(marked[mark](text) if mark else text)
        body.append(cells)
    return header, body


def _markdown_escape(text: str) -> str:
    return text.replace("|", "\\|")


def to_markdown(table: ReportTable) -> str:
    """``## title``, a GitHub table (best **bold**, second <u>underlined</u>), then the note as a paragraph."""
    marked = {BEST: lambda text: f"**{text}**", SECOND: lambda text: f"<u>{text}</u>"}
    header, body = _rendered_cells(table, marked, _markdown_escape)
    lines = [
        f"## {table.title}",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] * (len(header) - table.frame.shape[1]) + ["---:"] * table.frame.shape[1]) + "|",
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    if table.note:
        lines += ["", table.note]
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "→": r"$\rightarrow$",
    "−": "$-$",
    "×": r"$\times$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "±": r"$\pm$",
    "φ": r"$\varphi$",
    "≈": r"$\approx$",
    "↑": r"$\uparrow$",
    "↓": r"$\downarrow$",
    "–": "--",
    "—": "---",
}


def latex_escape(text: str) -> str:
    """``text`` safe inside a LaTeX table cell (special characters escaped, common symbols in math mode)."""
    return "".join(_LATEX_SPECIAL.get(character, character) for character in text)


def to_latex(table: ReportTable) -> str:
    """A booktabs ``table`` environment: caption = title, ``\\textbf`` best / ``\\underline`` second, a ``\\midrule``
    between blocks of a two-level index, the note under the tabular."""
    marked = {BEST: lambda text: f"\\textbf{{{text}}}", SECOND: lambda text: f"\\underline{{{text}}}"}
    header, body = _rendered_cells(table, marked, latex_escape)
    n_labels = len(header) - table.frame.shape[1]
    lines = [
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        f"\\caption{{{latex_escape(table.title)}}}",
        f"\\label{{tab:{table.name}}}",
        f"\\begin{{tabular}}{{{'l' * n_labels}{'r' * table.frame.shape[1]}}}",
        "\\toprule",
        " & ".join(header) + " \\\\",
        "\\midrule",
    ]
    for position, cells in enumerate(body):
        if position and n_labels > 1 and cells[0]:
            lines.append("\\midrule")
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    if table.note:
        lines.append(f"\\par\\smallskip{{\\footnotesize {latex_escape(table.note)}}}")
    lines.append("\\end{table}")
    return "\n".join(lines) + "\n"


CSV_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet program reads as the start of a formula (OWASP, "CSV injection")."""


def csv_text_cell(value: object) -> object:
    """A cell made safe to open in a spreadsheet program, as OWASP recommends (docs/guide/reports.md#csv-files): text
    starting with one of :data:`CSV_FORMULA_STARTS` gets a leading ``'`` (``=HYPERLINK(...)`` is shown, never run);
    numbers (``-0.5``) and other text are kept as they are."""
    return "'" + value if isinstance(value, str) and value.startswith(CSV_FORMULA_STARTS) else value


def write_csv(table: ReportTable, path: str | os.PathLike[str]) -> None:
    """The frame as CSV: index levels as the first columns, full-precision plain numbers, NaN as ``nan``, every text
    cell (labels included) quoted and neutralised by :func:`csv_text_cell`, numbers unquoted; written atomically (a
    failed write leaves the old file)."""
    frame = table.frame.map(csv_text_cell).rename(index=csv_text_cell, columns=csv_text_cell)
    atomic_write(path, frame.to_csv(na_rep="nan", lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC))
