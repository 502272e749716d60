"""The symbolic step of math equivalence (docs/method.md#answer-equivalence): Math-Verify on exact rationals, the value
of a constant expression against a written decimal, and the bounds that keep sympy from hanging.

Math-Verify's own signal-based timeouts only work on the main thread and make a verdict depend on the machine's load,
so they are switched off and the work is bounded here instead, by rules that give the same verdict on any machine
(docs/method.md#the-symbolic-work-budget):

- input caps (:func:`exceeds_symbolic_caps`): inputs longer than ``MAX_SYMBOLIC_CHARS``, nested deeper than
  ``MAX_SYMBOLIC_DEPTH`` (parsing time grows steeply with nesting) and pairs that could hang inside one C call (huge
  powers, factorials or binomials of large numbers, logarithms next to long numbers) never reach sympy, nor do
  word-like answers (:func:`too_costly_for_sympy`);
- a work budget (:func:`within_budget`): a comparison may make ``SYMBOLIC_WORK_BUDGET`` Python calls after parsing
  (:func:`trac_metrics._util.limits.work_limit`); one that runs out counts as not equivalent. Parsing is not counted:
  its results are cached per answer (a count must not depend on which answers were parsed before) and its cost is
  bounded by the input caps;
- a CPU-time safety net of ``SYMBOLIC_CPU_LIMIT_S`` seconds, twenty times what the budget takes, for a call that is
  slow by itself; it also counts as not equivalent, with a warning that this verdict may depend on the machine.
"""

from __future__ import annotations

import functools
import logging
import re
import reprlib
import warnings
from collections.abc import Callable
from fractions import Fraction

from math_verify import LatexExtractionConfig, parse, verify
from sympy import Basic, Expr, Float, MatrixBase, Poly, Rational, cancel
from sympy.core.relational import Equality
from sympy.polys.polyerrors import PolynomialError

from trac_metrics._util.limits import CpuLimitExceeded, WorkLimitExceeded, uncounted, work_limit
from trac_metrics._warnings import TracWarning
from trac_metrics.answers._latex import CACHE_SIZE
from trac_metrics.answers.numbers import Number, decimal_expresses

MAX_SYMBOLIC_CHARS = 300
MAX_SYMBOLIC_DEPTH = 8
"""Deepest nesting of brackets (``()``, ``[]``, ``{}``; ``\\left(`` is one) that reaches sympy: real references
nest at most 4 deep, and parsing an answer nested 8 deep takes about half a second."""
SYMBOLIC_WORK_BUDGET = 2_000_000
"""Python calls one comparison may make after parsing: 1.6 to 3.2 s of CPU time where it was tuned (traced), over
twenty times what the costliest equivalence of the test suites and the real-data rewrites makes (78,000)."""
SYMBOLIC_CPU_LIMIT_S = 60.0
"""The CPU-time safety net of a comparison (seconds of its thread's CPU time): twenty times what the budget takes."""
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
_OPENING, _CLOSING = frozenset("([{"), frozenset(")]}")


class _DisabledTimeoutNotice(logging.Filter):
    """Drops Math-Verify's one-time warning that its timeouts are off: this module bounds the work itself
    (``too_costly_for_sympy``, ``within_budget``), so the warning would only mislead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Timeout is disabled")


for _logger_name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_logger_name).addFilter(_DisabledTimeoutNotice())


def nesting_depth(text: str) -> int:
    """The deepest nesting of brackets in ``text`` (``()``, ``[]`` and ``{}`` alike; an unmatched closer is ignored)."""
    depth = deepest = 0
    for char in text:
        if char in _OPENING:
            depth += 1
            deepest = max(deepest, depth)
        elif char in _CLOSING and depth:
            depth -= 1
    return deepest


def exceeds_symbolic_caps(first: str, second: str = "") -> bool:
    """Inputs whose symbolic work the work budget cannot bound (docs/method.md#the-symbolic-work-budget): longer than
    ``MAX_SYMBOLIC_CHARS`` or nested deeper than ``MAX_SYMBOLIC_DEPTH`` (Math-Verify's parser, whose calls are not
    counted, slows down steeply with both), or able to hang inside one uninterruptible C call (huge integer powers,
    factorials and binomials of large numbers, sympy's ``logcombine`` turning ``n·log(b)`` into ``b**n`` for a large
    n). Shared by the checker and ``--equivalence math-verify``."""
    pair = first + second
    if _LOGARITHM_RE.search(pair) and len(_DIGIT_RE.findall(pair)) > _MAX_LOGARITHM_PAIR_DIGITS:
        return True
    return any(
        len(text) > MAX_SYMBOLIC_CHARS
        or nesting_depth(text) > MAX_SYMBOLIC_DEPTH
        or _LONG_LITERAL_RE.search(text)
        or _BIG_EXPONENT_RE.search(text)
        or _NESTED_EXPONENT_RE.search(text)
        or len(_LARGE_EXPONENT_RE.findall(text)) > 1
        or (_COMBINATORIAL_RE.search(text) and _COMBINATORIAL_RISK_RE.search(text))
        for text in (first, second)
    )


def too_costly_for_sympy(first: str, second: str) -> bool:
    """Pairs the symbolic step skips: over the input caps (:func:`exceeds_symbolic_caps`), or meaningless to sympy
    (words read as products of symbols; a subscripted name such as ``A_{PQR}`` is a symbol)."""
    return exceeds_symbolic_caps(first, second) or any(
        _TEXT_WORD_RE.search(_SUBSCRIPT_RE.sub("", text)) for text in (first, second)
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
    tried. Its timeouts are off (bounded by the input caps; the calls are not counted against the work budget,
    :func:`trac_metrics._util.limits.uncounted`, as the result is cached); decimals are made exact:
    Math-Verify compares a float by rounding both sides to 6 decimal places, which would make
    ``\\frac{1}{10^8}`` and ``0.00000002`` equal. Commas get a space after them: normalization has removed every
    thousands separator, and Math-Verify would read ``41,207`` as one number."""
    with uncounted():
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


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = 60


def within_budget(compare: Callable[[str, str], bool], first: str, second: str) -> bool:
    """``compare(first, second)`` under the symbolic work budget: False when it makes more than
    ``SYMBOLIC_WORK_BUDGET`` counted Python calls, or when the CPU-time safety net fires first (then with a
    TracWarning: that verdict may depend on the machine). Math-Verify's one-time set-up runs before, uncounted."""
    warm_up_math_verify()
    try:
        with work_limit(SYMBOLIC_WORK_BUDGET, SYMBOLIC_CPU_LIMIT_S):
            return compare(first, second)
    except CpuLimitExceeded:
        warnings.warn(
            f"comparing {_SHOWN.repr(first)} with {_SHOWN.repr(second)} took {SYMBOLIC_CPU_LIMIT_S:g} s of CPU time "
            "before its work budget ran out: counted as not equivalent, a verdict that may depend on the machine",
            TracWarning,
            stacklevel=2,
        )
        return False
    except WorkLimitExceeded:
        return False


@functools.cache
def warm_up_math_verify() -> None:
    """Run Math-Verify once outside any work budget: its first use pays sympy's and the LaTeX parser's lazy
    set-up (imports, about half a second), which must not count against the first real comparison."""
    expanded, factored = parsed("x^2+2x+1"), parsed("(x+1)^2")
    verify(list(expanded), list(factored), timeout_seconds=None)
