"""The bundled demo set (trac_tasks.data.demo_data): the committed file is what the generator writes."""

from __future__ import annotations

from trac_tasks.data.dataset_loaders import local_jsonl
from trac_tasks.data.demo_data import DEMO_FILE, demo_rows, render


def test_bundled_demo_file_is_exactly_what_the_generator_writes():
    assert DEMO_FILE.read_text(encoding="utf-8") == render(demo_rows())
    rows = local_jsonl(data_file="trac_demo.jsonl")["test"]
    assert len(rows) == 40 and set(rows.column_names) == {
        "problem",
        "solution",
        "answer",
        "subject",
        "level",
        "unique_id",
    }
