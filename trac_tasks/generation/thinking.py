"""The end-of-thinking marker of a reasoning model, and whether a response left its thinking section open
(docs/method.md#end-of-thinking-marker).

The paper's probe Q_θ(x, r) reads the prompt and the response's reasoning, then the marker, then the cue
(docs/method.md#probe-prompt): the marker closes the thinking section, so the cue is read as the start of the final
answer, not as more thinking. With ``trac.marker: auto`` (the default) the marker is found without a switch:

1. lm-eval's ``think_end_token`` model argument, when the user gave one (a string, or a token id);
2. else the tokenizer's own end-of-thinking token: an added token of one of the forms of :data:`CLOSING_FORMS`
   (``</think>``: Qwen3, DeepSeek-R1 distills, Phi-4-reasoning; ``[/THINK]``: Magistral; ``◁/think▷``: Kimi;
   ``<|END_THINKING|>``: Command A Reasoning; ``</seed:think>``: Seed-OSS ...);
3. else a closing form the chat template writes;
4. else none (a model without a thinking section). But a tokenizer or template that *opens* a thinking section
   (an added token or template text such as ``<think>``, ``[THINK]``, ``<|thinking|>``) whose closing form is none of
   these is refused with a message asking for ``think_end_token`` (:class:`MarkerNotFound`): probing such a model
   without its marker would read the cue as more thinking.

Whether a response's thinking is open is read from token ids, not text (engines drop special tokens from the text
they return): *closed* when the marker's ids occur in the trace; *open* when the trace or the end of the prompt
opened a thinking section (the marker's opener: ``<think>`` for ``</think>``, ``[THINK]`` for ``[/THINK]``) that the
trace never closed, or when the marker has no known opener and the trace never wrote it; *none* otherwise, for
example a chat template that closes an empty thinking section in the prompt (``enable_thinking=False``). An open
response has no answer (it was cut before answering); a closed one is answered after its last marker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from trac_tasks.generation.probe import tokens_within

AUTO = "auto"
_TAG = r"[A-Za-z_:]*think[A-Za-z_]*"
CLOSING_FORMS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(rf"</({_TAG})>", re.IGNORECASE), r"<\1>"),
    (re.compile(rf"\[/({_TAG})\]", re.IGNORECASE), r"[\1]"),
    (re.compile(rf"◁/({_TAG})▷", re.IGNORECASE), r"◁\1▷"),
    (re.compile(r"<\|END_(THINKING)\|>", re.IGNORECASE), r"<|START_\1|>"),
    (re.compile(r"<\|end_of_(thought)\|>", re.IGNORECASE), r"<|begin_of_\1|>"),
)
"""The end-of-thinking markers recognized, each with the opener it closes (a replacement template of its match)."""
_OPENING = re.compile(
    r"<\|?(?:START_|begin_of_)?[A-Za-z_:]*(?:think|thought)[A-Za-z_]*\|?>|\[[A-Za-z_]*think[A-Za-z_]*\]|◁think▷",
    re.IGNORECASE,
)
"""Text that opens a thinking section (``<think>``, ``[THINK]``, ``<|thinking|>``, ``<|START_THINKING|>``)."""


class MarkerNotFound(ValueError):
    """A model that opens a thinking section whose end-of-thinking marker could not be found."""


def closing_form(text: str) -> re.Match[str] | None:
    """The match of a recognized end-of-thinking marker that is all of ``text``, else None."""
    return next((found for pattern, _ in CLOSING_FORMS if (found := pattern.fullmatch(text))), None)


def opener_of(marker: str) -> str | None:
    """The text that opens the thinking section ``marker`` closes (``<think>`` for ``</think>``), None when the marker
    is of no recognized form (``### Final``)."""
    for pattern, opener in CLOSING_FORMS:
        if found := pattern.fullmatch(marker):
            return found.expand(opener)
    return None


def detect_marker(tokenizer: Any, think_end_token: str | int | None) -> str:
    """The end-of-thinking marker for ``trac.marker: auto`` (module docstring, steps 1–4); ``""`` when none.

    Raises :class:`MarkerNotFound` when the tokenizer or its chat template opens a thinking section but no marker of
    a recognized form is found (step 4)."""
    if isinstance(think_end_token, int) or (isinstance(think_end_token, str) and think_end_token.isdigit()):
        return tokenizer.decode([int(think_end_token)])
    if think_end_token:
        return think_end_token
    added = getattr(tokenizer, "get_added_vocab", dict)()
    for token in sorted(added, key=added.get):
        if closing_form(token):
            return token
    template = getattr(tokenizer, "chat_template", None)
    template = template if isinstance(template, str) else ""
    written = [found for pattern, _ in CLOSING_FORMS if (found := pattern.search(template))]
    if written:
        return min(written, key=lambda found: found.start()).group(0)
    opening = next((token for token in sorted(added, key=added.get) if _OPENING.fullmatch(token)), None)
    opening = opening or (found.group(0) if (found := _OPENING.search(template)) else None)
    if opening is not None:
        raise MarkerNotFound(
            f"trac-eval: the model opens a thinking section ({opening!r} in its tokenizer or chat template) but no "
            "end-of-thinking marker of a known form was found; name it with think_end_token=<marker> in --model_args "
            '(or the task switch trac.marker; "" probes without one)'
        )
    return ""


@dataclass(frozen=True)
class ThinkingMarker:
    """A resolved marker with its token ids and, for a marker of a recognized form, the ids of its opener
    (:func:`opener_of`)."""

    text: str
    ids: tuple[int, ...]
    opener_ids: tuple[int, ...] | None

    @classmethod
    def build(cls, text: str, encode: Callable[[str], list[int]]) -> ThinkingMarker:
        opener = opener_of(text) if text else None
        return cls(text, tuple(encode(text)) if text else (), tuple(encode(opener)) if opener else None)

    def state(self, prompt_ids: Sequence[int], body_ids: Sequence[int], body_text: str = "") -> str:
        """``"closed"``, ``"open"`` or ``"none"`` for a trace ``body_ids`` generated after ``prompt_ids``;
        ``body_text`` (its decoded text) also counts as closing when it contains the marker, for a multi-token
        marker the model wrote with other token boundaries."""
        if not self.ids:
            return "none"
        if _last_end(body_ids, self.ids) is not None or self.text in body_text:
            return "closed"
        if self.opener_ids is None:
            return "open"
        if _last_end(body_ids, self.opener_ids) is not None:
            return "open"
        opened = _last_end(prompt_ids, self.opener_ids)
        closed = _last_end(prompt_ids, self.ids)
        return "open" if opened is not None and (closed is None or closed < opened) else "none"

    def answer_ids(self, body_ids: Sequence[int]) -> list[int] | None:
        """The ids after the last marker in ``body_ids`` (the part that holds the answer); None when the marker's
        ids do not occur."""
        end = _last_end(body_ids, self.ids)
        return list(body_ids[end:]) if end is not None else None

    def reasoning_length(self, body_ids: Sequence[int], decode: Callable[[Sequence[int]], str] | None = None) -> int:
        """How many leading ids of ``body_ids`` are its reasoning r (docs/method.md#probe-prompt,
        docs/method.md#prefix-probes): the ids before its last marker; with ``decode`` (ids to text), a marker the
        model wrote with other token boundaries is found in the text (the tokens wholly before it); all of them when
        the marker does not occur (an open trace, or no thinking section)."""
        end = _last_end(body_ids, self.ids)
        if end is not None:
            return end - len(self.ids)
        text = decode(body_ids) if decode is not None and self.text else ""
        if self.text and self.text in text:
            return tokens_within(body_ids, text.rindex(self.text), decode)
        return len(body_ids)


def _last_end(ids: Sequence[int], pattern: Sequence[int]) -> int | None:
    """The index just after the last occurrence of ``pattern`` in ``ids``, or None."""
    width = len(pattern)
    if width == 0:
        return None
    first = pattern[0]
    for start in range(len(ids) - width, -1, -1):
        if ids[start] == first and list(ids[start : start + width]) == list(pattern):
            return start + width
    return None
