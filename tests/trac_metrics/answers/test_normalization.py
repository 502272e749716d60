"""Answer normalization (trac_metrics.answers.normalization, docs/method.md#answers-and-labels): the canonical string
of an answer of every kind."""

from __future__ import annotations

import pytest

from trac_metrics.answers import ANSWER_KINDS, normalize_answer

NORMALIZATION = [
    # (answer, kind, expected canonical string)
    (r"$\left( 3, \frac{\pi}{2} \right)$", "math", r"(3,\frac{\pi}{2})"),
    (r"\dfrac{1}{2}", "math", r"\frac{1}{2}"),
    (r"\tfrac12", "math", r"\frac{1}{2}"),
    (r"\frac{1}2", "math", r"\frac{1}{2}"),
    (r"\sqrt2", "math", r"\sqrt{2}"),
    (r"5 \text{ cm}", "math", "5"),
    (r"1.6 \mathrm{~cm}", "math", "1.6"),
    (r"12\text{ cm}^2", "math", "12"),
    (r"\text{Evelyn}", "math", "Evelyn"),
    (r"30^\circ", "math", "30"),
    (r"30^{\circ}", "math", "30"),
    ("30°", "math", "30"),
    (r"50\%", "math", "50"),
    (r"\$5", "math", "5"),
    ("$5$", "math", "5"),
    ("18 dollars", "math", "18"),
    ("x = 5", "math", "5"),
    (r"\alpha = \frac{\pi}{3}", "math", r"\frac{\pi}{3}"),
    (r"x \in [0, 1)", "math", "[0,1)"),
    ("x + y = 5", "math", "x+y=5"),  # not a single-variable assignment: kept
    ("+7", "math", "7"),
    ("-7", "math", "-7"),
    ("1,000", "math", "1000"),
    (r"1{,}000", "math", "1000"),
    (r"1,\!000", "math", "1000"),
    (r"12,\! 345", "math", "12345"),
    ("(1,2)", "math", "(1,2)"),  # a tuple, not a thousands separator
    ("**73**", "math", "73"),
    ("42.", "math", "42"),
    ("5.0", "math", "5"),
    ("007.50", "math", "7.5"),
    (".5", "math", "0.5"),
    ("-0.0", "math", "0"),
    (r"\pi r^2", "math", r"\pi r^2"),  # the space after a command before a letter is kept
    (r"\boxed{42}", "math", "42"),
    (r"\left\{ 1, 2 \right\}", "math", r"\{1,2\}"),
    ("", "math", None),
    ("$ $", "math", None),
    ("(B)", "mc", "B"),
    ("b", "mc", "B"),
    (r"\text{(C)}", "mc", "C"),
    ("D.", "mc", "D"),
    ("(B) 42 apples", "mc", "B"),
    ("Monty Python and the Holy Grail", "mc", "monty python and the holy grail"),  # non-letter BBH target
    ("  Yes. ", "text", "yes"),
    ('"valid"', "text", "valid"),
    ("True", "text", "true"),
    ("] ]", "text", "] ]"),
    ("apple   Banana\ncherry", "text", "apple banana cherry"),
    (r"\text{No}", "text", "no"),
    # number separators: thousands (groups of three, no space, no leading zero), a decimal comma after a leading
    # zero, otherwise a list
    ("41, 207", "math", "41,207"),
    ("0,375", "math", "0.375"),
    ("1,5", "math", "1,5"),
    ("1,000", "text", "1000"),
    # units in any text-style wrapper, lists in words, assignments of values (tuples too), relations kept
    (r"5 \textbf{cm}", "math", "5"),
    (r"5\textnormal{ km}", "math", "5"),
    (r"5\mathrm{kg}", "math", "5"),
    (r"3 \text{ and } 7", "math", "3,7"),
    ("1, 2, or 3", "math", "1,2,3"),
    ("(m, n) = (5, 1)", "math", "(5,1)"),
    ("y = 3 - x", "math", "y=3-x"),
    ("9 = 4p + q", "math", "9=4p+q"),
    (r"x = \pm 4", "math", r"\pm4"),
    # named quantities give their value; sums and products are not assignments; inequalities are not equations
    ("AB = 5", "math", "5"),
    (r"\angle A = 30^\circ", "math", "30"),
    ("n! = 120", "math", "120"),
    (r"\sum_{k=1}^{10} k", "math", r"\sum_{k=1}^{10}k"),
    ("x >= 3", "math", "[3,\\infty)"),
    # units: compound, with powers, after a degree sign; words that change the number stay
    (r"9.8 \mathrm{~m}/\mathrm{s}^{2}", "math", "9.8"),
    (r"5\,\mathrm{cm^2}", "math", "5"),
    (r"25^{\circ}\text{C}", "math", "25"),
    ("5 million", "math", "5000000"),
    (r"5\text{ million}", "math", "5000000"),
    # TeX shorthands take one token: \sqrt23 is 3√2; Euler's e before a spaced operator is no e-notation
    (r"\sqrt23", "math", r"\sqrt{2}3"),
    ("2e - 1", "math", r"2\cdot e-1"),
    # the percent word is a percent sign; a set or list of labelled roots is the set of their values
    ("15 percent", "math", "15"),
    (r"28\text{ percent}", "math", "28"),
    (r"x_1 = \sqrt{2}, \quad x_2 = -\sqrt{2}", "math", r"\sqrt{2},-\sqrt{2}"),
    (r"x_{1} = 3 \text{ and } x_{2} = 5", "math", "3,5"),
    ("x = 2, y = 3", "math", "2,3"),
]


@pytest.mark.parametrize(("answer", "kind", "expected"), NORMALIZATION)
def test_normalize_answer(answer: str, kind: str, expected: str | None) -> None:
    assert normalize_answer(answer, kind) == expected


@pytest.mark.parametrize("kind", ANSWER_KINDS)
def test_normalize_none_is_none(kind: str) -> None:
    assert normalize_answer(None, kind) is None


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
