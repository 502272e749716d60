"""The symbolic step of math equivalence (docs/method.md#answer-equivalence): Math-Verify on exact rationals, the value
of a constant expression against a written decimal, and the bounds that keep sympy from hanging.

Math-Verify's own signal-based timeouts only work on the main thread, so they are switched off and the work is
bounded here instead: pairs that could hang inside one C call (huge powers, factorials or binomials of large
numbers, logarithms next to long numbers), inputs longer than ``MAX_SYMBOLIC_CHARS`` and word-like answers never
reach sympy, and every comparison gets a wall-time budget of ``SYMBOLIC_BUDGET_S`` seconds (:func:`time_limit`:
SIGALRM timer on the main thread, a thread-local trace function on other threads); a comparison that runs out
counts as not equivalent. Only that budget can make a result depend on machine load, and no ordinary answer comes
near it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator
from fractions import Fraction

from math_verify import LatexExtractionConfig, parse, verify
from sympy import Basic, Expr, Float, MatrixBase, Poly, Rational, cancel
from sympy.core.relational import Equality
from sympy.polys.polyerrors import PolynomialError

from trac_metrics.answers._latex import CACHE_SIZE
from trac_metrics.answers.numbers import Number, decimal_expresses

MAX_SYMBOLIC_CHARS = 300
SYMBOLIC_BUDGET_S = 1.5
_MAX_EXPONENT_DIGITS = 4
_MAX_LITERAL_DIGITS = 30
_MAX_LOGARITHM_PAIR_DIGITS = 6
_EVALUATION_DIGITS = 40

_SUBSCRIPT_RE = re.compile(r"_\{[^{}]*\}|_[A-Za-z0-9]")
_TEXT_WORD_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_BIG_EXPONENT_RE = re.compile(rf"\^\s*\{{?\s*[-+]?\d{{{_MAX_EXPONENT_DIGITS + 1},}}")
_NESTED_EXPONENT_RE = re.compile(r"\^\s*\{[^{}]*\^|\^\s*\{[^{}]*\{[^{}]*\^|\^[^{\s]\^")
_LARGE_EXPONENT_RE = re.compile(r"\^\s*\{?\s*[-+]?\d{3,}")
_LONG_LITERAL_RE = re.compile(rf"\d{{{_MAX_LITERAL_DIGITS + 1},}}")
_COMBINATORIAL_RE = re.compile(r"!|\\binom|\\choose|\\dbinom|\\tbinom")
_COMBINATORIAL_RISK_RE = re.compile(rf"\d{{{_MAX_EXPONENT_DIGITS + 1},}}|\^|!\s*!")
_LOGARITHM_RE = re.compile(r"\\(?:log|ln|lg)(?![A-Za-z])")
_DIGIT_RE = re.compile(r"\d")


class _DisabledTimeoutNotice(logging.Filter):
    """Drops Math-Verify's one-time warning that its timeouts are off: this module bounds the work itself
    (``too_costly_for_sympy``, ``time_limit``), so the warning would only mislead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Timeout is disabled")


for _logger_name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_logger_name).addFilter(_DisabledTimeoutNotice())


def too_costly_for_sympy(first: str, second: str) -> bool:
    """Pairs whose sympy work can hang inside one uninterruptible C call (huge integer powers, factorials and
    binomials of large numbers, sympy's ``logcombine`` turning ``n·log(b)`` into ``b**n`` for a large n) or is
    meaningless (words read as products of symbols; a subscripted name such as ``A_{PQR}`` is a symbol)."""
    pair = first + second
    if _LOGARITHM_RE.search(pair) and len(_DIGIT_RE.findall(pair)) > _MAX_LOGARITHM_PAIR_DIGITS:
        return True
    return any(
        len(text) > MAX_SYMBOLIC_CHARS
        or _TEXT_WORD_RE.search(_SUBSCRIPT_RE.sub("", text))
        or _LONG_LITERAL_RE.search(text)
        or _BIG_EXPONENT_RE.search(text)
        or _NESTED_EXPONENT_RE.search(text)
        or len(_LARGE_EXPONENT_RE.findall(text)) > 1
        or (_COMBINATORIAL_RE.search(text) and _COMBINATORIAL_RISK_RE.search(text))
        for text in (first, second)
    )


def _exact_floats(parsed: object) -> object:
    """A parsed expression with every float replaced by the rational its decimal digits write (0.1 → 1/10)."""
    if not isinstance(parsed, (Basic, MatrixBase)):
        return parsed
    return parsed.xreplace({number: Rational(str(number)) for number in parsed.atoms(Float)})


_WHOLE_ANSWER = (LatexExtractionConfig(),)


@functools.lru_cache(maxsize=CACHE_SIZE)
def parsed(text: str) -> tuple[object, ...]:
    """Math-Verify's LaTeX parse of a whole normalized answer, or only the answer as a string when its LaTeX
    parser cannot read all of it: a partial reading never decides (``-[1,3)`` is not 3, ``\\{2,5\\}^c`` is not 5),
    so neither Math-Verify's expression extraction (the last number of a string) nor a match inside the answer is
    tried. Its timeouts are off (bounded by ``too_costly_for_sympy`` and ``time_limit``); decimals are made exact:
    Math-Verify compares a float by rounding both sides to 6 decimal places, which would make
    ``\\frac{1}{10^8}`` and ``0.00000002`` equal. Commas get a space after them: normalization has removed every
    thousands separator, and Math-Verify would read ``41,207`` as one number."""
    result = parse(
        f"${text.replace(',', ', ')}$",
        extraction_config=_WHOLE_ANSWER,
        extraction_mode="first_match",
        parsing_timeout=None,
    )
    return tuple(_exact_floats(item) for item in result)


def symbolically_equal(first: str, second: str) -> bool:
    """Math-Verify in either direction: its ``verify(gold, prediction)`` is not symmetric (it reads an inequality as
    the interval of its solutions only on the gold side, ``x \\geq 3`` ≡ ``[3, \\infty)``), and this relation has no
    gold side."""
    if too_costly_for_sympy(first, second):
        return False
    parsed_first, parsed_second = list(parsed(first)), list(parsed(second))
    if not parsed_first or not parsed_second:
        return False
    return verify(parsed_first, parsed_second, timeout_seconds=None) or verify(
        parsed_second, parsed_first, timeout_seconds=None
    )


def decimal_matches_constant(decimal: Number, expression: str) -> bool | None:
    """Whether a written decimal expresses the value of a constant expression (``2.2360679`` and ``\\sqrt{5}``:
    :func:`trac_metrics.answers.numbers.decimal_expresses` on its value to 40 digits); None when ``expression``
    is not a real constant (it has a variable, or Math-Verify reads no single expression)."""
    if too_costly_for_sympy(expression, ""):
        return None
    candidates = [item for item in parsed(expression) if isinstance(item, Expr)]
    if not candidates or not candidates[0].is_number:
        return None
    value = candidates[0].evalf(_EVALUATION_DIGITS)
    if not value.is_real or not value.is_finite:
        return None
    return decimal_expresses(decimal, Fraction(str(Rational(value))))


def _equation(text: str) -> Expr | None:
    """``left − right`` of an equation Math-Verify reads from ``text``; None for anything else."""
    found = parsed(text)
    if not found or not isinstance(found[0], Equality):
        return None
    return found[0].lhs - found[0].rhs


def same_relation(first: str, second: str) -> bool | None:
    """Two equations as relations (docs/method.md#answer-equivalence, step 3): the same when ``left − right`` of one
    is a nonzero constant multiple of the other's (``y = 3 - \\frac{x}{2}`` and ``x + 2y - 6 = 0``); two polynomial
    equations that are not multiples differ. None (undecided: Math-Verify decides) for other pairs."""
    if too_costly_for_sympy(first, second):
        return None
    difference, other = _equation(first), _equation(second)
    if difference is None or other is None:
        return None
    ratio = cancel(difference / other)
    if ratio != 0 and ratio.is_number and ratio.is_finite:
        return True
    symbols = difference.free_symbols | other.free_symbols
    if symbols and all(_is_polynomial(expression, symbols) for expression in (difference, other)):
        return False
    return None


def _is_polynomial(expression: Expr, symbols: set) -> bool:
    try:
        Poly(expression, *symbols)
    except PolynomialError:
        return False
    return True


class SymbolicBudgetExceeded(BaseException):
    """Raised when a comparison runs out of time; a BaseException so no ``except Exception`` in a library
    swallows it."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise SymbolicBudgetExceeded once ``seconds`` of wall time have passed inside the block.

    On the main thread an ITIMER_REAL / SIGALRM timer does it at no cost. Signals reach the main thread only,
    so on any other thread (or when the timer is already in use) a thread-local trace function checks the
    clock at every Python call instead (roughly 2x slower sympy, no effect on other threads). Neither can stop
    a single long C call: ``too_costly_for_sympy`` keeps those out.
    """
    on_main_thread = threading.current_thread() is threading.main_thread()
    if on_main_thread and hasattr(signal, "setitimer") and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0):
        with _signal_time_limit(seconds):
            yield
    else:
        with _trace_time_limit(seconds):
            yield


@contextlib.contextmanager
def _signal_time_limit(seconds: float) -> Iterator[None]:
    armed = True

    def on_alarm(signum: int, frame: object) -> None:
        if armed:
            raise SymbolicBudgetExceeded

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)


@contextlib.contextmanager
def _trace_time_limit(seconds: float) -> Iterator[None]:
    deadline = time.monotonic() + seconds

    def check_deadline(frame: object, event: str, arg: object) -> None:
        if time.monotonic() > deadline:
            raise SymbolicBudgetExceeded

    previous = sys.gettrace()
    sys.settrace(check_deadline)
    try:
        yield
    finally:
        sys.settrace(previous)


@functools.cache
def warm_up_math_verify() -> None:
    """Run Math-Verify once outside any time budget: its first use pays sympy's and the LaTeX parser's lazy
    set-up (about half a second), which must not count against the first real comparison."""
    expanded, factored = parsed("x^2+2x+1"), parsed("(x+1)^2")
    verify(list(expanded), list(factored), timeout_seconds=None)
