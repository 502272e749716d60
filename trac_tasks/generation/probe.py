"""Engine-independent construction and parsing of the answer probe, on token ids (docs/method.md#the-answer-probe).

The probe prompt is the paper's Q_θ(x, r): the exact token ids of the prompt and of the response's reasoning r (never
re-tokenized text), the end-of-thinking marker's ids (:mod:`trac_tasks.generation.thinking`), then the tokenized cue;
the answer the response wrote after its reasoning is not in it (docs/method.md#probe-prompt). A response without a
thinking section is cut before the line that states its final answer (:func:`answer_statement_cut`). The greedy suffix
is cut where the delimiter the cue opened is closed; the tokens before that point spell the re-elicited answer ã. A
prefix probe continues the reasoning cut at a step boundary before a fraction of its tokens (:func:`prefix_cut`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from trac_metrics.answers import answer_statement_start, extract_answer


def trace_body(generated_ids: Sequence[int], end_ids: set[int]) -> list[int]:
    """The generated ids without the trailing end-of-sequence tokens (the trace body; the probe reads its reasoning r,
    docs/method.md#probe-prompt)."""
    ids = list(generated_ids)
    while ids and ids[-1] in end_ids:
        ids.pop()
    return ids


def tokens_within(ids: Sequence[int], characters: int, decode: Callable[[Sequence[int]], str]) -> int:
    """The largest c whose decoded text ``decode(ids[:c])`` has at most ``characters`` characters: the tokens wholly
    before a character offset of the decoded ``ids`` (a token that straddles it is left out). About log₂ len(ids)
    decodes."""
    low, high = 0, len(ids)
    while low < high:
        middle = (low + high + 1) // 2
        if len(decode(ids[:middle])) <= characters:
            low = middle
        else:
            high = middle - 1
    return low


def answer_statement_cut(
    ids: Sequence[int], decode: Callable[[Sequence[int]], str], kind: str, marker: str | None = None
) -> int | None:
    """How many leading ids of a response without a thinking section precede the line that states its final answer
    (docs/method.md#probe-prompt): the tokens wholly before
    :func:`~trac_metrics.answers.extraction.answer_statement_start` of the decoded response; None when the response
    states no answer (it is then probed whole)."""
    text = decode(ids)
    start = answer_statement_start(text, kind, marker)
    return None if start is None else tokens_within(ids, start, decode)


def answer_token_span(
    ids: Sequence[int], decode: Callable[[Sequence[int]], str], answer: str | None, kind: str, marker: str | None
) -> tuple[int, int] | None:
    """The ids that spell the response's final answer (docs/method.md#answer-token-log-probability): [start, end) of
    the tokens covering the last occurrence of ``answer`` (the extracted answer) at or after the line that states it
    (:func:`~trac_metrics.answers.extraction.answer_statement_start`, after the end-of-thinking ``marker``); a token
    that straddles either end is included. None when there is no answer or its text does not occur there as written
    (an answer the extraction rewrote)."""
    if not answer:
        return None
    text = decode(ids)
    line = answer_statement_start(text, kind, marker or None)
    position = -1 if line is None else text.rfind(answer, line)
    if position < 0:
        return None
    end_character = position + len(answer)
    end = tokens_within(ids, end_character, decode)
    if len(decode(ids[:end])) < end_character:
        end += 1
    return tokens_within(ids, position, decode), end


STEP_BOUNDARY = re.compile(r"\n|[.!?](?=\s)")
"""A character that ends a reasoning step: a newline, or a sentence end (``.``, ``!``, ``?``) followed by whitespace
(so the point of ``3.14`` ends nothing)."""


def prefix_cut(reasoning_ids: Sequence[int], fraction: float, decode: Callable[[Sequence[int]], str]) -> int:
    """How many of the R reasoning ids a prefix probe at ``fraction`` keeps (docs/method.md#prefix-probes).

    The position is n = ⌊f·R⌋, computed exactly on f's decimal form. The cut is the smallest c whose decoded text
    holds the last step boundary (:data:`STEP_BOUNDARY`) within the text of the first n ids, the whitespace after a
    sentence end possibly in id n + 1: the trace is cut after the token that ends that step. Without a boundary the
    cut is n itself. ``decode`` maps ids to text; the search decodes about log₂ n prefixes, not every one.
    """
    n = math.floor(Fraction(repr(fraction)) * len(reasoning_ids))
    if n == 0:
        return 0
    limit = len(decode(reasoning_ids[:n]))
    boundaries = [match.start() for match in STEP_BOUNDARY.finditer(decode(reasoning_ids[: n + 1]))]
    before = [position for position in boundaries if position < limit]
    if not before:
        return n
    low, high = 1, n  # the smallest c whose text reaches past the boundary character
    while low < high:
        middle = (low + high) // 2
        if len(decode(reasoning_ids[:middle])) > before[-1]:
            high = middle
        else:
            low = middle + 1
    return low


@dataclass(frozen=True)
class ParsedProbe:
    """A probe suffix cut at the closing delimiter.

    ``answer`` is ã extracted with the same extractor as the primary answer (None when unparsable),
    ``answer_token_count`` is L (tokens that contribute a character of ã), ``kept_tokens`` the number of decoded
    tokens up to and including the one that closes the delimiter, ``text`` the decoded suffix up to the delimiter
    (included), ``finish_reason`` ``"stop"`` when the delimiter closed, else the engine's reason (``"eos"`` or
    ``"length"``).
    """

    answer: str | None
    answer_token_count: int
    kept_tokens: int
    text: str
    finish_reason: str


def _closing_position(text: str, opener: str, closer: str) -> int | None:
    """Index of the character that closes a delimiter already open at the start of ``text`` (depth starts at 1)."""
    depth = 1
    for index, char in enumerate(text):
        if char == opener:
            depth += 1
        elif char == closer:
            depth -= 1
            if depth == 0:
                return index
    return None


def parse_probe(
    token_ids: Sequence[int],
    decode: Callable[[Sequence[int]], str],
    cue: str,
    closer: str | None,
    engine_finish_reason: str,
    answer_kind: str,
) -> ParsedProbe:
    """Cut the greedy suffix where the cue's delimiter closes and extract ã from what it encloses.

    Decoding runs to ≤ 16 tokens and is cut afterwards: greedy decoding makes the kept tokens and their logprobs
    identical to a run that stopped at the delimiter. ``decode`` maps token ids to text (prefix decoding gives each
    token's character offset). The enclosed text goes through the same extractor as the primary answer (as the
    content of a ``\\boxed{}``), so both are normalized alike. Without a closing delimiter (a cue that opens none,
    or a suffix that never closes it) ã is extracted from the whole suffix when decoding ended at EOS, and is
    missing when decoding hit the token limit. A missing ã has L = 0 (its likelihoods are missing,
    docs/method.md#pce-features); c1, the first decoded token's logprob, is kept.
    """
    offsets = [len(decode(token_ids[: count + 1])) for count in range(len(token_ids))]
    full_text = decode(token_ids) if token_ids else ""
    close_at = _closing_position(full_text, cue[-1], closer) if closer else None
    if close_at is None:
        kept, answer_end, text, finish_reason = len(token_ids), len(full_text), full_text, engine_finish_reason
        answer = extract_answer(full_text, kind=answer_kind) if engine_finish_reason == "eos" else None
    else:
        kept = next(index + 1 for index, end in enumerate(offsets) if end > close_at)
        answer_end, text, finish_reason = close_at, full_text[: close_at + 1], "stop"
        inner = full_text[:close_at].strip()
        answer = (extract_answer(f"\\boxed{{{inner}}}", kind=answer_kind) or inner) if inner else None
    starts = [0, *offsets[:-1]]
    answer_token_count = sum(1 for start in starts[:kept] if start < answer_end) if answer is not None else 0
    return ParsedProbe(answer, answer_token_count, kept, text, finish_reason)
