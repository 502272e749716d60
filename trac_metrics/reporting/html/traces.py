"""The primary trace of every question, kept small for the HTML report (docs/architecture.md#per-token-arrays).

:func:`primary_trace` is the ``details`` function the HTML report hands to
:func:`trac_metrics.reporting.runs.load_pairs`: in the same pass that turns each question into its evidence, it keeps
the primary response's token ids, its per-token uncertainty quantized to one byte per value (−λ_t in steps of
1/32 nat, η_t in steps of 1/64 nat, the same scale as the record's float16 η_t for every value a shading can tell
apart), its whole generated text, the end-of-thinking marker in force and the trace probe's re-stated answer. The K − 1
other responses and the top-k probe arrays are dropped, as the evidence drops them.

:func:`trace_payload` packs one question's trace for the page: a small JSON header and the byte arrays, gzip-compressed
(the page inflates a trace only when it is opened or searched, with its own small inflater: the browser's
``DecompressionStream`` costs a millisecond a call).
"""

from __future__ import annotations

import gzip
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trac_metrics.records import ResponseRecord

SURPRISAL_STEP = 1 / 32
"""−λ_t is stored as round(−λ_t / step), clipped to 255: up to 7.97 nats, finer than any shading shows."""
ENTROPY_STEP = 1 / 64
"""η_t is stored as round(η_t / step), clipped to 255: up to 3.98 nats (the top-20 entropy is at most 3.0)."""


@dataclass(frozen=True)
class PrimaryTrace:
    """What the HTML report shows of a question's primary response.

    ``token_ids`` as generated; ``surprisal`` and ``entropy`` one byte per token (:data:`SURPRISAL_STEP`,
    :data:`ENTROPY_STEP`); ``text`` the whole decoded generation (``generated_text`` when lm-eval's post-processing
    shortened ``text``); ``marker`` the end-of-thinking marker in force (``""`` none, None not recorded);
    ``probe`` the trace probe's ``appended_text``, ``text``, ``answer`` and ``finish_reason`` (None when it did not
    run).
    """

    token_ids: np.ndarray
    surprisal: np.ndarray
    entropy: np.ndarray
    text: str
    marker: str | None
    finish_reason: str
    top_k: int
    probe: dict[str, Any] | None


def quantized(values: np.ndarray, step: float) -> np.ndarray:
    """``values`` (≥ 0) as unsigned bytes in units of ``step``, rounded to nearest and clipped to 255."""
    return np.clip(np.rint(np.asarray(values, dtype=np.float64) / step), 0, 255).astype(np.uint8)


def primary_trace(records: Sequence[ResponseRecord]) -> PrimaryTrace:
    """The :class:`PrimaryTrace` of one question's records (the response with repeat 0)."""
    primary = next(record for record in records if record.repeat == 0)
    probe = primary.probes.get("trace")
    return PrimaryTrace(
        token_ids=np.asarray(primary.token_ids, dtype=np.int32),
        surprisal=quantized(-primary.token_logprobs, SURPRISAL_STEP),
        entropy=quantized(primary.topk_entropy, ENTROPY_STEP),
        text=primary.generated_text if primary.generated_text is not None else primary.text,
        marker=primary.marker,
        finish_reason=primary.finish_reason,
        top_k=primary.top_k,
        probe=None
        if probe is None
        else {
            "appended_text": probe.appended_text,
            "text": probe.text,
            "answer": probe.answer,
            "finish_reason": probe.finish_reason,
        },
    )


def trace_payload(header: dict[str, Any], arrays: Sequence[np.ndarray] = ()) -> bytes:
    """gzip of: the header's JSON length (uint32, little-endian), the header as UTF-8 JSON, then each array's
    little-endian bytes in order (the page reads them at the lengths the header gives). ``mtime`` 0: the same trace
    gives the same bytes."""
    encoded = json.dumps(header, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    body = b"".join(np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes() for array in arrays)
    return gzip.compress(struct.pack("<I", len(encoded)) + encoded + body, compresslevel=6, mtime=0)
