"""The stored record format (trac_metrics.records, docs/architecture.md#record-schema): exact round trips, crash-safe
appends, and hardened reading and writing.

Every unusable record file ends ``trac evaluate`` (and ``trac report``) with exit status 2 and one line on stderr
naming the file, line and field, never a traceback; a line cut off by a crash at the end of a file and a question
cut short are skipped with a warning. A record the reader would refuse is never written: the writer checks every
record with the reader's own checks and names the record and the field. Property-based tests (hypothesis)
round-trip random valid records and check random invalid mutations of a valid file beyond the listed cases.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from record_factory import synthetic_question

from trac_metrics._warnings import TracWarning
from trac_metrics.cli import main
from trac_metrics.features.evidence import question_evidence
from trac_metrics.records import (
    PROBE_VARIANTS,
    SCHEMA,
    VARIANT_CONTEXTS,
    ProbeRecord,
    RecordFormatError,
    RecordWriter,
    ResponseRecord,
    encode_array,
    iter_records,
)
from trac_metrics.reporting.html.page import json_for_script
from trac_metrics.reporting.html.traces import primary_trace, trace_payload
from trac_metrics.reporting.runs import NoRecordsError, decoding_label, load_pairs


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
        context="reasoning",
        context_tokens=n_tokens - 1,
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


def test_the_labeller_is_written_only_when_set_and_read_back():
    plain = make_record()
    assert "labeller" not in plain.to_dict() and ResponseRecord.from_dict(plain.to_dict()).labeller is None
    labelled = replace(plain, labeller="math-verify")
    assert ResponseRecord.from_dict(json.loads(json.dumps(labelled.to_dict()))).labeller == "math-verify"
    with pytest.raises(RecordFormatError, match="field 'labeller' must be one of \\('trac', 'math-verify'\\)"):
        ResponseRecord.from_dict({**labelled.to_dict(), "labeller": "module:function"})


def test_the_answers_token_span_is_written_only_when_set_and_a_span_outside_the_tokens_is_refused():
    plain = make_record(n_tokens=7)
    assert "answer_tokens" not in plain.to_dict() and ResponseRecord.from_dict(plain.to_dict()).answer_tokens is None
    spanned = replace(plain, answer_tokens=(5, 7))
    back = ResponseRecord.from_dict(json.loads(json.dumps(spanned.to_dict())))
    assert back.answer_tokens == (5, 7) and question_evidence([back])["answer_token_logprob"] == pytest.approx(
        float(np.mean(back.token_logprobs[5:7]))
    )
    assert question_evidence([plain])["answer_token_logprob"] is None
    for bad in ([3, 3], [6, 8], [-1, 2]):
        with pytest.raises(RecordFormatError, match="answer_tokens"):
            ResponseRecord.from_dict({**spanned.to_dict(), "answer_tokens": bad})
    with pytest.raises(RecordFormatError, match="answer_tokens"):
        ResponseRecord.from_dict({**spanned.to_dict(), "answer_tokens": [1, 2, 3]})


def test_prefix_probes_round_trip_and_records_without_them_are_stored_as_before():
    """docs/method.md#prefix-probes: a record's prefix probes come back with their fraction and kept trace tokens;
    a record without them (every record written before the switch existed) has neither the field nor, in its other
    probes, the two prefix fields."""
    plain = make_record()
    stored = plain.to_dict()
    assert "prefix_probes" not in stored and not {"fraction", "trace_tokens"} & set(stored["probes"]["trace"])
    assert ResponseRecord.from_dict(stored).prefix_probes == ()
    trace = plain.probes["trace"]
    probes = [
        replace(trace, variant="prefix", context="prefix", answer=str(n), fraction=f, trace_tokens=n)
        for f, n in ((0.25, 1), (0.5, 3))
    ]
    back = ResponseRecord.from_dict(json.loads(json.dumps(replace(plain, prefix_probes=probes).to_dict())))
    assert [(p.variant, p.fraction, p.trace_tokens, p.answer) for p in back.prefix_probes] == [
        ("prefix", 0.25, 1, "1"),
        ("prefix", 0.5, 3, "3"),
    ]
    np.testing.assert_array_equal(back.prefix_probes[1].top_logprobs, trace.top_logprobs)
    with pytest.raises(RecordFormatError, match="strictly increasing order of fraction, got fractions \\[0.5, 0.25\\]"):
        replace(plain, prefix_probes=probes[::-1])
    with pytest.raises(RecordFormatError, match="probe stored under 'prefix' has variant 'prefix'"):
        replace(plain, probes={"prefix": probes[0]})


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
        "field 'probes.trace.num_cached_tokens' must be a non-negative integer of at most 2**53 (9007199254740992) or "
        "null, got -3",
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


VALID = [
    json.loads(json.dumps(record.to_dict()))
    for doc_id in range(2)
    for record in synthetic_question(np.random.default_rng(doc_id), doc_id, True, k=2)
]
"""Four valid stored records (two questions, K = 2) that the tests corrupt one line at a time."""


def write_lines(path: Path, lines: list[Any]) -> Path:
    """Write one line per item (bytes as they are, text encoded, anything else as JSON), each ended by a newline."""

    def encoded(line: Any) -> bytes:
        if isinstance(line, bytes):
            return line
        return (line if isinstance(line, str) else json.dumps(line)).encode()

    path.write_bytes(b"".join(encoded(line) + b"\n" for line in lines))
    return path


def trac_failure(*argv: object) -> str:
    """Run ``trac`` in-process on input it must refuse: exit status 2 and exactly one line on stderr, which is
    returned (any other exception, a traceback, propagates and fails the test)."""
    err = io.StringIO()
    with (
        contextlib.redirect_stderr(err),
        contextlib.redirect_stdout(io.StringIO()),
        pytest.raises(SystemExit) as exit_info,
    ):
        main([str(arg) for arg in argv])
    assert exit_info.value.code == 2
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"trac {argv[0]}: "), lines
    return lines[0]


def holder(payload: dict[str, Any], path: str) -> tuple[dict[str, Any], str]:
    """The object holding the dotted ``path`` (``"probes.trace.seconds"``) of ``payload``, and its key there."""
    *parents, last = path.split(".")
    for part in parents:
        payload = payload[part]
    return payload, last


def set_path(payload: dict[str, Any], path: str, value: Any) -> None:
    parent, key = holder(payload, path)
    parent[key] = value


def delete_path(payload: dict[str, Any], path: str) -> None:
    parent, key = holder(payload, path)
    del parent[key]


def with_prefix_probes(payload: dict[str, Any], *fractions: Any) -> None:
    """Give a stored record prefix probes at ``fractions``: copies of its trace probe (docs/method.md#prefix-probes)."""
    payload["prefix_probes"] = [
        {
            **payload["probes"]["trace"],
            "variant": "prefix",
            "context": "prefix",
            "fraction": fraction,
            "trace_tokens": 2,
        }
        for fraction in fractions
    ]


# ------------------------------------------------------------------------------------------ malformed fields
N_TOKENS = VALID[1]["token_ids"]["shape"][0]

MALFORMED: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "decoding a list": (
        lambda r: set_path(r, "decoding", [0.7, 0.95]),
        "'decoding' must be a JSON object of finite numbers",
    ),
    "decoding of strings": (lambda r: set_path(r, "decoding.temperature", "hot"), "'decoding' must be a JSON object"),
    "metadata a list": (lambda r: set_path(r, "metadata", [1]), "'metadata' must be a JSON object, got [1]"),
    "probes a list": (lambda r: set_path(r, "probes", []), "'probes' must be a JSON object"),
    "timing of strings": (
        lambda r: set_path(r, "timing.generation_seconds", "1.5"),
        "'timing' must be a JSON object of numbers of seconds in [0, 1e+12]",
    ),
    "repeat a string": (
        lambda r: set_path(r, "repeat", "0"),
        "'repeat' must be a non-negative integer of at most 2**53 (9007199254740992), got \"0\"",
    ),
    "repeat a bool": (
        lambda r: set_path(r, "repeat", True),
        "'repeat' must be a non-negative integer of at most 2**53 (9007199254740992), got true",
    ),
    "doc_id a float": (
        lambda r: set_path(r, "doc_id", 1.5),
        "'doc_id' must be an integer or a string of at most 1000 characters, got 1.5",
    ),
    "doc_id a list": (lambda r: set_path(r, "doc_id", [0]), "'doc_id' must be an integer or a string"),
    "unicode dtype": (lambda r: set_path(r, "token_logprobs.dtype", "<U1"), "'token_logprobs' has dtype \"<U1\""),
    "object dtype": (lambda r: set_path(r, "topk_entropy.dtype", "|O"), "'topk_entropy' has dtype \"|O\""),
    "unknown dtype": (lambda r: set_path(r, "topk_entropy.dtype", "bogus"), "'topk_entropy' has dtype \"bogus\""),
    "float token ids": (lambda r: set_path(r, "token_ids.dtype", "<f4"), "castable to <i4"),
    "shape not filled": (
        lambda r: set_path(r, "token_ids.shape", [N_TOKENS + 1]),
        f"'token_ids' holds {4 * N_TOKENS} bytes",
    ),
    "negative shape": (lambda r: set_path(r, "token_ids.shape", [-1]), "list of non-negative integers"),
    "shape a string": (lambda r: set_path(r, "token_ids.shape", "5"), "list of non-negative integers"),
    "2-D token ids": (lambda r: set_path(r, "token_ids.shape", [N_TOKENS, 1]), "must be one-dimensional"),
    "corrupt base64": (lambda r: set_path(r, "token_logprobs.b64", "@@@@"), "'token_logprobs' is not valid base64"),
    "array not encoded": (lambda r: set_path(r, "token_ids", [1, 2, 3]), "'token_ids' must be an encoded array"),
    "num_samples zero": (
        lambda r: set_path(r, "num_samples", 0),
        "'num_samples' must be a positive integer of at most 2**53 (9007199254740992) or null",
    ),
    "num_samples a string": (lambda r: set_path(r, "num_samples", "2"), "'num_samples' must be a positive integer"),
    "top_k zero": (
        lambda r: set_path(r, "top_k", 0),
        "'top_k' must be a positive integer of at most 2**53 (9007199254740992), got 0",
    ),
    "top_k a float": (
        lambda r: set_path(r, "top_k", 5.0),
        "'top_k' must be a positive integer of at most 2**53 (9007199254740992), got 5.0",
    ),
    "answer a number": (lambda r: set_path(r, "answer", 42), "'answer' must be a string or null, got 42"),
    "reference a list of numbers": (
        lambda r: set_path(r, "reference", [42]),
        "'reference' must be a string or a non-empty list of strings (aliases, any of which matches) or null",
    ),
    "reference an empty list": (
        lambda r: set_path(r, "reference", []),
        "'reference' must be a string or a non-empty list of strings (aliases, any of which matches) or null",
    ),
    "p_true a string": (lambda r: set_path(r, "p_true", "high"), "'p_true' must be a number or null"),
    "task missing": (lambda r: delete_path(r, "task"), "a record is missing fields ['task']"),
    "probe count a string": (
        lambda r: set_path(r, "probes.trace.answer_token_count", "2"),
        "'probes.trace.answer_token_count' must be a non-negative integer",
    ),
    "probe seconds a list": (lambda r: set_path(r, "probes.trace.seconds", [0.1]), "'probes.trace.seconds' must be"),
    "probe answer a dict": (lambda r: set_path(r, "probes.trace.answer", {}), "'probes.trace.answer' must be a "),
    "probe not an object": (lambda r: set_path(r, "probes.trace", [1]), "'probes.trace' must be a JSON object"),
    "probe array missing": (
        lambda r: delete_path(r, "probes.trace.token_ids"),
        "'probes.trace' is missing fields ['token_ids']",
    ),
    "probe dtype": (
        lambda r: set_path(r, "probes.trace.top_logprobs.dtype", "<c8"),
        "'probes.trace.top_logprobs' has dtype \"<c8\"",
    ),
    "prefix probes an object": (lambda r: set_path(r, "prefix_probes", {}), "'prefix_probes' must be a list of probe"),
    "prefix probes out of order": (
        lambda r: with_prefix_probes(r, 0.5, 0.25),
        "must be probes of variant 'prefix' in strictly increasing order of fraction, got fractions [0.5, 0.25]",
    ),
    "prefix probe fraction a string": (
        lambda r: with_prefix_probes(r, "0.5"),
        "field 'prefix_probes.0.fraction' must be a number or null, got \"0.5\"",
    ),
    "prefix probe fraction 1": (lambda r: with_prefix_probes(r, 1.0), "a prefix probe's fraction must be in (0, 1)"),
    "prefix probe without its fraction": (
        lambda r: with_prefix_probes(r, None),
        "a probe of variant 'prefix' has a fraction and trace_tokens, any other probe neither",
    ),
    # values JSON can spell but no page can show, refused when read (docs/guide/reliability.md#files-are-data)
    "text with a lone surrogate": (
        lambda r: set_path(r, "text", "so 12\ud800 it is"),
        "field 'text' holds a lone surrogate '\\ud800' at character 5: not Unicode text",
    ),
    "probe text with a lone surrogate": (
        lambda r: set_path(r, "probes.trace.text", "\udc0012}"),
        "field 'probes.trace.text' holds a lone surrogate '\\udc00' at character 0",
    ),
    "metadata key with a lone surrogate": (
        lambda r: set_path(r, "metadata", {"level": {"sub\ud83d": 1}}),
        "field 'metadata.level' holds a lone surrogate '\\ud83d' at character 3",
    ),
    "NaN metadata": (
        lambda r: set_path(r, "metadata", {"level": float("nan")}),
        "field 'metadata.level' must be a finite number or null, got nan",
    ),
    "infinite metadata in a list": (
        lambda r: set_path(r, "metadata", {"scores": [1.0, float("-inf")]}),
        "field 'metadata.scores.1' must be a finite number or null, got -inf",
    ),
    "NaN temperature": (
        lambda r: set_path(r, "decoding.temperature", float("nan")),
        "'decoding' must be a JSON object of finite numbers, its 'top_k' a positive integer, got {\"temperature\": NaN",
    ),
    "sampling top_k 0": (
        lambda r: set_path(r, "decoding.top_k", 0),
        "'decoding' must be a JSON object of finite numbers, its 'top_k' a positive integer, got {",
    ),
    "fractional sampling top_k": (
        lambda r: set_path(r, "decoding.top_k", 2.5),
        "'decoding' must be a JSON object of finite numbers, its 'top_k' a positive integer, got {",
    ),
    "doc_id of 5,000 characters": (
        lambda r: set_path(r, "doc_id", "7" * 5000),
        "'doc_id' must be an integer or a string of at most 1000 characters, got \"777",
    ),
    "trace probe with a fraction": (
        lambda r: set_path(r, "probes.trace.fraction", 0.5),
        "a probe of variant 'prefix' has a fraction and trace_tokens, any other probe neither; got variant 'trace'",
    ),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_field_is_one_line_naming_file_line_and_field(case: str, tmp_path: Path) -> None:
    mutate, expected = MALFORMED[case]
    payload = copy.deepcopy(VALID[1])
    mutate(payload)
    path = write_lines(tmp_path / "run.jsonl", [VALID[0], payload, *VALID[2:]])
    message = trac_failure("evaluate", path)
    assert f"{path}:2: malformed record: " in message and expected in message, message


@pytest.mark.parametrize(("field", "expected"), [("doc_id", "must be an integer or a string"), ("metadata", "holds")])
def test_an_integer_of_5000_digits_is_refused_naming_its_field(field: str, expected: str, tmp_path: Path) -> None:
    """Python refuses to read an integer of over 4,300 digits; the reader names the field that holds one."""
    digits = "9" * 5000
    line = json.dumps({**VALID[1], field: "DIGITS" if field == "doc_id" else {"n": "DIGITS"}})
    path = write_lines(tmp_path / "run.jsonl", [VALID[0], line.replace('"DIGITS"', digits), *VALID[2:]])
    message = trac_failure("evaluate", path)
    where = "doc_id" if field == "doc_id" else "metadata.n"
    assert f"{path}:2: malformed record: field '{where}' {expected}" in message, message
    assert "an integer of 5000 digits" in message


@pytest.mark.parametrize("line", ["[1, 2]", "5", '"text"', "null"])
def test_a_line_that_is_not_an_object_is_a_malformed_record(line: str, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "run.jsonl", [VALID[0], line, *VALID[2:]])
    message = trac_failure("evaluate", path)
    assert f"{path}:2: malformed record: a record must be a JSON object, got {line}" in message, message


def test_corruption_and_schema_messages_fit_their_case(tmp_path: Path) -> None:
    """A corrupt line says so; only a record of another schema version gets the re-run advice."""
    lines = [json.dumps(payload) for payload in VALID]
    corrupt = write_lines(tmp_path / "corrupt.jsonl", [lines[0], lines[1][:50], *lines[2:]])
    for command in (["evaluate", corrupt], ["report", corrupt, "--out", tmp_path / "out"]):
        message = trac_failure(*command)
        assert f"{corrupt}:2: corrupt line, not valid JSON" in message and "convert" not in message
    old = write_lines(tmp_path / "old.jsonl", [{**VALID[0], "schema": "trac-record/0"}])
    message = trac_failure("evaluate", old)
    assert f"{old}:1: record schema 'trac-record/0' is not supported" in message and "re-run the generation" in message
    assert "malformed" not in message


# ------------------------------------------------------------------------------- incomplete questions, empty files
def question_run(path: Path, n_questions: int = 6, k: int = 3, skip: frozenset[tuple[int, int]] = frozenset()) -> Path:
    """``n_questions`` questions of K records, without the (doc id, repeat) records in ``skip``."""
    rng = np.random.default_rng(0)
    RecordWriter(path).write_batch(
        record
        for doc_id in range(n_questions)
        for record in synthetic_question(rng, doc_id, doc_id % 2 == 0, k=k)
        if (doc_id, record.repeat) not in skip
    )
    return path


def test_an_incomplete_question_is_dropped_with_a_warning_and_k_is_the_declared_k(tmp_path: Path) -> None:
    """A run cut short leaves questions with fewer than K records (even without their primary): they are dropped,
    named in a warning, and the pair keeps K = num_samples and the timings of the questions it holds."""
    path = question_run(tmp_path / "run.jsonl", skip=frozenset({(2, 2), (4, 0), (4, 1)}))
    with pytest.warns(TracWarning) as caught:
        (pair,) = load_pairs([path], jobs=1)
    (message,) = [str(warning.message) for warning in caught if "incomplete" in str(warning.message)]
    assert "dropped 2 incomplete question(s)" in message and str(path) in message
    assert "synthetic / synthetic question 2 (2 of 3)" in message and "question 4 (1 of 3)" in message
    assert [evidence["doc_id"] for evidence in pair.evidences] == [0, 1, 3, 5]
    assert pair.num_samples == 3 and pair.responses == 4 * 3


def test_a_warning_names_ten_incomplete_questions_and_counts_the_rest(tmp_path: Path) -> None:
    path = question_run(tmp_path / "run.jsonl", n_questions=13, skip=frozenset((doc_id, 2) for doc_id in range(12)))
    with pytest.warns(TracWarning, match=r"dropped 12 incomplete.*question 9 \(2 of 3\); and 2 more$"):
        (pair,) = load_pairs([path], jobs=1)
    assert [evidence["doc_id"] for evidence in pair.evidences] == [12]


def test_questions_split_across_files_keep_the_complete_copy(tmp_path: Path) -> None:
    """A question cut short in one run and generated whole in its resumed run is read once, not twice."""
    first = question_run(tmp_path / "a.jsonl", n_questions=3, skip=frozenset({(2, 1), (2, 2)}))
    resumed = tmp_path / "b.jsonl"
    rng = np.random.default_rng(5)
    RecordWriter(resumed).write_batch(synthetic_question(rng, 2, True, k=3))
    with pytest.warns(TracWarning, match=r"a\.jsonl: dropped 1 incomplete.*question 2 \(1 of 3\)"):
        (pair,) = load_pairs([first, resumed], jobs=1)
    assert [evidence["doc_id"] for evidence in pair.evidences] == [0, 1, 2]
    assert pair.sources == (first.resolve(), resumed.resolve())


def test_files_without_records_end_with_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    with pytest.raises(NoRecordsError, match=f"no records in {empty}"):
        load_pairs([empty])
    assert trac_failure("evaluate", empty) == f"trac evaluate: no records in {empty}"
    cut = tmp_path / "cut.jsonl"
    cut.write_text(json.dumps(VALID[0])[:40])
    with pytest.warns(TracWarning, match="kept the 0 complete records"):
        assert trac_failure("evaluate", cut) == f"trac evaluate: no records in {cut}"
    partial = question_run(tmp_path / "partial.jsonl", n_questions=2, skip=frozenset({(0, 2), (1, 2)}))
    with pytest.warns(TracWarning, match="dropped 2 incomplete"):
        assert "no complete question" in trac_failure("report", partial, "--out", tmp_path / "out")


# ------------------------------------------------------------------------------------------- property-based
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)
seconds = st.floats(0, 1e4)


LOGPROBS = [0.0, -0.0, -0.125, -2.75, -1024.0, -60000.0]
ENTROPIES = [0.0, -0.0, 0.125, 2.75, 1024.0, 60000.0]
PADDED_LOGPROBS = [*LOGPROBS, float("-inf")]


def token_arrays(dtype: type, shape: int | tuple[int, ...], values: list[float] = LOGPROBS) -> st.SearchStrategy:
    """Arrays of ``dtype`` over the range the schema accepts, extremes included: token ids >= 0, else ``values``
    (drawn from a small set, so that a record stays within Hypothesis's data budget: the stored bytes are copied,
    whatever the values)."""
    if np.dtype(dtype).kind == "i":
        return arrays(dtype, shape, elements=st.integers(0, 2**31 - 1))
    return arrays(dtype, shape, elements=st.sampled_from(values))


@st.composite
def probes(draw: st.DrawFn, variant: str) -> ProbeRecord:
    n_tokens = draw(st.integers(0, 6))
    top_k = draw(st.integers(1, 4))
    prompt_tokens = draw(st.integers(0, 10**6))
    return ProbeRecord(
        variant=variant,
        appended_text=draw(st.text(max_size=20)),
        text=draw(st.text(max_size=20)),
        answer=draw(st.none() | st.text(max_size=10)),
        token_ids=draw(token_arrays(np.int32, n_tokens)),
        token_logprobs=draw(token_arrays(np.float32, n_tokens)),
        top_logprobs=draw(token_arrays(np.float32, (n_tokens, top_k), PADDED_LOGPROBS)),
        answer_token_count=draw(st.integers(0, n_tokens)),
        finish_reason=draw(st.sampled_from(["stop", "eos", "length", "teacher_forced"])),
        num_prompt_tokens=prompt_tokens,
        num_cached_tokens=draw(st.none() | st.integers(0, prompt_tokens)),
        context=draw(st.sampled_from(VARIANT_CONTEXTS[variant])),
        context_tokens=draw(st.none() | st.integers(0, prompt_tokens)),
        seconds=draw(st.none() | seconds),
    )


BASE = synthetic_question(np.random.default_rng(0), 0, True, k=1)[0]


@st.composite
def records(draw: st.DrawFn) -> ResponseRecord:
    """A valid record: the factory's realistic record with every field redrawn over its schema's range."""
    n_tokens = draw(st.integers(0, 20))
    variants = draw(st.lists(st.sampled_from(PROBE_VARIANTS), unique=True, max_size=2))
    return replace(
        BASE,
        task=draw(st.text(min_size=1, max_size=10)),
        doc_id=draw(st.integers(0, 10**12) | st.text(max_size=10)),
        repeat=draw(st.integers(0, 16)),
        model=draw(st.text(max_size=10)),
        text=draw(st.text(max_size=60)),
        answer=draw(st.none() | st.text(max_size=10)),
        reference=draw(st.none() | st.text(max_size=10)),
        top_k=draw(st.integers(1, 20)),
        token_ids=draw(token_arrays(np.int32, n_tokens)),
        token_logprobs=draw(token_arrays(np.float32, n_tokens)),
        topk_entropy=draw(token_arrays(np.float16, n_tokens, ENTROPIES)),
        topk_mean_logprob=draw(token_arrays(np.float16, n_tokens)),
        probes={variant: draw(probes(variant)) for variant in variants},
        p_true=draw(st.none() | st.floats(allow_nan=True)),
        timing=draw(st.dictionaries(st.sampled_from(["generation_seconds", "p_true_seconds"]), seconds, max_size=2)),
        metadata=draw(st.dictionaries(st.text(max_size=6), json_values, max_size=3)),
        num_samples=draw(st.none() | st.integers(1, 16)),
        decoding={
            **draw(
                st.dictionaries(
                    st.sampled_from(["temperature", "top_p", "probe_temperature"]),
                    st.floats(0, 2) | st.integers(0, 2),
                    max_size=3,
                )
            ),
            **draw(st.just({}) | st.builds(lambda top_k: {"top_k": top_k}, st.integers(1, 1000))),
        },
    )


def stored_form(record: ResponseRecord) -> str:
    """The exact stored form of a record: equal stored forms are equal records (arrays compared bit for bit)."""
    return json.dumps(record.to_dict(), sort_keys=True)


@settings(max_examples=60, deadline=None)
@given(st.lists(records(), min_size=1, max_size=3))
def test_valid_records_round_trip_through_the_file(written: list[ResponseRecord]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.jsonl"
        RecordWriter(path).write_batch(written)
        read = list(iter_records(path))
    assert [stored_form(record) for record in read] == [stored_form(record) for record in written]
    assert all(
        getattr(back, name).dtype == getattr(record, name).dtype
        for back, record in zip(read, written)
        for name in ("token_ids", "token_logprobs", "topk_entropy", "topk_mean_logprob")
    )


any_text = st.text(st.characters(exclude_categories=()), max_size=12)  # lone surrogates included
hostile_numbers = (
    st.floats()  # NaN and ±inf included
    | st.integers(-(10**1100), 10**1100)
    | st.integers(4300, 5000).map(lambda digits: -(10**digits))  # over Python's 4,300 digits: never printed
)
hostile_json = st.recursive(
    st.none() | st.booleans() | hostile_numbers | any_text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(any_text, children, max_size=3),
    max_leaves=8,
)


@st.composite
def hostile_records(draw: st.DrawFn) -> ResponseRecord:
    """A valid record (:func:`records`) with some of its fields redrawn from what a writer might be handed: text with
    lone surrogates, non-finite or huge numbers in metadata and timings, document ids of thousands of digits."""
    record = draw(records())
    redrawn = {
        "doc_id": st.integers(-(10**1100), 10**1100)
        | st.integers(4300, 5000).map(lambda digits: 10**digits)
        | st.text(max_size=1100),
        "text": any_text,
        "answer": st.none() | any_text,
        "reference": st.none() | any_text | st.lists(any_text, min_size=1, max_size=2),
        "model": any_text,
        "task": any_text,
        "marker": st.none() | any_text,
        "generated_text": st.none() | any_text,
        "metadata": st.dictionaries(any_text, hostile_json, max_size=3),
        "timing": st.dictionaries(st.sampled_from(["generation_seconds", "p_true_seconds"]), hostile_numbers),
        "p_true": st.none() | hostile_numbers,
    }
    chosen = draw(st.lists(st.sampled_from(sorted(redrawn)), unique=True, min_size=1, max_size=4))
    return replace(record, **{name: draw(redrawn[name]) for name in chosen})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_records())
def test_the_writer_never_writes_what_the_reader_or_the_page_refuses(record: ResponseRecord) -> None:
    """Whatever a writer is handed, it refuses the record (RecordFormatError, nothing written) or writes one that the
    reader reads back and the HTML page can encode (its JSON data and the trace of the question)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.jsonl"
        try:
            RecordWriter(path).write_batch([record])
        except RecordFormatError as error:
            assert "\n" not in str(error) and not path.exists()
            return
        (read,) = iter_records(path)
    assert stored_form(read) == stored_form(replace(record, metadata=read.metadata))
    shown = {
        "doc": str(read.doc_id),
        "metadata": read.metadata,
        "pair": [read.model, read.task, decoding_label(read.decoding)],
        "answer": [read.answer, read.reference, read.text],
    }
    json_for_script(shown).encode("utf-8")
    trace = primary_trace([replace(read, repeat=0)])
    trace_payload({"text": trace.text, "marker": trace.marker, "probe": trace.probe}, [trace.token_ids])


def test_a_non_finite_metadata_value_is_stored_as_null(tmp_path: Path) -> None:
    """JSON has no NaN: a dataset's missing value (NaN) in a record's metadata is written as null, and read back so."""
    record = replace(BASE, metadata={"level": float("nan"), "scores": [1.5, float("inf")], "name": "x"})
    RecordWriter(tmp_path / "run.jsonl").write_batch([record])
    assert '"metadata": {"level": null, "scores": [1.5, null], "name": "x"}' in (tmp_path / "run.jsonl").read_text()
    (read,) = iter_records(tmp_path / "run.jsonl")
    assert read.metadata == {"level": None, "scores": [1.5, None], "name": "x"} == record.metadata


REQUIRED = (
    "schema",
    "task",
    "doc_id",
    "repeat",
    "model",
    "answer_kind",
    "prompt_token_count",
    "text",
    "answer",
    "reference",
    "finish_reason",
    "top_k",
    "token_ids",
    "token_logprobs",
    "topk_entropy",
    "topk_mean_logprob",
    "probes.trace.variant",
    "probes.trace.text",
    "probes.trace.answer_token_count",
    "probes.trace.top_logprobs",
    "token_ids.b64",
    "token_logprobs.dtype",
    "topk_entropy.shape",
)
WRONG_VALUES = {
    "task": [None, 3, ["t"]],
    "doc_id": [None, 1.5, True, [0], {}],
    "repeat": ["0", True, -1, 1.0, None],
    "model": [None, 1],
    "answer_kind": [None, []],
    "prompt_token_count": [-1, "40", 2.5],
    "text": [None, 7],
    "answer": [42, [], {}],
    "reference": [1.0, [42], [], {}],
    "finish_reason": [None, 0],
    "top_k": [0, -3, "5", 5.0, None],
    "probes": [[], "trace", 1],
    "probes.trace": [[1], "x", None],
    "p_true": ["0.5", [], {}, True],
    "timing": [[], "1", {"generation_seconds": "1"}, {"generation_seconds": None}],
    "metadata": [[], "x", 3],
    "num_samples": [0, -1, "2", 2.0, True],
    "decoding": [[0.7], "greedy", {"temperature": None}, {"top_p": [1]}],
    "probes.trace.answer_token_count": ["2", -1, None, 1.5],
    "probes.trace.num_prompt_tokens": [None, "1"],
    "probes.trace.num_cached_tokens": [-1, "96", 1.5],
    "probes.trace.seconds": ["0.1", [0.1], {}],
    "probes.trace.answer": [1, []],
    "probes.trace.variant": [None, "other", 3],
}
ARRAYS = (
    "token_ids",
    "token_logprobs",
    "topk_entropy",
    "topk_mean_logprob",
    "probes.trace.token_ids",
    "probes.trace.token_logprobs",
    "probes.trace.top_logprobs",
)
WRONG_ARRAY_PARTS = {
    "dtype": ["<U1", "|O", "<c8", "|b1", "<M8", "bogus", "f4,f4", 4, None],
    "shape": [[-1], "3", [1.5], None, [10**6], [True]],
    "b64": ["@@@@", "AAA", 5, None, "ü"],
}
NON_OBJECTS = ["[1, 2]", "5", '"text"', "null", "true", "[]"]


@st.composite
def invalid_files(draw: st.DrawFn) -> tuple[list[str | bytes], int]:
    """The lines of :data:`VALID` with one line made invalid, and that line's number."""
    lines: list[str | bytes] = [json.dumps(payload) for payload in VALID]
    index = draw(st.integers(0, len(lines) - 1))
    payload = copy.deepcopy(VALID[index])
    kind = draw(st.sampled_from(["drop", "retype", "array", "non-object", "cut", "bytes"]))
    if kind == "drop":
        delete_path(payload, draw(st.sampled_from(REQUIRED)))
    elif kind == "retype":
        field = draw(st.sampled_from(sorted(WRONG_VALUES)))
        set_path(payload, field, draw(st.sampled_from(WRONG_VALUES[field])))
    elif kind == "array":
        part = draw(st.sampled_from(sorted(WRONG_ARRAY_PARTS)))
        set_path(payload, f"{draw(st.sampled_from(ARRAYS))}.{part}", draw(st.sampled_from(WRONG_ARRAY_PARTS[part])))
    if kind in ("drop", "retype", "array"):
        lines[index] = json.dumps(payload)
    elif kind == "non-object":
        lines[index] = draw(st.sampled_from(NON_OBJECTS))
    elif kind == "cut":  # a cut line that is not the last one is corruption, not a crash
        index = draw(st.integers(0, len(lines) - 2))
        lines[index] = lines[index][: draw(st.integers(1, len(lines[index]) - 1))]
    else:
        lines[index] = draw(st.binary(min_size=1, max_size=8).filter(lambda raw: b"\n" not in raw)) + b"\xff"
    return lines, index + 1


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(invalid_files())
def test_every_invalid_file_ends_with_one_line_naming_its_line(case: tuple[list[str | bytes], int]) -> None:
    lines, line_number = case
    with tempfile.TemporaryDirectory() as folder:
        path = write_lines(Path(folder) / "run.jsonl", lines)
        for command in (["evaluate", path], ["report", path, "--out", Path(folder) / "out"]):
            message = trac_failure(*command)
            assert f"{path}:{line_number}: " in message, message


# --------------------------------------------------------------------------------------- array values
def with_array(path: str, values: list[float], dtype: str) -> Callable[[dict[str, Any]], None]:
    """A change of the stored array at ``path`` to ``values`` (of ``dtype``, the shape kept when it fits)."""

    def change(payload: dict[str, Any]) -> None:
        parent, key = holder(payload, path)
        stored = parent[key]
        shape = stored["shape"] if math.prod(stored["shape"]) == len(values) else [len(values)]
        set_path(payload, path, encode_array(np.reshape(values, shape), np.dtype(dtype).type))

    return change


N_PROBE = VALID[1]["probes"]["trace"]["token_ids"]["shape"][0]
BAD_VALUES = {
    "nan logprob": (
        with_array("token_logprobs", [-0.5, float("nan")] + [-0.5] * (N_TOKENS - 2), "<f4"),
        "'token_logprobs' must hold finite log-probabilities <= 0, got nan at index 1",
    ),
    "inf logprob": (
        with_array("token_logprobs", [float("-inf")] * N_TOKENS, "<f4"),
        "'token_logprobs' must hold finite log-probabilities <= 0, got -inf at index 0",
    ),
    "positive logprob": (with_array("token_logprobs", [0.25] * N_TOKENS, "<f4"), "got 0.25 at index 0"),
    "nan entropy": (with_array("topk_entropy", [float("nan")] * N_TOKENS, "<f2"), "'topk_entropy' must hold finite"),
    "negative entropy": (with_array("topk_entropy", [-1.0] * N_TOKENS, "<f2"), "entropies >= 0, got -1.0 at index 0"),
    "inf mean logprob": (
        with_array("topk_mean_logprob", [float("inf")] * N_TOKENS, "<f2"),
        "'topk_mean_logprob' must hold finite log-probabilities <= 0, got inf",
    ),
    "negative token id": (with_array("token_ids", [-5] * N_TOKENS, "<i4"), "token ids >= 0, got -5 at index 0"),
    "probe nan logprob": (
        with_array("probes.trace.token_logprobs", [float("nan")] * N_PROBE, "<f4"),
        "'probes.trace.token_logprobs' must hold finite log-probabilities <= 0, got nan at index 0",
    ),
    "probe +inf top logprob": (
        with_array("probes.trace.top_logprobs", [float("inf")] * (N_PROBE * 5), "<f4"),
        "'probes.trace.top_logprobs' must hold log-probabilities <= 0 or -inf (padding), got inf at index [0, 0]",
    ),
}


@pytest.mark.parametrize("case", BAD_VALUES)
def test_a_non_finite_or_out_of_range_array_value_is_one_line_naming_file_line_and_field(
    case: str, tmp_path: Path
) -> None:
    mutate, expected = BAD_VALUES[case]
    payload = copy.deepcopy(VALID[1])
    mutate(payload)
    path = write_lines(tmp_path / "run.jsonl", [VALID[0], payload, *VALID[2:]])
    for command in (["evaluate", path], ["report", path, "--out", tmp_path / "out"]):
        message = trac_failure(*command)
        assert f"{path}:2: malformed record: " in message and expected in message, message


def test_the_vocabulary_means_of_an_hf_run_round_trip_and_are_written_only_when_present(tmp_path: Path) -> None:
    """docs/architecture.md#response-fields: ``vocabulary_mean_logprob`` is stored where the engine gave it, checked
    like the other log-probabilities, one per generated token."""
    plain = make_record()
    assert "vocabulary_mean_logprob" not in plain.to_dict()
    means = np.full(plain.num_tokens, -9.5, dtype=np.float32)
    full = replace(plain, vocabulary_mean_logprob=means)
    RecordWriter(tmp_path / "run.jsonl").write_batch([full])
    (read,) = iter_records(tmp_path / "run.jsonl")
    np.testing.assert_array_equal(read.vocabulary_mean_logprob, means)
    with pytest.raises(RecordFormatError, match="vocabulary_mean_logprob has shape"):
        replace(plain, vocabulary_mean_logprob=means[:-1])
    with pytest.raises(RecordFormatError, match="vocabulary_mean_logprob"):
        replace(plain, vocabulary_mean_logprob=np.full(plain.num_tokens, 0.5))
