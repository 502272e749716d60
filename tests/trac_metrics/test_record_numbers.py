"""The reader refuses, when it reads a record, every number a report cannot use: a probe's or a response's engine
seconds that are not finite, negative or above 1e12, more cached than prompt tokens, a count beyond what a float holds
exactly; each one line naming the file, the line and the field, from ``trac report`` before any evaluation
(docs/guide/reliability.md#numbers-a-report-can-use)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_calls import cli_error
from record_factory import synthetic_question

from trac_metrics.records import MAX_COUNT, RecordFormatError, iter_records


def probe(record: dict[str, Any]) -> dict[str, Any]:
    return record["probes"]["trace"]


CASES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "infinite probe seconds": (
        lambda r: probe(r).update(seconds=float("inf")),
        "field 'probes.trace.seconds' must be a number of seconds in [0, 1e+12] or null, got Infinity",
    ),
    "minus infinite probe seconds": (
        lambda r: probe(r).update(seconds=float("-inf")),
        "'probes.trace.seconds' must be a number of seconds in [0, 1e+12] or null, got -Infinity",
    ),
    "NaN probe seconds": (lambda r: probe(r).update(seconds=float("nan")), "'probes.trace.seconds' must be"),
    "absurd probe seconds": (lambda r: probe(r).update(seconds=1e308), "'probes.trace.seconds' must be a number of"),
    "negative probe seconds": (lambda r: probe(r).update(seconds=-0.5), "got -0.5"),
    "negative generation seconds": (
        lambda r: r["timing"].update(generation_seconds=-1.0),
        "field 'timing' must be a JSON object of numbers of seconds in [0, 1e+12], got {\"generation_seconds\": -1.0}",
    ),
    "more cached than prompt tokens": (
        lambda r: probe(r).update(num_cached_tokens=probe(r)["num_prompt_tokens"] * 10),
        "field 'probes.trace': probe num_cached_tokens ",
    ),
    "a count beyond a float": (
        lambda r: probe(r).update(num_prompt_tokens=MAX_COUNT + 1),
        f"field 'probes.trace.num_prompt_tokens' must be a non-negative integer of at most 2**53 ({MAX_COUNT}), got",
    ),
    "a response count beyond a float": (
        lambda r: r.update(prompt_token_count=2**64),
        "field 'prompt_token_count' must be a non-negative integer of at most 2**53",
    ),
    "K beyond a float": (lambda r: r.update(num_samples=2**60), "field 'num_samples' must be a positive integer of"),
}


def write_run(folder: Path, mutate: Callable[[dict[str, Any]], None] | None = None) -> Path:
    """A run whose third line is mutated by ``mutate``; returns its record file."""
    lines = [
        record.to_dict()
        for doc_id in range(3)
        for record in synthetic_question(np.random.default_rng(doc_id), doc_id, doc_id % 2 == 0, k=1)
    ]
    if mutate is not None:
        mutate(lines[2])
    path = folder / "trac_records" / "synthetic.2026-01-01T00-00-00.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize("case", CASES)
def test_a_number_the_report_cannot_use_is_refused_naming_file_line_and_field(case: str, tmp_path: Path) -> None:
    mutate, expected = CASES[case]
    path = write_run(tmp_path, mutate)
    with pytest.raises(RecordFormatError) as error:
        list(iter_records(path))
    assert str(error.value).startswith(f"{path}:3: malformed record: ") and expected in str(error.value)


def test_the_report_ends_with_the_one_line_before_any_evaluation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, ±inf seconds crashed the report ("math domain error") and 1e308 showed TrAC at 3e307x latency."""
    path = write_run(tmp_path / "run", CASES["infinite probe seconds"][0])
    message = cli_error(capsys, "report", tmp_path / "run", "--out", tmp_path / "report")
    assert message.startswith(f"trac report: {path}:3: malformed record: field 'probes.trace.seconds'")


def test_the_limits_themselves_are_read(tmp_path: Path) -> None:
    def at_the_limits(record: dict[str, Any]) -> None:
        probe(record).update(seconds=1e12, num_cached_tokens=probe(record)["num_prompt_tokens"])
        record["timing"].update(generation_seconds=0.0)
        record.update(prompt_token_count=MAX_COUNT)

    records = list(iter_records(write_run(tmp_path, at_the_limits)))
    assert records[2].probes["trace"].seconds == 1e12 and records[2].prompt_token_count == MAX_COUNT
