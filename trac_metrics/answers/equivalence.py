"""Deterministic, symmetric answer equivalence (docs/method.md#answer-equivalence) and the answer classes built on it
(docs/method.md#answer-classes-and-vote-shares).

Math equivalence: two assignments of values to different names differ (``y = 4`` ≢ ``x = 4``); otherwise, in order,
on normalized answers: equal strings; the number rule for two plain numbers (:mod:`trac_metrics.answers.numbers`),
which decides; relations (an assignment ``name = value`` by its value, an equation with anything else on its left
never equal to an expression, two equations as relations); structures on both sides
(:mod:`trac_metrics.answers.structures`), which decide; a written decimal against a constant expression by its value;
otherwise Math-Verify on exact rationals, reading each whole answer or nothing (:mod:`trac_metrics.answers.symbolic`).
Every rule before Math-Verify only adds equivalences it would miss or states a documented difference
(docs/method.md#where-the-checker-differs-from-math-verify).

Override: ``with use_equivalence(fn): ...`` replaces the relation by a user function ``fn(answer, other, kind) ->
bool`` inside the block (``trac rescore --equivalence MODULE:FUNCTION``). It takes effect in :func:`equivalent`
itself, before any cache, so it reaches every label, agreement e and answer class computed through this package,
and the caches (which only hold the built-in relation's results on normalized strings) never carry a result from
one override into another.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from trac_metrics.answers._latex import (
    CACHE_SIZE,
    check_kind,
    check_str,
    names_a_quantity,
    relation_sides,
    top_level_split,
)
from trac_metrics.answers.normalization import MathForm, math_form, normalize_answer
from trac_metrics.answers.numbers import as_number, exact_latex, number_verdict
from trac_metrics.answers.structures import structure, structures_equivalent
from trac_metrics.answers.symbolic import (
    decimal_matches_constant,
    note_undecided,
    same_relation,
    symbolically_equal,
    within_budget,
)

MAX_COMPARED_CHARS = 1000
"""Normalized answers longer than this are equal only as equal strings (a runaway generation is no formula)."""


class _Relation(NamedTuple):
    left: str
    right: str

    @property
    def assigns(self) -> bool:
        """Whether the left side names a quantity (:func:`trac_metrics.answers._latex.names_a_quantity`):
        ``y = 2x + 1`` gives y the value ``2x + 1``, ``AB = 5`` gives AB the value 5."""
        return names_a_quantity(self.left)


def _relation(text: str) -> _Relation | None:
    """The two sides of a normalized answer that is one equation ``left = right``; None for anything else."""
    sides = relation_sides(text)
    return None if sides is None else _Relation(*sides)


def _relation_verdict(first: str, second: str, symbolic: bool) -> bool | None:
    """Equations: an assignment equals what it assigns (``y = 2x + 1`` ≡ ``2x + 1``) and another assignment to the
    same name by value; an equation whose left side is not a name never equals an expression (``9 = 4p + q`` ≢
    ``4p + q``); two other equations are the same relation when one's ``left − right`` is a constant multiple of the
    other's (``y = 3 - \\frac{x}{2}`` ≡ ``x + 2y - 6 = 0``), and differ when both are polynomial and are not; None when
    neither side is an equation, or both are and the next steps decide (Math-Verify)."""
    first_relation, second_relation = _relation(first), _relation(second)
    if first_relation is None and second_relation is None:
        return None
    if first_relation is not None and second_relation is not None:
        if first_relation.assigns and first_relation.left == second_relation.left:
            return _elements_equivalent(first_relation.right, second_relation.right, symbolic)
        return same_relation(first, second) if symbolic else None
    relation, expression = (first_relation, second) if first_relation is not None else (second_relation, first)
    assert relation is not None
    return relation.assigns and _elements_equivalent(relation.right, expression, symbolic)


def _decimal_constant_verdict(first: str, second: str) -> bool | None:
    """A written decimal against an expression without variables (``2.2360679`` and ``\\sqrt{5}``): whether the
    decimal expresses its value; None when neither side is a decimal or the other side is no constant."""
    for decimal_text, other in ((first, second), (second, first)):
        number = as_number(decimal_text)
        if number is not None and number.unit and as_number(other) is None:
            return decimal_matches_constant(number, other)
    return None


def _as_exact_latex(text: str) -> str:
    """A plain number as the exact value it writes (e-notation is no Euler's e); anything else as it is."""
    number = as_number(text)
    return text if number is None else exact_latex(number)


def _elements_equivalent(x: str, y: str, symbolic: bool) -> bool:
    return x == y or _math_equivalent_normalized(min(x, y), max(x, y), symbolic)


def _math_equivalent_normalized(first: str, second: str, symbolic: bool = True) -> bool:
    """Equivalence of two distinct normalized math answers (or of two elements of their structures)."""
    verdict = number_verdict(first, second)
    if verdict is not None:
        return verdict
    if len(first) > MAX_COMPARED_CHARS or len(second) > MAX_COMPARED_CHARS:
        return False
    verdict = _relation_verdict(first, second, symbolic)
    if verdict is not None:
        return verdict
    first_structure, second_structure = structure(first), structure(second)
    if first_structure is not None and second_structure is not None:
        return structures_equivalent(first_structure, second_structure, _elements_equivalent)
    if not symbolic:
        return False
    verdict = _decimal_constant_verdict(first, second)
    if verdict is not None:
        return verdict
    return symbolically_equal(_as_exact_latex(first), _as_exact_latex(second))


def _math_equivalent(first: str, second: str) -> bool:
    if first == second:
        return True
    verdict = number_verdict(first, second)
    if verdict is not None:  # no symbolic work: no work budget needed
        return verdict
    verdict = _bounded_math_equivalent(min(first, second), max(first, second))
    if verdict is None:  # undecided: not equivalent, counted (docs/method.md#the-symbolic-work-budget)
        note_undecided()
    return bool(verdict)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _bounded_math_equivalent(first: str, second: str) -> bool | None:
    """:func:`_math_equivalent_normalized` of two answers in sorted order (so the cache is symmetric) under the
    symbolic work budget (docs/method.md#the-symbolic-work-budget), None when undecided. Cached only here, around
    the whole comparison, so that a comparison's count never depends on which of its parts earlier comparisons
    computed."""
    return within_budget(_math_equivalent_normalized, first, second)


def _as_assignment_list(form: MathForm) -> MathForm:
    """A tuple of names given a tuple of values (``(m, n) = (5, 7)``) as the list of assignments it makes
    (``m = 5, n = 7``: names sorted, values in their order, ``by_name``); any other form as it is."""
    if form.by_name or form.name is None or form.value is None:
        return form
    if not all(text.startswith("(") and text.endswith(")") for text in (form.name, form.value)):
        return form
    names, values = top_level_split(form.name[1:-1]), top_level_split(form.value[1:-1])
    if names is None or values is None or len(names) != len(values) or len(names) < 2:
        return form
    pairs = sorted(zip(names, values, strict=True))
    return form._replace(
        value=",".join(value for _, value in pairs), name=",".join(name for name, _ in pairs), by_name=True
    )


def _named_math_equivalent(a: str | None, b: str | None) -> bool:
    """Math equivalence of two raw answers: assignments of values to two different names differ (``y = 4`` ≢
    ``x = 4``, ``b = 7`` ≢ ``c = 7``, ``x \\in [2, 9)`` ≢ ``y \\in [2, 9)``); two lists of assignments to the same
    names compare name by name (``a_1 = 2, a_2 = 1`` ≢ ``a_1 = 1, a_2 = 2``), a tuple of names given a tuple of
    values as its list (``(m, n) = (5, 7)`` ≡ ``m = 5, n = 7`` ≢ ``m = 7, n = 5``); otherwise the values decide, so
    a bare value matches a named one (``x = 4`` ≡ ``4``, ``x_1 = 1, x_2 = 2`` ≡ ``2, 1``)."""
    if a is None or b is None:
        return False
    check_str(a, "answer")
    check_str(b, "answer")
    first, second = math_form(a), math_form(b)
    if first.value is None or second.value is None:
        return False
    if None not in (first.denomination, second.denomination) and first.denomination != second.denomination:
        return False  # \$18 is not 18 cents
    if first.by_name != second.by_name:  # (m, n) = (5, 7) against m = 5, n = 7: name by name
        first, second = _as_assignment_list(first), _as_assignment_list(second)
    if first.name is not None and second.name is not None:
        if first.name != second.name:
            return False
        if first.by_name and second.by_name:  # two lists of assignments to the same names: name by name
            pairs = zip(top_level_split(first.value) or [], top_level_split(second.value) or [], strict=True)
            return all(_math_equivalent(x.strip(), y.strip()) for x, y in pairs)
    return _math_equivalent(first.value, second.value)


def _text_equivalent(first: str, second: str) -> bool:
    return first == second or bool(number_verdict(first, second))


Equivalence = Callable[[str | None, str | None, str], bool]
"""A user answer relation: ``fn(answer, other, kind) -> bool`` on raw (un-normalized) answers, None included."""

_EQUIVALENCE_OVERRIDE: contextvars.ContextVar[Equivalence | None] = contextvars.ContextVar(
    "trac_equivalence_override", default=None
)


@contextlib.contextmanager
def use_equivalence(relation: Equivalence | None) -> Iterator[None]:
    """Inside the block, :func:`equivalent` returns ``bool(relation(a, b, kind))`` instead of the built-in relation.

    ``None`` keeps the built-in relation. The override is a context variable (per thread / task), restored on
    exit, also when the block raises; overrides nest. The relation gets the raw answers (None for "no answer")
    and the answer kind; it replaces the whole relation, so it decides about None too.
    """
    if relation is not None and not callable(relation):
        raise TypeError(f"use_equivalence needs a callable (answer, other, kind) -> bool, got {relation!r}")
    token = _EQUIVALENCE_OVERRIDE.set(relation)
    try:
        yield
    finally:
        _EQUIVALENCE_OVERRIDE.reset(token)


def equivalent(a: str | None, b: str | None, kind: str = "math") -> bool:
    """Deterministic, symmetric answer equivalence a ≡ b (docs/method.md#answer-equivalence: e = 1[ã ≡ a], labels,
    answer classes).

    None (no answer) is equivalent to nothing, not even None. math: assignments of values to different names differ
    (``y = 4`` ≢ ``x = 4``), a bare value matches a named one; then normalized-string equality; two plain numbers
    exactly, except that a written decimal stands for the values it rounds or truncates within 1e-6 relative
    (``1000000`` ≢ ``1000001``, ``1.5`` ≡ ``1.50``, ``0.333`` ≢ 1/3, ``1e400`` ≢ ``1e401``); an assignment by its
    value (``y = 2x+1`` ≡ ``2x+1``), other equations never equal to an expression; matrices and vectors
    (``pmatrix``, ``bmatrix``, ``matrix``: same shape), tuples, intervals, sets, bare lists and ``±`` answers
    element by element by these rules (sets and lists in any order, a repeated element once, bracket types must
    agree); a decimal against a constant by its value (``2.2360679`` ≡ ``\\sqrt{5}``); otherwise Math-Verify both
    ways, on exact rationals, never on a part of an answer its LaTeX parser cannot read (``3`` ≢ ``-[1,3)``).
    mc: same option letter. text: normalized-string equality, or equal numbers (the math number rule).
    Inside :func:`use_equivalence` the user relation decides instead.
    """
    override = _EQUIVALENCE_OVERRIDE.get()
    if override is not None:
        check_kind(kind)
        return bool(override(a, b, kind))
    if kind == "math":
        return _named_math_equivalent(a, b)
    first, second = normalize_answer(a, kind), normalize_answer(b, kind)
    if first is None or second is None:
        return False
    if kind == "text":
        return _text_equivalent(first, second)
    return first == second


Reference = str | tuple[str, ...]
"""A question's reference answer a*: one answer, or the aliases of a task whose target is a list of acceptable
answers (triviaqa, nq_open), any of which matches (docs/method.md#labels)."""


def reference_aliases(reference: Reference) -> tuple[str, ...]:
    """The acceptable answers of a reference: the aliases of a list reference, else the reference alone."""
    return (reference,) if isinstance(reference, str) else tuple(reference)


def matches_reference(answer: str | None, reference: Reference, kind: str = "math") -> bool:
    """Whether ``answer`` ≡ the reference (:func:`equivalent`), or ≡ any alias of a list reference."""
    return any(equivalent(answer, alias, kind=kind) for alias in reference_aliases(reference))


def answer_classes(answers: Sequence[str | None], kind: str = "math") -> list[int]:
    """Equivalence-class id of each of K answers, ids 0, 1, 2, ... in order of first appearance
    (docs/method.md#answer-classes-and-vote-shares: the classes b of the vote shares π_b and of h_K). Answer i joins the
    class of the first earlier class representative it is equivalent to; every None (and every answer that normalizes to
    nothing) is a singleton.
    """
    check_kind(kind)
    if isinstance(answers, str):
        raise ValueError("answers must be a sequence of answers, got a single str")
    representatives: list[str | None] = []
    classes = []
    for answer in answers:
        match = next((cid for cid, rep in enumerate(representatives) if equivalent(rep, answer, kind)), None)
        if match is None:
            match = len(representatives)
            representatives.append(answer)
        classes.append(match)
    return classes
