"""Generator of the bundled offline demo set ``trac_tasks/data/trac_demo.jsonl`` (MATH-500 schema).

Deterministic: ``python -m trac_tasks.data.demo_data`` rewrites the file byte for byte (a test checks it). The mix of
one-step sums (a tiny model often gets them right) and multi-step word problems (it usually does not) gives both
correct and incorrect answers, which cross-fitting needs.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from trac_tasks.data.dataset_loaders import DATA_DIR

DEMO_FILE = DATA_DIR / "trac_demo.jsonl"
N_PROBLEMS = 40
SEED = 2026


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


def demo_rows() -> list[dict[str, object]]:
    """The demo problems, identical on every call."""
    rng = random.Random(SEED)
    return [_problem(rng, index) for index in range(N_PROBLEMS)]


def render(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


if __name__ == "__main__":
    Path(DEMO_FILE).write_text(render(demo_rows()), encoding="utf-8")
    print(DEMO_FILE)
