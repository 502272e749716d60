"""Whether the reasoning already states the answer (trac_metrics.features.leakage, docs/method.md#answer-leakage):
the answer as a token of its own or an equal number, in the reasoning the probe reads; never a digit inside a longer
number, never a multiple-choice letter."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics.features.leakage import answer_in_reasoning, answer_stated_in, reasoning_text


@pytest.mark.parametrize(
    ("reasoning", "answer", "kind", "expected"),
    [
        ("So Tom has 41 apples.", "41", "math", True),
        ("So Tom has 41 apples.", "4", "math", False),  # a digit of a longer number is no copy
        ("We need 1,000 bricks.", "1000", "math", True),  # an equal number in another form
        ("x = 2.50 here", "2.5", "math", True),
        ("half of it: \\frac{1}{2}", "\\frac{1}{2}", "math", True),
        ("the capital is paris", "Paris", "text", True),
        ("Parisian food", "Paris", "text", False),
        ("(A) looks wrong, (B) is right", "B", "mc", None),
        ("anything", None, "math", None),
        ("", "7", "math", False),
    ],
)
def test_a_copy_of_the_answer_is_a_token_of_its_own_or_an_equal_number(reasoning, answer, kind, expected):
    assert answer_stated_in(reasoning, answer, kind) is expected


def test_the_reasoning_is_what_the_probe_reads():
    record = synthetic_question(np.random.default_rng(0), 3, correct=True, k=1)[0]
    thinking = dataclasses.replace(record, marker="</think>", text="x is 13</think>The answer is \\boxed{13}")
    assert reasoning_text(thinking) == "x is 13" and answer_in_reasoning(thinking) is True
    plain = dataclasses.replace(record, marker="", text="Add 6 and 7.\nSo the answer is \\boxed{13}.")
    assert reasoning_text(plain) == "Add 6 and 7.\n" and answer_in_reasoning(plain) is False
    stated = dataclasses.replace(plain, text="Add 6 and 7: 13.\nSo the answer is \\boxed{13}.")
    assert answer_in_reasoning(stated) is True
