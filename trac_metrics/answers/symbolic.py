"""The symbolic step of math equivalence (docs/method.md#answer-equivalence): Math-Verify on exact rationals, the value
of a constant expression against a written decimal, and the bounds that keep sympy from hanging.

Math-Verify's own signal-based timeouts only work on the main thread and make a verdict depend on the machine's load,
so they are switched off and the work is bounded here instead, by rules that give the same verdict on any machine
(docs/method.md#the-symbolic-work-budget):

- input caps (:func:`exceeds_symbolic_caps`): inputs longer than ``MAX_SYMBOLIC_CHARS``, nested deeper than
  ``MAX_SYMBOLIC_DEPTH`` (parsing time grows steeply with nesting) and pairs that could hang inside one C call (huge
  powers, factorials or binomials of large numbers, logarithms next to long numbers) never reach sympy, nor do
  word-like answers (:func:`too_costly_for_sympy`);
- exact steps before Math-Verify (:func:`union_verdict`, :func:`constant_verdict`, :func:`rational_function_verdict`,
  :func:`identity_verdict`), on plain algebra read fast (:mod:`trac_metrics.answers.plain_math`), decide most pairs
  in a few thousand calls;
- a work budget (:func:`within_budget`): a comparison may make ``SYMBOLIC_WORK_BUDGET`` Python calls after parsing
  (:func:`trac_metrics._util.limits.work_limit`); one that runs out is undecided and counts as not equivalent
  (:func:`counting_undecided` counts them in a block, e.g. one question's labels). Parsing is not counted:
  its results are cached per answer (a count must not depend on which answers were parsed before) and its cost is
  bounded by the input caps, and kept low by two-stage parsing (:mod:`trac_metrics.answers._two_stage_parsing`),
  running untraced and the once-per-process set-up (:func:`warm_up_math_verify`). Nor does a count depend on the
  comparisons made before: each starts from sympy's empty cache and gets every cached parse as new (:func:`_as_new`);
  nor, but for about 1 %, on the process: within a comparison sympy checks the facts of an assumption in sorted
  order, not shuffled (:func:`_assumptions_in_sorted_order`);
- a CPU-time safety net of ``SYMBOLIC_CPU_LIMIT_S`` seconds, far above what the budget takes, for a call that is
  slow by itself; it also counts as not equivalent, with a warning that this verdict may depend on the machine.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import logging
import random
import re
import reprlib
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction

import mpmath
from math_verify import LatexExtractionConfig, parse, verify
from sympy import (
    Abs,
    Add,
    Basic,
    Derivative,
    Expr,
    Float,
    Heaviside,
    I,
    Integral,
    Interval,
    Limit,
    MatrixBase,
    Max,
    Min,
    Mod,
    Mul,
    Piecewise,
    Poly,
    Pow,
    Product,
    Rational,
    S,
    Set,
    Sum,
    Symbol,
    Union,
    binomial,
    cancel,
    ceiling,
    factorial,
    floor,
    frac,
    preorder_traversal,
    sign,
)
from sympy.core.assumptions import StdFactKB
from sympy.core.cache import clear_cache
from sympy.core.evalf import PrecisionExhausted
from sympy.core.function import AppliedUndef
from sympy.core.relational import Equality, Relational
from sympy.logic.boolalg import Boolean
from sympy.polys.polyerrors import PolynomialError

from trac_metrics._util.limits import CpuLimitExceeded, WorkLimitExceeded, uncounted, work_limit
from trac_metrics._warnings import TracWarning
from trac_metrics.answers._latex import CACHE_SIZE
from trac_metrics.answers._two_stage_parsing import two_stage_parsing
from trac_metrics.answers.numbers import Number, decimal_expresses
from trac_metrics.answers.plain_math import read_plain
from trac_metrics.answers.structures import structure

MAX_SYMBOLIC_CHARS = 300
MAX_SYMBOLIC_DEPTH = 8
"""Deepest nesting of brackets (``()``, ``[]``, ``{}``; ``\\left(`` is one) that reaches sympy: real references
nest at most 4 deep, and parsing an answer nested 8 deep takes about half a second."""
SYMBOLIC_WORK_BUDGET = 25_000
"""Python calls one comparison may make after parsing: about 25 to 50 ms of CPU time where it was tuned (traced); the
costliest equivalences of the test suites and the real-data rewrites make about 17,000, each starting from sympy's
empty cache (:func:`_as_new`)."""
SYMBOLIC_CPU_LIMIT_S = 60.0
"""The CPU-time safety net of a comparison (seconds of its thread's CPU time): far above what the budget takes."""
_MAX_EXPONENT_DIGITS = 4
_MAX_LITERAL_DIGITS = 30
_MAX_LOGARITHM_PAIR_DIGITS = 6
_EVALUATION_DIGITS = 40
_MAX_WORKING_DIGITS = 1000
"""Working precision a constant's evaluation may climb to (``\\sin(2^{999})`` needs about 340 digits)."""
_EVALUATION_BITS = 136
"""``_EVALUATION_DIGITS`` in binary digits, with a few to spare."""
_AGREEING_DIGITS_TOLERANCE = mpmath.mpf(10) ** -30
"""Two constants whose 40-digit values agree to 30 significant digits are equal."""
IDENTITY_SEED = 48
IDENTITY_SCALES = (1, 4, 16)
"""Half-widths of the boxes the identity test's points are drawn from, in turn: values near zero, beyond the
breakpoints of small constants (``|x+2|``, ``\\max(x, 3)``) and far out."""
SMOOTH_POINTS = 6
"""Points at which two expressions built from smooth functions must agree (each point in general position)."""
NON_SMOOTH_POINTS = 24
"""Points for a pair with a non-smooth function (``_NON_SMOOTH``): two such expressions may agree on a region and
differ on another, which each point misses only with the probability of missing that region."""
MAX_IDENTITY_VARIABLES = 8
_POINT_DENOMINATOR = 997
_NON_SMOOTH = (Abs, Max, Min, floor, ceiling, frac, Mod, Piecewise, sign, Heaviside)


def _draw_identity_points() -> tuple[tuple[Fraction, ...], ...]:
    """``NON_SMOOTH_POINTS`` points of ``MAX_IDENTITY_VARIABLES`` coordinates each in [-1, 1], independent
    pseudo-random rationals with denominator ``_POINT_DENOMINATOR`` drawn from ``IDENTITY_SEED``: the same on every
    machine and in every process, chosen without regard to any answer."""
    draws = random.Random(IDENTITY_SEED)
    return tuple(
        tuple(
            Fraction(draws.randint(-_POINT_DENOMINATOR, _POINT_DENOMINATOR), _POINT_DENOMINATOR)
            for _ in range(MAX_IDENTITY_VARIABLES)
        )
        for _ in range(NON_SMOOTH_POINTS)
    )


IDENTITY_POINTS = _draw_identity_points()
"""The identity test's points in the unit box, scaled per point (:func:`identity_points`)."""
_UNEVALUATED = (Integral, Sum, Product, Derivative, Limit, AppliedUndef)
_ARITHMETIC = (Add, Mul, Pow, Abs, factorial, binomial)

_SUBSCRIPT_RE = re.compile(r"_\{[^{}]*\}|_[A-Za-z0-9]")
_ENVIRONMENT_RE = re.compile(r"\\(?:begin|end)\{[A-Za-z]+\}")
_TEXT_WORD_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_BIG_EXPONENT_RE = re.compile(rf"\^\s*\{{?\s*[-+]?\d{{{_MAX_EXPONENT_DIGITS + 1},}}")
_NESTED_EXPONENT_RE = re.compile(r"\^\s*\{[^{}]*\^|\^\s*\{[^{}]*\{[^{}]*\^|\^[^{\s]\^")
_LARGE_EXPONENT_RE = re.compile(r"\^\s*\{?\s*[-+]?\d{3,}")
_LONG_LITERAL_RE = re.compile(rf"\d{{{_MAX_LITERAL_DIGITS + 1},}}")
_COMBINATORIAL_RE = re.compile(r"!|\\binom|\\choose|\\dbinom|\\tbinom")
_COMBINATORIAL_RISK_RE = re.compile(rf"\d{{{_MAX_EXPONENT_DIGITS + 1},}}|\^|!\s*!")
_LOGARITHM_RE = re.compile(r"\\(?:log|ln|lg)(?![A-Za-z])")
_DIGIT_RE = re.compile(r"\d")
_UNION_RE = re.compile(r"\\cup(?![A-Za-z])")
_NUMBERS_SIDE_BY_SIDE_RE = re.compile(r"\d \d")
"""Two numbers normalization kept apart (``2 4``): an answer the LaTeX parser would join into one number."""
_OPENING, _CLOSING = frozenset("([{"), frozenset(")]}")
_PRIME_RE = re.compile(r"'|\\prime(?![A-Za-z])")
_BASE_SUBSCRIPT_RE = re.compile(r"(?<![A-Za-z\\\d])(\d+)_\{?(\d+)\}?")
"""A numeral in a base (``101_2``): Math-Verify's parser reads it as the digits alone (101)."""


class _DisabledTimeoutNotice(logging.Filter):
    """Drops Math-Verify's one-time warning that its timeouts are off: this module bounds the work itself
    (``too_costly_for_sympy``, ``within_budget``), so the warning would only mislead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Timeout is disabled")


for _logger_name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_logger_name).addFilter(_DisabledTimeoutNotice())


_ASSUMPTIONS = importlib.import_module("sympy.core.assumptions")  # the package's name is a function's too


@contextlib.contextmanager
def _assumptions_in_sorted_order() -> Iterator[None]:
    """Inside one of our comparisons only, sympy checks the facts it may deduce a queried assumption from in sorted
    order. It shuffles them with a generator seeded anew in each process, from a set of their names whose order follows
    the process's hash seed, so the work of a comparison, counted against its budget, would differ from one process to
    the next (the order changes the work, not an answer; docs/method.md#the-symbolic-work-budget). sympy is restored
    after the comparison, so nothing else the process runs sees the change; a sympy without that generator is left
    as it is."""
    shuffle = getattr(_ASSUMPTIONS, "shuffle", None)
    if shuffle is None:
        yield
        return
    _ASSUMPTIONS.shuffle = list.sort
    try:
        yield
    finally:
        _ASSUMPTIONS.shuffle = shuffle


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
    (words read as products of symbols, a subscripted name such as ``A_{PQR}`` being a symbol, an environment's name
    such as ``pmatrix`` no word; numbers side by side, ``2 4``, which its parser would join into one)."""
    return exceeds_symbolic_caps(first, second) or any(
        _TEXT_WORD_RE.search(_ENVIRONMENT_RE.sub("", _SUBSCRIPT_RE.sub("", text)))
        or _NUMBERS_SIDE_BY_SIDE_RE.search(text)
        for text in (first, second)
    )


def _exact_floats(parsed: object) -> object:
    """A parsed expression with every float replaced by the rational its decimal digits write (0.1 → 1/10)."""
    if not isinstance(parsed, (Basic, MatrixBase)):
        return parsed
    return parsed.xreplace({number: Rational(str(number)) for number in parsed.atoms(Float)})


def _imaginary_unit(parsed: object) -> object:
    """A parsed expression with the letter ``i`` as the imaginary unit, as a LaTeX answer writes it (``2+3i``,
    ``(1+i)^2`` ≡ ``2i``, ``e^{i\\pi}`` ≡ ``-1``), where Math-Verify's parser makes it a real variable; the index of a
    sum or product (a bound variable) stays a variable."""
    if not isinstance(parsed, (Basic, MatrixBase)):
        return parsed
    return parsed.xreplace({symbol: I for symbol in parsed.free_symbols if symbol.name == "i"})


_WHOLE_ANSWER = (LatexExtractionConfig(),)


def _as_new(found: tuple[object, ...]) -> tuple[object, ...]:
    """A cached parse handed to a comparison in the state of a new one: sympy's global cache emptied and, on every
    node of its expressions, what sympy computes lazily and keeps on the object (its hash, the assumptions it has
    derived) forgotten, so that the work a comparison makes, counted against its budget, does not depend on which
    comparisons ran before (docs/method.md#the-symbolic-work-budget). Uncounted."""
    with uncounted():
        clear_cache()
        for item in found:
            for expression in item if isinstance(item, MatrixBase) else (item,):
                if isinstance(expression, Basic):
                    for node in preorder_traversal(expression):
                        node._mhash = None
                        node._assumptions = (
                            StdFactKB(dict(node._assumptions0))
                            if isinstance(node, Symbol)
                            else type(node).default_assumptions
                        )
    return found


def parsed(text: str) -> tuple[object, ...]:
    """:func:`_parsed` as new (:func:`_as_new`)."""
    return _as_new(_parsed(text))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _parsed(text: str) -> tuple[object, ...]:
    """Math-Verify's LaTeX parse of a whole normalized answer, or only the answer as a string when its LaTeX
    parser cannot read all of it: a partial reading never decides (``-[1,3)`` is not 3, ``\\{2,5\\}^c`` is not 5),
    so neither Math-Verify's expression extraction (the last number of a string) nor a match inside the answer is
    tried. Its timeouts are off (bounded by the input caps; the calls are not counted against the work budget,
    :func:`trac_metrics._util.limits.uncounted`, as the result is cached); decimals are made exact:
    Math-Verify compares a float by rounding both sides to 6 decimal places, which would make
    ``\\frac{1}{10^8}`` and ``0.00000002`` equal. Commas get a space after them: normalization has removed every
    thousands separator, and Math-Verify would read ``41,207`` as one number. The grammar's parser runs in two stages
    (:mod:`trac_metrics.answers._two_stage_parsing`: the same result, several times faster)."""
    with uncounted(), two_stage_parsing():
        result = parse(
            f"${text.replace(',', ', ')}$",
            extraction_config=_WHOLE_ANSWER,
            extraction_mode="first_match",
            parsing_timeout=None,
        )
        return tuple(_imaginary_unit(_exact_floats(item)) for item in result)


def _constant(found: tuple[object, ...]) -> Expr | None:
    """The one constant expression (no variable) Math-Verify reads from an answer; None for anything else (an
    unevaluated sum, integral, limit …: its value is Math-Verify's to find, within the work budget)."""
    if not found or not isinstance(found[0], Expr) or isinstance(found[0], Relational):
        return None
    return found[0] if found[0].is_number and not found[0].has(*_UNEVALUATED) else None


def _value(constant: Expr) -> Expr | None:
    """The value of a constant to ``_EVALUATION_DIGITS`` significant digits, every digit guaranteed (sympy's strict
    evaluation, working precision up to ``_MAX_WORKING_DIGITS``); None when that precision does not reach them (a
    value that may be zero, ``\\sqrt{2}+\\sqrt{3}-\\sqrt{5+2\\sqrt{6}}``) or the value is not a finite number."""
    try:
        value = constant.evalf(_EVALUATION_DIGITS, strict=True, maxn=_MAX_WORKING_DIGITS)
    except (PrecisionExhausted, ValueError, TypeError, ArithmeticError):
        return None
    return value if value.is_finite and value.is_number else None


def _evaluated(constant: Expr) -> Expr:
    """A constant with the arithmetic on rationals the parser left unevaluated carried out (``1-\\frac{1}{52!}``,
    ``\\frac{10^{56}}{10^{56}+1}`` become the rationals they are), bottom-up, so that every constant whose value is
    rational by arithmetic is compared exactly; other constants keep their form (``\\sqrt{2}``, ``\\sin 1``: no
    function is expanded, which can cost far more than the comparison)."""
    if isinstance(constant, Rational) or not isinstance(constant, _ARITHMETIC):
        return constant
    arguments = [_evaluated(argument) for argument in constant.args]
    return constant.func(*arguments) if all(isinstance(item, Rational) for item in arguments) else constant


def constant_verdict(first: tuple[object, ...], second: tuple[object, ...]) -> bool | None:
    """Two constant expressions by their exact values (docs/method.md#answer-equivalence): two rationals (integers,
    fractions, ``\\frac{1}{2^{64}}``, ``\\frac{1}{52!}``, ``1-\\frac{1}{52!}``: any form that evaluates to one,
    :func:`_evaluated`) exactly; other constants (surds, π, logarithms) by their
    values to 40 significant digits, relative to their size, never an absolute tolerance (``\\frac{1}{10^{20}}`` ≢
    ``\\frac{2}{10^{20}}``). None (undecided: Math-Verify decides) when either side is no single constant or its value
    cannot be computed to those digits."""
    left, right = _constant(first), _constant(second)
    if left is None or right is None:
        return None
    left, right = _evaluated(left), _evaluated(right)
    if isinstance(left, Rational) and isinstance(right, Rational):
        return bool(left == right)
    left_value, right_value = _value(left), _value(right)
    if left_value is None or right_value is None:
        return None
    return _agree(left_value, right_value)


def _agree(left_value: Expr, right_value: Expr) -> bool:
    """Two values to 40 significant digits agree to 30, relative to their size; compared as mpmath numbers at that
    precision (sympy's ``abs`` of a complex value, ``\\sqrt[3]{x}^2`` at a negative x, simplifies its argument
    first, many times the cost of the comparison)."""
    with mpmath.workprec(_EVALUATION_BITS):
        left, right = left_value._to_mpmath(_EVALUATION_BITS), right_value._to_mpmath(_EVALUATION_BITS)
        return bool(abs(left - right) <= max(abs(left), abs(right)) * _AGREEING_DIGITS_TOLERANCE)


def rational_function_verdict(first: object, second: object) -> bool | None:
    """Two rational functions of their variables (polynomials, ``\\frac{x^2-1}{x-1}``; constant coefficients) are
    equal exactly when their difference cancels to zero (``\\frac{x^2-36}{x-6}`` ≡ ``x+6``, ``(x+3)^2`` ≢
    ``x^2+3x+9``), decided without Math-Verify's simplification; None for anything else."""
    if not all(isinstance(item, Expr) and not isinstance(item, Boolean) for item in (first, second)):
        return None
    symbols = sorted(first.free_symbols | second.free_symbols, key=str)  # type: ignore[union-attr]
    if not symbols or not all(item.is_rational_function(*symbols) for item in (first, second)):  # type: ignore[union-attr]
        return None
    return cancel(first - second) == 0  # type: ignore[operator]


def identity_points(variables: int, centres: tuple[Fraction, ...] = ()) -> Iterator[tuple[Rational, ...]]:
    """The values of ``variables`` variables (in name order) at each point of the identity test
    (docs/method.md#the-identity-test): ``IDENTITY_POINTS`` scaled by ``IDENTITY_SCALES`` in turn, the first
    ``SMOOTH_POINTS`` for smooth expressions; for a pair with a non-smooth function (``centres`` given: where its
    breakpoints are likely, :func:`_breakpoint_centres`) all ``NON_SMOOTH_POINTS``, those past the smooth ones centred
    at each of ``centres`` in turn (half of them on each side of it: ``\\max(x, 38)`` is seen above 38) and every
    second one rounded to integers (where ``\\lfloor x\\rfloor`` and ``\\lceil x\\rceil - 1`` differ). Fresh
    sympy numbers on every call: no state of an earlier comparison is reused."""
    count = NON_SMOOTH_POINTS if centres else SMOOTH_POINTS
    for index, unit_point in enumerate(IDENTITY_POINTS[:count]):
        scale = IDENTITY_SCALES[index % len(IDENTITY_SCALES)]
        values = [scale * value for value in unit_point[:variables]]
        if index >= SMOOTH_POINTS:
            centre = centres[index // 2 % len(centres)]
            values = [centre + value for value in values]
            values = [Fraction(round(value)) for value in values] if index % 2 else values
        yield tuple(Rational(value.numerator, value.denominator) for value in values)


def _breakpoint_centres(expressions: tuple[Expr, ...]) -> tuple[Fraction, ...]:
    """Where the breakpoints of a non-smooth function (``_NON_SMOOTH``) in ``expressions`` are likely: at each of the
    pair's three largest constants and their negatives (a variable against a constant, ``|x+2|``), else at zero (one
    variable against another, ``\\max(x, y)``); empty when every function is smooth."""
    if not any(expression.has(*_NON_SMOOTH) for expression in expressions):
        return ()
    constants = {abs(Fraction(int(number.p), int(number.q))) for e in expressions for number in e.atoms(Rational)}
    largest = sorted(constants - {0}, reverse=True)[:3]
    return tuple(centre for constant in largest for centre in (constant, -constant)) or (Fraction(0),)


def identity_verdict(first: object, second: object) -> bool | None:
    """Two expressions in variables (``\\sin^2 y+\\cos^2 y`` and ``1``, ``\\tan v`` and ``\\frac{\\sin v}{\\cos v}``,
    ``|x+2|`` and ``x+2``) by their values at points in general position (:func:`identity_points`;
    docs/method.md#the-identity-test gives the probability argument): different at the first point where
    both have values and they differ (to 30 significant digits, :func:`_point_verdict`); the same function when
    they agree at every point where both have values, at least ``SMOOTH_POINTS`` of them; None (Math-Verify decides)
    for more than ``MAX_IDENTITY_VARIABLES`` variables, an unevaluated integral, sum or function of no known kind, or
    too few points with values. A point where a side has no value (a pole, ``\\max`` of a complex value) is
    skipped."""
    if not all(isinstance(item, Expr) and not isinstance(item, Boolean) for item in (first, second)):
        return None
    pair: tuple[Expr, Expr] = (first, second)  # type: ignore[assignment]
    symbols = sorted(first.free_symbols | second.free_symbols, key=str)  # type: ignore[union-attr]
    if not symbols or len(symbols) > MAX_IDENTITY_VARIABLES or any(item.has(*_UNEVALUATED) for item in pair):
        return None
    agreeing = 0
    for point in identity_points(len(symbols), _breakpoint_centres(pair)):
        verdict = _point_verdict(pair, dict(zip(symbols, point, strict=True)))
        if verdict is False:
            return False
        agreeing += verdict is True
    return True if agreeing >= SMOOTH_POINTS else None


def _value_at(expression: Expr, values: dict) -> Expr | None:
    """The value of ``expression`` at ``values`` to ``_EVALUATION_DIGITS`` guaranteed digits, evaluated without
    building the substituted expression (many times cheaper); None when those digits are out of reach (a value that
    is exactly zero among them) or it is no finite number."""
    try:
        value = expression.evalf(_EVALUATION_DIGITS, subs=values, strict=True, maxn=_MAX_WORKING_DIGITS)
    except (PrecisionExhausted, ValueError, TypeError, ArithmeticError):
        return None
    return value if value.is_number and value.is_finite else None


def _point_verdict(pair: tuple[Expr, Expr], values: dict) -> bool | None:
    """Whether the two expressions agree at ``values``: by their values (:func:`_value_at`), else, where either is
    out of reach (a zero), as two constants (:func:`constant_verdict`: exactly when both are rational); None when a
    side has no value there (a pole, ``\\max`` of a complex value, which sympy refuses to compare)."""
    left, right = (_value_at(expression, values) for expression in pair)
    if left is not None and right is not None:
        return _agree(left, right)
    try:
        return constant_verdict((pair[0].subs(values),), (pair[1].subs(values),))
    except (TypeError, ValueError, ArithmeticError):
        return None


def _written_form(expression: object) -> str:
    """The tree of a parsed expression as text, the terms of each sum and the factors of each product in one order
    (the parser leaves them in the order written): two answers with the same form are the same expression."""
    if isinstance(expression, MatrixBase):
        return f"Matrix{expression.shape}({','.join(_written_form(entry) for entry in expression)})"
    if not isinstance(expression, Basic) or not expression.args:
        return f"{type(expression).__name__}:{expression}"
    parts = [_written_form(argument) for argument in expression.args]
    if isinstance(expression, (Add, Mul)) and expression.is_commutative:
        parts.sort()
    return f"{type(expression).__name__}({','.join(parts)})"


def _same_expression(first: object, second: object) -> bool:
    """Two answers the parser reads as the same expression up to the order of terms and factors
    (``\\sum_{k=0}^{n-1} F_k F_{n-k-1}`` and ``\\sum_{k=0}^{n-1} F_{n-k-1} F_k``): equal, decided without
    Math-Verify's search (which runs out of work on an unevaluated sum). An expression with no value (``12:00`` read
    as 12/0) is the same as nothing."""
    if not isinstance(first, (Basic, MatrixBase)) or first.has(S.ComplexInfinity, S.NaN):
        return False
    return _written_form(first) == _written_form(second)


def _interval_against_value(first: object, second: object) -> bool:
    """An interval (or union of intervals) on one side and a value (an expression, no set, no relation) on the other:
    never equal, decided without Math-Verify's search through both readings."""
    return any(
        isinstance(one, (Interval, Union)) and isinstance(other, Expr) and not isinstance(other, Boolean)
        for one, other in ((first, second), (second, first))
    )


def _holds_relation(item: object) -> bool:
    return isinstance(item, Boolean) or (isinstance(item, Basic) and bool(item.atoms(Relational)))


def algebra(text: str) -> tuple[object, ...]:
    """The expression of a normalized answer for the exact steps (values, rational functions, relations): plain
    algebra read fast (:func:`trac_metrics.answers.plain_math.read_plain`), else Math-Verify's parse. Uncounted and
    cached per answer, as parsing is, and handed out as new (:func:`_as_new`)."""
    return _as_new(_algebra(text))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _algebra(text: str) -> tuple[object, ...]:
    with uncounted():
        plain = read_plain(text)
        return (_exact_floats(plain),) if plain is not None else _parsed(text)


def _endpoint(text: str) -> Expr | None:
    """An interval's end: ``\\infty`` / ``-\\infty`` or a real constant; None for anything else."""
    if text.lstrip("+") == "\\infty":
        return S.Infinity
    if text == "-\\infty":
        return S.NegativeInfinity
    found = algebra(text)
    value = found[0] if found else None
    return value if isinstance(value, Expr) and value.is_number and value.is_real else None


def _union_of_intervals(text: str) -> Set | None:
    """The set a union of intervals with constant ends writes (``(-\\infty, 6] \\cup [30, \\infty)``), in sympy's
    canonical form (overlapping and touching intervals merged); None for anything else."""
    parts = _UNION_RE.split(text)
    intervals = []
    for part in parts:
        found = structure(part.strip())
        if found is None or found.kind not in ("()", "[]", "[)", "(]") or len(found.elements) != 2:
            return None
        low, high = (_endpoint(element.strip()) for element in found.elements)
        if low is None or high is None:
            return None
        intervals.append(Interval(low, high, found.kind[0] == "(", found.kind[1] == ")"))
    return Union(*intervals)


def union_verdict(first: str, second: str) -> bool | None:
    """Two unions of intervals (or a union and an interval) with constant ends are equal exactly when they are the
    same set (``[0, 1] \\cup [1, 2]`` ≡ ``[0, 2]``, ``(-\\infty, 6] \\cup [30, \\infty)`` ≢ ``(-\\infty, 6) \\cup
    [30, \\infty)``); None when neither is a union or either has another form."""
    if not (_UNION_RE.search(first) or _UNION_RE.search(second)):
        return None
    sets = [_union_of_intervals(text) for text in (first, second)]
    return None if sets[0] is None or sets[1] is None else bool(sets[0] == sets[1])


def written_apart(first: str, second: str) -> bool | None:
    """What the LaTeX parser would lose (docs/method.md#answer-equivalence, step 6): answers with different primes
    differ (``y'=2x+1`` ≢ ``y=2x+1``: the parser drops primes); a pair with a numeral in a base is equal only as
    written, subscript braces aside (``101_2`` ≡ ``101_{2}``, ``101_2`` ≢ ``101_3``: the parser reads 101); None
    for other pairs."""
    if len(_PRIME_RE.findall(first)) != len(_PRIME_RE.findall(second)):
        return False
    if _BASE_SUBSCRIPT_RE.search(first) or _BASE_SUBSCRIPT_RE.search(second):
        return _BASE_SUBSCRIPT_RE.sub(r"\1_\2", first) == _BASE_SUBSCRIPT_RE.sub(r"\1_\2", second)
    return None


def symbolically_equal(first: str, second: str) -> bool:
    """Math-Verify in either direction: its ``verify(gold, prediction)`` is not symmetric (it reads an inequality as
    the interval of its solutions only on the gold side, ``x \\geq 3`` ≡ ``[3, \\infty)``), and this relation has no
    gold side; the second direction is only tried when a relation is in the pair, where the directions differ.
    Two constants are decided first by their values (:func:`constant_verdict`): Math-Verify compares them
    to 15 decimal places after the point, which makes all tiny values equal."""
    if too_costly_for_sympy(first, second):
        return False
    verdict = written_apart(first, second)
    if verdict is None:
        verdict = union_verdict(first, second)
    if verdict is not None:
        return verdict
    first_algebra, second_algebra = algebra(first), algebra(second)
    if not first_algebra or not second_algebra:
        return False
    verdict = True if _same_expression(first_algebra[0], second_algebra[0]) else None
    if verdict is None:
        verdict = constant_verdict(first_algebra, second_algebra)
    for exact_step in (rational_function_verdict, identity_verdict):
        if verdict is None:
            verdict = exact_step(first_algebra[0], second_algebra[0])
    if verdict is not None:
        return verdict
    parsed_first, parsed_second = list(parsed(first)), list(parsed(second))
    if not parsed_first or not parsed_second or _interval_against_value(parsed_first[0], parsed_second[0]):
        return False
    if verify(parsed_first, parsed_second, timeout_seconds=None):
        return True
    asymmetric = any(_holds_relation(item) for item in parsed_first[:1] + parsed_second[:1])
    return asymmetric and verify(parsed_second, parsed_first, timeout_seconds=None)


def decimal_matches_constant(decimal: Number, expression: str) -> bool | None:
    """Whether a written decimal expresses the value of a constant expression (``2.2360679`` and ``\\sqrt{5}``:
    :func:`trac_metrics.answers.numbers.decimal_expresses` on its value to 40 digits); None when ``expression``
    is not a real constant (it has a variable, or Math-Verify reads no single expression)."""
    if too_costly_for_sympy(expression, ""):
        return None
    candidates = [item for item in algebra(expression) if isinstance(item, Expr)]
    if not candidates or not candidates[0].is_number:
        return None
    value = candidates[0].evalf(_EVALUATION_DIGITS)
    if not value.is_real or not value.is_finite:
        return None
    return decimal_expresses(decimal, Fraction(str(Rational(value))))


def _equation(text: str) -> Expr | None:
    """``left − right`` of an equation Math-Verify reads from ``text``; None for anything else."""
    found = algebra(text)
    if not found or not isinstance(found[0], Equality):
        return None
    return found[0].lhs - found[0].rhs


def same_relation(first: str, second: str) -> bool | None:
    """Two equations as relations (docs/method.md#answer-equivalence, step 3): the same when ``left − right`` of one
    is a nonzero constant multiple of the other's (``y = 3 - \\frac{x}{2}`` and ``x + 2y - 6 = 0``); two polynomial
    equations that are not multiples differ. None (undecided: Math-Verify decides) for other pairs."""
    if too_costly_for_sympy(first, second):
        return None
    if (verdict := written_apart(first, second)) is not None:
        return verdict
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


def within_budget(compare: Callable[[str, str], bool], first: str, second: str) -> bool | None:
    """``compare(first, second)`` under the symbolic work budget: None (undecided) when it makes more than
    ``SYMBOLIC_WORK_BUDGET`` counted Python calls, or when the CPU-time safety net fires first (then with a
    TracWarning: that verdict may depend on the machine). Math-Verify's one-time set-up runs before, uncounted."""
    warm_up_math_verify()
    with uncounted():
        clear_cache()  # every comparison starts from sympy's empty cache (docs/method.md#the-symbolic-work-budget)
    try:
        with _assumptions_in_sorted_order(), work_limit(SYMBOLIC_WORK_BUDGET, SYMBOLIC_CPU_LIMIT_S):
            return compare(first, second)
    except CpuLimitExceeded:
        warnings.warn(
            f"comparing {_SHOWN.repr(first)} with {_SHOWN.repr(second)} took {SYMBOLIC_CPU_LIMIT_S:g} s of CPU time "
            "before its work budget ran out: counted as not equivalent, a verdict that may depend on the machine",
            TracWarning,
            stacklevel=2,
        )
        return None
    except WorkLimitExceeded:
        return None


UNDECIDED_KEY = "undecided_comparisons"
"""Where a count of undecided comparisons is shown: a question's evidence (``trac_tasks`` at run time,
``trac_metrics.reporting.runs.load_pairs`` offline) and a task's results (summed over its questions)."""


@dataclass
class UndecidedCount:
    """Comparisons whose work budget ran out inside a :func:`counting_undecided` block (each counted as not
    equivalent; a cached verdict counts each time it is used, so the count does not depend on what was compared
    before)."""

    comparisons: int = 0


_UNDECIDED: contextvars.ContextVar[tuple[UndecidedCount, ...]] = contextvars.ContextVar("trac_undecided", default=())


@contextlib.contextmanager
def counting_undecided() -> Iterator[UndecidedCount]:
    """Count the undecided comparisons (:func:`note_undecided`) made inside the block, e.g. while one question is
    labelled (docs/method.md#the-symbolic-work-budget). A context variable: per thread / task, nothing left over
    after the block; nested blocks each count what is made inside them."""
    count = UndecidedCount()
    token = _UNDECIDED.set((*_UNDECIDED.get(), count))
    try:
        yield count
    finally:
        _UNDECIDED.reset(token)


def note_undecided() -> None:
    """An undecided verdict was used as "not equivalent": counted by every enclosing :func:`counting_undecided`."""
    for count in _UNDECIDED.get():
        count.comparisons += 1


GRAMMAR_WARM_UP = (
    r"\frac{3}{4}",
    r"-\frac{\sqrt{3}}{2}",
    r"2\sqrt{5}+\sqrt[3]{7}",
    r"\sin(5^{40})",
    r"\cos(7^{30})",
    r"\tan\frac{\pi}{7}",
    r"\sin^2y+\cos^2y",
    r"\cos t=\frac{2}{3}",
    r"\tan t=\sqrt{2}",
    r"\sin t=\cos t",
    r"\sum_{n=1}^{50}n^3",
    r"\prod_{j=1}^{6}j",
    r"\int_1^2t^3dt",
    r"\int_{0}^{\pi}\cos tdt",
    r"\lim_{t\to0}\frac{\sin t}{t}",
    r"\{\sqrt{3},\sqrt{7},4\}",
    r"(-\infty,3]\cup[4,\infty)",
    r"y\geq4",
    r"y=3t-1",
    r"\ln2+\log_{3}9",
    r"|t-1|+e^{2}",
    r"\begin{pmatrix}1\\2\end{pmatrix}",
    r"f(t)=\binom{5}{2}t^2",
    r"2+3i",
)
"""Answers of the forms reasoning models write (fractions, surds, functions of powers, equations, sums, integrals,
limits, sets, intervals, relations, matrices), parsed once by :func:`warm_up_math_verify`: the LaTeX grammar's
parser (ANTLR) learns its predictions as it parses and keeps them for the process, so the first answers of each form
would otherwise pay several times the parsing time of the later ones (docs/method.md#the-symbolic-work-budget).
Parsing results do not depend on it, only the time they take."""
WARM_UP_PAIRS = (
    ("x^2+2x+1", "(x+1)^2"),
    (r"\int_1^2t^3dt", r"\frac{16}{4}"),
    (r"\sum_{n=1}^{50}n^3", "1000"),
    (r"\sin t=\frac{1}{2}", r"\cos t=\frac{1}{2}"),
)
"""Pairs compared once by :func:`warm_up_math_verify` (each within the work budget; different, so that the whole
search runs): their first comparison pays the lazy imports of sympy's simplification, integration, summation and
equation solving."""


@functools.cache
def warm_up_math_verify() -> None:
    """Run Math-Verify outside any comparison's work budget before the first one: its first use pays sympy's and the
    LaTeX parser's lazy set-up (imports), the grammar's predictions are learnt on :data:`GRAMMAR_WARM_UP` and sympy's
    lazily imported solvers are loaded by :data:`WARM_UP_PAIRS` (about a second in all, once per process), which must
    not count against the first real comparisons."""
    for text in GRAMMAR_WARM_UP:
        _parsed(text)
    for first, second in WARM_UP_PAIRS:
        with contextlib.suppress(WorkLimitExceeded), work_limit(SYMBOLIC_WORK_BUDGET, SYMBOLIC_CPU_LIMIT_S):
            symbolically_equal(first, second)
