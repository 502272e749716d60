"""Answer extraction (trac_metrics.answers.extraction, docs/method.md#answers-and-labels): boxes and runs of boxes,
final-answer statements, option letters, text answers, thinking markers, unfinished boxes."""

from __future__ import annotations

import time

import pytest

from trac_metrics.answers import answer_statement_start, equivalent, extract_answer, normalize_answer

THINK = "</think>"

MATH_EXTRACTION = [
    # (response, marker, expected raw answer)
    (r"We add the halves, so the result is \boxed{\frac{1}{2}}.", None, r"\frac{1}{2}"),
    (r"Nested braces: \boxed{\frac{\sqrt{3}}{2}}", None, r"\frac{\sqrt{3}}{2}"),
    (r"First \boxed{3}, then I corrected it to \boxed{4}.", None, "4"),
    (r"Boxed with fbox: \fbox{7}", None, "7"),
    (r"Short form: \boxed 5.", None, "5"),
    (r"Good \boxed{3} then a cut-off \boxed{4", None, None),  # the last box is unfinished: no answer
    (r"An empty box \boxed{} does not count, \boxed{ } neither; \boxed{8} does", None, "8"),
    (r"The set is \boxed{\{1,2\}}.", None, r"\{1,2\}"),
    (r"So $\boxed{\boxed{49}+1}$.", None, r"\boxed{49}+1"),  # the outer box of a nested one
    ("The answer is between 1 and 7.", None, None),  # a bound states no value
    (r"\boxed{3} and \boxed{\boxed{4}\cdot 2}", None, r"3, \boxed{4}\cdot 2"),
    (r"$\boxed{\left( 3, \frac{\pi}{2} \right)}$", None, r"\left( 3, \frac{\pi}{2} \right)"),
    (r"\boxed{x = 5}", None, "x = 5"),
    (r"Answer: 6, but after checking, \boxed{5}", None, "5"),  # a box beats every phrase
    (r"The final answer is $\frac{3}{4}$. I hope it is correct.", None, r"$\frac{3}{4}$"),
    ("The final answer is 12. Done.", None, "12"),
    ("The final answer is 5. Answer: 6", None, "5"),  # "final answer is" is tried before "Answer:"
    ("Answer: 42", None, "42"),
    ("**Answer:** 17", None, "17"),
    ("So the answer is 3.5.", None, "3.5"),
    ("The answer is:\n$2x+1$", None, "$2x+1$"),
    ("Natalia sold 48/2 = 24 clips.\nShe sold 48+24 = 72 clips.\n#### 72", None, "72"),
    ("So she has 1,234 apples left over", None, "1,234"),
    ("The temperature dropped to -7 degrees", None, "-7"),
    ("She ate 2/3 of it", None, "2/3"),
    ("No digits in here at all", None, None),
    ("", None, None),
    # end-of-thinking marker: only the text after it counts; absent marker: the whole text
    (r"<think>maybe \boxed{3}</think>The answer is \boxed{4}.", THINK, "4"),
    (r"<think>maybe \boxed{3}</think>So it is 7 after all.", THINK, "7"),
    (r"<think>maybe \boxed{3}</think>Nothing numeric.", THINK, None),
    (r"<think>maybe \boxed{3}</think>Nothing numeric.", None, "3"),
    (r"No thinking section, \boxed{9}", THINK, "9"),
    # a final run of boxes joined by commas / "and" / "or" is one answer set; other earlier boxes are drafts
    (r"So x = \boxed{2} or x = \boxed{-5}.", None, "2, -5"),
    (r"$\boxed{1}$, $\boxed{2}$ and $\boxed{3}$", None, "1, 2, 3"),
    (r"\boxed{3} \text{ or } \boxed{3}", None, "3"),  # the same content counts once
    (r"Draft \boxed{12}, then after checking, \boxed{40}", None, "40"),
    # a final-answer statement after the last box wins; one that is only words keeps the box
    (r"Steps: \boxed{12}, \boxed{40}. The final answer is $52$.", None, "$52$"),
    (r"I get \boxed{5}. **Final Answer:** 6", None, "6"),
    (r"I get \boxed{5}. Final answer: as shown above.", None, "5"),
    (r"The final answer is $\boxed{52}$.", None, "52"),
    # a phrase's answer: a run of math groups, or the answer expression of a sentence in words
    ("The answers are $3$ and $7$.", None, "3, 7"),
    ("Final Answer: The largest $n$ is 34.", None, "34"),
    ('Final Answer: The final answer is \\"$12$ and $13$\\". I hope it is correct.', None, "12, 13"),  # quoted
    ("The answer is “x = 3”.", None, "x = 3"),
    ('The answer is "yes" for 3, so 5.', None, '"yes" for 3, so 5'),  # a quote that does not end the statement
    (r"Final Answer: the value of $x$ is $\frac{1}{2}$.", None, r"$\frac{1}{2}$"),
    ("The final answer is 18 dollars.", None, "18 dollars"),
    # the answer of a sentence ends where its justification begins
    ("The final answer is 12 because 3*4=12.", None, "12"),
    ("The answer is 2, since 2 boxes hold 24 eggs.", None, "2"),
    ("The answer is 1, 2, and 3.", None, "1, 2, and 3"),
    # boxes side by side, or joined after a word naming what they count, are one answer set
    (r"\boxed{3}\boxed{5}", None, "3, 5"),
    (r"\boxed{4} apples and \boxed{7} pears", None, "4, 7"),
    # no box and no answer phrase: the last math group (or run of them) or number of the final statement, whichever
    # comes last; a line without words is the answer itself
    (r"So the area is $\frac{3}{4}$.", None, r"\frac{3}{4}"),
    (r"Thus \[ x = \frac{1}{2} \]", None, r"x = \frac{1}{2}"),
    (r"Answer \( (9+1) \)", None, "(9+1)"),
    ("Since $x = 3$, the total is 15 apples.", None, "15"),
    ("$2$ and $4$ and $6$", None, "2, 4, 6"),
    (r"x_1 = \sqrt{2}, \quad x_2 = -\sqrt{2}", None, r"x_1 = \sqrt{2}, \quad x_2 = -\sqrt{2}"),
    (r"\frac{1}{2}", None, r"\frac{1}{2}"),
    ("3, 5", None, "3, 5"),
    ("We compute 3 + 4.\n7", None, "7"),
    # a sentence answer without "is": its answer expression
    ("Final Answer: Tom finished the race 5 minutes early.", None, "5"),
    ("Final Answer: Evelyn", None, "Evelyn"),
]


@pytest.mark.parametrize(("response", "marker", "expected"), MATH_EXTRACTION)
def test_extract_math_forms(response: str, marker: str | None, expected: str | None) -> None:
    assert extract_answer(response, "math", marker=marker) == expected


MC_EXTRACTION = [
    ("After eliminating, the answer is (B).", "B"),
    ("B) 42 is the right option", "B"),
    ("So the answer is C", "C"),
    ("Answer: D", "D"),
    (r"\boxed{E}", "E"),
    (r"\boxed{(F)}", "F"),
    (r"Thus \boxed{\text{C}}", "C"),
    ("**G**", "G"),
    ("The correct answer is option B.", "B"),
    ("(A) looks plausible, but (C) fits all data; the answer is (C)", "C"),
    ("Option (D) is wrong because ... the answer is (A)", "A"),
    ("Reasoning line\n\nC", "C"),
    # a hedge names no single option: the answer is the hedge as written, never a letter
    (r"\boxed{(A) and (B)}", "(A) and (B)"),
    (r"\boxed{(A) or (B)}", "(A) or (B)"),
    ("So the answer is (A) or (B).", "(A) or (B)"),
    ("Options (A), (B) were considered. The answer is (B).", "B"),
    (r"\boxed{A} or \boxed{B}", r"\boxed{A} or \boxed{B}"),
    (r"\boxed{(A)} \boxed{(B)}", r"\boxed{(A)} \boxed{(B)}"),
    (r"\boxed{(A)(B)}", r"\boxed{(A)(B)}"),
    ("The answer is A, B, or C.", "A, B, or C"),
    ("The answer is **A** or **B**.", "**A** or **B**"),
    (r"\boxed{A} ... wait, no: \boxed{B}", "B"),
    (r"\boxed{B} \boxed{B}", "B"),  # the same option twice is no hedge
    ("The answer is A.", "A"),
    ("Answer: A", "A"),
    (r"<think>(A) maybe</think>The answer is (D)", "D"),
    # a box or an answer statement outranks later mentions of options
    (r"So the answer is \boxed{B}, not (C).", "B"),
    ("Answer: D. Option (A) is tempting but wrong.", "D"),
    ("The answer is (B); (C) fails the second condition.", "B"),
    (r"The answer is (C). Checking again: \boxed{B}", "B"),
    (r"\boxed{B}. Final answer: (C)", "C"),
    # the article "A" / pronoun "I" in prose is not an option letter
    ("A train leaves the station at 3 pm and arrives at 5 pm.", None),
    ("A car and a bus. The answer is A train that is late.", None),
    ("I think this is hard.", None),
    ("The probability f(A) is small", None),
    ("", None),
]


@pytest.mark.parametrize(("response", "expected"), MC_EXTRACTION)
def test_extract_mc_forms(response: str, expected: str | None) -> None:
    assert extract_answer(response, "mc", marker=THINK) == expected


TEXT_EXTRACTION = [
    ("Let's think step by step. So the answer is Yes.", "Yes"),
    ("Thus, the answer is False.", "False"),
    ("So the answer is valid.", "valid"),
    ("Sorted: the answer is apple banana cherry.", "apple banana cherry"),
    (r"Closing the brackets gives \boxed{] ]}", "] ]"),
    ("The final answer is 24", "24"),
    ("no idea at all", None),
]


@pytest.mark.parametrize(("response", "expected"), TEXT_EXTRACTION)
def test_extract_text_forms(response: str, expected: str | None) -> None:
    assert extract_answer(response, "text") == expected


REFERENCES_IN_STRUCTURED_FORMS = [
    # (reference, response, equivalent): the reference goes through the same extraction as the response
    (r"\boxed{3}\boxed{5}", "3, 5", True),
    (r"\boxed{3}\boxed{5}", "5", False),
    (r"\boxed{4} apples and \boxed{7} pears", r"\boxed{7}, \boxed{4}", True),
    ("$2$ and $4$ and $6$", r"\boxed{2,4,6}", True),
    ("$2$ and $4$ and $6$", r"\boxed{2,4}", False),
    (r"x_1 = \sqrt{2}, \quad x_2 = -\sqrt{2}", r"\boxed{\sqrt2} and \boxed{-\sqrt2}", True),
    (r"x_1 = \sqrt{2}, \quad x_2 = -\sqrt{2}", r"\boxed{-\sqrt2}, \boxed{\sqrt2}", True),
    (r"x_1 = \sqrt{2}, \quad x_2 = -\sqrt{2}", r"\boxed{\sqrt2}", False),
    (r"(x, y) = (1, 2)", r"\boxed{(2, 1)}", False),
]


@pytest.mark.parametrize(("reference", "response", "expected"), REFERENCES_IN_STRUCTURED_FORMS)
def test_references_in_structured_forms(reference: str, response: str, expected: bool) -> None:
    gold, answer = extract_answer(reference), extract_answer(response)
    assert equivalent(gold, answer) is expected, (gold, answer)


def test_realistic_chat_answer_with_reasoning() -> None:
    response = (
        "To solve $2x + 3 = 11$, subtract 3 from both sides: $2x = 8$. "
        "Then divide by 2 to get $x = 4$.\n\nChecking: $2 \\cdot 4 + 3 = 11$. \u2713\n\n"
        "**Final Answer**\n\\[\n\\boxed{4}\n\\]"
    )
    assert extract_answer(response) == "4"


def test_realistic_thinking_trace_box_before_and_after_marker() -> None:
    trace = (
        "<think>\nLet me try small cases. Maybe the answer is \\boxed{12}? No wait, I double counted; "
        "there are 10 pairs.\n</think>\n\nCounting the pairs carefully gives $\\boxed{10}$."
    )
    assert extract_answer(trace, "math", marker=THINK) == "10"
    cut_off = "<think>\nThe pairs are (1,2), (2,3) and the count is \\boxed{12} so far, then 13"
    assert extract_answer(cut_off, "math", marker=THINK) == "12"  # marker absent: the whole text


def test_realistic_gsm8k_solution_and_answers() -> None:
    solution = (
        "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\n"
        "She makes 9 * 2 = $<<9*2=18>>18 every day at the farmer's market.\n#### 18"
    )
    assert extract_answer(solution) == "18"
    assert equivalent(extract_answer(solution), extract_answer("She makes $18.00 a day. The answer is $18."))
    assert extract_answer("Total: 1000 - 0 = 1,000\n#### 1,000") == "1,000"
    assert equivalent(extract_answer("#### 1,000"), "1000")


def test_realistic_dataset_answer_formats() -> None:
    # MATH500 answer field, OlympiadBench final_answer, Minerva answer with a unit, AIME integer answer
    assert equivalent(r"\left( 3, \frac{\pi}{2} \right)", extract_answer(r"So $\boxed{(3, \pi/2)}$."))
    assert equivalent(r"$(1,8,19), (2,7,13)$", extract_answer(r"\boxed{(2,7,13),(1,8,19)}"))
    assert not equivalent(r"$(1,8,19), (2,7,13)$", r"(1,8,19),(2,13,7)")
    assert equivalent(r"1.6 \times 10^{-3} \mathrm{~m}", "0.0016")
    assert equivalent(str(204), extract_answer(r"Hence $m + n = \boxed{204}$."))


def test_long_responses_extract_in_bounded_time() -> None:
    unclosed = "\\boxed{" * 20_000
    start = time.perf_counter()
    assert extract_answer(unclosed + " so 5") is None  # the last box never closes: no answer
    assert extract_answer("word " * 20_000 + r"\boxed{3}") == "3"
    assert normalize_answer("\\text{" * 5_000 + "x" + "}" * 5_000) == "x"
    assert time.perf_counter() - start < 2.0


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


@pytest.mark.parametrize(
    ("response", "kind"),
    [(response, "math") for response, marker, _ in MATH_EXTRACTION if marker is None]
    + [(response, "mc") for response, _ in MC_EXTRACTION]
    + [(response, "text") for response, _ in TEXT_EXTRACTION],
)
def test_the_answer_statement_starts_a_line_that_holds_the_answer_alone(response: str, kind: str) -> None:
    """docs/method.md#probe-prompt: a response without a thinking section is probed up to the line of its answer
    statement; that line and what follows state the same answer as the whole response, and nothing before it is
    cut."""
    answer, start = extract_answer(response, kind), answer_statement_start(response, kind)
    assert (start is None) == (answer is None)
    if start is not None:
        assert start == 0 or response[start - 1] == "\n"
        assert extract_answer(response[start:], kind) == answer


def test_the_cut_leaves_the_reasoning_and_takes_the_lead_in_of_the_answer_line() -> None:
    text = "Step 1: 3 + 4 = 7.\nStep 2: 7 * 2 = 14.\nSo the answer is \\boxed{14}.\nDone."
    assert text[: answer_statement_start(text)] == "Step 1: 3 + 4 = 7.\nStep 2: 7 * 2 = 14.\n"
    gsm8k = "Natalia sold 48 clips.\nIn May she sold half: 24.\n#### 72"
    assert gsm8k[: answer_statement_start(gsm8k)] == "Natalia sold 48 clips.\nIn May she sold half: 24.\n"
    assert answer_statement_start("The answer is (B).", "mc") == 0
    assert answer_statement_start("Let me think about it.", "math") is None
    marked = "<think>x = 3</think>\nThe answer is 3."
    assert answer_statement_start(marked, "math", marker="</think>") == marked.index("The answer")
