"""Stored runs as pairs (trac_metrics.reporting.runs): a comparison never mixes labellers unless told to
(docs/method.md#labels); ``trac report`` refuses such runs with one line. Records of schema trac-record/1 are read as
holding the probe after the answer, every report says so, and a pair never mixes the two probes
(docs/method.md#probe-prompt)."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics._warnings import TracWarning
from trac_metrics.cli import main
from trac_metrics.features.evidence import EvidenceOptions
from trac_metrics.records import RecordWriter, iter_records
from trac_metrics.reporting.runs import check_labellers, load_pairs, with_min_errors


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


# ------------------------------------------------- records of schema trac-record/1 (docs/method.md#probe-prompt)


def legacy_copy(path: Path, target: Path, doc_ids: set[int] | None = None) -> Path:
    """The records of ``path`` as trac-eval wrote them before the paper's probe (schema ``trac-record/1``: no probe
    ``context`` / ``context_tokens``), those of ``doc_ids`` only when given."""
    lines = []
    for line in path.read_text().splitlines():
        payload = json.loads(line)
        if doc_ids is not None and payload["doc_id"] not in doc_ids:
            continue
        payload["schema"] = "trac-record/1"
        for probe in [*payload["probes"].values(), *payload.get("prefix_probes", [])]:
            del probe["context"], probe["context_tokens"]
        lines.append(json.dumps(payload))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n")
    return target


def test_old_records_are_read_as_holding_the_probe_after_the_answer_and_every_report_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "new", "m", None, n_questions=10)
    (path,) = (run / "trac_records").iterdir()
    old = legacy_copy(path, tmp_path / "old" / "m" / "trac_records" / path.name)
    records = list(iter_records(old))
    assert {probe.context for record in records for probe in record.probes.values()} == {"after_answer"}
    assert {probe.context_tokens for record in records for probe in record.probes.values()} == {None}
    (pair,) = load_pairs([old], jobs=1)
    assert pair.probe_agreement.reads_answer
    (new_pair,) = load_pairs([path], jobs=1)
    assert not new_pair.probe_agreement.reads_answer
    with pytest.warns(TracWarning, match="probe after the answer"):
        main(["evaluate", str(old)])
    assert "probe agreement with the primary answer" in capsys.readouterr().out
    report = tmp_path / "report"
    main(["report", str(old), "--out", str(report), "--resamples", "50"])
    leaderboard = (report / "leaderboard.md").read_text()
    assert "not the paper's Q(x, r)" in leaderboard.split("## ")[0], "the header names the probe"
    assert "Probe after the answer (records of schema trac-record/1), not the paper's Q(x, r): m / t" in leaderboard


def test_a_pair_mixing_both_probes_is_refused_naming_the_files(tmp_path: Path) -> None:
    run = write_run(tmp_path / "new", "m", None, n_questions=10)
    (path,) = (run / "trac_records").iterdir()
    kept = tmp_path / "kept.jsonl"
    kept.write_text("".join(line + "\n" for line in path.read_text().splitlines() if json.loads(line)["doc_id"] < 5))
    old = legacy_copy(path, tmp_path / "old.jsonl", doc_ids=set(range(5, 10)))
    with pytest.raises(ValueError, match="two different answer probes") as error:
        load_pairs([kept, old], jobs=1)
    message = str(error.value)
    assert f"(schema trac-record/1) in {old.resolve()}" in message and f"in {kept.resolve()}" in message


def test_min_errors_keeps_the_pairs_with_enough_wrong_answers_and_the_report_names_the_others(tmp_path: Path) -> None:
    """The paper's rule for BBH subtasks (docs/method.md#dataset-sources): a pair enters with at least 15 errors."""
    runs = [write_run(tmp_path, model, None, n_questions=n) for model, n in (("small", 6), ("large", 40))]
    pairs = load_pairs(runs, jobs=1)
    errors = {pair.model: int((pair.labels == 0).sum()) for pair in pairs}
    threshold = errors["large"]
    assert errors["small"] < threshold
    kept, note = with_min_errors(pairs, threshold)
    assert [pair.model for pair in kept] == ["large"]
    assert note == f"Left out, with fewer than {threshold} wrong answers (--min-errors): small / t ({errors['small']})."
    assert with_min_errors(pairs, 1) == (pairs, None)
    with pytest.raises(ValueError, match=f"--min-errors {threshold + 1}: no pair has that many wrong answers"):
        with_min_errors(pairs, threshold + 1)
    report = tmp_path / "report"
    main(["report", *map(str, runs), "--out", str(report), "--resamples", "50", "--min-errors", str(threshold)])
    leaderboard = (report / "leaderboard.md").read_text()
    assert "1 (model, task) pair(s)" in leaderboard and note in leaderboard


def test_a_pair_mixing_records_with_and_without_reasoning_tokens_is_warned_with_its_counts(tmp_path: Path) -> None:
    """docs/method.md#trace-length: a record without ``reasoning_tokens`` counts every generated token."""
    rng = np.random.default_rng(5)
    for folder, with_count in (("mixed", range(4)), ("one", range(6))):
        writer = RecordWriter(tmp_path / folder / "trac_records" / "t.2026-01-01T00-00-00.jsonl")
        for doc_id in range(6):
            question = synthetic_question(rng, doc_id, doc_id % 2 == 0, k=2)
            if doc_id in with_count:
                question = [dataclasses.replace(r, reasoning_tokens=r.num_tokens - 1) for r in question]
            writer.write_batch(question)
    with pytest.warns(TracWarning, match=r"reasoning tokens of 4 question\(s\) and every generated token of 2"):
        load_pairs([tmp_path / "mixed"], jobs=1)
    with warnings.catch_warnings():  # one definition throughout: nothing to say
        warnings.simplefilter("error", TracWarning)
        load_pairs([tmp_path / "one"], jobs=1)
