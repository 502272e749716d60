"""The immutable per-response record: everything TrAC needs, stored once at generation time
(docs/architecture.md#record-schema).

A run writes one JSON object per line (JSONL), one line per generated response, flushed as batches complete.
Each object carries ``"schema": "trac-record/2"``; records of ``trac-record/1`` (written before the probe read the
paper's context) are still read, their probes marked as having read the whole generation (:data:`LEGACY_SCHEMA`).
Per-token arrays are stored compactly as
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
prefix cache, its finish reason, and its ``context``: what of the response its prompt held (the reasoning, the
response cut before its answer, the whole response, ...: :data:`PROBE_CONTEXTS`) with ``context_tokens``, how many of
the response's generated tokens. Labels are not stored: they are derived from ``answer`` and ``reference``
with the answer normalizer in force, so a changed normalizer never requires regeneration. The exception is a
response of an lm-eval task run with ``--metadata trac`` (docs/method.md#task-scored-labels): ``label`` holds the
task's own per-sample score and ``label_source`` its results key (``exact_match,strict-match``). ``labeller`` names
the relation that labels the record's answers when it is not trac-eval's checker: ``math-verify`` for a task run
with the ``labels: math-verify`` switch (docs/method.md#labels); a record without it is labelled by the checker.

Run-level fields (optional, so older records still read): ``num_samples`` (K, the responses of the question: a reader
knows a question is complete without reading the whole file), ``decoding`` (``temperature`` and ``top_p`` of the
primary generation, its sampling ``top_k`` when one limited it, ``probe_temperature``) and ``timing`` (engine seconds
attributed to this response: ``generation_seconds``, ``p_true_seconds``; each probe has its own ``seconds``),
``marker`` (the end-of-thinking marker the run used, ``""`` for none) and ``generated_text`` (the whole decoded
generation, kept only when lm-eval's post-processing, e.g. its ``think_end_token`` stripping, made ``text`` differ
from it). ``prefix_probes`` (written only when the ``prefix_probes`` switch ran them, docs/method.md#prefix-probes)
holds the answer probes after the trace cut at fractions of its reasoning: probe objects of variant ``prefix``, each
with its ``fraction`` and the ``trace_tokens`` it kept, in increasing order of fraction. ``reasoning_tokens`` is R,
how many leading generated tokens are the response's reasoning: those before its last end-of-thinking marker, all of
its tokens but a closing end-of-sequence token when it has no marker (trace length, docs/method.md#trace-length).
``answer_tokens`` (written when set) is [start, end) of the generated tokens that spell the extracted answer
(docs/method.md#answer-token-log-probability).

Reading (:func:`iter_records`) checks every field against this schema, so a malformed record fails with
:class:`RecordFormatError` naming the file, line and field, never deeper in a computation; a last line cut off by
a crash is skipped with a warning. The arrays' values are part of the schema (:data:`_ARRAY_VALUES`): token ids are
non-negative; ``token_logprobs`` (response and probe) and ``topk_mean_logprob`` are finite and ≤ 0; ``topk_entropy``
is finite and ≥ 0; a probe's ``top_logprobs`` are ≤ 0, -inf being the padding of a position with fewer than k
(never NaN or +inf). Every string of a record (dictionary keys included) must be Unicode text: a lone surrogate
(``"\\ud800"``, which JSON can spell but no UTF-8 page can hold) is refused; ``metadata``, ``timing`` and
``decoding`` hold finite numbers only (JSON has no NaN: a record built with a non-finite metadata value, a missing
value of its dataset, stores it as null); a ``doc_id`` is an integer or a string of at most :data:`MAX_DOC_ID_CHARS`
characters. Writing (:class:`RecordWriter`) checks each record with the same reader, so a record that would be
refused on reading is never written.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trac_metrics._warnings import TracWarning

SCHEMA = "trac-record/2"
LEGACY_SCHEMA = "trac-record/1"
"""The schema before the paper's probe context (docs/architecture.md#record-schema): its probes continued the whole
generation, the answer the response wrote included. Still read; its probes' ``context`` is inferred
(:data:`AFTER_ANSWER`), their ``context_tokens`` unknown (None)."""

BUILT_IN_LABELLER = "trac"
MATH_VERIFY_LABELLER = "math-verify"
LABELLERS = (BUILT_IN_LABELLER, MATH_VERIFY_LABELLER)
"""Who labels a run's answers (docs/method.md#labels): trac-eval's checker, or Math-Verify's default verdict (the
labeller of lm-eval's Math-Verify-labelled tasks)."""

CUE_VARIANTS = ("cue_answer", "cue_therefore")
"""The trace probe with an equivalent cue in place of the task's (docs/method.md#cue-variants)."""
PROBE_VARIANTS = ("trace", "question_only", "shuffled_trace", "teacher_forced", "after_answer", *CUE_VARIANTS)
"""The probe on the completed trace (docs/method.md#the-answer-probe) and the ablation variants built on the same code
path (docs/method.md#probe-variants): the controls, the last of them the one that restates after the answer, and the
cue variants."""
PREFIX_VARIANT = "prefix"
"""The variant of a probe after a partial trace (docs/method.md#prefix-probes), stored in ``prefix_probes``."""

REASONING, CUT_BEFORE_ANSWER, WHOLE = "reasoning", "cut_before_answer", "whole"
AFTER_ANSWER, PREFIX_CONTEXT, QUESTION_CONTEXT = "after_answer", "prefix", "question"
RESPONSE_CONTEXTS = (REASONING, CUT_BEFORE_ANSWER, WHOLE)
"""What of its response the paper's probe Q(x, r) reads (docs/method.md#probe-prompt): the reasoning before the last
end-of-thinking marker; a response without a thinking section cut before its final answer statement; the whole
response when it has no answer to leave out (a thinking section cut off at the token limit, or no answer statement)."""
PROBE_CONTEXTS = (*RESPONSE_CONTEXTS, AFTER_ANSWER, PREFIX_CONTEXT, QUESTION_CONTEXT)
"""Every probe context a record may name: the three of :data:`RESPONSE_CONTEXTS`, ``after_answer`` (the whole
generation, the written answer included: the ``after_answer`` control, and every probe of a
:data:`LEGACY_SCHEMA` record but a question-only or prefix one), ``prefix`` (a partial reasoning,
docs/method.md#prefix-probes) and ``question`` (no response at all, the ``question_only`` control)."""
VARIANT_CONTEXTS = {
    "trace": (*RESPONSE_CONTEXTS, AFTER_ANSWER),
    "teacher_forced": (*RESPONSE_CONTEXTS, AFTER_ANSWER),
    "shuffled_trace": (*RESPONSE_CONTEXTS, AFTER_ANSWER),
    "after_answer": (AFTER_ANSWER,),
    **{variant: RESPONSE_CONTEXTS for variant in CUE_VARIANTS},
    "question_only": (QUESTION_CONTEXT,),
    PREFIX_VARIANT: (PREFIX_CONTEXT,),
}
"""The contexts each variant's probe may have read (``after_answer`` for the trace-based ones only in
:data:`LEGACY_SCHEMA` records)."""

_RESPONSE_ARRAYS = {
    "token_ids": np.int32,
    "token_logprobs": np.float32,
    "topk_entropy": np.float16,
    "topk_mean_logprob": np.float16,
}
_PROBE_ARRAYS = {"token_ids": np.int32, "token_logprobs": np.float32, "top_logprobs": np.float32}
_OPTIONAL_ARRAYS = {"vocabulary_mean_logprob": np.float32}
"""Per-token arrays a record holds only where its engine gave them (docs/architecture.md#per-token-arrays)."""


@dataclass(frozen=True)
class _Values:
    """What every element of a stored array must be: ``accepts`` maps an array to an element-wise boolean mask,
    ``description`` says it in an error."""

    description: str
    accepts: Callable[[np.ndarray], np.ndarray]


_TOKEN_IDS = _Values("token ids >= 0", lambda values: values >= 0)
_LOGPROBS = _Values("finite log-probabilities <= 0", lambda values: np.isfinite(values) & (values <= 0))
_PADDED_LOGPROBS = _Values("log-probabilities <= 0 or -inf (padding)", lambda values: ~np.isnan(values) & (values <= 0))
_ENTROPIES = _Values("finite entropies >= 0", lambda values: np.isfinite(values) & (values >= 0))
_ARRAY_VALUES = {
    "token_ids": _TOKEN_IDS,
    "token_logprobs": _LOGPROBS,
    "vocabulary_mean_logprob": _LOGPROBS,
    "topk_entropy": _ENTROPIES,
    "topk_mean_logprob": _LOGPROBS,
    "top_logprobs": _PADDED_LOGPROBS,
}
"""The values each per-token array (response or probe, by name) must hold (docs/architecture.md#per-token-arrays)."""


def _check_values(array: np.ndarray, name: str) -> None:
    """Raise :class:`RecordFormatError` naming the field and the first element that breaks :data:`_ARRAY_VALUES`."""
    expected = _ARRAY_VALUES[name.rsplit(".", 1)[-1]]
    bad = np.argwhere(~expected.accepts(array))
    if bad.size:
        index = tuple(int(i) for i in bad[0])
        where = index[0] if len(index) == 1 else list(index)
        raise RecordFormatError(f"field {name!r} must hold {expected.description}, got {array[index]} at index {where}")


def _store_as_stored(record: object, arrays: Mapping[str, type]) -> None:
    """Hold the per-token arrays in their storage dtypes, so a record built in memory (what lm-eval's aggregation
    reads) and the same record read back from its file (what ``trac report`` reads) give identical features."""
    for name, dtype in arrays.items():
        object.__setattr__(record, name, np.asarray(getattr(record, name), dtype=dtype))


class RecordFormatError(ValueError):
    """A stored record cannot be read: a corrupt line, a missing field, a field of the wrong type, a malformed
    array, or (:class:`RecordSchemaError`) another schema version."""


class RecordSchemaError(RecordFormatError):
    """A record of another schema version than :data:`SCHEMA` (written by another version of trac-eval)."""


def encode_array(values: np.ndarray, dtype: type) -> dict[str, Any]:
    """Encode an array as ``{"dtype", "shape", "b64"}`` with little-endian bytes of ``dtype``."""
    array = np.ascontiguousarray(values, dtype=np.dtype(dtype).newbyteorder("<"))
    return {"dtype": array.dtype.str, "shape": list(array.shape), "b64": base64.b64encode(array.tobytes()).decode()}


def decode_array(payload: Any, dtype: type, name: str) -> np.ndarray:
    """Decode :func:`encode_array`'s output back to an array of ``dtype`` (native byte order).

    The stored dtype must be numeric (integer or float, any byte order) and safely castable to ``dtype``, so text
    or Python objects are never decoded; the shape must be a list of non-negative integers that the bytes fill
    exactly. Anything else fails with :class:`RecordFormatError` naming the field ``name``.
    """
    if not isinstance(payload, Mapping) or not {"dtype", "shape", "b64"} <= payload.keys():
        raise RecordFormatError(f"field {name!r} must be an encoded array {{dtype, shape, b64}}, got {_short(payload)}")
    stored = _numeric_dtype(payload["dtype"])
    if stored is None or not np.can_cast(stored, dtype, casting="safe"):
        raise RecordFormatError(
            f"field {name!r} has dtype {_short(payload['dtype'])}; expected a numeric dtype "
            f"castable to {np.dtype(dtype).newbyteorder('<').str}"
        )
    shape = payload["shape"]
    if not isinstance(shape, list) or not all(_is_int(size) and size >= 0 for size in shape):
        raise RecordFormatError(f"field {name!r} has shape {_short(shape)}; expected a list of non-negative integers")
    try:
        raw = base64.b64decode(payload["b64"], validate=True)
    except (TypeError, ValueError) as error:
        raise RecordFormatError(f"field {name!r} is not valid base64: {error}") from error
    if len(raw) != math.prod(shape) * stored.itemsize:
        raise RecordFormatError(
            f"field {name!r} holds {len(raw)} bytes; shape {shape} of {stored.str} needs "
            f"{math.prod(shape) * stored.itemsize}"
        )
    try:
        return np.frombuffer(raw, dtype=stored).reshape(shape).astype(dtype)
    except ValueError as error:  # a shape numpy cannot represent (too many dimensions, a dimension too large)
        raise RecordFormatError(f"field {name!r} has shape {_short(shape)}: {error}") from error


def _numeric_dtype(name: Any) -> np.dtype | None:
    """The integer or float dtype a stored dtype string names, else None."""
    if not isinstance(name, str):
        return None
    try:
        dtype = np.dtype(name)
    except (TypeError, ValueError):  # not a dtype name
        return None
    return dtype if dtype.kind in "iuf" else None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    """An int or a float (not a bool) that a float can hold: an integer beyond 1.8e308 is not a number of a record."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _short(value: Any) -> str:
    """A stored value as its JSON text, cut to 40 characters, for an error message (a stored text can be long)."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr, skipkeys=True)
    except (ValueError, RecursionError):  # an integer of over 4,300 digits, a value nested too deeply
        return f"<a {type(value).__name__} too large to print>"
    return text if len(text) <= 40 else f"{text[:37]}..."


def _id_text(value: Any) -> str:
    """A task name or document id for a one-line error message: cut to 40 characters, quoted with its line breaks and
    other unprintable characters escaped when it has any (an integer Python refuses to print is named)."""
    try:
        text = str(value)
    except ValueError:  # an integer of over 4,300 digits
        return "<an integer too long to print>"
    text = text if len(text) <= 40 else f"{text[:37]}..."
    return text if text.isprintable() else repr(text)


@dataclass(frozen=True)
class _Expected:
    """What a stored scalar field must hold: ``accepts`` tests a JSON value, ``description`` says it in an error."""

    description: str
    accepts: Callable[[Any], bool]

    def or_null(self) -> _Expected:
        """The same expectation, JSON null also accepted."""
        return _Expected(f"{self.description} or null", lambda value: value is None or self.accepts(value))


MAX_COUNT = 2**53
"""The largest count (of tokens, samples, repeats) a record may state: above it a float, in which the report sums and
divides counts, no longer holds every integer (docs/guide/reliability.md#numbers-a-report-can-use)."""
MAX_SECONDS = 1e12
"""The longest engine time a record may state, in seconds (some 31,700 years): a larger one is a broken clock, and
its latency ratio would swamp every other (docs/guide/reliability.md#numbers-a-report-can-use)."""


def _is_seconds(value: Any) -> bool:
    """A finite number of seconds in [0, :data:`MAX_SECONDS`] (NaN fails the comparison)."""
    return _is_number(value) and 0.0 <= float(value) <= MAX_SECONDS


_STRING = _Expected("a string", lambda value: isinstance(value, str))
_COUNT = _Expected(
    f"a non-negative integer of at most 2**53 ({MAX_COUNT})", lambda value: _is_int(value) and 0 <= value <= MAX_COUNT
)
_POSITIVE = _Expected(
    f"a positive integer of at most 2**53 ({MAX_COUNT})", lambda value: _is_int(value) and 1 <= value <= MAX_COUNT
)
_NUMBER = _Expected("a number", _is_number)
_SECONDS = _Expected(f"a number of seconds in [0, {MAX_SECONDS:g}]", _is_seconds)
_OBJECT = _Expected("a JSON object", lambda value: isinstance(value, Mapping))
_BOOL = _Expected("true or false", lambda value: isinstance(value, bool))
_WRITTEN_WHEN_SET = ("label", "label_source", "labeller", "reasoning_tokens", "answer_tokens")
"""Fields written only when set (task-scored records, runs labelled by Math-Verify), so other records stay byte for
byte as before."""
DECODING_TOP_K = "top_k"
"""The key of ``decoding`` that holds the primary generation's sampling top-k (a positive integer): written only when
the primary sampled with a top-k that limits it, so a record without it, older ones included, sampled from every
token (docs/architecture.md#response-fields)."""
_DECODING = _Expected(
    f"a JSON object of finite numbers, its {DECODING_TOP_K!r} a positive integer",
    lambda value: (
        isinstance(value, Mapping)
        and all(_is_number(item) and math.isfinite(float(item)) for item in value.values())
        and (DECODING_TOP_K not in value or _POSITIVE.accepts(value[DECODING_TOP_K]))
    ),
)
MAX_DOC_ID_CHARS = 1000
"""The longest document id a record may carry, in characters (digits of an integer id): longer ones are refused when
read, as no dataset index needs them and Python refuses to print an integer of over 4,300 digits."""
_DOC_ID = _Expected(
    f"an integer or a string of at most {MAX_DOC_ID_CHARS} characters",
    lambda value: (
        (isinstance(value, str) and len(value) <= MAX_DOC_ID_CHARS)
        or (_is_int(value) and abs(value) < 10**MAX_DOC_ID_CHARS)
    ),
)
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class _LongInteger:
    """What the reader holds for a JSON integer of more than :data:`MAX_DOC_ID_CHARS` digits (Python's ``int`` refuses
    to read one of over 4,300): a value no field accepts, so the error names the field."""

    digits: int

    def __repr__(self) -> str:
        return f"an integer of {self.digits} digits"


def _parse_int(digits: str) -> int | _LongInteger:
    return int(digits) if len(digits) <= MAX_DOC_ID_CHARS else _LongInteger(len(digits.lstrip("-")))


_PROBE_FIELDS = {
    "variant": _STRING,
    "context": _Expected(f"one of {PROBE_CONTEXTS}", lambda value: value in PROBE_CONTEXTS),
    "context_tokens": _COUNT.or_null(),
    "appended_text": _STRING,
    "text": _STRING,
    "answer": _STRING.or_null(),
    "answer_token_count": _COUNT,
    "finish_reason": _STRING,
    "num_prompt_tokens": _COUNT,
    "num_cached_tokens": _COUNT.or_null(),
    "seconds": _SECONDS.or_null(),
    "fraction": _NUMBER.or_null(),
    "trace_tokens": _COUNT.or_null(),
}
_PREFIX_FIELDS = ("fraction", "trace_tokens")
"""The fields only a prefix probe has (written only for it, so other probes are stored as before)."""
_RESPONSE_FIELDS = {
    "task": _STRING,
    "doc_id": _DOC_ID,
    "repeat": _COUNT,
    "model": _STRING,
    "answer_kind": _STRING,
    "prompt_token_count": _COUNT,
    "text": _STRING,
    "answer": _STRING.or_null(),
    "reference": _Expected(
        "a string or a non-empty list of strings (aliases, any of which matches)",
        lambda value: (
            isinstance(value, str)
            or (isinstance(value, list) and bool(value) and all(isinstance(alias, str) for alias in value))
        ),
    ).or_null(),
    "finish_reason": _STRING,
    "top_k": _POSITIVE,
    "probes": _OBJECT,
    "p_true": _NUMBER.or_null(),
    "timing": _Expected(
        f"a JSON object of numbers of seconds in [0, {MAX_SECONDS:g}]",
        lambda value: isinstance(value, Mapping) and all(_is_seconds(item) for item in value.values()),
    ),
    "metadata": _OBJECT,
    "num_samples": _POSITIVE.or_null(),
    "decoding": _DECODING,
    "marker": _STRING.or_null(),
    "generated_text": _STRING.or_null(),
    "label": _BOOL.or_null(),
    "label_source": _STRING.or_null(),
    "labeller": _Expected(f"one of {LABELLERS}", lambda value: value in LABELLERS).or_null(),
    "prefix_probes": _Expected("a list of probe objects", lambda value: isinstance(value, list)),
    "reasoning_tokens": _COUNT.or_null(),
    "answer_tokens": _Expected(
        "a [start, end] pair of token indices",
        lambda value: isinstance(value, list) and len(value) == 2 and all(_COUNT.accepts(item) for item in value),
    ).or_null(),
}
"""The schema of the scalar and mapping fields (the arrays are :data:`_RESPONSE_ARRAYS`, :data:`_PROBE_ARRAYS`)."""


def _read_fields(
    payload: Any, cls: type, scalars: Mapping[str, _Expected], arrays: Mapping[str, type], prefix: str = ""
) -> dict[str, Any]:
    """The constructor arguments of ``cls`` from its stored JSON object, each field checked against the schema.

    Fields ``cls`` does not declare are ignored; ``prefix`` names where the object sits (``probes.trace.``).
    """
    what = f"field {prefix[:-1]!r}" if prefix else "a record"
    if not isinstance(payload, Mapping):
        raise RecordFormatError(f"{what} must be a JSON object, got {_short(payload)}")
    declared = dataclasses.fields(cls)
    missing = [
        item.name
        for item in declared
        if item.name not in payload
        and item.default is dataclasses.MISSING
        and item.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise RecordFormatError(f"{what} is missing fields {missing}")
    values: dict[str, Any] = {}
    for name in (item.name for item in declared if item.name in payload):
        value = payload[name]
        if name in arrays:
            value = decode_array(value, arrays[name], prefix + name)
            _check_values(value, prefix + name)
        elif not scalars[name].accepts(value):
            raise RecordFormatError(f"field {prefix + name!r} must be {scalars[name].description}, got {_short(value)}")
        else:
            _check_json_value(value, prefix + name, finite=name == "metadata")
        values[name] = value
    return values


def _check_json_value(value: Any, name: str, finite: bool) -> None:
    """Raise :class:`RecordFormatError` naming the field of the first string in ``value`` (a JSON value, walked
    through its objects, keys included, and lists) that holds a lone surrogate, or, when ``finite``, of the first
    number that is NaN or infinite."""
    stack = [(name, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            found = _SURROGATE.search(item)
            if found:
                raise RecordFormatError(
                    f"field {where!r} holds a lone surrogate {found.group()!r} at character {found.start()}: not "
                    "Unicode text"
                )
        elif isinstance(item, _LongInteger):
            raise RecordFormatError(f"field {where!r} holds {item!r}: too long to be a number of a record")
        elif finite and isinstance(item, float) and not math.isfinite(item):
            raise RecordFormatError(f"field {where!r} must be a finite number or null, got {item}")
        elif isinstance(item, Mapping):
            stack.extend((where, key) for key in item)
            stack.extend((f"{where}.{key}", entry) for key, entry in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((f"{where}.{index}", entry) for index, entry in reversed(list(enumerate(item))))


def _finite_or_null(value: Any) -> Any:
    """``value`` (a JSON-like value) with every non-finite float, at any depth, replaced by None (JSON's null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {key: _finite_or_null(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_null(item) for item in value]
    return value


@dataclass(frozen=True)
class ProbeRecord:
    """One answer probe (docs/method.md#probe-decoding-and-cutting): the greedy ≤16-token suffix decoded
    after ``prompt + context + marker + cue``.

    ``context`` names what of the response the probe prompt held (:data:`PROBE_CONTEXTS`, docs/method.md#probe-prompt)
    and ``context_tokens`` how many of the response's generated tokens (None: not recorded, a
    :data:`LEGACY_SCHEMA` record).

    ``answer_token_count`` is L, the number of leading decoded tokens that spell the re-stated answer ã (the
    closing brace and EOS excluded); ``token_logprobs[:L]`` feed ℓ, ℓ_min, ℓ_head and ``token_logprobs[0]`` is c1.
    ``finish_reason`` is ``"stop"`` (closing brace), ``"eos"``, ``"length"`` or ``"teacher_forced"``.
    A prefix probe (variant ``prefix``, docs/method.md#prefix-probes) also has ``fraction``, the requested fraction
    f of the reasoning tokens, and ``trace_tokens``, the reasoning tokens its partial trace kept; other probes have
    neither.
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
    context: str
    context_tokens: int | None
    seconds: float | None = None
    fraction: float | None = None
    trace_tokens: int | None = None

    def __post_init__(self) -> None:
        _store_as_stored(self, _PROBE_ARRAYS)
        if self.variant not in (*PROBE_VARIANTS, PREFIX_VARIANT):
            raise RecordFormatError(
                f"unknown probe variant {self.variant!r}; expected one of {(*PROBE_VARIANTS, PREFIX_VARIANT)}"
            )
        if self.context not in VARIANT_CONTEXTS[self.variant]:
            raise RecordFormatError(
                f"a probe of variant {self.variant!r} reads one of the contexts {VARIANT_CONTEXTS[self.variant]}, got "
                f"{self.context!r}"
            )
        for name in ("context_tokens", "num_cached_tokens"):
            count = getattr(self, name)
            if count is not None and count > self.num_prompt_tokens:
                raise RecordFormatError(f"probe {name} {count} exceeds its {self.num_prompt_tokens} prompt tokens")
        is_prefix = self.variant == PREFIX_VARIANT
        if is_prefix != (self.fraction is not None) or is_prefix != (self.trace_tokens is not None):
            raise RecordFormatError(
                f"a probe of variant {PREFIX_VARIANT!r} has a fraction and trace_tokens, any other probe neither; got "
                f"variant {self.variant!r}, fraction {self.fraction!r}, trace_tokens {self.trace_tokens!r}"
            )
        if is_prefix and not 0 < self.fraction < 1:
            raise RecordFormatError(f"a prefix probe's fraction must be in (0, 1), got {self.fraction!r}")
        if self.token_ids.ndim != 1 or self.token_logprobs.ndim != 1:
            raise RecordFormatError(
                f"probe token_ids and token_logprobs must be one-dimensional, got shapes "
                f"{self.token_ids.shape} and {self.token_logprobs.shape}"
            )
        n_tokens = len(self.token_ids)
        if len(self.token_logprobs) != n_tokens:
            raise RecordFormatError(f"probe has {n_tokens} token ids but {len(self.token_logprobs)} token logprobs")
        if not 0 <= self.answer_token_count <= n_tokens:
            raise RecordFormatError(f"probe answer_token_count {self.answer_token_count} outside 0..{n_tokens}")

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
    """One generated response of one question, with the token summaries and probes TrAC needs
    (docs/architecture.md#response-fields)."""

    task: str
    doc_id: int | str
    repeat: int
    model: str
    answer_kind: str
    prompt_token_count: int
    text: str
    answer: str | None
    reference: str | tuple[str, ...] | None
    """The reference answer a*, or the aliases of a task whose target is a list of acceptable answers (stored as a
    JSON list; any alias matches, docs/method.md#labels)."""
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
    marker: str | None = None
    generated_text: str | None = None
    label: bool | None = None
    label_source: str | None = None
    labeller: str | None = None
    prefix_probes: tuple[ProbeRecord, ...] = ()
    reasoning_tokens: int | None = None
    answer_tokens: tuple[int, int] | None = None
    vocabulary_mean_logprob: np.ndarray | None = None
    """Per generated token, the mean log-probability over the whole vocabulary (float32[T]), where the engine had the
    full distribution (the HF backend): the input of the full-vocabulary self-certainty (docs/method.md#self-certainty).
    Absent elsewhere."""

    def __post_init__(self) -> None:
        _store_as_stored(self, _RESPONSE_ARRAYS)
        if self.vocabulary_mean_logprob is not None:
            vocabulary = np.asarray(self.vocabulary_mean_logprob, dtype=np.float32)
            object.__setattr__(self, "vocabulary_mean_logprob", vocabulary)
            if vocabulary.shape != self.token_ids.shape:
                raise RecordFormatError(
                    f"record {self.task}/{self.doc_id}: vocabulary_mean_logprob has shape {vocabulary.shape}, its "
                    f"{len(self.token_ids)} generated tokens need ({len(self.token_ids)},)"
                )
            _check_values(vocabulary, "vocabulary_mean_logprob")
        object.__setattr__(self, "prefix_probes", tuple(self.prefix_probes))
        object.__setattr__(self, "metadata", _finite_or_null(self.metadata))
        if isinstance(self.reference, list):
            object.__setattr__(self, "reference", tuple(self.reference))
        if (self.label is None) != (self.label_source is None):
            raise RecordFormatError(
                f"record {self.task}/{self.doc_id}: label and label_source come together (a task-scored label names "
                f"its source), got label={self.label!r}, label_source={self.label_source!r}"
            )
        shapes = {name: getattr(self, name).shape for name in _RESPONSE_ARRAYS}
        if any(len(shape) != 1 for shape in shapes.values()):
            raise RecordFormatError(f"per-token arrays of {self.task}/{self.doc_id} must be one-dimensional: {shapes}")
        if len(set(shapes.values())) != 1:
            raise RecordFormatError(f"per-token arrays of {self.task}/{self.doc_id} differ in length: {shapes}")
        if self.reasoning_tokens is not None and self.reasoning_tokens > len(self.token_ids):
            raise RecordFormatError(
                f"record {self.task}/{self.doc_id}: reasoning_tokens {self.reasoning_tokens} exceeds its "
                f"{len(self.token_ids)} generated tokens"
            )
        if self.answer_tokens is not None:
            start, end = self.answer_tokens
            object.__setattr__(self, "answer_tokens", (int(start), int(end)))
            if not 0 <= start < end <= len(self.token_ids):
                raise RecordFormatError(
                    f"record {self.task}/{self.doc_id}: answer_tokens {[start, end]} is not a span of its "
                    f"{len(self.token_ids)} generated tokens"
                )
        for name, probe in self.probes.items():
            if name != probe.variant or name == PREFIX_VARIANT:
                raise RecordFormatError(f"probe stored under {name!r} has variant {probe.variant!r}")
        fractions = [probe.fraction for probe in self.prefix_probes]
        if any(probe.variant != PREFIX_VARIANT for probe in self.prefix_probes) or fractions != sorted(set(fractions)):
            raise RecordFormatError(
                f"prefix_probes of {self.task}/{self.doc_id} must be probes of variant {PREFIX_VARIANT!r} in strictly "
                f"increasing order of fraction, got fractions {fractions}"
            )

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
            elif item.name in _OPTIONAL_ARRAYS:
                if value is not None:  # written only where the engine gave it
                    out[item.name] = encode_array(value, _OPTIONAL_ARRAYS[item.name])
            elif item.name == "probes":
                out["probes"] = {name: _probe_to_dict(probe) for name, probe in value.items()}
            elif item.name == "prefix_probes":
                if value:  # written only when the switch ran them
                    out["prefix_probes"] = [_probe_to_dict(probe) for probe in value]
            elif item.name in _WRITTEN_WHEN_SET and value is None:
                continue
            elif isinstance(value, tuple):
                out[item.name] = list(value)
            else:
                out[item.name] = dict(value) if isinstance(value, Mapping) else value
        return out

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> ResponseRecord:
        """Inverse of :meth:`to_dict`, validating every field against the schema of this module's docstring.

        A record of another schema version fails with :class:`RecordSchemaError`; a field missing, of the wrong
        type or a malformed array with :class:`RecordFormatError` naming the field and what it must hold.
        """
        schema = payload.get("schema") if isinstance(payload, Mapping) else None
        if isinstance(payload, Mapping) and schema not in (SCHEMA, LEGACY_SCHEMA):
            raise RecordSchemaError(
                f"record schema {schema!r} is not supported by this version of trac-eval (it reads {SCHEMA!r} and "
                f"{LEGACY_SCHEMA!r}); re-run the generation or use the trac-eval version that wrote it"
            )
        legacy = schema == LEGACY_SCHEMA
        values = _read_fields(payload, cls, _RESPONSE_FIELDS, {**_RESPONSE_ARRAYS, **_OPTIONAL_ARRAYS})
        values["probes"] = {
            name: _probe_from_dict(probe, f"probes.{name}.", legacy) for name, probe in values.get("probes", {}).items()
        }
        values["prefix_probes"] = tuple(
            _probe_from_dict(probe, f"prefix_probes.{index}.", legacy)
            for index, probe in enumerate(values.get("prefix_probes", ()))
        )
        return cls(**values)


def _probe_to_dict(probe: ProbeRecord) -> dict[str, Any]:
    out = dataclasses.asdict(probe)
    for name, dtype in _PROBE_ARRAYS.items():
        out[name] = encode_array(getattr(probe, name), dtype)
    for name in _PREFIX_FIELDS:
        if out[name] is None:
            del out[name]
    return out


def _probe_from_dict(payload: Any, prefix: str, legacy: bool = False) -> ProbeRecord:
    if legacy and isinstance(payload, Mapping):
        payload = {**payload, "context": _legacy_context(payload.get("variant")), "context_tokens": None}
    fields = _read_fields(payload, ProbeRecord, _PROBE_FIELDS, _PROBE_ARRAYS, prefix)
    try:
        return ProbeRecord(**fields)
    except RecordFormatError as error:  # the probe's own checks: say which probe
        raise RecordFormatError(f"field {prefix[:-1]!r}: {error}") from None


def _legacy_context(variant: Any) -> str:
    """What a probe of a :data:`LEGACY_SCHEMA` record read: the question alone, a partial reasoning, or else the whole
    generation, the answer it wrote included (that schema's probe prompt, docs/architecture.md#record-schema)."""
    return {"question_only": QUESTION_CONTEXT, PREFIX_VARIANT: PREFIX_CONTEXT}.get(variant, AFTER_ANSWER)


class RecordWriter:
    """Appends records to a JSONL file, one batch at a time, so a crash loses no finished response."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def write_batch(self, records: Iterable[ResponseRecord]) -> None:
        """Append ``records``; the file is closed (hence flushed) before this returns.

        Each line is first read back with :meth:`ResponseRecord.from_dict`, the reader's own checks
        (docs/architecture.md#record-schema): a record that would be refused on reading raises
        :class:`RecordFormatError` naming the record and the field, and nothing of the batch is written.
        """
        lines = []
        for record in records:
            try:
                line = json.dumps(record.to_dict(), ensure_ascii=False, allow_nan=True)
                ResponseRecord.from_dict(json.loads(line, parse_int=_parse_int))
            except (RecordFormatError, TypeError, ValueError, RecursionError) as error:  # also what JSON cannot hold
                raise RecordFormatError(
                    f"{self.path}: refused to write the record of {_id_text(record.task)} doc "
                    f"{_id_text(record.doc_id)} repeat {record.repeat}, which could not be read back: {error}"
                ) from error
            lines.append(line + "\n")
        with self.path.open("a", encoding="utf-8") as handle:
            handle.writelines(lines)


def iter_records(path: str | Path) -> Iterator[ResponseRecord]:
    """Stream the records of a JSONL file one at a time (the file is never held in memory whole).

    A last line without its newline that is not valid JSON is what a run killed mid-write (or a full disk) leaves:
    it is skipped with a :class:`~trac_metrics._warnings.TracWarning` naming the file and how many complete records
    were kept. Any other unreadable line fails with :class:`RecordFormatError` naming the file and line number: a
    corrupt line followed by others, a malformed record (a field missing or of the wrong type, a bad array), or
    (:class:`RecordSchemaError`) a record of another schema version.
    """
    kept = 0
    with Path(path).open("rb") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                payload = json.loads(line, parse_int=_parse_int)
            except RecursionError:
                raise RecordFormatError(f"{path}:{line_number}: malformed record: nested too deeply") from None
            except ValueError as error:  # not JSON, not UTF-8, or an integer of over 4,300 digits
                if line.endswith(b"\n"):
                    raise RecordFormatError(f"{path}:{line_number}: corrupt line, not valid JSON ({error})") from error
                warnings.warn(
                    f"{path}: skipped its last line {line_number}, cut off mid-write (a run killed or a "
                    f"full disk); kept the {kept} complete records before it",
                    TracWarning,
                    stacklevel=2,
                )
                return
            try:
                record = ResponseRecord.from_dict(payload)
            except RecursionError:
                raise RecordFormatError(f"{path}:{line_number}: malformed record: nested too deeply") from None
            except RecordFormatError as error:
                kind = "" if isinstance(error, RecordSchemaError) else "malformed record: "
                raise type(error)(f"{path}:{line_number}: {kind}{error}") from error
            kept += 1
            yield record
