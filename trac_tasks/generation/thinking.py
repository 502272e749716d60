"""The end-of-thinking marker of a reasoning model, and whether a response left its thinking section open
(docs/method.md#end-of-thinking-marker).

The probe prompt is prompt + trace + marker + cue: the marker closes a thinking section the trace left open, so the
cue is read as the start of the final answer, not as more thinking. With ``trac.marker: auto`` (the default) the
marker is found without a switch:

1. lm-eval's ``think_end_token`` model argument, when the user gave one (a string, or a token id);
2. else the tokenizer's own end-of-thinking token: an added token such as ``</think>`` (Qwen3, DeepSeek-R1
   distills, Phi-4-reasoning);
3. else the closing tag the chat template writes after a thinking section;
4. else none (a model without a thinking section).

Whether a response's thinking is open is read from token ids, not text (engines drop special tokens from the text
they return): *closed* when the marker's ids occur in the trace; *open* when the trace or the end of the prompt
opened a thinking section (the opener is the marker without its slash, ``<think>``) that the trace never closed, or
when the marker has no such opener and the trace never wrote it; *none* otherwise, for example a chat template that
closes an empty thinking section in the prompt (``enable_thinking=False``). An open response has no answer (it was
cut before answering) and its probe gets the marker; a closed one is answered after its last marker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

AUTO = "auto"
_THINK_TAG = re.compile(r"</([A-Za-z_]*think[A-Za-z_]*)>", re.IGNORECASE)


def detect_marker(tokenizer: Any, think_end_token: str | int | None) -> str:
    """The end-of-thinking marker for ``trac.marker: auto`` (module docstring, steps 1–4); ``""`` when none."""
    if isinstance(think_end_token, int) or (isinstance(think_end_token, str) and think_end_token.isdigit()):
        return tokenizer.decode([int(think_end_token)])
    if think_end_token:
        return think_end_token
    added = getattr(tokenizer, "get_added_vocab", dict)()
    for token in sorted(added, key=added.get):
        if _THINK_TAG.fullmatch(token):
            return token
    template = getattr(tokenizer, "chat_template", None)
    found = _THINK_TAG.search(template) if isinstance(template, str) else None
    return found.group(0) if found else ""


@dataclass(frozen=True)
class ThinkingMarker:
    """A resolved marker with its token ids and, for a ``</tag>`` marker, the ids of its opener ``<tag>``."""

    text: str
    ids: tuple[int, ...]
    opener_ids: tuple[int, ...] | None

    @classmethod
    def build(cls, text: str, encode: Callable[[str], list[int]]) -> ThinkingMarker:
        opener = f"<{text[2:]}" if text.startswith("</") and text.endswith(">") else None
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

    def reasoning_length(self, body_ids: Sequence[int]) -> int:
        """How many leading ids of ``body_ids`` are its reasoning (docs/method.md#prefix-probes): the ids before its
        last marker, or all of them when the marker's ids do not occur (an open trace, or no thinking section)."""
        end = _last_end(body_ids, self.ids)
        return len(body_ids) if end is None else end - len(self.ids)


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
