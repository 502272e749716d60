"""Structured math answers (docs/method.md#answer-equivalence, step 4): matrices and vectors, tuples, intervals, sets,
bare lists and ``±`` answers, compared element by element with the whole math relation."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from trac_metrics.answers._latex import top_level_split
from trac_metrics.answers.normalization import canonical_decimal

MAX_SYMBOLIC_ELEMENTS = 16
"""Structures up to this many elements (a 4x4 matrix) compare their elements symbolically; larger ones by string
and number only, so a comparison stays within its work budget."""

_MATRIX_RE = re.compile(r"\\begin\{([pb]?matrix)\}((?:(?!\\(?:begin|end)\{).)*)\\end\{\1\}", re.DOTALL)
_ARRAY_RE = re.compile(
    r"([(\[]?)\\begin\{array\}\{[lcr|\s]*\}((?:(?!\\(?:begin|end)\{).)*)\\end\{array\}([)\]]?)", re.DOTALL
)
"""A matrix written as an array in brackets (``\\left[\\begin{array}{cc}1 & 2 \\\\ 3 & 4\\end{array}\\right]``)."""
_PAIRED_BRACKETS = {("", ""), ("(", ")"), ("[", "]")}
_PLUS_MINUS_RE = re.compile(r"\\(?:pm|mp)(?![A-Za-z])")


class Structure(NamedTuple):
    """``kind``: ``"RxC matrix"``, ``"set"`` (braced), ``"list"`` (bare, unordered), or the bracket pair of a tuple
    / interval (``"()"``, ``"[)"``, …); ``elements`` in written order."""

    kind: str
    elements: list[str]


def _matrix(body: str) -> Structure | None:
    """The matrix of a body ``a&b\\\\c&d`` (a final ``\\\\`` is allowed); None when it is ragged or has an empty
    entry."""
    rows = top_level_split(body, "\\\\") or []
    if len(rows) > 1 and not rows[-1].strip():
        rows.pop()
    cells = [top_level_split(row, "&") or [] for row in rows]
    width = len(cells[0]) if cells else 0
    entries = [entry for row in cells for entry in row]
    if not width or any(len(row) != width for row in cells) or not all(entry.strip() for entry in entries):
        return None
    return Structure(f"{len(cells)}x{width} matrix", entries)


def _plus_minus(text: str) -> Structure | None:
    """``a \\pm b`` (one ``\\pm`` anywhere, e.g. ``\\frac{1 \\pm \\sqrt5}{2}``) is the set of its two values."""
    signs = list(_PLUS_MINUS_RE.finditer(text))
    if len(signs) != 1 or len(top_level_split(text) or []) != 1:
        return None
    sign = signs[0]
    before, after = text[: sign.start()], text[sign.end() :]
    leading = not before.strip() or before.rstrip()[-1] in "({[,="
    plus = before + ("" if leading else "+") + after
    return Structure("set", [plus.strip(), (before + "-" + after).strip()])


def structure(text: str) -> Structure | None:
    """The structure of a normalized answer (``pmatrix``, ``bmatrix``, ``matrix`` and an ``array`` in brackets alike:
    the delimiters only typeset it; the kind holds the shape), or None for anything else. A TeX group in plain braces
    (``{1,3}``, typeset as ``1,3``) is a bare list. Tuples and intervals need two elements."""
    matrix = _MATRIX_RE.fullmatch(text)
    if matrix is not None:
        return _matrix(matrix.group(2))
    array = _ARRAY_RE.fullmatch(text)
    if array is not None and (array.group(1), array.group(3)) in _PAIRED_BRACKETS:
        return _matrix(array.group(2))
    plus_minus = _plus_minus(text)
    if plus_minus is not None:
        return plus_minus
    kind, minimum, parts = "list", 2, None
    if text.startswith("\\{") and text.endswith("\\}"):
        kind, minimum, parts = "set", 1, top_level_split(text[2:-2])
    elif len(text) >= 2 and text[0] == "{" and text[-1] == "}":  # a TeX group, typeset without braces: "1,3"
        parts = top_level_split(text[1:-1])
    elif len(text) >= 2 and text[0] in "([" and text[-1] in ")]":
        kind, parts = text[0] + text[-1], top_level_split(text[1:-1])
    if parts is None:  # no outer delimiters, or "(a,b),(c,d)" whose first and last brackets do not pair up
        kind, minimum, parts = "list", 2, top_level_split(text)
    if parts is None or len(parts) < minimum or not all(part.strip() for part in parts):
        return None
    return Structure(kind, parts)


def _unordered(kind: str) -> bool:
    return kind in ("set", "list")


def _comparable(first: str, second: str) -> str | None:
    """How two kinds compare: ``"unordered"`` (sets and bare lists), ``"ordered"`` (the same bracket pair or
    matrix shape, or a bare list against a tuple), None when they cannot be equal (a braced set is not a tuple
    or an interval, an open interval is not a closed one, a matrix is not a tuple)."""
    if _unordered(first) and _unordered(second):
        return "unordered"
    if first == second or {first, second} == {"list", "()"}:
        return "ordered"
    return None


def structures_equivalent(first: Structure, second: Structure, element_equivalent: Callable[..., bool]) -> bool:
    """Comparable kinds; elements pairwise equivalent in order (same size), or, for sets and lists, matched one to one
    once each side's repeated elements are dropped (``\\{2, 2, 3\\}`` is ``\\{2, 3\\}``).
    ``element_equivalent(x, y, symbolic)`` is the math relation on two normalized elements."""
    order = _comparable(first.kind, second.kind)
    if order is None:
        return False
    symbolic = max(len(first.elements), len(second.elements)) <= MAX_SYMBOLIC_ELEMENTS
    left = [canonical_decimal(element.strip()) for element in first.elements]
    right = [canonical_decimal(element.strip()) for element in second.elements]
    if order == "ordered":
        return len(left) == len(right) and all(
            x == y or element_equivalent(x, y, symbolic) for x, y in zip(left, right)
        )
    left, right = _distinct(left, element_equivalent), _distinct(right, element_equivalent)
    if len(left) != len(right):
        return False
    unmatched = [y for y in right if y not in left]  # equal strings match first: a permuted set costs no symbolic work
    for x in (x for x in left if x not in right):
        index = next((i for i, y in enumerate(unmatched) if element_equivalent(x, y, symbolic)), None)
        if index is None:
            return False
        del unmatched[index]
    return True


def _distinct(elements: list[str], element_equivalent: Callable[..., bool]) -> list[str]:
    """The elements without repeats: equal strings, or equal by the relation's string, number and structure rules
    (no symbolic work, so dropping repeats stays cheap)."""
    kept: list[str] = []
    for element in elements:
        if not any(element == other or element_equivalent(element, other, False) for other in kept):
            kept.append(element)
    return kept
