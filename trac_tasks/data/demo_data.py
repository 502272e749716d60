"""Generator of the bundled held-out question sets of the tiny reasoner (MATH-500 schema):
``trac_tasks/data/trac_arith.jsonl`` (500 questions, the ``trac_arith`` task) and ``trac_tasks/data/trac_demo.jsonl``
(its first 100, the ``trac_demo`` task that ``scripts/demo.sh`` runs).

The questions come from :mod:`trac_tasks.data.arithmetic_problems`, drawn only from its held-out buckets (the tiny
reasoner never trained on them), with every setting of the difficulty dial in turn (1-5 operations, operands of 1-2
digits, 0-2 distractor sentences) in a seeded order, so that any prefix of the set mixes easy and hard questions.
Deterministic: ``python -m trac_tasks.data.demo_data`` rewrites both files byte for byte (a test checks it).
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

from trac_tasks.data.arithmetic_problems import Difficulty, Problem, held_out_problems
from trac_tasks.data.dataset_loaders import DATA_DIR

ARITH_FILE = DATA_DIR / "trac_arith.jsonl"
DEMO_FILE = DATA_DIR / "trac_demo.jsonl"
N_ARITH, N_DEMO = 500, 100
SEED = 2026
DIAL = [
    Difficulty(steps, digits, distractors)
    for steps, digits, distractors in itertools.product(range(1, 6), range(1, 3), range(3))
]


def _row(problem: Problem, index: int) -> dict[str, object]:
    difficulty = problem.difficulty
    return {
        "problem": problem.question,
        "solution": f"{problem.trace}\nThe answer is $\\boxed{{{problem.answer}}}$.",
        "answer": str(problem.answer),
        "subject": "Arithmetic",
        "level": difficulty.steps,
        "digits": difficulty.max_digits,
        "distractors": difficulty.distractors,
        "unique_id": f"arith/{index:03d}.json",
    }


def arith_rows() -> list[dict[str, object]]:
    """The 500 held-out questions, identical on every call."""
    rng = random.Random(SEED)
    difficulties = []
    while len(difficulties) < N_ARITH:
        round_ = list(DIAL)
        rng.shuffle(round_)
        difficulties.extend(round_)
    problems = held_out_problems(SEED, difficulties[:N_ARITH])
    return [_row(problem, index) for index, problem in enumerate(problems)]


def demo_rows() -> list[dict[str, object]]:
    """The demo's questions: the first 100 of :func:`arith_rows`."""
    return arith_rows()[:N_DEMO]


def render(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


if __name__ == "__main__":
    rows = arith_rows()
    Path(ARITH_FILE).write_text(render(rows), encoding="utf-8")
    Path(DEMO_FILE).write_text(render(rows[:N_DEMO]), encoding="utf-8")
    print(ARITH_FILE, DEMO_FILE)
