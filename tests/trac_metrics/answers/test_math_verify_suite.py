"""Math-Verify's own test cases through trac-eval's checker (docs/method.md#where-the-checker-differs-from-math-verify).

``math_verify_suite.json`` holds the cases of Math-Verify 0.9.0's test suite that compare two answers under its
default settings (its source, selection and licence are in the file): a gold answer or solution, a prediction and the
verdict the suite expects. The checker's verdict is ``equivalent(extract_answer(gold), extract_answer(pred))`` (a gold
written as a solution goes through the same extraction, docs/method.md#answer-extraction). Where it differs from the
suite's, the file says so and why: a documented difference, a form the checker does not read yet, or a verdict of the
suite that is wrong; every other case must get the suite's verdict.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from trac_metrics.answers import equivalent, extract_answer

SUITE = json.loads((Path(__file__).with_name("math_verify_suite.json")).read_text(encoding="utf-8"))
CASES = SUITE["cases"]
MIN_AGREEMENT = 0.90
"""The share of the suite's cases that must get the suite's verdict
(docs/method.md#where-the-checker-differs-from-math-verify)."""


@functools.cache
def verdicts() -> tuple[int, ...]:
    """The checker's verdict on each case (1 equivalent), computed once for the tests below."""
    return tuple(
        int(equivalent(extract_answer(case["gold"], "math"), extract_answer(case["pred"], "math"), "math"))
        for case in CASES
    )


@pytest.mark.parametrize("index", range(len(CASES)), ids=[case["test"].split("::")[1] for case in CASES])
def test_each_case_gets_the_suites_verdict_or_the_one_the_file_explains(index: int) -> None:
    case = CASES[index]
    assert verdicts()[index] == case.get("ours", case["expected"]), case


def test_the_checker_agrees_with_the_suite_on_nine_cases_in_ten_or_more() -> None:
    agreeing = sum(verdicts()[index] == case["expected"] for index, case in enumerate(CASES))
    assert len(CASES) >= 200 and agreeing / len(CASES) >= MIN_AGREEMENT, (agreeing, len(CASES))


def test_every_equivalence_the_suite_refuses_is_a_documented_difference() -> None:
    """No false equivalence of the checker's own: where it says equivalent and the suite does not, the difference is
    one docs/method.md states."""
    extra = [case for index, case in enumerate(CASES) if verdicts()[index] and not case["expected"]]
    assert all(case.get("why", "").startswith("documented difference") for case in extra), extra
