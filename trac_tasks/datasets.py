"""Local dataset loading for task YAMLs (``custom_dataset: !function trac_tasks.datasets.local_jsonl``).

Lets a benchmark run on a JSON Lines file instead of the Hugging Face hub: the bundled offline demo, a user's own
data, or test fixtures written in a hub dataset's exact schema.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "data"


def resolve_data_file(data_file: str) -> Path:
    """An absolute path, a path relative to the working directory, or a file name in ``trac_tasks/data``."""
    for candidate in (Path(data_file), DATA_DIR / data_file):
        if candidate.is_file():
            return candidate.resolve()
    raise FileNotFoundError(
        f"dataset file {data_file!r} not found (looked in the working directory and in {DATA_DIR})"
    )


def local_jsonl(data_file: str | None = None, split: str = "test", **_: Any) -> dict[str, Any]:
    """``{split: datasets.Dataset}`` from a JSON Lines file, one document per line.

    lm-eval passes the task's ``metadata`` and ``dataset_kwargs`` as keyword arguments; only ``data_file`` and
    ``split`` are used here.
    """
    import datasets

    if not data_file:
        raise ValueError("custom_dataset local_jsonl needs dataset_kwargs.data_file")
    path = resolve_data_file(data_file)
    rows = []
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}:{line_number}: not valid JSON ({error})") from error
    if not rows:
        raise ValueError(f"dataset file {path} has no rows")
    return {split: datasets.Dataset.from_list(rows)}
