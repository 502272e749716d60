"""Stored runs as pairs (trac_metrics.reporting.runs): a comparison never mixes labellers unless told to
(docs/method.md#labels); ``trac report`` refuses such runs with one line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics.cli import main
from trac_metrics.features.evidence import EvidenceOptions
from trac_metrics.records import RecordWriter
from trac_metrics.reporting.runs import check_labellers, load_pairs


def write_run(root: Path, model: str, labeller: str | None, n_questions: int = 6) -> Path:
    """One model's records of task ``t`` under ``root/<model>/trac_records``, every record naming ``labeller``."""
    rng = np.random.default_rng(len(model))
    writer = RecordWriter(root / model / "trac_records" / "t.2026-01-01T00-00-00.jsonl")
    for doc_id in range(n_questions):
        records = synthetic_question(rng, doc_id, rng.random() < 0.5, k=2, task="t", model=model)
        writer.write_batch([dataclasses.replace(record, labeller=labeller) for record in records])
    return root / model


@pytest.fixture(scope="module")
def mixed_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("labellers")
    return [write_run(root, "checked", None), write_run(root, "verified", "math-verify")]


def test_pairs_know_their_labeller(mixed_runs: list[Path]) -> None:
    pairs = load_pairs(mixed_runs, jobs=1)
    assert {pair.model: pair.labellers for pair in pairs} == {"checked": ("trac",), "verified": ("math-verify",)}


def test_a_comparison_of_two_labellers_is_refused_unless_allowed(mixed_runs: list[Path]) -> None:
    pairs = load_pairs(mixed_runs, jobs=1)
    with pytest.raises(ValueError, match=r"math-verify: verified / t; trac: checked / t\).*--mix-labellers"):
        check_labellers(pairs)
    check_labellers(pairs, allow_mixed=True)
    check_labellers(load_pairs(mixed_runs[:1], jobs=1))


def test_relabelling_every_run_with_one_relation_makes_them_comparable(mixed_runs: list[Path]) -> None:
    relabelled = load_pairs(mixed_runs, options=EvidenceOptions(equivalence="math-verify"), jobs=1)
    assert {pair.labellers for pair in relabelled} == {("math-verify",)}
    check_labellers(relabelled)


def test_trac_report_refuses_mixed_labellers_with_one_line(
    mixed_runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["report", *map(str, mixed_runs), "--out", str(tmp_path / "report"), "--jobs", "1"])
    assert exit_info.value.code == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("trac report")]
    assert "labelled by different labellers" in line and "--mix-labellers" in line
    assert not (tmp_path / "report").exists()
