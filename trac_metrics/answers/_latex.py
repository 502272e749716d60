"""Shared pieces of the answer checker (docs/method.md#answers-and-labels): the answer kinds, argument checks and
brace-balanced LaTeX groups, each found in one linear pass."""

from __future__ import annotations

import re

ANSWER_KINDS = ("math", "mc", "text")
CACHE_SIZE = 1 << 16
"""Entries of each memo of the checker (normalized answers, parses, verdicts on normalized pairs)."""


def check_kind(kind: str) -> None:
    if kind not in ANSWER_KINDS:
        raise ValueError(f"answer kind must be one of {ANSWER_KINDS}, got {kind!r}")


def check_str(value: object, name: str) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a str, got {type(value).__name__}")


_UNESCAPED_BRACE_RE = re.compile(r"(?<!\\)[{}]")


def matching_braces(text: str) -> dict[int, int]:
    """Map the index of every closed, unescaped ``{`` of ``text`` to the index of its ``}`` (one linear pass)."""
    closing: dict[int, int] = {}
    stack: list[int] = []
    for match in _UNESCAPED_BRACE_RE.finditer(text):
        if match.group() == "{":
            stack.append(match.start())
        elif stack:
            closing[stack.pop()] = match.start()
    return closing


def unwrap_commands(text: str, command_re: re.Pattern[str]) -> str:
    """Replace every ``\\cmd{content}`` matched by ``command_re`` (which ends at the ``{``) by ``content``, nested
    ones included, in one pass; an unbalanced ``\\cmd{`` loses only its command name and brace."""
    dropped: list[tuple[int, int]] = []
    closing: dict[int, int] | None = None
    for match in command_re.finditer(text):
        closing = matching_braces(text) if closing is None else closing
        dropped.append((match.start(), match.end()))
        close = closing.get(match.end() - 1)
        if close is not None:
            dropped.append((close, close + 1))
    kept, position = [], 0
    for start, end in sorted(dropped):
        kept.append(text[position:start])
        position = end
    kept.append(text[position:])
    return "".join(kept)


_OPENING, _CLOSING = "([{", ")]}"
_BRACKET_OR_SEPARATOR_RE: dict[str, re.Pattern[str]] = {}


def top_level_split(text: str, separator: str = ",") -> list[str] | None:
    """Split on ``separator`` outside any bracket; None when the brackets close more than they open."""
    pattern = _BRACKET_OR_SEPARATOR_RE.get(separator)
    if pattern is None:
        pattern = re.compile(rf"[{re.escape(_OPENING + _CLOSING)}]|{re.escape(separator)}")
        _BRACKET_OR_SEPARATOR_RE[separator] = pattern
    parts, depth, start = [], 0, 0
    for match in pattern.finditer(text):
        if match.group() in _OPENING:
            depth += 1
        elif match.group() in _CLOSING:
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0:
            parts.append(text[start : match.start()])
            start = match.end()
    parts.append(text[start:])
    return parts if depth == 0 else None


_GREEK = (
    "alpha|beta|gamma|delta|epsilon|varepsilon|zeta|eta|theta|vartheta|iota|kappa|lambda|mu|nu|xi|rho|sigma|tau|"
    "upsilon|phi|varphi|chi|psi|omega|Gamma|Delta|Theta|Lambda|Xi|Pi|Sigma|Upsilon|Phi|Psi|Omega"
)
VARIABLE = rf"(?:[A-Za-z]|\\(?:{_GREEK})(?![A-Za-z]))"
"""A letter or a Greek letter."""
SUBSCRIPT = r"_(?:\{[A-Za-z0-9]+\}|[A-Za-z0-9])"
NAME = rf"{VARIABLE}(?:{SUBSCRIPT})?"
"""A variable name: a letter or a Greek letter, with an optional subscript (``x``, ``\\alpha``, ``a_{1}``)."""
_QUANTITY = rf"(?:{NAME}|(?:m\s*)?\\angle\s*[A-Za-z]+|[A-Za-z]{{2,5}}|{NAME}\([^()=]*\)|{NAME}!|\|[^|=]+\|)"
_QUANTITY_RE = re.compile(
    rf"\s*(?:{_QUANTITY}|\(\s*{NAME}(?:\s*,\s*{NAME})+\s*\)|{_QUANTITY}(?:\s*[:/]\s*{_QUANTITY})+"
    rf"|\\frac\s*\{{\s*{_QUANTITY}\s*\}}\s*\{{\s*{_QUANTITY}\s*\}})\s*"
)


def names_a_quantity(left: str) -> bool:
    """Whether the left side of an equation names what its right side gives a value to: a variable (``x``,
    ``a_{1}``), a tuple of them (``(m, n)``), a segment or angle (``AB``, ``\\angle A``, ``m\\angle ABC``), a
    function value (``f(x)``, ``P(A)``), ``n!``, ``|x|``, or a ratio or quotient of such quantities (``AB:CD``,
    ``x:y``, ``\\frac{PQ}{QR}``, ``PQ/QR``) — not an expression (``x + y``, ``4p + q``, ``9``)."""
    return _QUANTITY_RE.fullmatch(left) is not None


def relation_sides(text: str) -> tuple[str, str] | None:
    """The two sides of ``text`` when it is one equation: a single ``=`` outside every bracket, not part of ``<=``,
    ``>=`` or ``!=``; None for anything else."""
    sides = top_level_split(text, "=")
    if sides is None or len(sides) != 2 or not sides[0].strip() or not sides[1].strip():
        return None
    if sides[0][-1] in "<>!":  # "x <= 3", "x != 3"; "n! = 120" keeps its space
        return None
    return sides[0].strip(), sides[1].strip()
