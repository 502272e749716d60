"""Each question's trace and prompt, packed for the HTML page and loaded on demand
(docs/architecture.md#per-token-arrays).

The page's main data stays small; the traces, nearly all of the file, sit beside it as one base64 line per question
(:func:`~trac_metrics.reporting.html.traces.trace_payload`: gzip of a JSON header and byte arrays), inflated by the
browser only when the question is opened. A pair's traces are shown one of three ways (its ``mode``):

- ``tokens``: with the model's tokenizer, each token is a text piece (an index into the pair's piece list, the first
  line) shaded by its −λ_t or η_t (one byte each); the end-of-thinking marker's token is marked;
- ``text``: without a tokenizer that fits, the whole generated text, unshaded, the marker found in the text (its
  offset in UTF-16 code units, as the browser counts);
- ``none``: the runs were read without their traces (only the prompt, when lm-eval's samples file has it).

Per token the file holds 4 bytes before compression (a 2-byte piece index when the pair has at most 65,536 distinct
pieces, else 4, plus the two quantized values); the probe's answer travels in the header. The prompt is in the page's
data (:func:`~trac_metrics.reporting.html.page_data.page_data`), where the search and the question list read it.
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import numpy as np

from trac_metrics.reporting.html.tokens import TokenizerMismatch, TokenTexts, marker_position, trace_pieces
from trac_metrics.reporting.html.traces import ENTROPY_STEP, SURPRISAL_STEP, PrimaryTrace, trace_payload
from trac_metrics.reporting.runs import PairRun

TOKENS, TEXT, NONE = "tokens", "text", "none"


def _line(payload: bytes) -> str:
    return base64.b64encode(payload).decode("ascii")


def _header(trace: PrimaryTrace) -> dict[str, Any]:
    return {
        "n": int(trace.token_ids.size),
        "marker_text": trace.marker,
        "finish": trace.finish_reason,
        "top_k": trace.top_k,
        "probe": trace.probe,
        "surprisal_step": SURPRISAL_STEP,
        "entropy_step": ENTROPY_STEP,
    }


def _text_position(text: str, marker: str | None) -> int | None:
    """Offset of the last ``marker`` in ``text`` as the page's script counts it, in UTF-16 code units (a character
    beyond U+FFFF, an emoji or a math letter, is two of them, one Python character); None when absent or no marker.
    The page cuts the text there for its end-of-thinking badge
    (docs/guide/reports.md#the-html-report-trac-report---html)."""
    found = text.rfind(marker) if marker else -1
    return len(text[:found].encode("utf-16-le")) // 2 if found >= 0 else None


def pair_payloads(
    pair: PairRun, token_texts: TokenTexts | None, tokenizer_name: str | None, why_not: str
) -> tuple[dict[str, Any], list[str]]:
    """How ``pair``'s traces are shown (``mode``, ``tokenizer``, ``note``) and the page lines: the pair's piece list
    (``tokens`` mode; empty otherwise), then one line per question in document order. ``token_texts`` holds the
    tokenizer (:class:`~trac_metrics.reporting.html.tokens.TokenTexts`, shared by its pairs), ``why_not`` says why
    there is none; one that does not fit every trace of the pair
    (:func:`~trac_metrics.reporting.html.tokens.trace_pieces`) is not used: the pair is shown as text, never shaded
    with pieces the model did not write. Without traces every line is empty."""
    traces: tuple[PrimaryTrace, ...] = pair.details
    doc_ids = [str(evidence["doc_id"]) for evidence in pair.evidences]
    if not traces:
        return {"mode": NONE, "tokenizer": None, "note": "the traces were not read"}, [""] * (len(doc_ids) + 1)
    if token_texts is not None:
        try:
            pieces, indices = trace_pieces(
                token_texts, [trace.token_ids for trace in traces], [trace.text for trace in traces], doc_ids
            )
        except TokenizerMismatch as mismatch:
            token_texts, why_not = None, f"tokenizer {tokenizer_name!r} does not fit {pair.model}: {mismatch}"
    if token_texts is None:
        info = {"mode": TEXT, "tokenizer": None, "note": f"Traces unshaded: {why_not}."}
        lines = []
        for trace in traces:
            header = {**_header(trace), "text": trace.text}
            header["marker"] = _text_position(trace.text, trace.marker)
            lines.append(_line(trace_payload(header)))
        return info, ["", *lines]
    width = np.uint16 if len(pieces) <= 1 << 16 else np.uint32
    lines = [_line(gzip.compress(json.dumps(pieces, ensure_ascii=False).encode(), mtime=0))]
    for trace, index in zip(traces, indices, strict=True):
        header = {
            **_header(trace),
            "marker": marker_position(token_texts.tokenizer, trace.token_ids, index, pieces, trace.marker or ""),
            "index_bytes": np.dtype(width).itemsize,
        }
        lines.append(_line(trace_payload(header, [index.astype(width), trace.surprisal, trace.entropy])))
    return {"mode": TOKENS, "tokenizer": tokenizer_name, "note": ""}, lines
