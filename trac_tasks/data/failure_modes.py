"""The failure-mode test bed's data (docs/guide/failure-modes.md#settings): the tiny reasoner's arithmetic problems
(:mod:`trac_tasks.data.arithmetic_problems`) with one error process written into the training replies, and held-out
test questions that record which error each one invites.

A setting is ``kind`` or ``kind:rate``:

- ``slips`` (S0): the shipped tiny reasoner's training data, unchanged; its errors are its own arithmetic slips.
- ``drift:M`` (S1): answer-stage drift. The answer section after ``</think>`` carries the trace's result moved by a
  small random offset (:data:`DRIFT_OFFSETS`) with probability M, in its summary line and its box alike.
- ``drift_large:Q`` (S1b): the same, only where the result is at least :data:`LARGE` (probability Q).
- ``misconception:Q`` (S2): a learned wrong rule. In a fraction Q of the training problems that buy bags, every bag
  step adds the bag count to the bag size instead of multiplying (``3 bags of 4: 3 + 4 = 7``); the rest of the trace
  and the answer follow the wrong value.
- ``distractor:Q`` (S3): the question holds sentences in which another person finds more of the same items; the trace
  applies each such sentence to the protagonist with probability Q, the answer following.

The rules that keep it honest (docs/guide/failure-modes.md#rules): the answer section's value is drawn once per reply
and every restatement of it (the summary line, the box) is that draw — never the true answer beside a corrupted one,
never a corrupted value copied from elsewhere; the answer section keeps the shipped model's mix of forms, so TrAC's
probe cue right after ``</think>`` stays one of the model's own forms and is as exposed to the drift as the box line;
held-out questions are never training data (:func:`arithmetic_problems.is_held_out` on the final question text).
Everything is a function of the seed.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from trac_tasks.data.arithmetic_problems import (
    ANSWER_LEADS,
    MAX_VALUE,
    PEOPLE,
    SUMMARY_SHARE,
    Difficulty,
    Problem,
    grade,
    is_held_out,
    make_problem,
    random_difficulty,
    trace_plan,
    training_problems,
)
from trac_tasks.data.dataset_loaders import DATA_DIR
from trac_tasks.data.tiny_reasoner import TRAINING_SEED

KINDS = ("slips", "drift", "drift_large", "misconception", "distractor")
DRIFT_OFFSETS = (-10, -2, -1, 1, 2, 10)
LARGE = 100
"""``drift_large`` drifts only results of at least this value."""
ERROR_TYPES = ("none", "drift", "misconception", "distractor")
"""What a test question invites (its ``invites`` field): the error its setting injects, where the question gives it a
chance; ``none`` where it does not (a result below :data:`LARGE` under ``drift_large``, no bag step under
``misconception``, no distractor sentence under ``distractor``)."""


@dataclass(frozen=True)
class Setting:
    """One dial of the test bed: ``kind`` (one of :data:`KINDS`) and its ``rate`` (0 for ``slips``)."""

    kind: str
    rate: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown failure-mode setting {self.kind!r}; expected one of {KINDS}")
        if self.kind == "slips" and self.rate != 0:
            raise ValueError("the setting slips takes no rate (its errors are the model's own)")
        if self.kind != "slips" and not 0 < self.rate <= 1:
            raise ValueError(f"the setting {self.kind} needs a rate in (0, 1], e.g. {self.kind}:0.15; got {self.rate}")

    @classmethod
    def parse(cls, text: str) -> Setting:
        """``slips``, ``drift:0.15``, ...; a clear error naming the text otherwise."""
        kind, _, rate = text.strip().partition(":")
        try:
            return cls(kind, float(rate) if rate else 0.0)
        except ValueError as error:
            raise ValueError(f"failure-mode setting {text!r}: {error}") from None

    @property
    def name(self) -> str:
        return self.kind if self.kind == "slips" else f"{self.kind}:{self.rate:g}"


# -- the trace as operations ------------------------------------------------------------------------------------------

_LINES = {
    "add": re.compile(r"(?P<p>\w+) finds (?P<b>\d+) more: \d+ \+ \d+ = \d+\."),
    "take": re.compile(r"(?P<p>\w+) gives away (?P<b>\d+): \d+ - \d+ = \d+\."),
    "groups": re.compile(r"(?P<p>\w+) buys (?P<b>\d+) bags of (?P<c>\d+): .*"),
    "times": re.compile(r"It grows (?P<b>\d+) times: .*"),
    "share": re.compile(r"(?P<p>\w+) keeps one of (?P<b>\d+) shares: .*"),
}


@dataclass(frozen=True)
class Operation:
    kind: str
    b: int
    c: int = 0


def operations(problem: Problem) -> tuple[str, list[Operation]]:
    """(the pronoun, the operations) of ``problem``'s trace, read back from its lines."""
    pronoun, found = "It", []
    for line in problem.trace.split("\n")[1:-1]:
        kind, match = next((kind, m) for kind, pattern in _LINES.items() if (m := pattern.fullmatch(line)))
        pronoun = match.groupdict().get("p") or pronoun
        found.append(Operation(kind, int(match["b"]), int(match.groupdict().get("c") or 0)))
    if pronoun == "It":  # only growth steps: the pronoun from the people table
        pronoun = next(p for name, p, _ in PEOPLE if name == problem.name)
    return pronoun, found


def _line(op: Operation, value: int, pronoun: str, bags_added: bool) -> tuple[str, int] | None:
    """The trace line of ``op`` on ``value`` and the new value; None where ``op`` cannot apply to ``value``."""
    if op.kind == "add":
        new = value + op.b
        line = f"{pronoun} finds {op.b} more: {value} + {op.b} = {new}."
    elif op.kind == "take":
        if op.b >= value:
            return None
        new = value - op.b
        line = f"{pronoun} gives away {op.b}: {value} - {op.b} = {new}."
    elif op.kind == "groups":
        symbol, bag_total = ("+", op.b + op.c) if bags_added else ("*", op.b * op.c)
        new = value + bag_total
        line = (
            f"{pronoun} buys {op.b} bags of {op.c}: {op.b} {symbol} {op.c} = {bag_total}, "
            f"and {value} + {bag_total} = {new}."
        )
    elif op.kind == "times":
        new = value * op.b
        line = f"It grows {op.b} times: {value} * {op.b} = {new}."
    else:
        if value % op.b or value // op.b < 2:
            return None
        new = value // op.b
        line = f"{pronoun} keeps one of {op.b} shares: {value} / {op.b} = {new}."
    return (line, new) if new <= MAX_VALUE else None


def _worked(problem: Problem, ops: list[Operation], pronoun: str, bags_added: bool = False) -> Problem | None:
    """``problem`` with its trace and answer worked again over ``ops``; None where a step cannot apply."""
    start = problem.trace.split("\n", 1)[0]
    value = int(re.search(r"\d+", start).group())
    lines = [start]
    for op in ops:
        worked = _line(op, value, pronoun, bags_added)
        if worked is None:
            return None
        line, value = worked
        lines.append(line)
    lines.append(f"So {problem.name} has {value} {problem.items}.")
    return dataclasses.replace(problem, trace="\n".join(lines), answer=value)


# -- distractor sentences (S3) ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Distracted:
    """A problem with ``len(at)`` distractor sentences: one after the ``at[i]``-th operation (0: before the first),
    each another person finding ``amounts[i]`` more of the protagonist's items."""

    problem: Problem
    pronoun: str
    ops: list[Operation]
    at: tuple[int, ...]
    amounts: tuple[int, ...]

    def followed(self, which: list[bool]) -> Problem | None:
        """The problem as a trace that applies the distractors marked in ``which`` works it (None: a step fails)."""
        ops = list(self.ops)
        for position, amount, follow in sorted(zip(self.at, self.amounts, which), reverse=True):
            if follow:
                ops.insert(position, Operation("add", amount))
        return _worked(self.problem, ops, self.pronoun)


def _distracted(rng: random.Random, difficulty: Difficulty, n_distractors: int) -> _Distracted:
    """A problem of ``difficulty`` (its own distractors replaced) with ``n_distractors`` operation distractors."""
    while True:
        base = make_problem(rng, dataclasses.replace(difficulty, distractors=0))
        pronoun, ops = operations(base)
        others = [name for name, _, _ in PEOPLE if name != base.name]
        at = tuple(sorted(rng.randint(0, len(ops)) for _ in range(n_distractors)))
        amounts = tuple(rng.randint(2, 10**difficulty.max_digits - 1) for _ in range(n_distractors))
        sentences = re.split(r"(?<=\.) ", base.question.rsplit(" How many", 1)[0])
        for index in sorted(range(n_distractors), key=lambda i: -at[i]):
            other = rng.choice(others)
            sentences.insert(1 + at[index], f"{other} finds {amounts[index]} more {base.items}.")
        question = " ".join(sentences) + f" How many {base.items} does {base.name} have now?"
        distracted = _Distracted(dataclasses.replace(base, question=question), pronoun, ops, at, amounts)
        # every following of the distractors must be workable, so following is a choice of the trace, not of luck
        if all(distracted.followed(list(mask)) for mask in itertools.product((False, True), repeat=n_distractors)):
            return distracted


# -- training replies -------------------------------------------------------------------------------------------------


def _answer_section(problem: Problem, value: int, rng: random.Random) -> str:
    """The reply with the answer section carrying ``value``, in the shipped model's mix of forms (one draw)."""
    summary = rng.random() < SUMMARY_SHARE
    return dataclasses.replace(problem, answer=value).reply(lead=rng.choice(ANSWER_LEADS), summary=summary)


def _drifted(value: int, rng: random.Random) -> int:
    offset = rng.choice(DRIFT_OFFSETS)
    return value + offset if value + offset >= 0 else value - offset


def training_pairs(setting: Setting, seed: int, rng: random.Random) -> Iterator[tuple[str, str]]:
    """An endless stream of (question, reply) training pairs of ``setting``: problems drawn from ``seed``, each
    reply's choices (answer-section form, injected errors) from ``rng``; never a held-out question.

    ``slips`` is exactly the shipped tiny reasoner's stream (one ``rng.random()`` for the summary line, one
    ``rng.choice`` for the lead, per problem; ``scripts/train_tiny_reasoner.py`` shares ``rng`` with its batching)."""
    if setting.kind == "distractor":
        stream = _distractor_training(setting.rate, seed)
    else:
        stream = ((problem, problem) for problem in training_problems(seed))
    for problem, worked in stream:
        if setting.kind == "misconception":
            pronoun, ops = operations(problem)
            if any(op.kind == "groups" for op in ops) and rng.random() < setting.rate:
                worked = _worked(problem, ops, pronoun, bags_added=True) or problem
        value = worked.answer
        drifts = setting.kind == "drift" or (setting.kind == "drift_large" and value >= LARGE)
        if drifts and rng.random() < setting.rate:
            value = _drifted(value, rng)
        yield problem.question, _answer_section(worked, value, rng)


def _distractor_training(rate: float, seed: int) -> Iterator[tuple[Problem, Problem]]:
    """(the problem as asked, the problem as its trace works it): 0-2 distractors, each followed w.p. ``rate``."""
    rng = random.Random(seed)
    while True:
        distracted = _distracted(rng, random_difficulty(rng), rng.randint(0, 2))
        if is_held_out(distracted.problem.question):
            continue
        follow = [rng.random() < rate for _ in distracted.at]
        yield distracted.problem, distracted.followed(follow)


# -- held-out test questions ------------------------------------------------------------------------------------------


def held_out_rows(kind: str, n: int, seed: int) -> list[dict[str, object]]:
    """``n`` held-out test questions of the setting ``kind`` (MATH-500 schema plus ``steps``, ``digits``,
    ``distractors``, ``invites``), every setting of the difficulty dial in turn; the same on every call. A kind's
    questions, and what they invite, do not depend on its rate: every rate of a kind is tested on one set."""
    rng, rows, seen = random.Random(seed), [], set()
    dial = [
        (steps, digits, distractors)
        for steps, digits, distractors in itertools.product(
            range(1, 6), (1, 2), range(4 if kind == "distractor" else 3)
        )
    ]
    for steps, digits, distractors in itertools.islice(itertools.cycle(dial), 100 * n):
        if len(rows) == n:
            break
        difficulty = Difficulty(steps, digits, 0 if kind == "distractor" else distractors)
        if kind == "distractor":
            problem = _distracted(rng, difficulty, distractors).problem
        else:
            problem = make_problem(rng, difficulty)
        if not is_held_out(problem.question) or problem.question in seen:
            continue
        seen.add(problem.question)
        rows.append(_test_row(kind, problem, distractors, len(rows)))
    return rows


PREREGISTERED_SETTINGS = (
    "slips",
    "drift:0.15",
    "drift:0.05",
    "drift_large:0.3",
    "misconception:0.2",
    "misconception:0.5",
    "misconception:0.9",
    "distractor:0.3",
)
"""The dial values of docs/guide/failure-modes.md#rules, fixed before any test-bed model was trained."""


def preregistered_seeds(setting: Setting) -> tuple[int, ...]:
    """The training seeds of docs/guide/failure-modes.md#rules: 1, 2, 3; for ``slips`` the shipped model and 1, 2."""
    return (TRAINING_SEED, 1, 2) if setting.kind == "slips" else (1, 2, 3)


TEST_SEED, N_TEST = 2027, 200
"""The test sets' seed and size (docs/guide/failure-modes.md#rules), fixed before any test-bed model was trained."""


def data_file_of(kind: str) -> Path:
    """The data file of the task ``trac_failure_<kind>``."""
    return DATA_DIR / f"trac_failure_{kind}.jsonl"


def invited_error(kind: str, problem: Problem, n_distractors: int) -> str:
    """The error (one of :data:`ERROR_TYPES`) that ``problem`` gives a process of setting ``kind`` a chance to make."""
    if kind == "drift" or (kind == "drift_large" and problem.answer >= LARGE):
        return "drift"
    if kind == "misconception" and any(op.kind == "groups" for op in operations(problem)[1]):
        return "misconception"
    if kind == "distractor" and n_distractors:
        return "distractor"
    return "none"


def _test_row(kind: str, problem: Problem, n_distractors: int, index: int) -> dict[str, object]:
    return {
        "problem": problem.question,
        "solution": f"{problem.trace}\nThe answer is $\\boxed{{{problem.answer}}}$.",
        "answer": str(problem.answer),
        "subject": "Arithmetic",
        "level": problem.difficulty.steps,
        "digits": problem.difficulty.max_digits,
        "distractors": n_distractors,
        "invites": invited_error(kind, problem, n_distractors),
        "unique_id": f"failure/{kind}/{index:03d}.json",
    }


ERRORS_MADE = ("drift", "slip", "rule", "slip+rule", "format")
"""What went wrong in a wrong reply (:func:`error_made`), in the order the test bed's tables list them."""


def error_made(row: dict[str, object], reply: str) -> str:
    """What went wrong in ``reply`` to the test question ``row`` (one of :data:`ERRORS_MADE`; ``none`` for a right
    answer): ``format`` (not the model's format), ``drift`` (the box is not the value the trace reached), ``rule`` (the
    trace's steps are not the question's: its :func:`~trac_tasks.data.arithmetic_problems.trace_plan` differs from the
    worked solution's — the learned bag rule, a followed distractor, a miscopied number — and every operation is
    computed right), ``slip+rule`` (that, and an operation miscomputed) or ``slip`` (the question's steps, a value
    gone wrong on the way)."""
    verdict = grade(int(str(row["answer"])), reply)
    if verdict.correct:
        return "none"
    if not verdict.well_formed:
        return "format"
    if not verdict.answer_from_trace:
        return "drift"
    other_steps = verdict.plan != trace_plan(str(row["solution"]).rsplit("\n", 1)[0])
    if other_steps:
        return "rule" if verdict.first_slip is None else "slip+rule"
    return "slip"


if __name__ == "__main__":
    from trac_tasks.data.demo_data import render

    for kind in KINDS:
        data_file_of(kind).write_text(render(held_out_rows(kind, N_TEST, TEST_SEED)), encoding="utf-8")
        print(data_file_of(kind))
