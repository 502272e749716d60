"""Answer equivalence (trac_metrics.answers.equivalence, docs/method.md#answers-and-labels): the relation in its
documented order, answer classes, bounded time on pathological and runaway inputs, and hypothesis fuzzing."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trac_metrics.answers import ANSWER_KINDS, answer_classes, equivalent, extract_answer, normalize_answer

THINK = "</think>"

# ----------------------------------------------------------------------------------------------------------
# Extraction
# ----------------------------------------------------------------------------------------------------------


# ----------------------------------------------------------------------------------------------------------
# Normalization
# ----------------------------------------------------------------------------------------------------------


# ----------------------------------------------------------------------------------------------------------
# Equivalence
# ----------------------------------------------------------------------------------------------------------

EQUIVALENCE = [
    # (a, b, kind, expected); every pair is checked in both argument orders
    (r"\frac{1}{2}", "0.5", "math", True),
    (r"\dfrac{1}{2}", r"\tfrac12", "math", True),
    ("1/2", "0.5", "math", True),
    (r"-\frac{3}{4}", "-0.75", "math", True),
    (r"$\frac{3}{4}$", "0.75", "math", True),
    ("1,000", "1000", "math", True),
    ("1,234,567.5", "1234567.5", "math", True),
    ("(1,2)", "(1, 2)", "math", True),
    (r"\left( 1, 2 \right)", "(1,2)", "math", True),
    ("(1,000)", "(1,0)", "math", True),  # inside a tuple the comma separates elements
    (r"5 \text{ cm}", "5", "math", True),
    (r"1.6 \mathrm{~cm}", "1.6", "math", True),
    (r"30^\circ", "30", "math", True),
    (r"50\%", "50", "math", True),
    (r"\$5", "5", "math", True),
    ("$5$", "5", "math", True),
    (r"\sqrt{2}", "2^{1/2}", "math", True),
    (r"\frac{\pi}{2}", r"\pi/2", "math", True),
    (r"2\pi", r"\pi \cdot 2", "math", True),
    (r"\frac{\sqrt{3}}{2}", r"\frac{1}{2}\sqrt{3}", "math", True),
    (r"\{1,2\}", r"\{2,1\}", "math", True),
    ("1, 2", "2, 1", "math", True),  # a bare list of solutions is unordered
    ("[0,1)", "[0, 1)", "math", True),
    (r"x \in [0,1)", "[0,1)", "math", True),
    (r"(-\infty,0)\cup(1,\infty)", r"(1,\infty)\cup(-\infty,0)", "math", True),
    ("x = 5", "5", "math", True),
    ("8 + 9 = 17", "17", "math", True),
    ("7.5e-3", "0.0075", "math", True),  # e-notation (Minerva answers)
    ("1.6E2", "160", "math", True),
    ("7.5e-3", "0.075", "math", False),  # a worked computation states its result last
    (r"3 \times 4 = 12", "12", "math", True),
    ("2 + 2 = 5", "4", "math", False),  # the stated result counts, not the left side
    ("x + 1 = 2", "2", "math", False),  # an equation with an unknown is not a result
    ("y = 2x+1", "2x+1", "math", True),
    ("x^2+y^2=1", "y^2+x^2=1", "math", True),
    ("+7", "7", "math", True),
    ("-3", "-3.0", "math", True),
    ("**73**", "73", "math", True),
    (r"\left( 3, \frac{\pi}{2} \right)", r"(3, \pi/2)", "math", True),
    ("(1,8,19),(2,7,13)", "(2,7,13),(1,8,19)", "math", True),
    ("1000000", "1000000.5", "math", False),  # 0.5 apart > half a unit of the first decimal place, 0.05
    ("0.0000000001", "0", "math", False),  # the written decimal is not 0: 1e-10 > its half unit 5e-11
    (r"\text{Evelyn}", "Evelyn", "math", True),
    ("(1,2)", "(2,1)", "math", False),
    ("(2,1)", "(3,1)", "math", False),  # sympy reads both as empty intervals; tuples they are not equal
    ("[0,1)", "(0,1)", "math", False),
    ("[0,1)", "[0,1]", "math", False),
    (r"\{1,2\}", "(1,2)", "math", False),
    ("(1,2)", "1", "math", False),
    ("1,2", "1,2,3", "math", False),
    ("x=1", "x=2", "math", False),
    ("x+y=1", "x+y=2", "math", False),
    ("x=1, y=2", "x=2, y=1", "math", False),
    ("5", "-5", "math", False),
    ("(1,000)", "1000", "math", False),
    ("1000000", "1000002", "math", False),  # 2 / 1000002 = 2.0e-6 > 1e-6
    ("0.000001", "0", "math", False),  # 1e-6 > abs tol 1e-9 and > rel tol * 1e-6
    (r"\frac{1}{2}", r"\frac{1}{3}", "math", False),
    (r"\sqrt{2}", r"\sqrt{3}", "math", False),
    (r"\pi", "3.14", "math", False),
    (r"\text{Evelyn}", r"\text{Nevely}", "math", False),  # words are not products of symbols
    ("2^{10^{100}}", "2^{10^{100}}+1", "math", False),  # refused before sympy, decided fast
    # found by review: sums are not assignments, words that change a number are no units, one-way Math-Verify
    (r"\sum_{k=1}^{10} k", "1", "math", False),
    (r"\sum_{k=1}^{10} k", "55", "math", True),
    (r"\prod_{k=2}^{5} k", "2", "math", False),
    ("5", "5 million", "math", False),
    ("2", "2 pi", "math", False),
    (r"\sqrt{23}", r"\sqrt23", "math", False),
    (r"3\sqrt{2}", r"\sqrt2 3", "math", True),
    ("2e - 1", r"\frac{1}{5}", "math", False),
    ("AB = 5", "5", "math", True),
    ("f(x) = x^2", "x^2", "math", True),
    (r"x \geq 3", "x >= 3", "math", True),
    (r"x \geq 3", r"[3, \infty)", "math", True),  # Math-Verify reads the inequality only as the gold: either way
    (r"5 \text{ m}/\text{s}", "5", "math", True),
    (r"25^{\circ}\text{C}", "25", "math", True),
    # regressions of the first rework: thin space after a thousands comma, labelled ratios and quotients, the word
    # "percent", a set written with a repeated element
    (r"12,\! 345", "12345", "math", True),
    (r"11,\! 111,\! 111,\! 100", "11111111100", "math", True),
    ("AB:CD = 2:5", "2:5", "math", True),
    (r"\frac{PQ}{QR} = \frac{3}{4}", r"\frac34", "math", True),
    ("PQ/QR = 3/4", "0.75", "math", True),
    ("x:y = 3", "3", "math", True),
    ("x:y = 3", "4", "math", False),
    ("15 percent", r"15\%", "math", True),
    (r"\boxed{28 percent}", "28", "math", True),
    (r"28\text{ percent}", r"28\%", "math", True),
    (r"\{2,2,3\}", r"\{2,3\}", "math", True),
    (r"\{2,2,3\}", r"\{2,3,4\}", "math", False),
    ("2, 2, 3", "3, 2", "math", True),
    # a partial parse never decides: an interval or set Math-Verify cannot read is not its last number
    ("3", "-[1,3)", "math", False),
    ("5", r"\{2,5\}^c", "math", False),
    ("4", "(0,4]:", "math", False),
    ("2", "7-[1,2)", "math", False),
    ("6", r"\{0,6\}^n", "math", False),
    ("1", r"(0,1]^{2}", "math", False),
    # assignments to different names differ; a bare value still matches a named one
    ("y = 4", "x = 4", "math", False),
    ("b = 7", "c = 7", "math", False),
    (r"m\angle B = 40", r"m\angle C = 40", "math", False),
    ("(a, b) = (1, 2)", "(c, d) = (1, 2)", "math", False),
    ("y = 4", "4", "math", True),
    ("x = 4", "x = 4.0", "math", True),
    ("x_{1} = 4", "x_1 = 4", "math", True),
    (r"m\angle B = 40", r"\angle B = 40", "math", True),
    ("x = 1,000", "1000", "math", True),
    # labelled roots match their values in any order; two lists of assignments compare name by name
    (r"x_1 = \sqrt{2}, \quad x_2 = -\sqrt{2}", r"-\sqrt2, \sqrt2", "math", True),
    (r"x_1 = \sqrt{2}, x_2 = -\sqrt{2}", r"x_1 = -\sqrt{2}, x_2 = \sqrt{2}", "math", False),
    (r"x_1 = \sqrt{2}, x_2 = -\sqrt{2}", r"x_2 = -\sqrt{2}, x_1 = \sqrt{2}", "math", True),
    (r"x_1 = \sqrt{2}, x_2 = -\sqrt{2}", r"\sqrt2", "math", False),
    # an e-notation number is a number on the symbolic side too, not Euler's e
    ("2e - 1", "2e-1", "math", False),
    ("B", "(B)", "mc", True),
    ("b", "B", "mc", True),
    ("(B) 42", "B", "mc", True),
    (r"\boxed{\text{C}}", "C", "mc", True),
    ("B", "C", "mc", False),
    ("A", "a train", "mc", False),
    ("(A) or (B)", "B", "mc", False),  # a hedge is credited with neither option
    ("(A) and/or (B)", "A", "mc", False),
    ("(A)(B)", "B", "mc", False),
    ("A and B", "A", "mc", False),
    # words after a number that change or bound it are no unit: the answer equals no plain number (issue 48)
    *[
        (f"{number} {words}", number, "math", False)
        for number, words in [
            ("7", "twice"),
            ("7", "plus two"),
            ("7", "below zero"),
            ("7", "at most"),
            ("12", "lakh"),
            ("3", "tenths"),
            ("3", "quarters"),
            ("12", "halves"),
            ("4", "factorial"),
            ("2", "to the fifth"),
        ]
    ],
    ("7 twice", "14", "math", False),
    ("7 apples", "7", "math", True),
    (r"\frac{56}{2}=28", "28", "math", True),  # a worked chain in LaTeX states its result last
    (r"\frac{56}{2}=28", r"\frac{56}{2}", "math", True),
    (r"\boxed{49}+1", "50", "math", True),  # a box inside an answer is unwrapped, never its answer
    (r"\boxed{49}+1", "49", "math", False),
    ("101_2", "101_3", "math", False),  # a numeral in a base: equal only as written
    ("101_2", "101_{2}", "math", True),
    ("101_2", "101", "math", False),
    ("y'=2x+1", "y=2x+1", "math", False),  # primes are kept
    ("y'=2x+1", "y' = 1+2x", "math", True),
    ("0.4444...", "0.4444", "math", False),  # a repeating decimal is its fraction, not the digits written
    ("0.4444...", r"\frac{4}{9}", "math", True),
    (r"0.\overline{3}", r"\frac{1}{3}", "math", True),
    (r"0.\overline{3}", "0.3", "math", False),
    (r"0.1\overline{6}", r"\frac{1}{6}", "math", True),
    ("0.142857142857…", r"\frac{1}{7}", "math", True),
    ("3.14159...", r"\pi", "math", True),  # no repeating block: a decimal cut short
    ("(m,n)=(5,7)", "m=5, n=7", "math", True),  # a tuple of names is the list of assignments it makes
    ("(m,n)=(5,7)", "n=7, m=5", "math", True),
    ("(m,n)=(5,7)", "m=7, n=5", "math", False),
    ("(m,n)=(5,7)", "x=5, y=7", "math", False),
    ("(1+i)^2", "2i", "math", True),  # i is the imaginary unit
    (r"e^{i\pi}", "-1", "math", True),
    ("i^2", "1", "math", False),
    (r"\sum_{i=1}^{4} i", "10", "math", True),  # the index of a sum stays a variable
    ("x<1", "-x>-1", "math", True),  # a negated variable: the same interval of solutions
    (r"x\leq 1", r"-x\geq -1", "math", True),
    ("-x>-1", "x>1", "math", False),
    (r"-x \geq \frac{1}{2}", r"x \leq -\frac{1}{2}", "math", True),
    ("0<f(x)<1", "(0,1)", "math", True),  # a function's value bounded: the interval, named f(x)
    ("0<f(x)<1", "0<g(x)<1", "math", False),
    (r"x \lt 3", "x < 3", "math", True),  # MathJax's names of the signs
    (r"x \gt 5", "x < 5", "math", False),
    (r"\$18", "18 cents", "math", False),  # money keeps its denomination
    (r"\$18", r"18\text{ cents}", "math", False),
    ("18 dollars", "18¢", "math", False),
    ("€5", "5 pence", "math", False),
    ("18 cents", "18", "math", True),  # the unit alone is dropped
    (r"\$18", "18 dollars", "math", True),
    (r"\sum_{k=0}^{n-1} F_k F_{n-k-1}", r"\sum_{k=0}^{n-1} F_{n-k-1} F_k", "math", True),  # factors swapped
    (r"\sum_{k=0}^{n-1} F_k F_{n-k-1}", r"\sum_{k=0}^{n-2} F_k F_{n-k-2}", "math", False),
    ("12:00", "1:00", "math", False),  # both read as 12/0 and 1/0: no value is equal to nothing
    ("{1,3}", "(1,3)", "math", True),  # a TeX group is typeset without its braces: a bare list
    ("{1,3}", "[1,3]", "math", False),
    (r"\left[\begin{array}{cc}1 & 2 \\ 3 & 4\end{array}\right]", r"\begin{pmatrix}1&2\\3&4\end{pmatrix}", "math", True),
    (
        r"\left[\begin{array}{cc}1 & 2 \\ 3 & 4\end{array}\right]",
        r"\begin{pmatrix}1&2\\4&3\end{pmatrix}",
        "math",
        False,
    ),
    (
        r"\begin{pmatrix}1&2\\3&4\end{pmatrix}+\begin{pmatrix}5&6\\7&8\end{pmatrix}",
        r"\begin{pmatrix}6&8\\10&12\end{pmatrix}",
        "math",
        True,
    ),
    (
        r"\begin{pmatrix}1&2\\3&4\end{pmatrix}+\begin{pmatrix}5&6\\7&8\end{pmatrix}",
        r"\begin{pmatrix}6&8\\10&13\end{pmatrix}",
        "math",
        False,
    ),
    (r"\frac{1}{3\sqrt[3]{x}^2}", r"\frac{1}{3x^{2/3}}", "math", True),  # complex values at negative x compared cheaply
    (r"x_{1}=\frac{1}{2},\quadx_{2}=3", r"3, \frac{1}{2}", "math", True),  # \quad written against the next name
    ("True", "true", "text", True),
    ("Yes", "yes", "text", True),
    ("Yes.", '"yes"', "text", True),
    ("24", "24.0", "text", True),
    ("1,000", "1000", "text", True),
    ("]  ]", "] ]", "text", True),
    ("yes", "no", "text", False),
    ("valid", "invalid", "text", False),
    ("yes", "true", "text", False),
    ("apple banana", "banana apple", "text", False),  # word_sorting: order matters
    ("] ]", "]]", "text", False),
]


@pytest.mark.parametrize(("a", "b", "kind", "expected"), EQUIVALENCE)
def test_equivalent_both_orders(a: str, b: str, kind: str, expected: bool) -> None:
    assert equivalent(a, b, kind) is expected
    assert equivalent(b, a, kind) is expected


def test_decimal_tolerance_is_not_transitive_and_classes_use_first_representative() -> None:
    # tolerance = min(1e-6 * larger magnitude, half a unit of the last place of the coarser decimal)
    # 1.00001 vs 1.000011: 1e-6 <= min(1.000011e-6, 5e-6) -> same; 1.000011 vs 1.0000114: 4e-7 <= min(~1e-6, 5e-7)
    # -> same; 1.00001 vs 1.0000114: 1.4e-6 > ~1e-6 -> different, and 1.000011 is not a class representative.
    assert equivalent("1.00001", "1.000011") and equivalent("1.000011", "1.0000114")
    assert not equivalent("1.00001", "1.0000114")
    assert answer_classes(["1.00001", "1.000011", "1.0000114"]) == [0, 0, 1]


@pytest.mark.parametrize("kind", ANSWER_KINDS)
def test_none_and_empty_answers_are_never_equivalent(kind: str) -> None:
    assert equivalent(None, None, kind) is False
    assert equivalent(None, "5", kind) is False
    assert equivalent("5", None, kind) is False
    assert equivalent("", "", kind) is False
    assert equivalent("$$", "$$", kind) is False


# ----------------------------------------------------------------------------------------------------------
# Answer classes
# ----------------------------------------------------------------------------------------------------------


def test_answer_classes_math() -> None:
    sampled = [r"\frac{1}{2}", "0.5", None, "(1,2)", "(2,1)", "1/2", None, "(1, 2)", "x=3", "3", ""]
    # 1/2 family -> 0; None -> 1; (1,2) -> 2; (2,1) -> 3; second None -> 4; x=3 and 3 -> 5; "" -> 6
    assert answer_classes(sampled) == [0, 0, 1, 2, 3, 0, 4, 2, 5, 5, 6]


def test_answer_classes_mc_and_text() -> None:
    assert answer_classes(["(B)", "B", "C", "b", None, "A"], "mc") == [0, 0, 1, 0, 2, 3]
    assert answer_classes(["Yes", "no", "yes.", "No", "maybe"], "text") == [0, 1, 0, 1, 2]
    assert answer_classes([], "math") == []


def test_answer_classes_match_pairwise_equivalence() -> None:
    # Independent check: two answers share a class exactly when they are equivalent, for a transitive sample.
    sampled = ["2", "4/2", r"\sqrt{4}", "3", r"\frac{6}{2}", None, "2.0", "(2,3)", "(3,2)", "(2, 3)"]
    classes = answer_classes(sampled)
    for i, first in enumerate(sampled):
        for j, second in enumerate(sampled):
            if i != j:
                assert (classes[i] == classes[j]) == equivalent(first, second)
    first_seen = list(dict.fromkeys(classes))
    assert first_seen == list(range(len(first_seen)))  # ids numbered in order of first appearance
    # by hand: value 2 -> 0, value 3 -> 1, None -> 2, tuple (2,3) -> 3, tuple (3,2) -> 4
    assert classes == [0, 0, 0, 1, 1, 2, 0, 3, 4, 3]


# ----------------------------------------------------------------------------------------------------------
# Bad input, bounded time, threads
# ----------------------------------------------------------------------------------------------------------


def test_bad_kind_and_types_raise_value_error() -> None:
    with pytest.raises(ValueError, match="answer kind"):
        extract_answer("x", kind="latex")
    with pytest.raises(ValueError, match="answer kind"):
        equivalent("1", "1", kind="number")
    with pytest.raises(ValueError, match="answer kind"):
        answer_classes(["1"], kind="")
    with pytest.raises(ValueError, match="text must be a str"):
        extract_answer(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="answer must be a str"):
        normalize_answer(5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="single str"):
        answer_classes("12")


PATHOLOGICAL_PAIRS = [
    # (a, b, equivalent): nothing here may hang, on the main thread or on a worker thread
    ("(a+b+c+d+e)^{16}", "a^{16}", False),  # slow pure-Python expansion: stopped by the work budget
    (r"\log 9999", "99999999", False),  # sympy's logcombine would build 10**99999999 in one C call: refused
    ("2^{10^{100}}", "2^{10^{100}}+2", False),
    ("x^{99999}", "x^{99998}", False),
    ("(10^{9})!", "(10^{9})!+1", False),
    ("9^{999}^{999}", "9", False),
    ("(2^{999})^{999}", "(2^{999})^{998}", False),
    ("1+" * 200 + "1", "1+" * 199 + "2", False),
    ("(" * 300 + "1,2" + ")" * 300, "(" * 300 + "2,1" + ")" * 300, False),
    (",".join("abcdefghijkl"), ",".join(reversed("abcdefghijkl")), True),  # 12-element sets, string-matched
]


@pytest.mark.parametrize(("a", "b", "expected"), PATHOLOGICAL_PAIRS)
def test_pathological_inputs_finish_in_bounded_time_on_any_thread(a: str, b: str, expected: bool) -> None:
    outcomes: list[tuple[bool, float]] = []

    def timed_call() -> None:
        start = time.perf_counter()
        result = equivalent(b, a)
        outcomes.append((result, time.perf_counter() - start))

    worker = threading.Thread(target=timed_call)  # the work budget counts the calls of this thread only
    worker.start()
    worker.join(timeout=120)
    timed_call()  # main thread (the verdict of a pair is cached, out of budget or not)
    assert [result for result, _ in outcomes] == [expected, expected]
    assert max(seconds for _, seconds in outcomes) < 60.0  # the work budget takes seconds; a C call, forever


RUNAWAY_LENGTH = 40_000
RUNAWAY_ANSWERS = {
    # runaway generations (16k tokens of digits and the like); quadratic normalization took 15-44 s on each
    "spaces-between-equals": r"\boxed{x = " + " " * RUNAWAY_LENGTH + " =}",
    "digits-then-assignment": r"\boxed{" + "1" * RUNAWAY_LENGTH + "x=5}",
    "long-sum-equation": r"\boxed{" + "1+" * (RUNAWAY_LENGTH // 2) + "a=1}",
    "words-joining-a-list": r"\boxed{1" + " and " * (RUNAWAY_LENGTH // 5) + "}",
    "far-apart-boxes": r"\boxed{1}" + " " * RUNAWAY_LENGTH + r", \boxed{2}",
    "many-math-groups": "Final Answer: " + "$1$ and " * (RUNAWAY_LENGTH // 8) + "$2$.",
    "hedged-letters": r"\boxed{" + "(A) or " * (RUNAWAY_LENGTH // 7) + "(B)}",
}


@pytest.mark.parametrize("kind", ANSWER_KINDS)
@pytest.mark.parametrize("response", RUNAWAY_ANSWERS.values(), ids=RUNAWAY_ANSWERS.keys())
def test_runaway_answers_are_handled_within_the_comparison_budget(response: str, kind: str) -> None:
    equivalent("x+1", "1+x")  # Math-Verify's one-time set-up is not part of any comparison
    start = time.perf_counter()
    answer = extract_answer(response, kind) or "no option letter"  # mc: only the hedge names letters
    assert (answer == "no option letter") is (kind == "mc" and "(A)" not in response)
    assert normalize_answer(answer, kind) is not None
    assert equivalent(answer, answer, kind) and not equivalent(answer, "5", kind)
    assert time.perf_counter() - start < 3.0


THREAD_PAIRS = [
    # strings used by no other test, so the worker thread does the Math-Verify work first (caches are cold)
    (r"\sqrt{7}", "7^{1/2}", True),
    (r"\frac{7\pi}{3}", r"7\pi/3", True),
    (r"\{5,6\}", r"\{6,5\}", True),
    ("(1,3)", "(3,1)", False),
    ("u+v=3", "u+v=4", False),
    (r"\sqrt{11}", r"\sqrt{13}", False),
]


def test_equivalent_from_worker_thread_matches_main_thread() -> None:
    results: dict[int, bool] = {}
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for index, (a, b, _) in enumerate(THREAD_PAIRS):
                results[index] = equivalent(a, b)
        except BaseException as error:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(error)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive() and errors == []
    assert [results[i] for i in range(len(THREAD_PAIRS))] == [expected for _, _, expected in THREAD_PAIRS]
    assert [equivalent(b, a) for a, b, _ in THREAD_PAIRS] == [results[i] for i in range(len(THREAD_PAIRS))]


# ----------------------------------------------------------------------------------------------------------
# Property-based fuzzing
# ----------------------------------------------------------------------------------------------------------

FUZZ = settings(max_examples=200, deadline=timedelta(seconds=5), database=None, derandomize=True)
LATEX_TOKENS = [
    "1",
    "2",
    "3",
    "0.5",
    "-",
    "+",
    "x",
    "y",
    "=",
    ",",
    "(",
    ")",
    "[",
    "]",
    r"\{",
    r"\}",
    "{",
    "}",
    r"\frac",
    r"\dfrac",
    r"\sqrt",
    "^",
    "_",
    r"\pi",
    r"\infty",
    r"\cup",
    r"\left(",
    r"\right)",
    r"\text{",
    " cm",
    "$",
    r"\%",
    r"^\circ",
    "9999",
    "!",
    ".",
    " ",
    r"\boxed{",
    "**",
    "A",
    "(B)",
    "yes",
    r"\,",
    r"\!",
    r"\begin{pmatrix}",
    r"\end{pmatrix}",
    "&",
    "\\\\",
    "e5",
    r"\times10^",
    "1000001",
]
latexish = st.lists(st.sampled_from(LATEX_TOKENS), max_size=14).map("".join)
brace_free_atoms = st.sampled_from(["1", "x", "+", "-", r"\frac", r"\pi", "(", ")", ",", "[", "]", " ", "^", "2"])
balanced_latex = st.recursive(
    brace_free_atoms,
    lambda inner: st.lists(inner, min_size=1, max_size=4).map("".join) | inner.map(lambda s: "{" + s + "}"),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def warm_math_verify() -> None:
    """Pay Math-Verify's one-time set-up before the timed fuzz calls."""
    equivalent("x+1", "1+x")


def _timed(function, *args):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    value = function(*args)
    assert time.perf_counter() - start < 2.0
    return value


@FUZZ
@given(st.text(max_size=300), st.sampled_from(ANSWER_KINDS))
def test_fuzz_arbitrary_text(warm_math_verify: None, text: str, kind: str) -> None:
    answer = _timed(extract_answer, text, kind, THINK)
    assert answer is None or (answer and answer == answer.strip())
    normalized = _timed(normalize_answer, answer, kind)
    assert normalized is None or isinstance(normalized, str)
    assert _timed(equivalent, text, answer, kind) == equivalent(answer, text, kind)


@FUZZ
@given(latexish, latexish, st.sampled_from(ANSWER_KINDS))
def test_fuzz_equivalent_symmetric_reflexive_bounded(warm_math_verify: None, a: str, b: str, kind: str) -> None:
    forward = _timed(equivalent, a, b, kind)
    backward = _timed(equivalent, b, a, kind)
    assert isinstance(forward, bool) and forward == backward
    assert _timed(equivalent, a, a, kind) is (normalize_answer(a, kind) is not None)
    assert isinstance(_timed(extract_answer, a, kind), (str, type(None)))


@FUZZ
@given(balanced_latex)
def test_fuzz_boxed_content_is_recovered(content: str) -> None:
    response = f"Some reasoning with 12 and 13. Therefore \\boxed{{{content}}} is it."
    expected = content.strip() or "13"  # an empty box does not count: the last number is the fallback
    assert extract_answer(response) == expected
