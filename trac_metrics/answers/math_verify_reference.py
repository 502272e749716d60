"""Math-Verify's own default verdict as an answer relation (docs/method.md#where-the-checker-differs-from-math-verify)
and as a labeller of whole responses (docs/method.md#labels): ``trac rescore RUNS --equivalence math-verify`` and the
run-time switch ``labels: math-verify`` label runs the way lm-eval's Math-Verify-labelled tasks
(``leaderboard_math_hard``, ``minerva_math``'s ``math_verify``) do.

Math-Verify's default 5-second timeouts stay. As a relation between two extracted answers (answer classes, agreement,
votes), an answer over the checker's input caps (:func:`trac_metrics.answers.symbolic.exceeds_symbolic_caps`,
docs/method.md#the-symbolic-work-budget: long, deeply nested, huge powers) is never parsed and equals only itself. A
label is Math-Verify's verdict on the whole response; the only cap is on its last box (:func:`math_verify_label`).
Each distinct answer is parsed once and each pair verified once per process (caches), however many comparisons a
question's answer classes, agreement and labels make.
"""

from __future__ import annotations

import functools

from math_verify import parse, verify

from trac_metrics.answers._latex import CACHE_SIZE, check_kind, check_str
from trac_metrics.answers.equivalence import equivalent
from trac_metrics.answers.extraction import last_box
from trac_metrics.answers.symbolic import exceeds_symbolic_caps

RESPONSE_CACHE_SIZE = 1024
"""Whole-response verdicts kept (a response is labelled a few times in a row: primary, majority, aliases)."""


def _as_math_verify_input(answer: str) -> str:
    """A bare answer is written in math mode (``$…$``), as Math-Verify's own gold answers are; an answer that
    already carries ``$`` or a box goes as it is."""
    return answer if "$" in answer or "\\boxed" in answer else f"${answer}$"


@functools.lru_cache(maxsize=CACHE_SIZE)
def _parsed(text: str) -> tuple[object, ...]:
    """Math-Verify's default parse of an answer or a reference in math mode, once per distinct text."""
    return tuple(parse(text))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _answers_verdict(gold: str, prediction: str) -> bool:
    """``verify(parse(gold), parse(prediction))`` of two answers in math mode, once per pair."""
    return bool(verify(list(_parsed(gold)), list(_parsed(prediction))))


@functools.lru_cache(maxsize=RESPONSE_CACHE_SIZE)
def _response_verdict(gold: str, response: str) -> bool:
    """``verify(parse(gold), parse(response))``: the response as it is written, read by Math-Verify's extraction."""
    return bool(verify(list(_parsed(gold)), parse(response)))


def math_verify_equivalent(answer: str | None, other: str | None, kind: str = "math") -> bool:
    """``verify(parse(other), parse(answer))`` with Math-Verify's default settings, ``other`` as the gold (the
    reference, when labelling). None is equivalent to nothing; answers over the input caps are equivalent only when
    identical (they are never parsed). Math-Verify checks math only: the mc and text kinds keep trac-eval's own
    relation (:func:`trac_metrics.answers.equivalent`)."""
    check_kind(kind)
    if kind != "math":
        return equivalent(answer, other, kind)
    if answer is None or other is None:
        return False
    if exceeds_symbolic_caps(answer, other):
        return answer == other
    return _answers_verdict(_as_math_verify_input(other), _as_math_verify_input(answer))


def math_verify_label(response: str, reference: str) -> bool:
    """Math-Verify's label of a whole response, as lm-eval's Math-Verify-labelled tasks compute it:
    ``verify(parse(reference), parse(response))``, the response parsed as it is written (Math-Verify's own extraction
    finds its answer, with its own limits: its 5-second timeouts), the reference in math mode as
    :func:`math_verify_equivalent` gives it. The response is never cut or read by trac-eval's extraction first (which
    may read another answer than Math-Verify does: a "Final answer: 13 13 13 …" after ``\\boxed{13}``). One cap is
    added: a response whose last box (the answer Math-Verify's extraction reads first) is over the input caps with the
    reference is not parsed (Math-Verify would wait out its timeout on it): it is correct only when that box is the
    reference itself. Each distinct (reference, response) pair is verified once per process."""
    check_str(response, "response")
    check_str(reference, "reference")
    boxed = last_box(response)
    if boxed is not None and exceeds_symbolic_caps(boxed, reference):
        return boxed == reference
    return _response_verdict(_as_math_verify_input(reference), response)
