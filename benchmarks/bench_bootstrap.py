"""Time the hierarchical bootstrap (docs/method.md#hierarchical-bootstrap) of AUROC and AURC on seeded synthetic data.

Defaults match the paper's headline setting: 30 (model, dataset) pairs × 500 questions, 2,000 resamples,
13 methods. Prints a small table and, last, one JSON line with the timings: wall-clock seconds and CPU
seconds of this process (the latter is the one to compare on a machine shared with other jobs).

    python3 benchmarks/bench_bootstrap.py [--pairs 30] [--questions 500] [--resamples 2000] [--methods 13] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from trac_metrics import selective  # noqa: E402
from trac_metrics.selective.bootstrap import PairData, hierarchical_bootstrap  # noqa: E402


def synthetic_pairs(n_pairs: int, n_questions: int, n_methods: int, responses: int, seed: int) -> list[PairData]:
    """Pairs with accuracy 40-85%; method j has separation 0.1·j; every third method is coarse (many ties)."""
    rng = np.random.default_rng(seed)
    pairs = []
    for index in range(n_pairs):
        groups = np.repeat(np.arange(n_questions), responses)
        labels = rng.random(groups.size) < rng.uniform(0.4, 0.85)
        scores = {}
        for j in range(n_methods):
            raw = 0.1 * j * labels + rng.normal(0.0, 1.0, groups.size)
            scores[f"method{j:02d}"] = np.round(raw, 1) if j % 3 == 0 else raw
        pairs.append(PairData(f"pair{index:02d}", labels, groups, scores))
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--responses", type=int, default=1, help="responses per question")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--methods", type=int, default=13)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    pairs = synthetic_pairs(args.pairs, args.questions, args.methods, args.responses, args.seed)
    methods = list(pairs[0].scores)
    wall, cpu = {}, {}
    print(
        f"{args.pairs} pairs x {args.questions} questions x {args.responses} responses, "
        f"{args.resamples} resamples, {args.methods} methods"
    )
    print(f"{'metric':<8} {'wall s':>7} {'CPU s':>7} {'best macro':>11} {'95% CI':>17}")
    for metric in (selective.auroc, selective.aurc):
        name = metric.__name__
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        result = hierarchical_bootstrap(pairs, metric, methods, n_resamples=args.resamples, seed=args.seed)
        wall[name] = round(time.perf_counter() - wall_start, 3)
        cpu[name] = round(time.process_time() - cpu_start, 3)
        best = methods[-1]
        lo, hi = result.ci(best)
        print(f"{name:<8} {wall[name]:>7.2f} {cpu[name]:>7.2f} {result.point[best]:>11.4f} [{lo:.4f}, {hi:.4f}]")
    print(json.dumps({"benchmark": "hierarchical_bootstrap", **vars(args), "wall_seconds": wall, "cpu_seconds": cpu}))


if __name__ == "__main__":
    main()
