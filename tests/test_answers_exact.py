"""Tests of trac_metrics.answers for the "wrong labels without a warning" fixes: exact integers and rationals, a
decimal's tolerance from its written digits, matrices entry by entry, and an unfinished last box as no answer."""

from __future__ import annotations

import pytest

from trac_metrics.answers import equivalent, extract_answer, normalize_answer, symbolic

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


@pytest.mark.parametrize(
    ("a", "b"),
    [("1000000", "1000001"), ("123456789", "123456790"), (r"\frac{1}{10^8}", "0.00000002"), ("0.5", "0.5000001")],
)
def test_math_verify_path_compares_numbers_exactly(a: str, b: str) -> None:
    # The symbolic checker alone (bypassing the number rule) must not call distinct numbers equal either.
    assert not symbolic.symbolically_equal(a, b)
    assert not symbolic.symbolically_equal(b, a)


def test_decimals_reach_math_verify_as_exact_rationals() -> None:
    assert symbolic.symbolically_equal("0.5x", r"\frac{x}{2}")
    assert symbolic.symbolically_equal(r"\frac{x}{2}", "0.5x")
    assert not symbolic.symbolically_equal("0.5000001x", r"\frac{x}{2}")


def test_number_rule_reflexive_on_long_and_huge_numbers() -> None:
    long_number = "9" * 2000  # over the length limit: decided by string equality only
    assert equivalent(long_number, long_number) and not equivalent(long_number, long_number[:-1] + "8")
    assert equivalent("1e999", "1e999") and not equivalent("1e999", "1e998")


# ----------------------------------------------------------------------------------------------------------
# Matrices and vectors: entry by entry, same shape
# ----------------------------------------------------------------------------------------------------------

MATRICES = [
    # (a, b, expected); every pair is checked in both argument orders
    (r"\begin{pmatrix} -1/3 \\ 2/3 \\ 5/3 \end{pmatrix}", r"\begin{pmatrix}-1/3\\2/3\\5/3\end{pmatrix}", True),
    (r"\begin{pmatrix} 1/2 \\ 1 \end{pmatrix}", r"\begin{pmatrix} \frac{1}{2} \\ 1 \end{pmatrix}", True),
    (r"\begin{pmatrix} -1 & 0 \\ 0 & -1 \end{pmatrix}", r"\begin{bmatrix}-1&0\\0&-1\end{bmatrix}", True),
    (r"\begin{matrix} 1 & 2 \end{matrix}", r"\begin{pmatrix} 1 & 2 \end{pmatrix}", True),
    (r"\begin{pmatrix} \sqrt{2} \\ \pi/2 \end{pmatrix}", r"\begin{pmatrix}2^{1/2}\\\frac{\pi}{2}\end{pmatrix}", True),
    (r"\begin{pmatrix} 1 \\ 2 \\ \end{pmatrix}", r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", True),  # final \\ allowed
    (r"\mathbf{v} = \begin{pmatrix} 1 \\ 2 \end{pmatrix}", r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", True),
    (r"\begin{pmatrix} 0.3333333 \\ 1 \end{pmatrix}", r"\begin{pmatrix} 1/3 \\ 1 \end{pmatrix}", True),
    (r"\begin{pmatrix} -1/3 \\ 2/3 \\ 5/3 \end{pmatrix}", r"\begin{pmatrix} -1/3 \\ 2/3 \\ 4/3 \end{pmatrix}", False),
    (r"\begin{pmatrix} 1000000 \\ 1 \end{pmatrix}", r"\begin{pmatrix} 1000001 \\ 1 \end{pmatrix}", False),
    (r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", r"\begin{pmatrix} 2 \\ 1 \end{pmatrix}", False),  # ordered
    (r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", r"\begin{pmatrix} 1 & 2 \end{pmatrix}", False),  # column vs row
    (r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}", r"\begin{pmatrix} 1 & 2 & 3 & 4 \end{pmatrix}", False),
    (r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}", r"\begin{pmatrix} 1 & 2 \\ 3 \end{pmatrix}", False),
    (r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", "(1,2)", False),  # a matrix is not a tuple
    (r"\begin{vmatrix} 1 & 2 \\ 3 & 4 \end{vmatrix}", r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}", False),
]


@pytest.mark.parametrize(("a", "b", "expected"), MATRICES)
def test_matrices_compare_entry_by_entry(a: str, b: str, expected: bool) -> None:
    assert equivalent(a, b) is expected
    assert equivalent(b, a) is expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (r"\begin{pmatrix} -1/3 \\ 2/3 \end{pmatrix}", r"\begin{pmatrix}-1/3\\2/3\end{pmatrix}"),
        (r"\begin{pmatrix} 1 \\\, 2 \end{pmatrix}", r"\begin{pmatrix}1\\2\end{pmatrix}"),  # row break, thin space
        (r"1 \, 000", "1000"),  # spacing commands still go
    ],
)
def test_normalization_keeps_row_breaks(answer: str, expected: str) -> None:
    assert normalize_answer(answer) == expected


# ----------------------------------------------------------------------------------------------------------
# Unfinished last box: no answer
# ----------------------------------------------------------------------------------------------------------

CUT_OFF = [
    # (response, kind, marker, expected raw answer)
    (r"... so the answer is \boxed{", "math", None, None),
    (r"... so the answer is \boxed{12", "math", None, None),
    (r"First \boxed{3}. Correcting this, the answer is \boxed{\frac{1}{", "math", None, None),
    ("... so the answer is \\boxed", "math", None, None),
    ("... so the answer is \\boxed \n", "math", None, None),
    (r"The answer is (B), so \boxed{", "mc", None, None),
    (r"So the answer is Yes. \boxed{", "text", None, None),
    (r"<think>maybe \boxed{</think>So it is \boxed{4}.", "math", "</think>", "4"),  # only after the marker
    (r"\boxed{1 then \boxed{2}", "math", None, "2"),  # the last box is finished
    (r"The final answer is 7. \boxed{}", "math", None, "7"),  # an empty finished box still does not count
]


@pytest.mark.parametrize(("response", "kind", "marker", "expected"), CUT_OFF)
def test_unfinished_last_box_is_no_answer(response: str, kind: str, marker: str | None, expected: str | None) -> None:
    assert extract_answer(response, kind, marker=marker) == expected


def test_two_cut_off_responses_do_not_agree() -> None:
    first = extract_answer(r"Adding the terms, the answer is \boxed{")
    second = extract_answer(r"Hence the final answer is \boxed{")
    assert first is None and second is None and not equivalent(first, second)
