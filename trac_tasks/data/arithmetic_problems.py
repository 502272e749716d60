"""Seeded generator of multi-step arithmetic word problems with worked reasoning traces: the training data of the
tiny reasoner (``scripts/train_tiny_reasoner.py``) and its held-out questions (the demo set and the evaluation set).

A problem follows one person's count of one kind of item through ``steps`` operations (add, take away, add groups,
multiply, share out), with ``distractors`` sentences about other people that the solution must ignore; operands have
at most ``max_digits`` digits. Its trace works one operation a line, in the format of a thinking model::

    <think>
    Tom starts with 23 apples.
    He finds 5 more: 23 + 5 = 28.
    ...
    So Tom has 41 apples.
    </think>

    Tom has 41 apples in the end.
    The final answer is \\boxed{41}.

The reply after ``</think>`` takes one of the forms of :func:`Problem.reply` (the training mix draws them: a one-line
summary or none, then one of :data:`ANSWER_LEADS`), so TrAC's probe cue right after ``</think>`` is one of the model's
own forms (docs/method.md#probe-prompt).

Held out by construction: a problem whose text hashes into :data:`HELD_OUT_BUCKETS` of :data:`BUCKETS` is never
training data; evaluation sets are drawn only from those buckets. Everything is a function of the seed (Python's
``random.Random``, sha256), identical on every machine. The model card (``trac_tasks/data/tiny_reasoner/README.md``)
describes the data.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass

INSTRUCTION = "Solve the following problem step by step. End your response with the final answer in \\boxed{}.\n\n"
BUCKETS = 100
HELD_OUT_BUCKETS = 10  # buckets 0-9 of 100: 10 % of all problem texts are never trained on
MAX_VALUE = 9999  # no intermediate count above this
ANSWER_LEADS = ("The final answer is", "The answer is")
"""The wordings of the reply's box line; the first is TrAC's default probe cue (without its box), so a probe placed
right after ``</think>`` continues one of the model's own forms."""
SUMMARY_SHARE = 0.5
"""The share of training replies whose answer section restates the result in one line before the box line."""

PEOPLE = (
    ("Tom", "He", "his"),
    ("Ana", "She", "her"),
    ("Ben", "He", "his"),
    ("Mia", "She", "her"),
    ("Sam", "He", "his"),
    ("Eva", "She", "her"),
    ("Leo", "He", "his"),
    ("Zoe", "She", "her"),
    ("Max", "He", "his"),
    ("Ivy", "She", "her"),
)
_ITEMS = ("apples", "pens", "cards", "books", "coins", "stamps", "marbles", "shells", "stickers", "eggs")


@dataclass(frozen=True)
class Difficulty:
    """The dial: operations per problem, digits per operand, irrelevant sentences."""

    steps: int
    max_digits: int
    distractors: int

    def __post_init__(self) -> None:
        if not (1 <= self.steps <= 8 and 1 <= self.max_digits <= 3 and 0 <= self.distractors <= 3):
            raise ValueError(f"difficulty out of range (steps 1-8, max_digits 1-3, distractors 0-3): {self}")


@dataclass(frozen=True)
class Problem:
    """One generated problem: its text, worked trace (thinking section and answer line) and answer."""

    question: str
    trace: str
    answer: int
    difficulty: Difficulty
    name: str
    items: str

    def reply(self, lead: str = ANSWER_LEADS[0], summary: bool = False) -> str:
        """The assistant's whole reply: the thinking section, then the answer section: with ``summary`` a one-line
        restatement of the result ("Tom has 41 apples in the end."), then ``lead`` and the boxed answer."""
        if lead not in ANSWER_LEADS:
            raise ValueError(f"lead must be one of {ANSWER_LEADS}, got {lead!r}")
        restated = f"{self.name} has {self.answer} {self.items} in the end.\n" if summary else ""
        return f"<think>\n{self.trace}\n</think>\n\n{restated}{lead} \\boxed{{{self.answer}}}."

    @property
    def response(self) -> str:
        """The reply in its plainest form: no summary, the box line in the probe cue's wording."""
        return self.reply()

    @property
    def held_out(self) -> bool:
        return is_held_out(self.question)


def is_held_out(question: str) -> bool:
    """Whether ``question`` belongs to the held-out buckets (never trained on)."""
    digest = hashlib.sha256(question.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % BUCKETS < HELD_OUT_BUCKETS


def _operand(rng: random.Random, max_digits: int, low: int = 2) -> int:
    return rng.randint(low, max(low, 10**max_digits - 1))


def _step(
    rng: random.Random, value: int, digits: int, name: str, pronoun: str, items: str, other: str
) -> tuple[str, str, int]:
    """One operation on ``value``: (sentence of the problem, naming the person, line of the trace, new value)."""
    while True:
        kind = rng.choice(("add", "add", "take", "take", "groups", "times", "share"))
        if kind == "add":
            b = _operand(rng, digits)
            new = value + b
            sentence, line = f"{name} finds {b} more {items}.", f"{pronoun} finds {b} more: {value} + {b} = {new}."
        elif kind == "take":
            if value < 3:
                continue
            b = rng.randint(1, min(value - 1, 10**digits - 1))
            new = value - b
            sentence = f"{name} gives {b} {items} to {other}."
            line = f"{pronoun} gives away {b}: {value} - {b} = {new}."
        elif kind == "groups":
            b, c = rng.randint(2, 9), _operand(rng, min(digits, 2))
            product = b * c
            new = value + product
            sentence = f"{name} buys {b} bags with {c} {items} in each bag."
            line = f"{pronoun} buys {b} bags of {c}: {b} * {c} = {product}, and {value} + {product} = {new}."
        elif kind == "times":
            b = rng.randint(2, 4)
            new = value * b
            sentence = f"Then the number of {items} {name} has grows {b} times."
            line = f"It grows {b} times: {value} * {b} = {new}."
        else:
            divisors = [d for d in range(2, 10) if value % d == 0 and value // d >= 2]
            if not divisors:
                continue
            b = rng.choice(divisors)
            new = value // b
            sentence = f"{name} shares the {items} equally with {b - 1} friends and keeps one share."
            line = f"{pronoun} keeps one of {b} shares: {value} / {b} = {new}."
        if new <= MAX_VALUE:
            return sentence, line, new


def make_problem(rng: random.Random, difficulty: Difficulty) -> Problem:
    """One problem of ``difficulty`` drawn from ``rng``."""
    (name, pronoun, _), *others = rng.sample(PEOPLE, 1 + max(1, difficulty.distractors))
    items = rng.choice(_ITEMS)
    value = _operand(rng, difficulty.max_digits)
    sentences, lines = [f"{name} has {value} {items}."], [f"{name} starts with {value} {items}."]
    for _ in range(difficulty.steps):
        sentence, line, value = _step(rng, value, difficulty.max_digits, name, pronoun, items, others[0][0])
        sentences.append(sentence)
        lines.append(line)
    for index in range(difficulty.distractors):
        other_name = others[index % len(others)][0]
        other_items = rng.choice([item for item in _ITEMS if item != items])
        sentences.insert(rng.randint(1, len(sentences)), f"{other_name} has {_operand(rng, 2)} {other_items}.")
    question = " ".join(sentences) + f" How many {items} does {name} have now?"
    lines.append(f"So {name} has {value} {items}.")
    return Problem(question, "\n".join(lines), value, difficulty, name, items)


def random_difficulty(rng: random.Random) -> Difficulty:
    """The training mix: 1-5 operations, operands of one digit (60 %) or two (40 %), 0-2 distractors."""
    return Difficulty(rng.randint(1, 5), 1 if rng.random() < 0.6 else 2, rng.randint(0, 2))


def training_problems(seed: int) -> Iterator[Problem]:
    """An endless stream of training problems (never a held-out one)."""
    rng = random.Random(seed)
    while True:
        problem = make_problem(rng, random_difficulty(rng))
        if not problem.held_out:
            yield problem


def held_out_problems(seed: int, difficulties: list[Difficulty]) -> list[Problem]:
    """One held-out problem per entry of ``difficulties``, distinct questions, the same on every call."""
    rng, seen, problems = random.Random(seed), set(), []
    for difficulty in difficulties:
        while True:
            problem = make_problem(rng, difficulty)
            if problem.held_out and problem.question not in seen:
                seen.add(problem.question)
                problems.append(problem)
                break
    return problems


_REPLY = re.compile(
    r"<think>\n(?P<trace>.*?)\n</think>\n\n(?:(?P<summary>[^\n]*)\n)?(?:"
    + "|".join(map(re.escape, ANSWER_LEADS))
    + r") \\boxed\{(?P<answer>-?\d+)\}\.",
    re.DOTALL,
)
_OPERATION = re.compile(r"(-?\d+) ([-+*/]) (-?\d+) = (-?\d+)")


@dataclass(frozen=True)
class Grade:
    """What a reply to a problem did: its format, its answer, and where its trace first went wrong."""

    well_formed: bool  # <think> trace </think>, an optional summary line, then one of ANSWER_LEADS and \boxed{N}.
    answer: int | None
    correct: bool
    first_slip: int | None  # 1-based trace line of the first wrong operation result; None when every one is right
    answer_from_trace: bool  # the boxed answer is the value the trace's last line states
    plan: tuple[tuple[str, tuple[str, ...]], ...] = ()  # trace_plan of the reply's trace; () for a malformed reply


def trace_plan(trace: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """What each step of ``trace`` does, whatever its numbers come to: per line with a colon, the words before it
    (``She buys 8 bags of 84``) and the line's operators (``*``, ``+``). A wrong rule or a followed distractor changes
    the plan; a miscomputed result does not (docs/guide/failure-modes.md#measured, the error each reply made)."""
    return tuple(
        (line.split(":", 1)[0], tuple(op for _, op, _, _ in _OPERATION.findall(line)))
        for line in trace.split("\n")
        if ":" in line
    )


def grade(reference: int, reply: str) -> Grade:
    """Grade ``reply`` (the text after the generation prompt, special tokens kept) against the answer ``reference``."""
    match = _REPLY.match(reply)
    if match is None:
        return Grade(False, None, False, None, False)
    answer, lines = int(match["answer"]), match["trace"].split("\n")
    first_slip = next(
        (
            number
            for number, line in enumerate(lines, start=1)
            for a, op, b, c in _OPERATION.findall(line)
            if not _holds(int(a), op, int(b), int(c))
        ),
        None,
    )
    stated = re.findall(r"-?\d+", lines[-1])
    from_trace = bool(stated) and int(stated[0]) == answer
    return Grade(True, answer, answer == reference, first_slip, from_trace, trace_plan(match["trace"]))


def _holds(a: int, op: str, b: int, c: int) -> bool:
    if op == "/":
        return b != 0 and a == b * c
    return {"+": a + b, "-": a - b, "*": a * b}[op] == c
