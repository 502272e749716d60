"""Whether a response's reasoning already states the answer it returns (docs/method.md#answer-leakage): the paper's
split of the probe's results by whether the probe could simply copy the answer from the reasoning it reads.

The reasoning is what the paper's probe reads (docs/method.md#probe-prompt): the text before the last end-of-thinking
marker, or, for a response without one, the text before the line stating its final answer. It states the answer when
it holds a copy of it — the answer's own text as a token of its own (not inside a longer number or word), or a number
whose normalized form is the answer's (``1,000`` for ``1000``). Multiple-choice answers are letters that any text
holds, so they are never classed. Pure: strings in, a flag out; bounded by :data:`MAX_NUMBERS`.
"""

from __future__ import annotations

import re

from trac_metrics.answers import answer_statement_start, normalize_answer
from trac_metrics.records import ResponseRecord

MAX_NUMBERS = 2000
"""The last distinct numbers of a reasoning that are compared with the answer (a bound on the work per response)."""
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?(?![\w])")


def reasoning_text(record: ResponseRecord) -> str:
    """The text of ``record``'s reasoning: before its last end-of-thinking marker, else before the line stating its
    final answer (the whole text when it states none)."""
    text = record.generated_text if record.generated_text is not None else record.text
    if record.marker and record.marker in text:
        return text[: text.rindex(record.marker)]
    start = answer_statement_start(text, record.answer_kind)
    return text if start is None else text[:start]


def answer_stated_in(reasoning: str, answer: str | None, kind: str) -> bool | None:
    """Whether ``reasoning`` holds a copy of ``answer`` (module docstring); None when there is no answer to look for
    (None, or one that normalizes to nothing) or the kind is ``mc``."""
    target = normalize_answer(answer, kind) if answer is not None and kind != "mc" else None
    if target is None:
        return None
    flags = re.IGNORECASE if kind == "text" else 0
    if re.search(rf"(?<![\w.]){re.escape(answer.strip())}(?![\w])", reasoning, flags):
        return True
    if kind != "math":
        return False
    numbers = list(dict.fromkeys(match.group() for match in _NUMBER.finditer(reasoning)))[-MAX_NUMBERS:]
    return any(normalize_answer(number, kind) == target for number in numbers)


def answer_in_reasoning(record: ResponseRecord, kind: str | None = None) -> bool | None:
    """:func:`answer_stated_in` of ``record``'s own answer and reasoning, under ``kind`` (default: the record's)."""
    return answer_stated_in(reasoning_text(record), record.answer, kind or record.answer_kind)
