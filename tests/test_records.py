"""The stored record format (trac_metrics.records): exact round trips, clear errors, crash-safe appends."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics._warnings import TracWarning
from trac_metrics.features.evidence import question_evidence
from trac_metrics.records import SCHEMA, ProbeRecord, RecordFormatError, RecordWriter, ResponseRecord, iter_records


def make_record(doc_id: int = 0, repeat: int = 0, n_tokens: int = 5) -> ResponseRecord:
    rng = np.random.default_rng(doc_id * 10 + repeat)
    probe = ProbeRecord(
        variant="trace",
        appended_text="\n\nThe final answer is \\boxed{",
        text="42}",
        answer="42",
        token_ids=np.array([19, 20, 21]),
        token_logprobs=np.array([-0.1, -0.2, -0.05]),
        top_logprobs=np.full((3, 5), -3.0),
        answer_token_count=2,
        finish_reason="stop",
        num_prompt_tokens=120,
        num_cached_tokens=96,
        seconds=0.01,
    )
    return ResponseRecord(
        task="demo",
        doc_id=doc_id,
        repeat=repeat,
        model="tiny",
        answer_kind="math",
        prompt_token_count=40,
        text="so \\boxed{42}",
        answer="42",
        reference="42",
        finish_reason="eos",
        top_k=5,
        token_ids=rng.integers(0, 50_000, n_tokens),
        token_logprobs=-rng.random(n_tokens),
        topk_entropy=rng.random(n_tokens),
        topk_mean_logprob=-3 * rng.random(n_tokens),
        probes={"trace": probe},
        p_true=0.7,
        timing={"generation_seconds": 1.5},
        metadata={"level": 2},
    )


def test_round_trip_keeps_every_field():
    record = make_record(n_tokens=7)
    back = ResponseRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert back.key == ("demo", "0", 0)
    np.testing.assert_array_equal(back.token_ids, record.token_ids)
    np.testing.assert_array_equal(back.token_logprobs, record.token_logprobs.astype(np.float32))
    # η and the top-k mean are stored as float16: exact to float16 precision, not more.
    np.testing.assert_array_equal(back.topk_entropy, record.topk_entropy.astype(np.float16))
    assert back.probes["trace"].answer == "42"
    np.testing.assert_allclose(back.probes["trace"].answer_logprobs, [-0.1, -0.2], rtol=1e-6)
    assert back.probes["trace"].first_token_logprob == pytest.approx(-0.1, rel=1e-6)
    assert (back.p_true, back.metadata, back.timing) == (0.7, {"level": 2}, {"generation_seconds": 1.5})


def test_unknown_schema_version_is_refused_with_a_clear_message():
    payload = make_record().to_dict()
    payload["schema"] = "trac-record/0"
    with pytest.raises(RecordFormatError, match="trac-record/0.*not supported"):
        ResponseRecord.from_dict(payload)


def test_inconsistent_arrays_are_refused():
    with pytest.raises(RecordFormatError, match="differ in length"):
        ResponseRecord(**{**make_record().__dict__, "topk_entropy": np.zeros(2)})


def test_writer_appends_batches_and_reader_streams_them(tmp_path):
    path = tmp_path / "run" / "demo.jsonl"
    writer = RecordWriter(path)
    writer.write_batch([make_record(0, 0), make_record(0, 1)])
    writer.write_batch([make_record(1, 0)])
    assert [record.key for record in iter_records(path)] == [("demo", "0", 0), ("demo", "0", 1), ("demo", "1", 0)]
    assert json.loads(path.read_text().splitlines()[0])["schema"] == SCHEMA


def test_a_last_line_cut_off_by_a_crash_is_skipped_with_a_warning(tmp_path):
    """A run killed mid-write (or a full disk) leaves a last line without its newline: the records before it are
    kept, and the warning names the file and how many were kept."""
    path = tmp_path / "demo.jsonl"
    RecordWriter(path).write_batch([make_record(0, 0), make_record(0, 1), make_record(1, 0)])
    text = path.read_text()
    path.write_text(text[: len(text) - 40])
    with pytest.warns(TracWarning, match=r"demo\.jsonl: skipped its last line 3, cut off.*kept the 2 complete"):
        assert [record.key for record in iter_records(path)] == [("demo", "0", 0), ("demo", "0", 1)]


def test_a_cut_off_line_in_the_middle_is_corruption_named_by_file_and_line(tmp_path):
    path = tmp_path / "demo.jsonl"
    RecordWriter(path).write_batch([make_record(0, 0), make_record(0, 1), make_record(1, 0)])
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + lines[1][:-40] + "\n" + lines[2])
    with pytest.raises(RecordFormatError, match=r"demo\.jsonl:2: corrupt line, not valid JSON") as error:
        list(iter_records(path))
    assert "convert" not in str(error.value)


def test_a_last_line_with_its_newline_but_invalid_json_is_an_error(tmp_path):
    path = tmp_path / "demo.jsonl"
    RecordWriter(path).write_batch([make_record(0, 0)])
    path.write_text(path.read_text() + '{"schema": "trac-record/1", "task"\n')
    with pytest.raises(RecordFormatError, match=r"demo\.jsonl:2: corrupt line"):
        list(iter_records(path))


def test_a_valid_last_line_without_its_newline_is_read(tmp_path):
    path = tmp_path / "demo.jsonl"
    RecordWriter(path).write_batch([make_record(0, 0), make_record(0, 1)])
    path.write_text(path.read_text().rstrip("\n"))
    assert len(list(iter_records(path))) == 2


def test_a_line_cut_inside_a_multibyte_character_is_a_cut_off_line(tmp_path):
    path = tmp_path / "demo.jsonl"
    RecordWriter(path).write_batch([make_record(0, 0), replace(make_record(1, 0), text="ünïcödé " * 20)])
    data = path.read_bytes()
    cut = data.index("ü".encode()) + 1  # inside the two bytes of ü
    path.write_bytes(data[:cut])
    with pytest.warns(TracWarning, match="kept the 1 complete"):
        assert len(list(iter_records(path))) == 1


def test_a_record_in_memory_gives_the_same_evidence_as_its_stored_copy():
    """lm-eval's aggregation reads records as built; `trac report` reads them back from the file: the arrays are
    held in their storage dtypes (float16 entropies, float32 logprobs), so the two give identical features."""
    records = synthetic_question(np.random.default_rng(4), doc_id=3, correct=True, k=4)
    assert records[0].topk_entropy.dtype == np.float16 and records[0].probes["trace"].token_logprobs.dtype == np.float32
    stored = [ResponseRecord.from_dict(json.loads(json.dumps(record.to_dict()))) for record in records]
    assert json.dumps(question_evidence(records)) == json.dumps(question_evidence(stored))
