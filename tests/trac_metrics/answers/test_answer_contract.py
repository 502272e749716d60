"""The answer contract (docs/method.md#answers-and-labels) as a table, so no change of the checker silently loses a
verdict it gets right: every example of that section, and the verdicts on the forms models and references write.

``PAIRS`` rows are (gold, answer) pairs judged by ``equivalent`` in both argument orders; ``LABELS`` rows are
(gold, response) pairs judged as a label is, ``equivalent(gold, extract_answer(response, kind, marker), kind)``. A
row marked ``doc`` is an example the section writes: ``test_doc_examples_are_in_the_contract`` checks that the section
still writes its strings, so the document and this table cannot drift apart.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest
from testenv import REPO

from trac_metrics.answers import equivalent, extract_answer


class Pair(NamedTuple):
    rule: str
    gold: str
    answer: str
    expected: bool
    kind: str = "math"
    doc: bool = False


class Label(NamedTuple):
    rule: str
    gold: str
    response: str
    expected: bool
    kind: str = "math"
    doc: tuple[str, ...] = ()  # the strings of the example as the section writes them
    marker: str | None = None


def doc(rule: str, gold: str, answer: str, expected: bool, kind: str = "math") -> Pair:
    return Pair(rule, gold, answer, expected, kind, doc=True)


PAIRS = [
    # --- Answer normalization: every kind ---
    Pair("markup-dollars", "$5$", "5", True),
    Pair("markup-bold", "**73**", "73", True),
    Pair("markup-whole-box", r"\boxed{42}", "42", True),
    Pair("markup-inline-math", r"\(\frac{3}{4}\)", "0.75", True),
    # --- math normalization ---
    Pair("unicode-minus", "−3", "-3", True),
    Pair("unicode-pi", "π/2", r"\frac{\pi}{2}", True),
    Pair("unicode-sqrt", "2√3", r"2\sqrt{3}", True),
    Pair("unicode-pm", "±4", r"\pm 4", True),
    Pair("unicode-times", "3×4", "12", True),
    Pair("dfrac-tfrac", r"\dfrac{1}{2}", r"\tfrac12", True),
    Pair("left-right", r"\left( 1, 2 \right)", "(1,2)", True),
    Pair("thin-space", r"1 \, 000", "1000", True),
    Pair("degree", r"30^\circ", "30", True),
    doc("percent-sign", r"50\%", "50", True),
    doc("degree-celsius", r"25^{\circ}\text{C}", "25", True),
    doc("unit-text", r"5\text{ cm}", "5", True),
    doc("unit-mathrm", r"5\mathrm{kg}", "5", True),
    doc("unit-textbf", r"5\textbf{cm}", "5", True),
    doc("unit-textnormal", r"5\textnormal{ km}", "5", True),
    doc("unit-power", r"12\text{ cm}^2", "12", True),
    doc("unit-thin-space-power", r"5\,\mathrm{cm^2}", "5", True),
    doc("unit-compound", r"9.8 \mathrm{~m}/\mathrm{s}^{2}", "9.8", True),
    Pair("unit-text-over-text", r"5 \text{ m}/\text{s}", "5", True),
    Pair("unit-word", "12 cm", "12", True),
    Pair("unit-currency", r"\$5", "5", True),
    doc("not-a-unit-million", r"5\text{ million}", "5", False),
    doc("not-a-unit-squared", "5 squared", "5", False),
    doc("not-a-unit-pi", "2 pi", "2", False),
    Pair("not-a-unit-or-more", "5 or more", "5", False),
    doc("text-wrapper", r"\text{Evelyn}", "Evelyn", True),
    Pair("words-are-no-symbols", r"\text{Evelyn}", r"\text{Nevely}", False),
    doc("list-in-words", r"3 \text{ and } 7", "3,7", True),
    Pair("list-in-words-or", "1, 2, or 3", "3, 2, 1", True),
    doc("assignment", "x = 5", "5", True),
    doc("assignment-greek", r"\alpha = \frac{\pi}{3}", r"\frac{\pi}{3}", True),
    doc("assignment-tuple", "(m, n) = (5, 1)", "(5,1)", True),
    Pair("assignment-tuple-swapped", "(m, n) = (5, 1)", "(1, 5)", False),
    doc("assignment-segment", "AB = 5", "5", True),
    Pair("assignment-angle", r"\angle A = 30^\circ", "30", True),
    Pair("assignment-measure", r"m\angle ABC = 40", "40", True),
    Pair("assignment-function", "f(x) = x^2", "x^2", True),
    Pair("assignment-probability", "P(A) = 0.5", "0.5", True),
    Pair("assignment-factorial", "n! = 120", "120", True),
    Pair("assignment-absolute", "|x| = 3", "3", True),
    doc("membership", r"x \in [0, 1)", "[0,1)", True),
    Pair("sum-is-no-assignment", r"\sum_{k=1}^{10} k", "1", False),
    Pair("sum-is-its-value", r"\sum_{k=1}^{10} k", "55", True),
    Pair("product-is-no-assignment", r"\prod_{k=2}^{5} k", "2", False),
    doc("arithmetic-chain", "8 + 9 = 17", "17", True),
    Pair("arithmetic-chain-times", r"3 \times 4 = 12", "12", True),
    Pair("arithmetic-chain-stated-result", "2 + 2 = 5", "4", False),
    Pair("equation-with-unknown", "x + 1 = 2", "2", False),
    Pair("leading-plus", "+7", "7", True),
    doc("spelled-unit", "18 dollars", "18", True),
    doc("thousands", "1,000", "1000", True),
    doc("thousands-braced", r"1{,}000", "1000", True),
    doc("thousands-thin-space", r"1,\!000", "1000", True),
    Pair("thousands-decimal", "1,234,567.5", "1234567.5", True),
    doc("decimal-comma", "0,375", "0.375", True),
    Pair("list-not-thousands", "41, 207", "41207", False),
    Pair("list-not-decimal", "1,5", "1.5", False),
    Pair("tuple-not-thousands", "(1,000)", "(1,0)", True),
    Pair("tuple-not-number", "(1,000)", "1000", False),
    Pair("space-after-command", r"\pi r^2", r"\pi r^{2}", True),
    doc("frac-shorthand", r"\frac12", r"\frac{1}{2}", True),
    doc("sqrt-shorthand", r"\sqrt2", r"\sqrt{2}", True),
    Pair("sqrt-shorthand-one-token", r"\sqrt23", r"3\sqrt{2}", True),
    Pair("sqrt-shorthand-not-23", r"\sqrt{23}", r"\sqrt23", False),
    Pair("euler-e-spaced", "2e - 1", r"\frac{1}{5}", False),
    doc("decimal-zeros", "007.50", "7.5", True),
    doc("decimal-trailing-zero", "5.0", "5", True),
    doc("decimal-leading-point", ".5", "0.5", True),
    doc("negative-zero", "-0", "0", True),
    Pair("negative-decimal", "-3", "-3.0", True),
    # --- mc and text normalization ---
    doc("mc-lowercase", "b", "B", True, "mc"),
    doc("mc-parenthesized", "(B)", "B", True, "mc"),
    doc("mc-period", "B.", "B", True, "mc"),
    doc("mc-letter-with-text", "(B) Paris", "B", True, "mc"),
    doc("mc-hedge", "(A) or (B)", "B", False, "mc"),
    Pair("mc-hedge-and", "A and B", "A", False, "mc"),
    Pair("mc-boxed-text", r"\boxed{\text{C}}", "C", True, "mc"),
    Pair("mc-other-letter", "B", "C", False, "mc"),
    Pair("mc-article", "A", "a train", False, "mc"),
    Pair("text-case", "True", "true", True, "text"),
    Pair("text-quotes-period", "Yes.", '"yes"', True, "text"),
    Pair("text-number", "24", "24.0", True, "text"),
    Pair("text-thousands", "1,000", "1000", True, "text"),
    Pair("text-different", "valid", "invalid", False, "text"),
    Pair("text-word-order", "apple banana", "banana apple", False, "text"),
    Pair("text-spacing-counts", "] ]", "]]", False, "text"),
    # --- Answer equivalence: the number rule ---
    doc("integers-exact", "1000000", "1000001", False),
    doc("huge-exact", "1e400", "1e401", False),
    doc("decimal-zeros-equal", "1.5", "1.50", True),
    doc("decimal-expresses-third", "0.3333333", r"\frac{1}{3}", True),
    doc("decimal-does-not-round-to", "0.3333334", r"\frac{1}{3}", False),
    doc("short-decimal", "0.333", r"\frac{1}{3}", False),
    doc("decimal-digits-count", "3.14", "3.14159", False),
    Pair("fraction-decimal", r"\frac{3}{4}", "0.75", True),
    Pair("slash-fraction", "1/2", "0.5", True),
    Pair("decimal-within-1e-6", "0.1", "0.10000001", True),
    Pair("million-half", "1000000", "1000000.5", False),
    Pair("tiny-decimal-not-zero", "0.0000000001", "0", False),
    Pair("fraction-exact-tiny", r"\frac{1}{10^8}", "0.00000002", False),
    Pair("e-notation-minerva", "1.77e-6", r"1.77 \times 10^{-6}", True),
    Pair("e-notation-other-value", "3.3e-10", "3.32e-10", False),
    Pair("integer-mantissa-exact", r"2 \times 10^{3}", "2001", False),
    # --- equations ---
    doc("assignment-by-value", "y = 2x+1", "2x+1", True),
    doc("same-name-by-value", "x = 1", "x = 2", False),
    doc("relation-is-no-value", "9 = 4p + q", "4p + q", False),
    doc("relation-is-no-constant", "x + y = 5", "5", False),
    doc("same-line", r"y = 3 - \frac{x}{2}", "x + 2y - 6 = 0", True),
    doc("same-line-scaled", "2x + 4y = 2", "x + 2y = 1", True),
    doc("other-line", "x + y = 1", "x + y = 2", False),
    Pair("circle-reordered", "x^2+y^2=1", "y^2+x^2=1", True),
    Pair("assignments-swapped", "x=1, y=2", "x=2, y=1", False),
    # --- structures ---
    doc("interval-brackets", "[0,1)", "(0,1)", False),
    doc("list-vs-tuple", "1, 2", "(1, 2)", True),
    doc("plus-minus-set", r"\pm 4", r"\{-4, 4\}", True),
    doc("plus-minus-inside", r"\frac{1 \pm \sqrt5}{2}", r"\frac{1+\sqrt5}{2}, \frac{1-\sqrt5}{2}", True),
    doc("set-vs-tuple", r"\{1,2\}", "(1,2)", False),
    doc("one-sided-set", r"\{3\}", "3", True),
    Pair("set-order", r"\{1,2\}", r"\{2,1\}", True),
    Pair("list-order", "1, 2", "2, 1", True),
    Pair("list-size", "1,2", "1,2,3", False),
    Pair("tuple-order", "(1,2)", "(2,1)", False),
    Pair("tuple-entries", "(2,1)", "(3,1)", False),
    Pair("tuple-vs-number", "(1,2)", "1", False),
    Pair("tuple-entries-rewritten", r"\left( 3, \frac{\pi}{2} \right)", r"(3, \pi/2)", True),
    Pair("tuples-list-reordered", "(1,8,19),(2,7,13)", "(2,7,13),(1,8,19)", True),
    Pair("union-reordered", r"(-\infty,0)\cup(1,\infty)", r"(1,\infty)\cup(-\infty,0)", True),
    Pair("union-bracket", r"(-\infty, 1) \cup (2, \infty)", r"(-\infty, 1] \cup (2, \infty)", False),
    Pair("interval-closed", "[0,1)", "[0,1]", False),
    Pair("plus-minus-one-sign", r"\pm 4", "4", False),
    Pair(
        "matrix-delimiters",
        r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}",
        r"\begin{bmatrix}1&2\\3&4\end{bmatrix}",
        True,
    ),
    Pair(
        "matrix-entries",
        r"\begin{pmatrix} 1/2 \\ 1 \end{pmatrix}",
        r"\begin{pmatrix} \frac{1}{2} \\ 1 \end{pmatrix}",
        True,
    ),
    Pair("matrix-order", r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", r"\begin{pmatrix} 2 \\ 1 \end{pmatrix}", False),
    Pair("matrix-shape", r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", r"\begin{pmatrix} 1 & 2 \end{pmatrix}", False),
    Pair("matrix-vs-tuple", r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", "(1,2)", False),
    Pair(
        "named-matrix",
        r"\mathbf{v} = \begin{pmatrix} 1 \\ 2 \end{pmatrix}",
        r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}",
        True,
    ),
    # --- decimals against constants, and Math-Verify ---
    doc("decimal-sqrt", "2.2360679", r"\sqrt{5}", True),
    doc("decimal-pi", "3.1415927", r"\pi", True),
    doc("short-decimal-pi", "3.14", r"\pi", False),
    doc("inequality-as-interval", r"x \geq 3", r"[3, \infty)", True),
    Pair("inequality-spelled", r"x \geq 3", "x >= 3", True),
    Pair("sqrt-power", r"\sqrt{2}", "2^{1/2}", True),
    Pair("pi-fraction", r"\frac{\pi}{2}", r"\pi/2", True),
    Pair("pi-product", r"2\pi", r"\pi \cdot 2", True),
    Pair("sqrt-product", r"\frac{\sqrt{3}}{2}", r"\frac{1}{2}\sqrt{3}", True),
    Pair("radicals-differ", r"\sqrt{2}", r"\sqrt{3}", False),
    Pair("fractions-differ", r"\frac{1}{2}", r"\frac{1}{3}", False),
    Pair("sign", "5", "-5", False),
    Pair("huge-power-refused", "2^{10^{100}}", "2^{10^{100}}+1", False),
    # --- label errors of the first rework, each class once: regressions, false equivalences ---
    doc("thin-space-thousands", r"12,\! 345", "12345", True),
    doc("labelled-ratio", "AB:CD = 2:5", "2:5", True),
    doc("labelled-quotient", r"\frac{PQ}{QR} = \frac{3}{4}", r"\frac{3}{4}", True),
    doc("percent-word", "15 percent", "15", True),
    doc("repeated-set-element", r"\{2,2,3\}", r"\{2,3\}", True),
    doc("partial-parse-sign", "3", "-[1,3)", False),
    doc("partial-parse-complement", "5", r"\{2,5\}^c", False),
    doc("partial-parse-punctuation", "4", "(0,4]:", False),
    doc("partial-parse-term", "2", "7-[1,2)", False),
    doc("partial-parse-power", "6", r"\{0,6\}^n", False),
    doc("e-notation-not-euler", "2e - 1", "2e-1", False),
    doc("names-differ", "y = 4", "x = 4", False),
    doc("names-differ-letters", "b = 7", "c = 7", False),
    doc("names-differ-angles", r"m\angle B = 40", r"m\angle C = 40", False),
    doc("name-vs-bare-value", "x = 4", "4", True),
    doc("labelled-roots", r"x_1 = \sqrt{2}, \quad x_2 = -\sqrt{2}", r"\sqrt{2},-\sqrt{2}", True),
    # --- Where the checker differs from Math-Verify ---
    doc("differs-exact-numbers", "0.0000001", "0.0000002", False),
    doc("differs-e-notation", "1e3", "1000", True),
    doc("differs-relation", "4p+q", "9 = 4p + q", False),
    doc("differs-tuple-brackets", "(1, 2, 3)", "[1, 2, 3]", False),
    doc("differs-units", r"0.75~\text{m}", "0.75", True),
    doc("differs-percent", r"50\%", "0.5", False),
]


def label(
    rule: str, gold: str, response: str, expected: bool, kind: str = "math", *snippets: str, marker: str | None = None
) -> Label:
    return Label(rule, gold, response, expected, kind, snippets, marker)


LABELS = [
    # --- Answer extraction: math ---
    label("final-answer-after-boxes", "52", r"First \boxed{12}, then \boxed{40}. The final answer is $52$", True),
    label("final-answer-after-boxes-not-box", "40", r"\boxed{12}, \boxed{40}. The final answer is $52$", False),
    label(
        "words-keep-the-box", "5", r"I get \boxed{5}. Final answer: as above.", True, "math", "Final answer: as above."
    ),
    label("run-of-boxes", "2, -5", r"So x = \boxed{2} or x = \boxed{-5}.", True, "math", r"x = \boxed{-5}", "2, -5"),
    label("run-of-boxes-not-one-root", "2", r"So x = \boxed{2} or x = \boxed{-5}.", False),
    label("run-of-boxes-repeated", "3", r"\boxed{3} \text{ or } \boxed{3}", True),
    label("draft-box", "40", r"Draft \boxed{12}, then after checking, \boxed{40}", True),
    label("box-beats-phrase", "5", r"Answer: 6, but after checking, \boxed{5}", True),
    label("phrase-groups", "1, 2", "The answers are $1$ and $2$.", True, "math", "$1$ and $2$", "1, 2"),
    label(
        "sentence-answer",
        "34",
        "Final Answer: The largest $n$ is 34.",
        True,
        "math",
        "Final Answer: The largest $n$ is 34.",
    ),
    label("sentence-answer-math", r"\frac{1}{2}", r"Final Answer: the value of $x$ is $\frac{1}{2}$.", True),
    label("justification", "12", "The final answer is 12 because 3*4=12.", True, "math", "12 because 3*4=12"),
    label("justification-comma", "2", "The answer is 2, since 2 boxes hold 24 eggs.", True, "math", "2, since"),
    label("gsm8k-marks", "72", "She sold 48+24 = 72 clips.\n#### 72", True),
    label("last-number-thousands", "1234", "So she has 1,234 apples left over", True),
    label("last-number-fraction", "2/3", "She ate 2/3 of it", True),
    label(
        "minerva-statement",
        r"\frac{3}{4}",
        r"Final Answer: The final answer is $\frac{3}{4}$. I hope it is correct.",
        True,
    ),
    label("unfinished-box", "12", r"... so the answer is \boxed{12", False),
    label("unfinished-box-no-draft", "3", r"First \boxed{3}. Correcting this, the answer is \boxed{\frac{1}{", False),
    label("think-marker", "4", r"<think>maybe \boxed{3}</think>The answer is \boxed{4}.", True, marker="</think>"),
    label(
        "think-marker-draft", "3", r"<think>maybe \boxed{3}</think>The answer is \boxed{4}.", False, marker="</think>"
    ),
    label("box-tuple", r"\left( 3, \frac{\pi}{2} \right)", r"So $\boxed{(3, \pi/2)}$.", True),
    label("box-after-equation", "204", r"Hence $m + n = \boxed{204}$.", True),
    # --- references in structured forms, answers without a box ---
    label("adjacent-boxes", "3, 5", r"\boxed{3}\boxed{5}", True, "math", r"\boxed{3}\boxed{5}", "3, 5"),
    label("counted-boxes", "4, 7", r"\boxed{4} apples and \boxed{7} pears", True, "math", r"\boxed{4} apples and"),
    label("group-run", "2, 4, 6", "$2$ and $4$ and $6$", True, "math", "$2$ and $4$ and $6$", "2, 4, 6"),
    label("bare-line", r"\frac{1}{2}", r"\frac{1}{2}", True, "math", r"\frac{1}{2}"),
    label("final-statement-number", "15", "Since $x = 3$, the total is 15 apples.", True, "math", "total is 15 apples"),
    label("final-statement-group", r"\frac{3}{4}", r"So the area is $\frac{3}{4}$.", True),
    label(
        "sentence-number", "5", "Final Answer: Tom finished the race 5 minutes early.", True, "math", "5 minutes early"
    ),
    label("inline-math-over-lines", "9", "Answer $ \n 9 \n $", True, "math", r"$ \n 9 \n $"),
    label("differs-partial-parse", "7", r"\boxed{\{-9, -7, 7\}^n}", False, "math", r"\{-9, -7, 7\}^n"),
    # --- mc ---
    label("mc-box", "B", r"Thus \boxed{B}.", True, "mc", r"\boxed{B}"),
    label("mc-box-parenthesized", "B", r"Thus \boxed{(B)}.", True, "mc", r"\boxed{(B)}"),
    label("mc-parenthesized-letter", "B", "After eliminating, the answer is (B).", True, "mc"),
    label("mc-closing-parenthesis", "B", "B) 42 is the right option", True, "mc"),
    label("mc-bold", "B", "So: **B**", True, "mc", "**B**"),
    label("mc-line", "C", "Reasoning line\n\nC", True, "mc"),
    label("mc-answer-is", "C", "So the answer is C", True, "mc"),
    label("mc-answer-colon", "B", "Answer: (B)", True, "mc", '"Answer: (B)"'),
    label("mc-answer-option", "B", "The correct answer is option B.", True, "mc", "answer is option B"),
    label("mc-article-in-prose", "A", "A train leaves the station at 3 pm.", False, "mc"),
    label("mc-hedge-box", "A", r"\boxed{(A) or (B)}", False, "mc", r"\boxed{(A) or (B)}"),
    label("mc-hedge-box-letters", "A", r"\boxed{(A)(B)}", False, "mc", r"\boxed{(A)(B)}"),
    label("mc-hedge-boxes-or", "B", r"\boxed{A} or \boxed{B}", False, "mc", r"\boxed{A} or"),
    label("mc-hedge-boxes-comma", "B", r"\boxed{A}, \boxed{B}", False, "mc", r"\boxed{A}, \boxed{B}"),
    label("mc-hedge-phrase", "A", "So the answer is (A) or (B).", False, "mc", "the answer is (A) or (B)"),
    label("mc-hedge-list", "C", "The answer is A, B, or C.", False, "mc", "A, B, or C"),
    label("mc-corrected-box", "B", r"\boxed{A} ... wait, no: \boxed{B}", True, "mc"),
    label("mc-box-outranks-mention", "B", r"So the answer is \boxed{B}, not (C).", True, "mc", r"\boxed{B}, not (C)"),
    label("mc-statement-outranks-mention", "D", "Answer: D. Option (A) is tempting but wrong.", True, "mc", "(A) is"),
    label("mc-final-answer-after-box", "C", r"\boxed{B}. Final answer: (C)", True, "mc"),
    label("mc-repeated-box", "B", r"\boxed{B} \boxed{B}", True, "mc"),
    label("mc-think-marker", "D", "<think>(A) maybe</think>The answer is (D)", True, "mc", marker="</think>"),
    # --- text ---
    label("text-answer-is", "yes", "Let's think step by step. So the answer is Yes.", True, "text"),
    label("text-box", "] ]", r"Closing the brackets gives \boxed{] ]}", True, "text"),
    label("text-justification", "No", "So the answer is No, because Sam lies.", True, "text", "No, because Sam lies"),
    label("text-final-answer-after-box", "valid", r"\boxed{invalid}. The final answer is valid.", True, "text"),
]


@pytest.mark.parametrize("row", PAIRS, ids=[row.rule for row in PAIRS])
def test_pair_verdict(row: Pair) -> None:
    assert equivalent(row.gold, row.answer, row.kind) is row.expected
    assert equivalent(row.answer, row.gold, row.kind) is row.expected


@pytest.mark.parametrize("row", LABELS, ids=[row.rule for row in LABELS])
def test_label_verdict(row: Label) -> None:
    extracted = extract_answer(row.response, row.kind, marker=row.marker)
    assert equivalent(row.gold, extracted, row.kind) is row.expected, f"extracted {extracted!r}"


def test_rules_are_named_once() -> None:
    rules = [row.rule for row in PAIRS] + [row.rule for row in LABELS]
    assert len(rules) == len(set(rules))


def answers_section() -> str:
    """The "Answers and labels" section of docs/method.md, up to the next top-level section."""
    text = (REPO / "docs" / "method.md").read_text(encoding="utf-8")
    start = text.index("## Answers and labels")
    return text[start : text.index("\n## ", start + 1)]


def test_doc_examples_are_in_the_contract() -> None:
    section = answers_section()
    written = [(row.rule, snippet) for row in PAIRS if row.doc for snippet in (row.gold, row.answer)]
    written += [(row.rule, snippet) for row in LABELS for snippet in row.doc]
    missing = [(rule, snippet) for rule, snippet in written if snippet not in section]
    assert not missing, f"examples no longer written in docs/method.md#answers-and-labels: {missing}"
