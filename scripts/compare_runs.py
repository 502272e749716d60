"""Compare two lm-eval output folders of the same TrAC job (e.g. the demo before and after a refactoring, same seed):
results (every metric value), samples files and TrAC records must be identical except wall-clock fields
(timestamps, paths, durations, the seconds attributed to responses and probes, the arrival times of their outputs).

    python scripts/compare_runs.py BEFORE_DIR AFTER_DIR

Prints one line per compared part and exits 1 when any differs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from trac_metrics.reporting.wall_clock import WALL_PREFIX

WALL_CLOCK_FIELDS = {"generation_seconds", "p_true_seconds", "seconds"}
"""Record fields that hold measured wall time (different in every run)."""


def _is_wall_clock(key: str) -> bool:
    """Measured wall time, or an output's arrival time (``wall_*``, docs/method.md#measured-latency)."""
    return key in WALL_CLOCK_FIELDS or key.startswith(WALL_PREFIX)


def _without_wall_clock(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_wall_clock(item) for key, item in value.items() if not _is_wall_clock(key)}
    if isinstance(value, list):
        return [_without_wall_clock(item) for item in value]
    return value


def _jsonl(paths: list[Path]) -> list[Any]:
    return [json.loads(line) for path in sorted(paths) for line in path.read_text(encoding="utf-8").splitlines()]


def _parts(folder: Path) -> dict[str, Any]:
    (results,) = folder.rglob("results_*.json")
    return {
        "results": json.loads(results.read_text(encoding="utf-8"))["results"],
        "samples": _jsonl(list(folder.rglob("samples_*.jsonl"))),
        "records": _without_wall_clock(_jsonl(list(folder.rglob("trac_records/*.jsonl")))),
    }


def main(argv: list[str]) -> int:
    before, after = (_parts(Path(folder)) for folder in argv)
    differing = 0
    for part in before:
        same = before[part] == after[part]
        differing += not same
        size = len(before[part])
        print(f"{part}: {'identical' if same else 'DIFFERENT'} ({size} {'tasks' if part == 'results' else 'lines'})")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
