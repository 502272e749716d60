"""Time ``trac report`` end to end on seeded synthetic runs: record files → pairs → evaluations → bootstrap → files.

Defaults match the paper's headline setting: 30 (model, dataset) pairs (6 models × 5 tasks) × 500 questions × K = 8
responses, 2,000 resamples. The records are written first (not timed) by the tests' seeded generator; then each
stage of the report is timed (wall-clock and this process's CPU seconds), with the peak memory of the process.
The last line printed is one JSON object.

    python benchmarks/bench_report.py [--models 6] [--tasks 5] [--questions 500] [--k 8] [--resamples 2000] [--jobs N]

``--many-small-pairs`` is the other shape: 2,000 tiny pairs (40 models × 50 tasks × 3 questions × K = 4, 200
resamples, one process), where the cost per pair rather than per question shows; any size option given with it
overrides its value (e.g. ``--models 10 --tasks 10`` for 100 pairs).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support")]

from run_factory import pair_specs, write_runs  # noqa: E402

from trac_metrics.reporting.report_data import build_report_data  # noqa: E402
from trac_metrics.reporting.report_writer import write_report  # noqa: E402
from trac_metrics.reporting.runs import load_pairs  # noqa: E402


def timed(stages: dict[str, dict[str, float]], name: str, work: Callable[[], Any]) -> Any:
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    stages[name] = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}
    return result


HEADLINE = {"models": 6, "tasks": 5, "questions": 500, "k": 8, "resamples": 2000, "jobs": None}
"""The paper's headline setting (the default shape)."""
MANY_SMALL_PAIRS = {"models": 40, "tasks": 50, "questions": 3, "k": 4, "resamples": 200, "jobs": 1}
"""``--many-small-pairs``: 2,000 pairs of 3 questions, where per-pair costs dominate."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--many-small-pairs", action="store_true", help="2,000 tiny pairs (see the module docstring)")
    for name in ("models", "tasks", "questions", "k", "resamples"):
        parser.add_argument(f"--{name}", type=int)
    parser.add_argument("--jobs", type=int, help="processes (default: every CPU; 1 with --many-small-pairs)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for name, value in (MANY_SMALL_PAIRS if args.many_small_pairs else HEADLINE).items():
        if getattr(args, name) is None:
            setattr(args, name, value)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        specs = pair_specs(
            [f"model-{i}" for i in range(args.models)],
            [f"task-{j}" for j in range(args.tasks)],
            args.questions,
            args.seed,
        )
        folders = write_runs(root / "runs", specs, k=args.k, seed=args.seed)
        record_bytes = sum(path.stat().st_size for path in (root / "runs").rglob("*.jsonl"))
        stages: dict[str, dict[str, float]] = {}
        pairs = timed(stages, "load_records", lambda: load_pairs(folders, jobs=args.jobs))
        data = timed(
            stages,
            "evaluate_and_bootstrap",
            lambda: build_report_data(pairs, n_resamples=args.resamples, seed=args.seed, jobs=args.jobs),
        )
        timed(stages, "tables_and_plots", lambda: write_report(data, root / "report"))
    total = {key: sum(stage[key] for stage in stages.values()) for key in ("wall_s", "cpu_s")}
    result = {
        "pairs": len(specs),
        "questions_per_pair": args.questions,
        "k": args.k,
        "resamples": args.resamples,
        "jobs": args.jobs,
        "responses": len(specs) * args.questions * args.k,
        "record_megabytes": record_bytes / 1e6,
        "stages": stages,
        "total_wall_s": total["wall_s"],
        "total_cpu_s": total["cpu_s"],
        "peak_rss_megabytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "cpu_count": os.cpu_count(),
    }
    print(f"{'stage':<26}{'wall s':>10}{'cpu s':>10}")
    for name, stage in stages.items():
        print(f"{name:<26}{stage['wall_s']:>10.2f}{stage['cpu_s']:>10.2f}")
    print(f"{'total':<26}{total['wall_s']:>10.2f}{total['cpu_s']:>10.2f}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
