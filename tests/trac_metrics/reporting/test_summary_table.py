"""``trac summary`` prints each TrAC task's headline table (AUROC, AURC and ECE of every method) by default and every
metric with ``--all``; the Python function returns every table unless told otherwise."""

from __future__ import annotations

import dataclasses
import json
import re
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics._warnings import TracWarning
from trac_metrics.cli import main, summary
from trac_metrics.methods import task_methods
from trac_metrics.reporting.summary_table import HEADLINE_METRICS
from trac_metrics.selective import CALIBRATION_METRIC_NAMES, RANKING_METRIC_NAMES
from trac_tasks.harness.task_functions import aggregate_trac, process_results

TASK = "trac_gsm8k"
REPORTED = [method.name for method in task_methods() if method.switch is None]
"""The methods every TrAC task reports (no switch needed)."""


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An lm-eval output folder whose results file holds every key of one TrAC task."""
    rng = np.random.default_rng(11)
    documents = [
        process_results({}, [[SimpleNamespace(record=record) for record in synthetic_question(rng, i, i % 2 == 0)]])
        for i in range(30)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        metrics = aggregate_trac([document["trac"] for document in documents])
    out = tmp_path_factory.mktemp("summary")
    (out / "model").mkdir()
    keys = {"acc,none": 0.5, "maj_acc,none": 0.5, **{f"{key},none": value for key, value in metrics.items()}}
    (out / "model" / "results_2026-01-01T00-00-00.json").write_text(json.dumps({"results": {TASK: keys}}))
    return out


def tables(text: str) -> dict[str, tuple[list[str], list[str]]]:
    """Title → (header cells, method of each row) of each table ``trac summary`` printed."""
    found = {}
    for title, body in re.findall(r"^(\w+):\n((?:.*\|.*\n?)+)", text, flags=re.MULTILINE):
        header, *rows = body.strip().splitlines()
        found[title] = ([cell.strip() for cell in header.split("|")], [row.split("|")[0].strip() for row in rows])
    return found


def test_trac_summary_prints_every_methods_headline_metrics(out_dir: Path, capsys) -> None:
    main(["summary", str(out_dir)])
    shown = tables(capsys.readouterr().out)
    assert list(shown) == ["headline"]
    header, methods = shown["headline"]
    assert header == ["method", *HEADLINE_METRICS]
    assert methods == REPORTED


def test_trac_summary_all_prints_every_metric(out_dir: Path, capsys) -> None:
    main(["summary", str(out_dir), "--all"])
    shown = tables(capsys.readouterr().out)
    assert list(shown) == ["ranking", "calibration"]
    assert shown["ranking"][0] == ["method", *RANKING_METRIC_NAMES]
    assert shown["calibration"][0] == ["method", *CALIBRATION_METRIC_NAMES]
    assert shown["ranking"][1] == shown["calibration"][1] == REPORTED


def test_the_summary_function_returns_every_table_by_default(out_dir: Path) -> None:
    shown = tables(summary(out_dir))
    assert list(shown) == ["ranking", "calibration"] and shown["ranking"][1] == REPORTED


def test_trac_summary_counts_the_comparisons_that_ran_out_of_the_work_budget(tmp_path: Path, capsys) -> None:
    """A run whose labels met undecided comparisons (docs/method.md#the-symbolic-work-budget) says how many."""
    rng = np.random.default_rng(5)
    documents = []
    for i in range(12):
        records = synthetic_question(rng, i, i % 2 == 0)
        if i < 3:  # the primary answer against the reference runs out of the work budget
            records = [dataclasses.replace(record, reference="a^{16}") for record in records]
            records[0] = dataclasses.replace(records[0], answer="(a+b+c+d+e)^{16}")
        documents.append(process_results({}, [[SimpleNamespace(record=record) for record in records]])["trac"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        metrics = aggregate_trac(documents)
    assert metrics["undecided_comparisons"] >= 3
    (tmp_path / "model").mkdir()
    keys = {"acc,none": 0.5, **{f"{key},none": value for key, value in metrics.items()}}
    (tmp_path / "model" / "results_2026-01-01T00-00-00.json").write_text(json.dumps({"results": {TASK: keys}}))
    main(["summary", str(tmp_path)])
    shown = capsys.readouterr().out
    count = metrics["undecided_comparisons"]
    assert f"acc = 0.5000, comparisons undecided (work budget ran out, not equivalent) = {count}\n" in shown
