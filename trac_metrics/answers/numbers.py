"""The number rule of math equivalence (docs/method.md#answer-equivalence): plain numbers compared with exact rational
arithmetic, a tolerance only where a decimal is written."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import NamedTuple

_REL_TOL = Fraction(1, 10**6)
MAX_NUMBER_CHARS = 1000  # longer numbers compare as strings (Python parses at most 4300 digits into an int)

_NUMBER_TOKEN = r"-?\d*(?:\.\d+)?"
_TEN_POWER = r"10\^(?:\{([-+]?\d{1,3})\}|(\d))"
_DECIMAL_RE = re.compile(  # mantissa, then its power of ten: 7.5e-3, 7.5\times10^{-3}, 7.5\cdot10^{-3}
    rf"(-?\d*(?:\.\d*)?)(?:[eE]([-+]?\d{{1,3}})|(?:\\times|\\cdot){_TEN_POWER})?"
)
_POWER_OF_TEN_RE = re.compile(rf"(-?){_TEN_POWER}")
_SLASH_FRACTION_RE = re.compile(rf"({_NUMBER_TOKEN})/({_NUMBER_TOKEN})")
_LATEX_FRACTION_RE = re.compile(rf"(-?)\\frac\{{({_NUMBER_TOKEN})\}}\{{({_NUMBER_TOKEN})\}}")


class Number(NamedTuple):
    """A plain number: its exact value, and one unit of its last written decimal place (0 when it is exact)."""

    value: Fraction
    unit: Fraction


def _exact(token: str) -> Fraction | None:
    """Exact value of a decimal token; None when it has no digit."""
    return Fraction(token) if token.strip("-.") else None


def _written_decimal(text: str) -> Number | None:
    """A decimal (``-1234.5``; normalization has removed thousands separators, so a comma separates list items),
    e-notation (``7.5e-3``) or scientific notation (``7.5\\times10^{-3}``,
    ``10^{-3}``): exact value, and one unit of the last nonzero decimal place of the mantissa (0 for an integer
    mantissa: ``2\\times10^{3}`` is exactly 2000; trailing zeros add no precision, as normalization drops them)."""
    power = _POWER_OF_TEN_RE.fullmatch(text)
    match = power or _DECIMAL_RE.fullmatch(text)
    if match is None:
        return None
    mantissa = power.group(1) + "1" if power else match.group(1)
    value = _exact(mantissa)
    if value is None:
        return None
    scale = Fraction(10) ** int(next((group for group in match.groups()[1:] if group), 0))
    places = len(mantissa.partition(".")[2].rstrip("0"))
    return Number(value * scale, scale / 10**places if places else Fraction(0))


def as_number(text: str) -> Number | None:
    """A plain number: see :func:`_written_decimal`, or an exact fraction ``a/b`` / ``\\frac{a}{b}``; else None."""
    if len(text) > MAX_NUMBER_CHARS:
        return None
    decimal = _written_decimal(text)
    if decimal is not None:
        return decimal
    fraction = _SLASH_FRACTION_RE.fullmatch(text)
    sign = ""
    if fraction is None:
        fraction = _LATEX_FRACTION_RE.fullmatch(text)
        if fraction is None:
            return None
        sign, numerator, denominator = fraction.groups()
    else:
        numerator, denominator = fraction.groups()
    top, bottom = _exact(numerator), _exact(denominator)
    if top is None or not bottom:
        return None
    return Number(-top / bottom if sign else top / bottom, Fraction(0))


def exact_latex(number: Number) -> str:
    """The exact value of a plain number in LaTeX (``7.5e-3`` → ``\\frac{3}{400}``, ``2e-1`` → ``\\frac{1}{5}``), as
    the symbolic step must read it: Math-Verify alone would read the ``e`` of e-notation as Euler's number."""
    value = number.value
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def decimal_expresses(written: Number, value: Fraction) -> bool:
    """Whether a written number stands for ``value``: exactly, for an exact number; for a decimal with unit u of its
    last place, when ``value`` rounds or truncates to it (same sign, ``|written| − u/2 ≤ |value| < |written| + u``)
    and lies within 1e-6 of the larger magnitude (``0.3333333`` and ``0.3333333`` both stand for 1/3,
    ``2.2360679`` for √5; ``0.333`` for nothing but 0.333)."""
    if not written.unit:
        return value == written.value
    if value and written.value and (value < 0) != (written.value < 0):
        return False
    excess = abs(value) - abs(written.value)
    within_digits = -written.unit / 2 <= excess < written.unit
    return within_digits and abs(value - written.value) <= _REL_TOL * max(abs(value), abs(written.value))


def number_verdict(first: str, second: str) -> bool | None:
    """For two plain numbers (else None): equal when either expresses the other's exact value
    (:func:`decimal_expresses`). So integers and fractions are exact
    (``1000000`` ≢ ``1000001``); written digits always tell numbers apart (``1000000`` ≢ ``1000000.5``); a decimal
    matches another value only where it agrees to about six significant digits and rounds or truncates it
    (``0.3333333`` ≡ 1/3, ``0.1`` ≡ ``0.10000001``), so a short decimal is not a rounding of anything (``0.333`` ≢
    1/3, ``0.5`` ≢ 8/15, ``3.14`` ≢ ``3.14159``, as ``3.14`` ≢ π). Exact rational arithmetic: nothing overflows
    (``1e400`` ≢ ``1e401``)."""
    x, y = as_number(first), as_number(second)
    if x is None or y is None:
        return None
    return decimal_expresses(x, y.value) or decimal_expresses(y, x.value)
