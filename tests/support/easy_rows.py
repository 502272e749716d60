"""The easy arithmetic rows of the tests that run the pretrained SmolLM2 model (MATH-500 schema): one-step sums it
often gets right and short word problems it usually does not, so its runs hold both correct and wrong answers.
(The bundled demo set is the tiny reasoner's, harder than SmolLM2 can answer.) Identical on every call."""

from __future__ import annotations

import random

from trac_tasks.data.demo_data import render

__all__ = ["easy_rows", "render"]
N_ROWS, SEED = 40, 2026


def _problem(rng: random.Random, index: int) -> dict[str, object]:
    a, b, c = rng.randint(2, 9), rng.randint(2, 9), rng.randint(2, 6)
    if index % 2 == 0:
        problem, answer, level = f"What is {a} + {b}?", a + b, 1
    elif index % 4 == 1:
        problem = f"Tom has {a} boxes with {b} apples in each box. He eats {c} apples. How many apples are left?"
        answer, level = a * b - c, 2
    else:
        problem = (
            f"A shop sells pens at {a} dollars each and notebooks at {b} dollars each. "
            f"Ana buys {c} pens and {c + 1} notebooks. How many dollars does she spend?"
        )
        answer, level = a * c + b * (c + 1), 3
    return {
        "problem": problem,
        "solution": f"The answer is $\\boxed{{{answer}}}$.",
        "answer": str(answer),
        "subject": "Arithmetic",
        "level": level,
        "unique_id": f"demo/{index:03d}.json",
    }


def easy_rows() -> list[dict[str, object]]:
    rng = random.Random(SEED)
    return [_problem(rng, index) for index in range(N_ROWS)]
