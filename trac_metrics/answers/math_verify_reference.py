"""Math-Verify's own default verdict as an answer relation (docs/method.md#where-the-checker-differs-from-math-verify)
and as a labeller of whole responses (docs/method.md#labels): ``trac rescore RUNS --equivalence math-verify`` and the
run-time switch ``labels: math-verify`` label runs the way lm-eval's Math-Verify-labelled tasks
(``leaderboard_math_hard``, ``minerva_math``'s ``math_verify``) do."""

from __future__ import annotations

from math_verify import parse, verify

from trac_metrics.answers._latex import check_kind, check_str
from trac_metrics.answers.equivalence import equivalent


def _as_math_verify_input(answer: str) -> str:
    """A bare answer is written in math mode (``$…$``), as Math-Verify's own gold answers are; an answer that
    already carries ``$`` or a box goes as it is."""
    return answer if "$" in answer or "\\boxed" in answer else f"${answer}$"


def math_verify_equivalent(answer: str | None, other: str | None, kind: str = "math") -> bool:
    """``verify(parse(other), parse(answer))`` with Math-Verify's default settings, ``other`` as the gold (the
    reference, when labelling). None is equivalent to nothing. Math-Verify checks math only: the mc and text kinds
    keep trac-eval's own relation (:func:`trac_metrics.answers.equivalent`)."""
    check_kind(kind)
    if kind != "math":
        return equivalent(answer, other, kind)
    if answer is None or other is None:
        return False
    return bool(verify(parse(_as_math_verify_input(other)), parse(_as_math_verify_input(answer))))


def math_verify_label(response: str, reference: str) -> bool:
    """Math-Verify's label of a whole response, as lm-eval's Math-Verify-labelled tasks compute it:
    ``verify(parse(reference), parse(response))``, the response parsed as it is written (Math-Verify's own extraction
    finds its answer), the reference in math mode as :func:`math_verify_equivalent` gives it."""
    check_str(response, "response")
    check_str(reference, "reference")
    return bool(verify(parse(_as_math_verify_input(reference)), parse(response)))
