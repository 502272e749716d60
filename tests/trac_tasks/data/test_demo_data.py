"""The bundled held-out question sets (trac_tasks.data.demo_data): the committed files are what the generator
writes, in MATH-500's schema, never a training question, and the demo is the first 100 of the evaluation set."""

from __future__ import annotations

from trac_tasks.data.arithmetic_problems import is_held_out
from trac_tasks.data.dataset_loaders import local_jsonl
from trac_tasks.data.demo_data import ARITH_FILE, DEMO_FILE, N_ARITH, N_DEMO, arith_rows, demo_rows, render

MATH500_FIELDS = {"problem", "solution", "answer", "subject", "level", "unique_id"}


def test_bundled_files_are_exactly_what_the_generator_writes():
    assert ARITH_FILE.read_text(encoding="utf-8") == render(arith_rows())
    assert DEMO_FILE.read_text(encoding="utf-8") == render(demo_rows())
    assert demo_rows() == arith_rows()[:N_DEMO]
    for name, n_rows in (("trac_arith.jsonl", N_ARITH), ("trac_demo.jsonl", N_DEMO)):
        rows = local_jsonl(data_file=name)["test"]
        assert len(rows) == n_rows and MATH500_FIELDS | {"digits", "distractors"} == set(rows.column_names)


def test_every_question_is_held_out_distinct_and_mixes_the_dial():
    rows = arith_rows()
    assert all(is_held_out(row["problem"]) for row in rows)
    assert len({row["problem"] for row in rows}) == len(rows)
    demo = demo_rows()
    assert {row["level"] for row in demo} == {1, 2, 3, 4, 5}
    assert {row["digits"] for row in demo} == {1, 2} and {row["distractors"] for row in demo} == {0, 1, 2}
    for row in rows:  # the worked solution ends in the reference
        assert row["solution"].endswith(f"\\boxed{{{row['answer']}}}$.")
