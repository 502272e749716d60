"""The ``trac report`` writer (docs/architecture.md#command-line): the report model's
(:mod:`~trac_metrics.reporting.report_model`) leaderboard and analysis tables and the figures (docs/method.md#figures),
written to a folder.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from trac_metrics._util.files import atomic_write
from trac_metrics.reporting.calibration_plots import rejection_curve_plot, reliability_plot
from trac_metrics.reporting.plots import cost_quality_plot, risk_coverage_plot
from trac_metrics.reporting.report_data import ReportData
from trac_metrics.reporting.report_model import ReportModel, report_model
from trac_metrics.reporting.tables import ReportTable, to_latex, to_markdown, write_csv

FIGURES = (
    ("risk_coverage.png", "Macro risk–coverage curves", risk_coverage_plot),
    ("rejection_curve.png", "Macro prediction–rejection curves (PRR)", rejection_curve_plot),
    ("reliability.png", "Reliability diagrams, pooled over pairs", reliability_plot),
    ("cost_quality.png", "Relative latency vs macro AUROC", cost_quality_plot),
)
REPORT_FILES = ("*.csv", "*.tex", "leaderboard.md", *(file_name for file_name, _, _ in FIGURES))
"""The names (shell patterns) of the files :func:`write_report` writes in its folder: no other output of the command
may take one (docs/guide/reliability.md#one-output-rule)."""
_FILE_STEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def write_report(report: ReportData | ReportModel, out_dir: str | Path, latex: bool = False) -> str:
    """Write the ``trac report`` folder of ``report`` (its model, or the data to build one without the pairs' details
    only the page shows) and return its Markdown (the CLI prints it).

    Files: ``leaderboard.md`` (every table: the model's leaderboard tables, then its analysis tables),
    ``<name>.csv`` per table (``leaderboard.csv`` is the main table), ``<name>.tex`` per table when ``latex``, and the
    figures of :data:`FIGURES`. Each file is written atomically
    (:func:`trac_metrics._util.files.atomic_write`): a failure leaves no half-written file.
    """
    model = report_model(report, with_pairs=False)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = [*model.tables, *model.analyses]
    check_table_names(tables)
    for table in tables:
        write_csv(table, out / f"{table.name}.csv")
        if latex:
            atomic_write(out / f"{table.name}.tex", to_latex(table))
    for file_name, _, draw in FIGURES:
        draw(model, out / file_name)
    markdown = report_markdown(model, tables)
    atomic_write(out / "leaderboard.md", markdown)
    return markdown


def check_table_names(tables: Sequence[ReportTable]) -> None:
    """Each table needs its own file stem: a repeated or unusable name would overwrite or misplace a file."""
    names = [table.name for table in tables]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"report tables must have distinct names (file stems); repeated: {repeated}")
    unusable = [name for name in names if not _FILE_STEM.fullmatch(name)]
    if unusable:
        raise ValueError(f"report table names must be file stems (letters, digits, '_', '.', '-'): {unusable}")


def report_header(model: ReportModel) -> str:
    """Title, the pairs (name, questions, accuracy, K, the probe's agreement row, docs/method.md#probe-agreement) and
    the bootstrap settings."""
    data = model.data
    lines = ["# TrAC report", "", f"{len(data.pairs)} (model, task) pair(s):", ""]
    lines += [
        f"- {pair.name}: n = {counts.n}, accuracy {counts.accuracy:.3f}, K = {counts.k}; {counts.agreement.line()}"
        for pair, counts in zip(data.pairs, model.statistics.pairs)
    ]
    lines += ["", f"Bootstrap: {data.n_resamples} hierarchical resamples, seed {data.seed}."]
    lines += [f"Calibration: {data.calibration_map} maps for the baselines, ECE over {data.ece_bins} bins.", ""]
    return "\n".join(lines)


def report_markdown(model: ReportModel, tables: Sequence[ReportTable]) -> str:
    """The header, every table in order, then the figures (linked by their file names)."""
    figures = "\n".join(f"![{title}]({file_name})\n" for file_name, title, _ in FIGURES)
    return "\n".join([report_header(model), *(to_markdown(table) for table in tables), "## Figures", "", figures])
