"""The number rule (trac_metrics.answers.numbers, docs/method.md#answers-and-labels): exact integers and rationals, a
decimal's tolerance from its written digits, no overflow on huge numbers."""

from __future__ import annotations

import pytest

from trac_metrics.answers import equivalent

# ----------------------------------------------------------------------------------------------------------
# Numbers: integers and fractions exact, a decimal stands for the values that round to it, no overflow
# ----------------------------------------------------------------------------------------------------------

NUMBERS = [
    # (a, b, kind, expected); every pair is checked in both argument orders
    ("1000000", "1000001", "math", False),
    ("123456789", "123456790", "math", False),
    ("1000000", "1000001", "text", False),
    ("(1000000,2)", "(1000001,2)", "math", False),  # tuple elements follow the same rule
    ("1e400", "1e401", "math", False),  # float() overflows both to inf
    ("1e400", "2e400", "math", False),
    ("1e400", "10^{400}", "math", True),  # exact: 10**400 either way
    ("1e-400", "0", "math", False),  # float() underflows to 0
    ("1/3", "333333/1000000", "math", False),  # fractions are exact
    ("3", "3.01", "math", False),  # an integer is exact, 3.01 rounds to itself only
    ("3.14", "3.15", "math", False),
    ("0.1", "0.2", "math", False),
    ("0.3333333", "1/3", "math", True),  # within 1e-6 relative and within half a unit of the 7th place
    ("0.3333333", r"\frac{1}{3}", "math", True),
    ("0.3333334", "1/3", "math", False),  # 1/3 does not round to it
    ("0.333", "1/3", "math", False),  # a short decimal is not a rounding of anything: 1e-3 relative apart
    ("0.5", r"\frac{8}{15}", "math", False),
    ("3.14", "3.14159", "math", False),  # as 3.14 is not pi
    ("3.1415927", "3.14159265", "math", True),
    ("1.5", "1.50", "math", True),
    ("0.1", "0.10000001", "math", True),  # 1e-7 relative: 0.1 cannot tell them apart
    ("1.77e-6", r"1.77 \times 10^{-6}", "math", True),  # Minerva references are e-notation
    ("1e-5", "10^{-5}", "math", True),
    ("7.5e-3", r"7.5\cdot10^{-3}", "math", True),
    ("1.6e-3", "0.0016", "math", True),
    ("3.3e-10", "3.32e-10", "math", False),
    ("3.89e-10", "4.6e-24", "math", False),  # the old absolute tolerance 1e-9 made all tiny numbers equal
    (r"2 \times 10^{3}", "2001", "math", False),  # an integer mantissa is exact
    (r"\frac{1}{10^8}", "0.00000002", "math", False),  # Math-Verify alone rounds both to 6 places: 0 == 0
    (r"\frac{1}{10^8}", "0.00000001", "math", True),
]


@pytest.mark.parametrize(("a", "b", "kind", "expected"), NUMBERS)
def test_numbers_exact_unless_a_decimal_is_written(a: str, b: str, kind: str, expected: bool) -> None:
    assert equivalent(a, b, kind) is expected
    assert equivalent(b, a, kind) is expected


def test_number_rule_reflexive_on_long_and_huge_numbers() -> None:
    long_number = "9" * 2000  # over the length limit: decided by string equality only
    assert equivalent(long_number, long_number) and not equivalent(long_number, long_number[:-1] + "8")
    assert equivalent("1e999", "1e999") and not equivalent("1e999", "1e998")


# ----------------------------------------------------------------------------------------------------------
# Matrices and vectors: entry by entry, same shape
# ----------------------------------------------------------------------------------------------------------


# ----------------------------------------------------------------------------------------------------------
# Unfinished last box: no answer
# ----------------------------------------------------------------------------------------------------------
