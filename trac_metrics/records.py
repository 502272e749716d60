"""The immutable per-response record: everything TrAC needs, stored once at generation time (SPEC §1–3).

A run writes one JSON object per line (JSONL), one line per generated response, flushed as batches complete.
Each object carries ``"schema": "trac-record/1"``. Per-token arrays are stored compactly as
``{"dtype": "<f4", "b64": "<base64 of the little-endian bytes>"}``:

=====================  =========  =====================================================================
field                  dtype      meaning (T = generated tokens of the response)
=====================  =========  =====================================================================
``token_ids``          int32[T]   the generated token ids, exactly as decoded (probes are built from them)
``token_logprobs``     float32[T] λ_t, log-probability of the chosen token (TUP, mean logprob)
``topk_entropy``       float16[T] η_t, entropy of the renormalized top-k distribution (TUP)
``topk_mean_logprob``  float16[T] mean of the top-k logprobs (DeepConf confidence, self-certainty)
=====================  =========  =====================================================================

That is 12 bytes per generated token before base64 (16 after). A probe (:class:`ProbeRecord`) keeps its raw
decoded suffix, token ids, chosen-token logprobs, top-k logprobs, the number of prompt tokens served from the
prefix cache and its finish reason. Labels are not stored: they are derived from ``answer`` and ``reference``
with the answer normalizer in force, so a changed normalizer never requires regeneration.

Run-level fields (optional, so older records still read): ``num_samples`` (K, the responses of the question:
a reader knows a question is complete without reading the whole file), ``decoding`` (``temperature`` and
``top_p`` of the primary generation, ``probe_temperature``) and ``timing`` (engine seconds attributed to this
response: ``generation_seconds``, ``p_true_seconds``; each probe has its own ``seconds``).
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA = "trac-record/1"

PROBE_VARIANTS = ("trace", "question_only", "shuffled_trace", "teacher_forced")
"""The probe on the completed trace (SPEC §2) and the three ablation variants built on the same code path."""

_RESPONSE_ARRAYS = {
    "token_ids": np.int32,
    "token_logprobs": np.float32,
    "topk_entropy": np.float16,
    "topk_mean_logprob": np.float16,
}
_PROBE_ARRAYS = {"token_ids": np.int32, "token_logprobs": np.float32, "top_logprobs": np.float32}


def _store_as_stored(record: object, arrays: Mapping[str, type]) -> None:
    """Hold the per-token arrays in their storage dtypes, so a record built in memory (what lm-eval's aggregation
    reads) and the same record read back from its file (what ``trac report`` reads) give identical features."""
    for name, dtype in arrays.items():
        object.__setattr__(record, name, np.asarray(getattr(record, name), dtype=dtype))


class RecordFormatError(ValueError):
    """A stored record cannot be read: unknown schema version, missing field or malformed array."""


def encode_array(values: np.ndarray, dtype: type) -> dict[str, Any]:
    """Encode an array as ``{"dtype", "shape", "b64"}`` with little-endian bytes of ``dtype``."""
    array = np.ascontiguousarray(values, dtype=np.dtype(dtype).newbyteorder("<"))
    return {"dtype": array.dtype.str, "shape": list(array.shape), "b64": base64.b64encode(array.tobytes()).decode()}


def decode_array(payload: Mapping[str, Any], dtype: type, name: str) -> np.ndarray:
    """Decode :func:`encode_array`'s output back to an array of ``dtype`` (native byte order)."""
    try:
        raw = base64.b64decode(payload["b64"], validate=True)
        array = np.frombuffer(raw, dtype=np.dtype(payload["dtype"])).reshape(payload["shape"])
    except (KeyError, TypeError, ValueError) as error:
        raise RecordFormatError(f"field {name!r} is not a valid encoded array: {error}") from error
    return array.astype(dtype)


@dataclass(frozen=True)
class ProbeRecord:
    """One answer probe (SPEC §2): the greedy ≤16-token suffix decoded after ``prefix + marker + cue``.

    ``answer_token_count`` is L, the number of leading decoded tokens that spell the re-stated answer ã (the
    closing brace and EOS excluded); ``token_logprobs[:L]`` feed ℓ, ℓ_min, ℓ_head and ``token_logprobs[0]`` is c1.
    ``finish_reason`` is ``"stop"`` (closing brace), ``"eos"``, ``"length"`` or ``"teacher_forced"``.
    """

    variant: str
    appended_text: str
    text: str
    answer: str | None
    token_ids: np.ndarray
    token_logprobs: np.ndarray
    top_logprobs: np.ndarray
    answer_token_count: int
    finish_reason: str
    num_prompt_tokens: int
    num_cached_tokens: int | None
    seconds: float | None = None

    def __post_init__(self) -> None:
        _store_as_stored(self, _PROBE_ARRAYS)
        if self.variant not in PROBE_VARIANTS:
            raise RecordFormatError(f"unknown probe variant {self.variant!r}; expected one of {PROBE_VARIANTS}")
        n_tokens = len(self.token_ids)
        if len(self.token_logprobs) != n_tokens:
            raise RecordFormatError(
                f"probe has {n_tokens} token ids but {len(self.token_logprobs)} token logprobs"
            )
        if not 0 <= self.answer_token_count <= n_tokens:
            raise RecordFormatError(
                f"probe answer_token_count {self.answer_token_count} outside 0..{n_tokens}"
            )

    @property
    def answer_logprobs(self) -> np.ndarray:
        """Logprobs of the tokens of ã (length L)."""
        return np.asarray(self.token_logprobs[: self.answer_token_count], dtype=np.float64)

    @property
    def first_token_logprob(self) -> float:
        """c1: logprob of the first decoded token, NaN when nothing was decoded."""
        return float(self.token_logprobs[0]) if len(self.token_logprobs) else float("nan")


@dataclass(frozen=True)
class ResponseRecord:
    """One generated response of one question, with the token summaries and probes TrAC needs (SPEC §1)."""

    task: str
    doc_id: int | str
    repeat: int
    model: str
    answer_kind: str
    prompt_token_count: int
    text: str
    answer: str | None
    reference: str | None
    finish_reason: str
    top_k: int
    token_ids: np.ndarray
    token_logprobs: np.ndarray
    topk_entropy: np.ndarray
    topk_mean_logprob: np.ndarray
    probes: Mapping[str, ProbeRecord] = field(default_factory=dict)
    p_true: float | None = None
    timing: Mapping[str, float] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    num_samples: int | None = None
    decoding: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _store_as_stored(self, _RESPONSE_ARRAYS)
        lengths = {name: len(getattr(self, name)) for name in _RESPONSE_ARRAYS}
        if len(set(lengths.values())) != 1:
            raise RecordFormatError(f"per-token arrays of {self.task}/{self.doc_id} differ in length: {lengths}")
        for name, probe in self.probes.items():
            if name != probe.variant:
                raise RecordFormatError(f"probe stored under {name!r} has variant {probe.variant!r}")

    @property
    def key(self) -> tuple[str, str, int]:
        """(task, doc id, repeat index): unique within a run; repeat 0 is the primary response."""
        return (self.task, str(self.doc_id), self.repeat)

    @property
    def num_tokens(self) -> int:
        """T, the number of generated tokens."""
        return len(self.token_ids)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-serializable form documented in this module's docstring."""
        out: dict[str, Any] = {"schema": SCHEMA}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if item.name in _RESPONSE_ARRAYS:
                out[item.name] = encode_array(value, _RESPONSE_ARRAYS[item.name])
            elif item.name == "probes":
                out["probes"] = {name: _probe_to_dict(probe) for name, probe in value.items()}
            else:
                out[item.name] = dict(value) if isinstance(value, Mapping) else value
        return out

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> ResponseRecord:
        """Inverse of :meth:`to_dict`; a record of another schema version fails with :class:`RecordFormatError`."""
        schema = payload.get("schema")
        if schema != SCHEMA:
            raise RecordFormatError(
                f"record schema {schema!r} is not supported by this version of trac-eval (it reads {SCHEMA!r}); "
                "re-run the generation or use the trac-eval version that wrote it"
            )
        names = {item.name for item in dataclasses.fields(cls)}
        required = {item.name for item in dataclasses.fields(cls) if item.default is dataclasses.MISSING
                    and item.default_factory is dataclasses.MISSING}
        missing = required - payload.keys()
        if missing:
            raise RecordFormatError(f"record is missing fields {sorted(missing)}")
        values = {name: payload[name] for name in names if name in payload}
        for name, dtype in _RESPONSE_ARRAYS.items():
            values[name] = decode_array(payload[name], dtype, name)
        values["probes"] = {name: _probe_from_dict(probe) for name, probe in payload.get("probes", {}).items()}
        return cls(**values)


def _probe_to_dict(probe: ProbeRecord) -> dict[str, Any]:
    out = dataclasses.asdict(probe)
    for name, dtype in _PROBE_ARRAYS.items():
        out[name] = encode_array(getattr(probe, name), dtype)
    return out


def _probe_from_dict(payload: Mapping[str, Any]) -> ProbeRecord:
    values = dict(payload)
    for name, dtype in _PROBE_ARRAYS.items():
        if name not in values:
            raise RecordFormatError(f"probe record is missing field {name!r}")
        values[name] = decode_array(values[name], dtype, f"probe.{name}")
    try:
        return ProbeRecord(**values)
    except TypeError as error:
        raise RecordFormatError(f"malformed probe record: {error}") from error


class RecordWriter:
    """Appends records to a JSONL file, one batch at a time, so a crash loses no finished response."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def write_batch(self, records: Iterable[ResponseRecord]) -> None:
        """Append ``records``; the file is closed (hence flushed) before this returns."""
        lines = [json.dumps(record.to_dict(), ensure_ascii=False) + "\n" for record in records]
        with self.path.open("a", encoding="utf-8") as handle:
            handle.writelines(lines)


def iter_records(path: str | Path) -> Iterator[ResponseRecord]:
    """Stream the records of a JSONL file one at a time (the file is never held in memory whole).

    A malformed line fails with :class:`RecordFormatError` naming the file and line number; a truncated last line
    (a run killed mid-write) is reported the same way rather than skipped silently.
    """
    with Path(path).open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield ResponseRecord.from_dict(json.loads(line))
            except (json.JSONDecodeError, RecordFormatError) as error:
                raise RecordFormatError(f"{path}:{line_number}: {error}") from error
