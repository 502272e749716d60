"""TrAC result tables: one task's metrics as method × metric (``trac summary``, docs/method.md#metric-names) and the
cross-run report of ``trac report`` (docs/architecture.md#command-line): leaderboard tables, the paper's analyses and
the two figures, written to a folder.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from trac_metrics.analyses import all_analyses
from trac_metrics.evaluate import METRIC_NAMES
from trac_metrics.files import atomic_write
from trac_metrics.leaderboard import leaderboard_tables
from trac_metrics.plots import cost_quality_plot, risk_coverage_plot
from trac_metrics.report_data import ReportData
from trac_metrics.tables import ReportTable, to_latex, to_markdown, write_csv

METHOD_ORDER = (
    "trac", "pce", "tup", "cf", "sup_consensus", "mean_logprob", "self_certainty", "deepconf_bottom", "p_true",
    "selfdoubt", "sc_modal", "sc_primary", "semantic_entropy", "selfcheck", "cw_vote",
    "pce_question_only", "pce_shuffled_trace", "pce_teacher_forced",
)
"""Display order: TrAC and its components, single-trace baselines, sampling baselines, ablation heads."""


def method_table(metrics: Mapping[str, float]) -> pd.DataFrame:
    """A method × metric frame from ``{"<method>_<metric>": value}``; keys that are not such metrics are ignored."""
    rows: dict[str, dict[str, float]] = {}
    for key, value in metrics.items():
        for name in METRIC_NAMES:
            if key.endswith(f"_{name}"):
                method = key[: -len(name) - 1]
                if method in METHOD_ORDER:
                    rows.setdefault(method, {})[name] = float(value)
    ordered = [method for method in METHOD_ORDER if method in rows]
    return pd.DataFrame([rows[method] for method in ordered], index=pd.Index(ordered, name="method"),
                        columns=list(METRIC_NAMES))


def format_table(table: pd.DataFrame) -> str:
    """Plain-text table, NaN shown as ``nan`` (a metric that could not be computed, never dropped)."""
    header = ["method", *table.columns]
    lines = [" | ".join(f"{cell:>14}" for cell in header)]
    for method, row in table.iterrows():
        cells = [f"{value:.4f}" if not math.isnan(value) else "nan" for value in row]
        lines.append(" | ".join(f"{cell:>14}" for cell in [method, *cells]))
    return "\n".join(lines)


FIGURES = (("risk_coverage.png", "Macro risk–coverage curves", risk_coverage_plot),
           ("cost_quality.png", "Relative latency vs macro AUROC", cost_quality_plot))
_FILE_STEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def write_report(data: ReportData, out_dir: str | Path, latex: bool = False) -> str:
    """Write the ``trac report`` folder and return its Markdown (the CLI prints it).

    Files: ``leaderboard.md`` (every table: leaderboard, intervals, paired differences, per pair, then each table of
    :func:`trac_metrics.analyses.all_analyses`), ``<name>.csv`` per table (``leaderboard.csv`` is the main table),
    ``<name>.tex`` per table when ``latex``, ``risk_coverage.png`` and ``cost_quality.png``. Each file is written
    atomically (:func:`trac_metrics.files.atomic_write`): a failure leaves no half-written file.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = [*leaderboard_tables(data), *all_analyses(data)]
    check_table_names(tables)
    for table in tables:
        write_csv(table, out / f"{table.name}.csv")
        if latex:
            atomic_write(out / f"{table.name}.tex", to_latex(table))
    for file_name, _, draw in FIGURES:
        draw(data, out / file_name)
    markdown = report_markdown(data, tables)
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


def report_header(data: ReportData) -> str:
    """Title, the pairs (name, questions, accuracy, K) and the bootstrap settings."""
    lines = ["# TrAC report", "", f"{len(data.pairs)} (model, task) pair(s):", ""]
    lines += [f"- {pair.name}: n = {len(pair.evidences)}, accuracy {pair.accuracy:.3f}, K = {pair.num_samples}"
              for pair in data.pairs]
    lines += ["", f"Bootstrap: {data.n_resamples} hierarchical resamples, seed {data.seed}.", ""]
    return "\n".join(lines)


def report_markdown(data: ReportData, tables: Sequence[ReportTable]) -> str:
    """The header, every table in order, then the figures (linked by their file names)."""
    figures = "\n".join(f"![{title}]({file_name})\n" for file_name, title, _ in FIGURES)
    return "\n".join([report_header(data), *(to_markdown(table) for table in tables), "## Figures", "", figures])
