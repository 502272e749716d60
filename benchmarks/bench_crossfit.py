"""Time question-grouped cross-fitting (trac_metrics.heads.cross_fit, docs/method.md#cross-fitting-protocol) on
synthetic data.

Rows come in question groups; labels are drawn per row with a probability tied to a per-question difficulty, and
features are noisy functions of the label (about 5% of values missing, so the missingness-indicator path runs).
Prints a table (one line per repeat: time of the 5 fold splits alone, time of the whole cross_fit, which includes
those splits again, and the per-fit remainder) and, last, one JSON line with the settings and the best time.

    python3 benchmarks/bench_crossfit.py                      # 10,000 rows × 40 features, 5 seeds × 5 folds
    python3 benchmarks/bench_crossfit.py --rows 2000 --repeats 3 --blas-threads 1
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from sklearn.metrics import roc_auc_score
from threadpoolctl import threadpool_limits

from trac_metrics.heads import FOLD_SEEDS, cross_fit, fold_assignments, oof_metric


def synthetic_data(
    rows: int, features: int, group_size: int, missing_rate: float, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features (with NaN), 0/1 labels and question ids for ``rows`` responses in groups of ``group_size``."""
    rng = np.random.default_rng(seed)
    groups = np.arange(rows) // group_size
    difficulty = rng.normal(size=groups.max() + 1)[groups]
    labels = (rng.random(rows) < 1.0 / (1.0 + np.exp(difficulty))).astype(int)
    weights = rng.normal(scale=0.2, size=features)
    X = rng.normal(size=(rows, features)) + np.outer(labels, weights)
    X[rng.random(X.shape) < missing_rate] = np.nan
    return X, labels, groups


def binary_auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """AUROC in the (scores, labels) order oof_metric passes, to show the scores are sensible."""
    return float(roc_auc_score(labels, scores))


def parse_args() -> argparse.Namespace:
    """Command-line settings; the defaults are the benchmark reported in the project notes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--features", type=int, default=40)
    parser.add_argument("--group-size", type=int, default=4, help="responses per question (default 4 → 2,500 groups)")
    parser.add_argument("--n-seeds", type=int, default=len(FOLD_SEEDS), help="first N of FOLD_SEEDS")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--missing-rate", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--blas-threads", type=int, default=None, help="cap BLAS threads (default: leave as is)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic data")
    args = parser.parse_args()
    if not 1 <= args.n_seeds <= len(FOLD_SEEDS):
        parser.error(f"--n-seeds must be in 1..{len(FOLD_SEEDS)}")
    return args


def main() -> None:
    """Time the fold split alone and the whole cross_fit ``--repeats`` times; print the table and a JSON line.

    ``fit ms`` is (cross_fit − split) / number of fits: the pipeline fit + scoring cost of one training fold.
    """
    args = parse_args()
    X, y, groups = synthetic_data(args.rows, args.features, args.group_size, args.missing_rate, args.seed)
    seeds = FOLD_SEEDS[: args.n_seeds]
    fits = len(seeds) * args.folds
    print(
        f"{'repeat':>6} {'rows':>7} {'feats':>5} {'groups':>6} {'fits':>4} "
        f"{'split s':>8} {'total s':>8} {'fit ms':>7} {'AUROC':>6}"
    )
    split_times, total_times = [], []
    for repeat in range(args.repeats):
        with threadpool_limits(limits=args.blas_threads, user_api="blas"):
            start = time.perf_counter()
            for seed in seeds:
                fold_assignments(y, groups, seed, args.folds)
            split_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            scores = cross_fit(X, y, groups, seeds=seeds, n_splits=args.folds)
            total_times.append(time.perf_counter() - start)
        auroc = oof_metric(scores, y, binary_auroc)
        fit_ms = 1000 * (total_times[-1] - split_times[-1]) / fits
        print(
            f"{repeat:>6} {args.rows:>7} {args.features:>5} {groups.max() + 1:>6} {fits:>4} "
            f"{split_times[-1]:>8.3f} {total_times[-1]:>8.3f} {fit_ms:>7.1f} {auroc:>6.3f}"
        )
    best = int(np.argmin(total_times))
    summary = {
        "benchmark": "cross_fit",
        "rows": args.rows,
        "features": args.features,
        "groups": int(groups.max() + 1),
        "seeds": list(seeds),
        "folds": args.folds,
        "missing_rate": args.missing_rate,
        "data_seed": args.seed,
        "repeats": args.repeats,
        "blas_threads": args.blas_threads,
        "best_total_seconds": round(total_times[best], 4),
        "mean_total_seconds": round(float(np.mean(total_times)), 4),
        "split_seconds_of_best": round(split_times[best], 4),
        "fit_ms_of_best": round(1000 * (total_times[best] - split_times[best]) / fits, 2),
        "oof_auroc": round(auroc, 4),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
