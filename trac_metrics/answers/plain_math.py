"""A fast reader of plain algebra for the exact steps of the symbolic comparison
(docs/method.md#the-symbolic-work-budget): numbers, one-letter variables (lowercase, real, as Math-Verify makes them),
``+ - * /``, powers, parentheses, ``\\frac{a}{b}``, ``\\cdot`` / ``\\times`` and at most one ``=``, read by sympy's
expression parser in about a millisecond instead of the LaTeX grammar's tens of milliseconds, to the same value
Math-Verify's LaTeX parser gives (letters side by side multiply, ``x^{2}`` is a power). Anything else is left to
Math-Verify's parser: other commands, ``e`` / ``i`` (constants in LaTeX), two letters side by side, a letter or a
number before a parenthesis (a function, or Math-Verify's mixed number ``2(3)``), capitals, a trailing word Math-Verify
reads as a unit (``0.75s``).
"""

from __future__ import annotations

import re
import string
from tokenize import TokenError

from sympy import Eq, Expr, Symbol
from sympy.parsing.sympy_parser import convert_xor, implicit_multiplication, parse_expr, standard_transformations

_FRACTION_RE = re.compile(r"\\frac\{([^{}]*)\}\{([^{}]*)\}")
_PLAIN_RE = re.compile(r"[0-9a-z+\-*/^().=\s]*")
_UNREAD_RE = re.compile(r"[a-z]{2}|[a-z\d]\s*\(|[ei]|\.\D|\.$|[*/^]\s*[*/^]|/\s*(?:\d+(?:\.\d+)?|[a-z])\s*[a-z(]")
"""Forms read differently or not at all: words, functions, constants, a quotient with an implicit product after it
(``x/2y``)."""
try:  # Math-Verify's LaTeX normalization drops a trailing unit word (``0.75s`` is 0.75): such text is its to read
    from latex2sympy2_extended.math_normalization import units_regex as _TRAILING_UNIT_RE
except ImportError:  # another release: any trailing letters after a number may be a unit
    _TRAILING_UNIT_RE = re.compile(r"(\d|\}|\s)\s*[a-z]+\s*$")
_VARIABLES = {letter: Symbol(letter, real=True) for letter in string.ascii_lowercase if letter not in "ei"}
"""The variables as Math-Verify's parser makes them (real symbols)."""
_TRANSFORMATIONS = (*standard_transformations, implicit_multiplication, convert_xor)
MAX_PLAIN_CHARS = 120


def _python_form(text: str) -> str | None:
    """``text`` in Python's syntax, or None when it is not plain algebra."""
    if len(text) > MAX_PLAIN_CHARS:
        return None
    text = text.replace("\\cdot", "*").replace("\\times", "*")
    while (replaced := _FRACTION_RE.sub(r"((\1)/(\2))", text)) != text:
        text = replaced
    text = text.replace("{", "(").replace("}", ")")
    if not _PLAIN_RE.fullmatch(text) or _UNREAD_RE.search(text) or text.count("=") > 1:
        return None
    if any(_TRAILING_UNIT_RE.search(side) for side in text.split("=")):
        return None
    return text


def read_plain(text: str) -> Expr | Eq | None:
    """The sympy expression (or equation) of plain algebra; None for anything else (module docstring)."""
    python = _python_form(text)
    if python is None:
        return None
    try:
        sides = [
            parse_expr(side, local_dict=dict(_VARIABLES), transformations=_TRANSFORMATIONS)
            for side in python.split("=")
        ]
    except (SyntaxError, TypeError, ValueError, ZeroDivisionError, TokenError, AttributeError):
        return None
    if not all(isinstance(side, Expr) for side in sides):
        return None
    return sides[0] if len(sides) == 1 else Eq(sides[0], sides[1], evaluate=False)
