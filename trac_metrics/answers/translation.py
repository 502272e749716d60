"""Faithful translations of answer forms that are not LaTeX (docs/method.md#answer-normalization): a form the
normalizer does not understand is translated into the LaTeX it means, never dropped or joined to its neighbours.

- a Unicode root takes the whole number, name or parenthesized group after it (``√10`` → ``\\sqrt{10}``, not the TeX
  reading ``\\sqrt{1}0``; ``√(x+1)`` → ``\\sqrt{x+1}``);
- Python's power ``**`` is ``^`` with its exponent braced (``2**10`` → ``2^{10}``, ``x**2`` → ``x^{2}``); a ``**``
  with no operand on one side is markdown bold and is left to the markup step;
- an upright constant is the constant (``\\mathrm{i}`` → ``i``, ``\\text{e}`` → ``e``), never a unit;
- a magnitude word after a number multiplies it (``5 millions`` → ``5000000``, ``2 bn`` → ``2000000000``, ``2 grand``
  → ``2000``);
- a mixed number is its improper fraction when nothing else can be meant: a whole number and a proper fraction side by
  side (``5 3/4`` → ``23/4``, ``2\\frac{1}{2}`` → ``\\frac{5}{2}`` as Math-Verify reads it);
- a repeating decimal is its fraction (``0.\\overline{3}`` → ``1/3``, ``0.4444...`` → ``4/9``), never the digits
  written before the ellipsis.

Adjacent numbers separated by a space are never joined here; :func:`thousands_groups` joins only digit groups of a
thousands separator (``1 000 000``).
"""

from __future__ import annotations

import re
from fractions import Fraction

MAGNITUDES = {
    "hundred": 100,
    "thousand": 10**3,
    "grand": 10**3,
    "million": 10**6,
    "mn": 10**6,
    "mio": 10**6,
    "mln": 10**6,
    "billion": 10**9,
    "bn": 10**9,
    "bln": 10**9,
    "trillion": 10**12,
    "tn": 10**12,
    "dozen": 12,
}
"""Words after a number that multiply it (a plural ``s`` allowed: ``5 millions``)."""
MAGNITUDE_WORDS = frozenset(MAGNITUDES) | frozenset(f"{word}s" for word in MAGNITUDES)

_UNICODE_ROOT_RE = re.compile(r"√\s*(?:(\d+(?:\.\d+)?)|(\\?[A-Za-z]+(?:_\{?[A-Za-z0-9]+\}?)?)|(\()|(\{))")
_POWER_OPERAND_END = frozenset("0123456789)}]") | frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_POWER_EXPONENT_RE = re.compile(r"\*\*\s*(-?\s*(?:\d+(?:\.\d+)?|[A-Za-z](?:_\d)?|\\[A-Za-z]+))")
_UPRIGHT_CONSTANT_RE = re.compile(r"\\(?:mathrm|text|textrm|textnormal|mathit|operatorname|rm)\s*\{\s*([ie])\s*\}")
_MAGNITUDE_RE = re.compile(r"([-+]?\d+(?:\.\d+)?)\s*([A-Za-z]{2,})((?:\s+[A-Za-z]{2,})*)")
_MIXED_NUMBER_RE = re.compile(r"(-?)(\d+)(?:\s+(\d+)\s*/\s*(\d+)|\s*\\frac\s*\{\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\})")
_THOUSANDS_GROUPS_RE = re.compile(r"(?<![\d.])\d{1,3}(?:\s+\d{3})+(?![\d.])")
_OVERLINE_RE = re.compile(r"(-?)(\d*)\.(\d*)\\overline\s*\{(\d+)\}")
_ELLIPSIS_RE = re.compile(r"(-?)(\d*)\.(\d+)\s*(?:\.\.\.|…|\\[lc]?dots(?![A-Za-z]))")
_MAX_REPEATING_BLOCK = 6


def _closing_paren(text: str, opening: int) -> int | None:
    depth = 0
    for index in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return index
    return None


def unicode_roots(text: str) -> str:
    """``√10`` → ``\\sqrt{10}``, ``√x`` → ``\\sqrt{x}``, ``√(x+1)`` → ``\\sqrt{x+1}``, ``√{…}`` → ``\\sqrt{…}``; a
    ``√`` before anything else becomes ``\\sqrt`` (TeX then takes one token)."""
    if "√" not in text:
        return text
    pieces, position = [], 0
    for match in _UNICODE_ROOT_RE.finditer(text):
        if match.start() < position:
            continue
        pieces.append(text[position : match.start()])
        position = match.end()
        if match.group(3):
            close = _closing_paren(text, match.start(3))
            if close is None:
                pieces.append("\\sqrt(")
                continue
            pieces.append(f"\\sqrt{{{text[match.end() : close]}}}")
            position = close + 1
        elif match.group(4):
            pieces.append("\\sqrt{")
        else:
            pieces.append(f"\\sqrt{{{match.group(1) or match.group(2)}}}")
    pieces.append(text[position:])
    return "".join(pieces).replace("√", "\\sqrt ")


def python_powers(text: str) -> str:
    """``2**10`` → ``2^{10}``, ``x**2`` → ``x^{2}``, ``(x+1)**(n-1)`` → ``(x+1)^{(n-1)}``: a ``**`` between an operand
    and an exponent is a power; markdown bold (``**5**``) has no operand on one side and stays."""
    if "**" not in text:
        return text
    pieces, position = [], 0
    index = text.find("**")
    while index != -1:
        before = text[:index].rstrip()
        exponent = _POWER_EXPONENT_RE.match(text, index)
        end = None
        if before and before[-1] in _POWER_OPERAND_END:
            if exponent is not None:
                end, power = exponent.end(), exponent.group(1).replace(" ", "")
            else:
                opening = index + 2 + len(text[index + 2 :]) - len(text[index + 2 :].lstrip())
                close = _closing_paren(text, opening) if text[opening : opening + 1] == "(" else None
                if close is not None:
                    end, power = close + 1, text[opening : close + 1]
        if end is None:
            index = text.find("**", index + 2)
            continue
        pieces.append(text[position:index] + f"^{{{power}}}")
        position = end
        index = text.find("**", end)
    pieces.append(text[position:])
    return "".join(pieces)


def upright_constants(text: str) -> str:
    """``3\\,\\mathrm{i}`` → ``3\\, i``, ``2\\cdot\\mathrm{e}`` → ``2\\cdot e``: an upright i or e is the constant."""
    return _UPRIGHT_CONSTANT_RE.sub(r" \1 ", text)


def _plain(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}/{value.denominator}"


def magnitude(text: str, is_unit: object) -> str | None:
    """``5 millions`` → ``5000000``, ``2.5 bn`` → ``2500000000`` (a unit may follow: ``5 million dollars``); None when
    ``text`` is not a number with a magnitude word. ``is_unit(words)`` says whether trailing words are a unit."""
    match = _MAGNITUDE_RE.fullmatch(text)
    if match is None or match.group(2).lower() not in MAGNITUDE_WORDS:
        return None
    if match.group(3).strip() and not is_unit(match.group(3)):  # type: ignore[operator]
        return None
    word = match.group(2).lower()
    factor = MAGNITUDES.get(word) or MAGNITUDES[word[:-1]]
    return _plain(Fraction(match.group(1)) * factor)


def mixed_number(text: str) -> str | None:
    """``5 3/4`` → ``23/4``, ``-2 1/2`` → ``-5/2``, ``2\\frac{1}{2}`` → ``5/2``: a whole number beside a proper
    fraction (numerator below denominator) is a mixed number; None for anything else (``5 7/4`` is no mixed number)."""
    match = _MIXED_NUMBER_RE.fullmatch(text.strip())
    if match is None:
        return None
    sign, whole = match.group(1), int(match.group(2))
    numerator = int(match.group(3) or match.group(5))
    denominator = int(match.group(4) or match.group(6))
    if not 0 < numerator < denominator:
        return None
    value = Fraction(whole * denominator + numerator, denominator)
    return ("-" if sign else "") + _plain(value)


def repeating_decimal(text: str) -> str | None:
    """A repeating decimal as the fraction it is: ``0.\\overline{3}`` → ``1/3``, ``0.1\\overline{6}`` → ``1/6``;
    a decimal before an ellipsis (``...``, ``…``, ``\\ldots``, ``\\dots``) whose digits end in a block written at
    least three times (twice for a block of two digits or more) is that block repeating: ``0.4444...`` → ``4/9``,
    ``0.142857142857…`` → ``1/7``. None for anything else (``3.14159...`` is a decimal cut short, read as the
    decimal)."""
    match = _OVERLINE_RE.fullmatch(text.strip())
    if match is not None:
        sign, whole, fixed, block = match.groups()
    else:
        match = _ELLIPSIS_RE.fullmatch(text.strip())
        if match is None:
            return None
        sign, whole, digits = match.groups()
        block = next(
            (
                digits[-length:]
                for length in range(1, _MAX_REPEATING_BLOCK + 1)
                if digits.endswith(digits[-length:] * (3 if length == 1 else 2))
            ),
            None,
        )
        if block is None:
            return None
        fixed = digits
        while fixed.endswith(block):
            fixed = fixed[: -len(block)]
    value = int(whole or 0) + Fraction(int(fixed or 0), 10 ** len(fixed))
    value += Fraction(int(block), (10 ** len(block) - 1) * 10 ** len(fixed))
    return ("-" if sign else "") + _plain(value)


def thousands_groups(text: str) -> str:
    """``1 000 000`` → ``1000000``: digit groups of three after a first group of one to three digits, separated by
    spaces, are one number; any other numbers side by side keep their space (``2 4`` stays two numbers)."""
    return _THOUSANDS_GROUPS_RE.sub(lambda match: "".join(match.group().split()), text)
