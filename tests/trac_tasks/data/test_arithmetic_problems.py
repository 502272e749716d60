"""The tiny reasoner's problem generator (trac_tasks.data.arithmetic_problems): seeded, held-out questions never in
the training stream, worked traces whose every operation holds, and a grader that finds where a trace went wrong."""

from __future__ import annotations

import itertools
import random
import re

import pytest

from trac_tasks.data.arithmetic_problems import (
    ANSWER_LEADS,
    Difficulty,
    grade,
    held_out_problems,
    is_held_out,
    make_problem,
    training_problems,
)
from trac_tasks.generation.config import DEFAULT_CUE

DIAL = [Difficulty(steps, digits, distractors) for steps in (1, 3, 5) for digits in (1, 2, 3) for distractors in (0, 2)]


def test_the_same_seed_gives_the_same_problems_and_another_seed_others():
    first = list(itertools.islice(training_problems(7), 50))
    assert first == list(itertools.islice(training_problems(7), 50))
    assert first != list(itertools.islice(training_problems(8), 50))
    assert held_out_problems(3, DIAL) == held_out_problems(3, DIAL)


def test_training_never_yields_a_held_out_question_and_evaluation_only_those():
    training = [problem.question for problem in itertools.islice(training_problems(1), 3000)]
    assert not any(is_held_out(question) for question in training)
    held_out = held_out_problems(1, DIAL * 10)
    assert all(problem.held_out for problem in held_out)
    assert not {problem.question for problem in held_out} & set(training)


@pytest.mark.parametrize("difficulty", DIAL)
def test_every_trace_works_its_problem_and_grades_right(difficulty):
    rng = random.Random(difficulty.steps * 100 + difficulty.max_digits * 10 + difficulty.distractors)
    for _ in range(30):
        problem = make_problem(rng, difficulty)
        assert problem.trace.count("\n") == difficulty.steps + 1  # a line to start, one per operation, one to end
        assert len(re.findall(r"[A-Z][a-z]+ has \d+ ", problem.question)) == 1 + difficulty.distractors
        verdict = grade(problem.answer, problem.response)
        assert verdict.well_formed and verdict.correct and verdict.answer_from_trace and verdict.first_slip is None
        assert 0 <= problem.answer <= 9999


def test_grade_finds_the_first_slip_and_the_answer_it_carried():
    reply = (
        "<think>\nTom starts with 5 pens.\nHe finds 8 more: 5 + 8 = 14.\nIt grows 2 times: 14 * 2 = 28.\n"
        "So Tom has 28 pens.\n</think>\n\nThe answer is \\boxed{28}."
    )
    verdict = grade(26, reply)
    assert verdict.well_formed and not verdict.correct and verdict.answer == 28
    assert verdict.first_slip == 2 and verdict.answer_from_trace
    unboxed = grade(26, "<think>\nTom starts with 5 pens.\n</think>\n\nThe answer is 26.")
    assert not unboxed.well_formed and not unboxed.correct and unboxed.answer is None


def test_a_difficulty_off_the_dial_is_refused():
    with pytest.raises(ValueError, match="difficulty out of range"):
        Difficulty(0, 1, 0)
    with pytest.raises(ValueError, match="difficulty out of range"):
        Difficulty(2, 4, 0)


def test_the_probe_cue_right_after_the_thinking_section_is_one_of_the_replies_own_forms():
    """docs/method.md#probe-prompt: the paper's probe reads the reasoning, ``</think>`` and the cue; the training mix
    writes exactly that after ``</think>`` in one of its forms, so the probe is in the model's distribution."""
    problem = make_problem(random.Random(3), Difficulty(2, 1, 1))
    plain = problem.reply(ANSWER_LEADS[0], summary=False)
    assert f"</think>{DEFAULT_CUE}{problem.answer}}}." in plain
    for lead in ANSWER_LEADS:
        for summary in (False, True):
            verdict = grade(problem.answer, problem.reply(lead, summary))
            assert verdict.well_formed and verdict.correct and verdict.answer_from_trace
    summarized = problem.reply(ANSWER_LEADS[1], summary=True)
    assert f"</think>\n\n{problem.name} has {problem.answer} {problem.items} in the end.\nThe answer is" in summarized
    with pytest.raises(ValueError, match="lead must be one of"):
        problem.reply("Answer:")
