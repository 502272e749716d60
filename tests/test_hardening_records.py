"""Records are checked when they are written with the reader's own checks
(docs/architecture.md#record-schema): a record that ``trac`` would refuse on reading is never written, and the error
names the record and the field instead of leaving a file every ``trac`` command refuses."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics.records import RecordFormatError, RecordWriter, ResponseRecord, iter_records


def spoiled_probe(record: ResponseRecord, **changes: Any) -> ResponseRecord:
    return replace(record, probes={"trace": replace(record.probes["trace"], **changes)})


def with_value(name: str, index: int, value: float) -> Any:
    """A change of ``record``'s array ``name`` with ``value`` at ``index``."""

    def change(record: ResponseRecord) -> ResponseRecord:
        array = getattr(record, name).astype(np.float64)
        array[index] = value
        return replace(record, **{name: array})

    return change


SPOILED = {
    "negative cached tokens": (
        lambda record: spoiled_probe(record, num_cached_tokens=-3),
        "field 'probes.trace.num_cached_tokens' must be a non-negative integer or null, got -3",
    ),
    "nan token logprob": (with_value("token_logprobs", 2, np.nan), "'token_logprobs' must hold finite log-probabil"),
    "positive token logprob": (with_value("token_logprobs", 0, 0.5), "got 0.5 at index 0"),
    "-inf mean logprob": (with_value("topk_mean_logprob", 1, -np.inf), "'topk_mean_logprob' must hold finite"),
    "nan entropy": (with_value("topk_entropy", 0, np.nan), "'topk_entropy' must hold finite entropies >= 0"),
    "negative token id": (with_value("token_ids", 3, -5), "'token_ids' must hold token ids >= 0, got -5 at index 3"),
    "nan probe top logprob": (
        lambda record: spoiled_probe(record, top_logprobs=np.full((3, 5), np.nan)),
        "'probes.trace.top_logprobs' must hold log-probabilities <= 0 or -inf (padding), got nan at index [0, 0]",
    ),
}


@pytest.mark.parametrize("case", SPOILED)
def test_a_record_the_reader_would_refuse_is_never_written(case: str, tmp_path: Path) -> None:
    spoil, expected = SPOILED[case]
    good, bad = synthetic_question(np.random.default_rng(0), 7, True, k=2)
    path = tmp_path / "run.jsonl"
    writer = RecordWriter(path)
    writer.write_batch([good])
    with pytest.raises(RecordFormatError) as caught:
        writer.write_batch([good, spoil(bad)])
    message = str(caught.value)
    assert f"{path}: refused to write the record of synthetic doc 7 repeat 1" in message and expected in message
    assert "\n" not in message
    assert [record.key for record in iter_records(path)] == [good.key], "nothing of the refused batch is written"


def test_padding_and_a_zero_logprob_are_written(tmp_path: Path) -> None:
    """What the engines legitimately store: -inf padding of a probe's top logprobs and a logprob of exactly 0."""
    (record,) = synthetic_question(np.random.default_rng(1), 0, True, k=1)
    top = np.full((3, 5), -np.inf)
    top[:, 0] = 0.0
    record = with_value("token_logprobs", 0, 0.0)(spoiled_probe(record, top_logprobs=top))
    RecordWriter(tmp_path / "run.jsonl").write_batch([record])
    (back,) = iter_records(tmp_path / "run.jsonl")
    assert back.token_logprobs[0] == 0.0 and np.array_equal(back.probes["trace"].top_logprobs, top)
