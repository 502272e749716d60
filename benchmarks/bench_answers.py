"""Speed of the math answer checker (``trac_metrics.answers.equivalent``) on real benchmark answers, with its verdicts.

Pairs come from the real benchmark copies (``../shared/real-data`` beside the checkout, or ``--datasets-dir``), built by
``tests/trac_metrics/answers/test_real_data.py``: per dataset (MATH-500, Minerva, OlympiadBench single-answer rows, AIME
2024 + 2025, GSM8K), every (reference, rewrite) pair, the rewrite an equivalent form made by a deterministic string
transform (``\\frac`` ↔ ``\\dfrac`` ↔ ``a/b``, spacing, ``$…$``, ``\\left( \\right)``, a final period, a unit, thousands
separators, 7-digit decimals of irrational constants), and every (reference, other reference) pair, the other being the
next reference of the dataset that normalizes differently.

Rounds: ``--rounds`` interleaved rounds; each times every rewrite pair and every other-reference pair, one kind after
the other, the order swapped every round. Before each kind's pass every ``functools.lru_cache`` of
``trac_metrics.answers`` and its submodules is cleared (found by their attributes: ``cache_clear`` and ``cache_info``),
sympy's own cache too (unless ``--keep-sympy-cache``), then one untimed call on an unrelated pair pays Math-Verify's
lazy set-up. Each ``equivalent()`` call is timed alone (``perf_counter_ns``).

Printed: per pair kind the median and p90 microseconds per call over all rounds' calls (and each round's median and
seconds); per dataset the rate of rewrites judged equivalent (should be 1) and the rate of other-reference pairs judged
equivalent (false equivalences, unless the two questions truly share their answer), with up to ``--show`` failing
examples per dataset grouped by transform; verdicts that changed between rounds (only the symbolic time budget can do
that); the slowest pairs; with ``--math-verify``, how often Math-Verify's default verdict agrees with the checker's,
per pair kind, and the pairs where it does not. The last line printed is one JSON object.

``--hard-latex`` times instead a "hard LaTeX" set (:func:`hard_latex_pairs`: the answers reasoning models write —
nested fractions, surds, polynomials, intervals and inequalities, equations of lines, sets — each with an equivalent
and a different form, drawn with a fixed seed) with both relations in one run: the checker (``equivalent``) and
Math-Verify's default ``verify(parse(gold), parse(answer))``, each pass after every cache (the checker's, sympy's,
the LaTeX parser's) is emptied; per pair the CPU time of the process (``time.process_time_ns``); printed: p50 / p90 /
p99 / total of each and how often the verdicts agree. Then the "slow cases" line: the CPU milliseconds of each slow
comparison of ``tests/trac_metrics/answers/test_held_out_families.py`` (``SLOW``: trigonometric equations, ``\\sin`` of
a large power, a sum to 9999, definite integrals, a permuted 16-element set) from cold, each in a fresh process
(``--slow-case INDEX``): after the imports and the checker's once-per-process set-up, its answers never seen.

    python benchmarks/bench_answers.py [--datasets-dir ../shared/real-data] [--rounds 3] [--datasets math500,gsm8k]
        [--show 5] [--slowest 5] [--keep-sympy-cache] [--math-verify]
    python benchmarks/bench_answers.py --hard-latex [--pairs-per-family 20] [--seed 0]
    python benchmarks/bench_answers.py --slow-case INDEX
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter, defaultdict
from itertools import zip_longest
from pathlib import Path
from typing import Any

import numpy as np
from math_verify import parse, verify

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support"), str(ROOT / "tests" / "trac_metrics" / "answers")]

from test_held_out_families import SLOW  # noqa: E402
from test_real_data import DATASETS, REAL_DATA, dataset_rewrites, load_references, other_references  # noqa: E402

from trac_metrics.answers import equivalent  # noqa: E402
from trac_metrics.answers.math_verify_reference import math_verify_equivalent  # noqa: E402
from trac_metrics.answers.symbolic import warm_up_math_verify  # noqa: E402

KINDS = ("rewrite", "other")
WARM_UP_PAIR = ("x^2+2x+1", "(x+1)^2")

Pair = tuple[str, str, str, str]  # (dataset, label: transform name or "other", reference, candidate)


def answer_caches() -> list[Any]:
    """Every ``functools.lru_cache`` wrapper held by ``trac_metrics.answers`` or one of its loaded submodules."""
    caches: dict[int, Any] = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "trac_metrics.answers" or name.startswith("trac_metrics.answers.")):
            continue
        for attribute in vars(module).values():
            if callable(getattr(attribute, "cache_clear", None)) and callable(getattr(attribute, "cache_info", None)):
                caches[id(attribute)] = attribute
    return list(caches.values())


def clear_caches(keep_sympy_cache: bool) -> int:
    """Empty the checker's caches (and sympy's), then pay Math-Verify's set-up outside the timing; the cache count."""
    caches = answer_caches()
    for cache in caches:
        cache.cache_clear()
    if not keep_sympy_cache:
        from sympy.core.cache import clear_cache

        clear_cache()
    equivalent(*WARM_UP_PAIR, "math")
    return len(caches)


def timed_pass(pairs: list[Pair]) -> tuple[list[float], list[bool], float]:
    """Microseconds and verdict of each ``equivalent`` call, and the pass's seconds."""
    micros, verdicts = [], []
    start = time.perf_counter()
    for _, _, reference, candidate in pairs:
        before = time.perf_counter_ns()
        verdict = equivalent(reference, candidate, "math")
        micros.append((time.perf_counter_ns() - before) / 1000)
        verdicts.append(verdict)
    return micros, verdicts, time.perf_counter() - start


def build_pairs(folder: Path, datasets: list[str]) -> dict[str, list[Pair]]:
    pairs: dict[str, list[Pair]] = {kind: [] for kind in KINDS}
    for dataset in datasets:
        pairs["rewrite"] += [(dataset, name, ref, rewrite) for name, ref, rewrite in dataset_rewrites(dataset, folder)]
        references = load_references(dataset, folder)
        pairs["other"] += [(dataset, "other", ref, other) for ref, other in other_references(references)]
    return pairs


def rates(pairs: dict[str, list[Pair]], verdicts: dict[str, list[bool]], folder: Path) -> dict[str, dict]:
    """Per dataset: reference count, rewrite equal rate with failures by transform, other-pair equal rate."""
    summary: dict[str, dict] = defaultdict(lambda: {"failures_by_transform": Counter()})
    for kind in KINDS:
        counted: dict[str, list[bool]] = defaultdict(list)
        for (dataset, label, _, _), verdict in zip(pairs[kind], verdicts[kind], strict=True):
            counted[dataset].append(verdict)
            if kind == "rewrite" and not verdict:
                summary[dataset]["failures_by_transform"][label] += 1
        for dataset, judged in counted.items():
            summary[dataset][f"{kind}_pairs"] = len(judged)
            summary[dataset][f"{kind}_equal_rate"] = sum(judged) / len(judged)
    for dataset, entry in summary.items():
        entry["references"] = len(load_references(dataset, folder))
        entry["failures_by_transform"] = dict(entry["failures_by_transform"].most_common())
    return dict(summary)


def print_examples(pairs: dict[str, list[Pair]], verdicts: dict[str, list[bool]], show: int) -> None:
    """Up to ``show`` failing pairs per dataset: rewrites judged not equivalent (grouped by transform), then other
    references judged equivalent."""
    failing: dict[str, list[Pair]] = defaultdict(list)
    for kind, expected in (("rewrite", True), ("other", False)):
        for pair, verdict in zip(pairs[kind], verdicts[kind], strict=True):
            if verdict != expected:
                failing[pair[0]].append(pair)
    for dataset, found in failing.items():
        by_label: dict[str, list[Pair]] = defaultdict(list)
        for pair in found:
            by_label[pair[1]].append(pair)
        shown = [pair for group in zip_longest(*by_label.values()) for pair in group if pair is not None][:show]
        print(f"{dataset}: {len(found)} failing pairs (transform, reference, candidate)")
        for _, label, reference, candidate in sorted(shown, key=lambda pair: pair[1]):
            print(f"  {label:<18} {reference!r:<40} {candidate!r}")


def math_verify_agreement(pairs: dict[str, list[Pair]], verdicts: dict[str, list[bool]], show: int) -> dict:
    """Math-Verify's default verdict (``math_verify_equivalent``: gold = the reference) on every pair, and how often
    it agrees with the checker's, per pair kind and dataset; up to ``show`` disagreements per kind printed."""
    agreement: dict[str, dict] = {}
    for kind in KINDS:
        counted: dict[str, list[bool]] = defaultdict(list)
        disagreements = []
        for pair, ours in zip(pairs[kind], verdicts[kind], strict=True):
            theirs = math_verify_equivalent(pair[3], pair[2], "math")
            counted[pair[0]].append(theirs == ours)
            if theirs != ours:
                disagreements.append((pair, ours, theirs))
        agreement[kind] = {
            "pairs": len(pairs[kind]),
            "agreement": sum(map(sum, counted.values())) / max(len(pairs[kind]), 1),
            "by_dataset": {dataset: sum(found) / len(found) for dataset, found in counted.items()},
            "disagreements": [
                {"dataset": pair[0], "label": pair[1], "reference": pair[2], "candidate": pair[3], "ours": ours}
                for pair, ours, _ in disagreements
            ],
        }
        print(f"Math-Verify agrees on {agreement[kind]['agreement']:.4f} of the {kind} pairs")
        for (dataset, label, reference, candidate), ours, theirs in disagreements[:show]:
            print(f"  {dataset:<14} {label:<18} ours={ours!s:<5} MV={theirs!s:<5} {reference!r} vs {candidate!r}")
    return agreement


def slowest(pairs: dict[str, list[Pair]], micros: dict[str, list[list[float]]], count: int) -> list[dict]:
    """The ``count`` pairs with the largest median time over the rounds."""
    timed = [
        {"kind": kind, "dataset": pair[0], "reference": pair[2], "candidate": pair[3], "median_us": float(np.median(t))}
        for kind in KINDS
        for pair, t in zip(pairs[kind], zip(*micros[kind]))
    ]
    return sorted(timed, key=lambda entry: -entry["median_us"])[:count]


def hard_latex_pairs(per_family: int, seed: int) -> list[tuple[str, str, str, bool]]:
    """(family, gold, answer, intended verdict) pairs: for each family ``per_family`` drawn answers, each with one
    equivalent and one different form."""
    rng = np.random.default_rng(seed)
    pairs: list[tuple[str, str, str, bool]] = []
    for _ in range(per_family):
        a, b, c = (int(value) for value in rng.integers(2, 30, size=3))
        square_free = int(rng.choice([2, 3, 5, 6, 7, 10, 11, 13]))
        pairs += [
            ("nested fraction", rf"\frac{{1}}{{1+\frac{{1}}{{{a}}}}}", rf"\frac{{{a}}}{{{a + 1}}}", True),
            ("nested fraction", rf"\frac{{1}}{{1+\frac{{1}}{{{a}}}}}", rf"\frac{{{a + 1}}}{{{a}}}", False),
            ("surd", rf"{a}\sqrt{{{square_free}}}", rf"\sqrt{{{a * a * square_free}}}", True),
            ("surd", rf"{a}\sqrt{{{square_free}}}", rf"\sqrt{{{(a * a + 1) * square_free}}}", False),
            (
                "surd",
                rf"\frac{{{b}}}{{\sqrt{{{square_free}}}}}",
                rf"\frac{{{b}\sqrt{{{square_free}}}}}{{{square_free}}}",
                True,
            ),
            ("polynomial", f"(x+{a})^2", f"x^2+{2 * a}x+{a * a}", True),
            ("polynomial", f"(x+{a})^2", f"x^2+{a}x+{a * a}", False),
            ("rational function", rf"\frac{{x^2-{a * a}}}{{x-{a}}}", f"x+{a}", True),
            ("interval", f"x > {a}", rf"({a}, \infty)", True),
            ("interval", rf"x \geq {a}", rf"({a}, \infty)", False),
            ("interval", rf"[{a}, {a + b})", rf"\left[{a},{a + b}\right)", True),
            ("interval", rf"(-\infty, {a}] \cup [{a + b}, \infty)", rf"(-\infty, {a}) \cup [{a + b}, \infty)", False),
            ("line", f"y = {a}x + {b}", f"{a}x - y + {b} = 0", True),
            ("line", f"y = {a}x + {b}", f"y = {a}x - {b}", False),
            ("set", rf"\{{{a}, {b}, \sqrt{{{square_free}}}\}}", rf"\{{\sqrt{{{square_free}}}, {b}, {a}\}}", True),
            ("set", rf"\{{\frac{{{a}}}{{{c}}}, {b}\}}", rf"\{{{b}, \frac{{{2 * a}}}{{{2 * c}}}\}}", True),
            ("set", rf"\{{{a}, {b}\}}", rf"\{{{a}, {b + c}\}}", False),
            ("trigonometric", rf"\sin^2 \frac{{\pi}}{{{a + 2}}} + \cos^2 \frac{{\pi}}{{{a + 2}}}", "1", True),
            ("trigonometric", rf"\cos\frac{{\pi}}{{3}} + \frac{{{a}}}{{2}}", rf"\frac{{{a + 1}}}{{2}}", True),
            ("trigonometric", rf"\tan\frac{{\pi}}{{{a + 2}}}", rf"\sin\frac{{\pi}}{{{a + 2}}}", False),
        ]
    return pairs


def _clear_all_caches() -> None:
    for cache in answer_caches():
        cache.cache_clear()
    from latex2sympy2_extended.latex2sympy2 import latex2sympy
    from math_verify.parser import parse_expr_cached, parse_latex_cached
    from sympy.core.cache import clear_cache

    for cached in (parse_latex_cached, parse_expr_cached, latex2sympy):
        if callable(getattr(cached, "cache_clear", None)):
            cached.cache_clear()
    clear_cache()


def _math_verify_verdict(gold: str, answer: str) -> bool:
    return bool(verify(parse(f"${gold}$"), parse(f"${answer}$")))


def _timed(relation: Any, pairs: list[tuple[str, str, str, bool]]) -> tuple[np.ndarray, list[bool]]:
    """CPU milliseconds and verdict of ``relation(gold, answer)`` on every pair, after every cache is emptied."""
    _clear_all_caches()
    relation(*WARM_UP_PAIR)
    millis, verdicts = [], []
    for _, gold, answer, _ in pairs:
        before = time.process_time_ns()
        verdicts.append(relation(gold, answer))
        millis.append((time.process_time_ns() - before) / 1e6)
    return np.asarray(millis), verdicts


def hard_latex(per_family: int, seed: int) -> dict:
    """The checker against Math-Verify on the hard LaTeX set, in one run (module docstring)."""
    pairs = hard_latex_pairs(per_family, seed)
    theirs_ms, theirs = _timed(_math_verify_verdict, pairs)
    ours_ms, ours = _timed(lambda gold, answer: equivalent(gold, answer, "math"), pairs)
    summary = {}
    print(f"hard LaTeX set: {len(pairs)} pairs; CPU ms per comparison")
    print(f"{'relation':<14}{'p50':>9}{'p90':>9}{'p99':>9}{'max':>9}{'total':>10}{'intended':>10}")
    for name, millis, verdicts in (("trac-eval", ours_ms, ours), ("Math-Verify", theirs_ms, theirs)):
        intended = sum(v == pair[3] for v, pair in zip(verdicts, pairs, strict=True)) / len(pairs)
        p50, p90, p99 = (float(np.percentile(millis, q)) for q in (50, 90, 99))
        summary[name] = {
            "p50_ms": p50,
            "p90_ms": p90,
            "p99_ms": p99,
            "max_ms": float(millis.max()),
            "total_s": float(millis.sum() / 1000),
            "intended_verdicts": intended,
        }
        total = millis.sum() / 1000
        print(f"{name:<14}{p50:>9.2f}{p90:>9.2f}{p99:>9.2f}{millis.max():>9.1f}{total:>9.2f}s{intended:>10.3f}")
    disagreements = [
        {"family": pair[0], "gold": pair[1], "answer": pair[2], "ours": mine, "math_verify": other}
        for pair, mine, other in zip(pairs, ours, theirs, strict=True)
        if mine != other
    ]
    for entry in disagreements:
        print(
            f"  differ: {entry['family']:<18} ours={entry['ours']!s:<5} MV={entry['math_verify']!s:<5} "
            f"{entry['gold']!r} vs {entry['answer']!r}"
        )
    ratios = {
        "total": summary["trac-eval"]["total_s"] / summary["Math-Verify"]["total_s"],
        "p99": summary["trac-eval"]["p99_ms"] / summary["Math-Verify"]["p99_ms"],
    }
    print(f"ours / Math-Verify: total {ratios['total']:.2f}, p99 {ratios['p99']:.2f}")
    slow = slow_cases()
    return {
        "benchmark": "hard_latex",
        "pairs": len(pairs),
        "seed": seed,
        "timing": summary,
        "ratios": ratios,
        "disagreements": disagreements,
        "slow_cases_cpu_ms": slow,
    }


def slow_case_cpu_ms(index: int) -> float:
    """CPU milliseconds of the slow comparison ``SLOW[index]`` in this process, after the checker's set-up."""
    warm_up_math_verify()
    gold, answer, *_ = SLOW[index]
    before = time.process_time_ns()
    equivalent(gold, answer, "math")
    return (time.process_time_ns() - before) / 1e6


def slow_cases() -> dict[str, float]:
    """CPU milliseconds of each slow comparison from cold, each in a fresh process (module docstring); printed as
    the "slow cases" line."""
    found = {}
    for index, (gold, answer, *_) in enumerate(SLOW):
        command = [sys.executable, __file__, "--slow-case", str(index)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        found[f"{gold} vs {answer}"] = float(done.stdout.split()[-1])
    print("slow cases (CPU ms from cold, each in a fresh process): " + ", ".join(f"{ms:.1f}" for ms in found.values()))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets-dir", type=Path, default=REAL_DATA)
    parser.add_argument("--datasets", default=",".join(DATASETS), help=f"comma-separated subset of {DATASETS}")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--show", type=int, default=5, help="failing examples printed per dataset")
    parser.add_argument("--slowest", type=int, default=5, help="slowest pairs printed (and kept in the JSON)")
    parser.add_argument("--keep-sympy-cache", action="store_true", help="clear only the checker's own caches")
    parser.add_argument(
        "--math-verify", action="store_true", help="also judge every pair with Math-Verify's defaults (untimed)"
    )
    parser.add_argument("--hard-latex", action="store_true", help="time the hard LaTeX set against Math-Verify")
    parser.add_argument("--pairs-per-family", type=int, default=20, help="drawn answers per family (--hard-latex)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the hard LaTeX set")
    parser.add_argument("--slow-case", type=int, metavar="INDEX", help="time one slow comparison in this process")
    args = parser.parse_args()
    if args.slow_case is not None:
        print(f"{slow_case_cpu_ms(args.slow_case):.3f}")
        return
    if args.hard_latex:
        print(json.dumps(hard_latex(args.pairs_per_family, args.seed)))
        return
    datasets = [name.strip() for name in args.datasets.split(",") if name.strip()]
    if unknown := sorted(set(datasets) - set(DATASETS)):
        parser.error(f"unknown datasets {unknown}; choose from {DATASETS}")
    if not args.datasets_dir.is_dir():
        parser.error(f"no real-data folder at {args.datasets_dir}")

    start = time.perf_counter()
    pairs = build_pairs(args.datasets_dir, datasets)
    setup_seconds = time.perf_counter() - start
    print(f"{len(pairs['rewrite'])} rewrite pairs, {len(pairs['other'])} other-reference pairs ({setup_seconds:.1f} s)")

    micros: dict[str, list[list[float]]] = {kind: [] for kind in KINDS}
    verdicts: dict[str, list[list[bool]]] = {kind: [] for kind in KINDS}
    seconds: dict[str, list[float]] = {kind: [] for kind in KINDS}
    cache_count = 0
    for round_index in range(args.rounds):
        order = KINDS if round_index % 2 == 0 else KINDS[::-1]
        for kind in order:
            cache_count = clear_caches(args.keep_sympy_cache)
            round_micros, round_verdicts, round_seconds = timed_pass(pairs[kind])
            micros[kind].append(round_micros)
            verdicts[kind].append(round_verdicts)
            seconds[kind].append(round_seconds)
            print(f"round {round_index + 1} {kind:<8} {round_seconds:8.2f} s", flush=True)

    timing = {}
    print(f"{'pairs':<10}{'calls':>8}{'median us':>12}{'p90 us':>12}{'mean us':>12}")
    for kind in KINDS:
        every = np.concatenate([np.asarray(values) for values in micros[kind]]) if micros[kind] else np.zeros(0)
        timing[kind] = {
            "pairs": len(pairs[kind]),
            "median_us": float(np.median(every)) if every.size else None,
            "p90_us": float(np.percentile(every, 90)) if every.size else None,
            "mean_us": float(every.mean()) if every.size else None,
            "per_round_median_us": [float(np.median(values)) for values in micros[kind] if values],
            "per_round_seconds": seconds[kind],
        }
        if every.size:
            median, p90 = np.median(every), np.percentile(every, 90)
            print(f"{kind:<10}{every.size:>8}{median:>12.1f}{p90:>12.1f}{every.mean():>12.1f}")

    unstable = {kind: sum(len(set(calls)) > 1 for calls in zip(*verdicts[kind])) for kind in KINDS}
    first = {kind: rounds[0] if rounds else [] for kind, rounds in verdicts.items()}
    per_dataset = rates(pairs, first, args.datasets_dir)
    print(f"{'dataset':<15}{'refs':>6}{'rewrites':>10}{'equal rate':>12}{'others':>8}{'false-equal rate':>18}")
    for dataset, entry in per_dataset.items():
        print(
            f"{dataset:<15}{entry['references']:>6}{entry.get('rewrite_pairs', 0):>10}"
            f"{entry.get('rewrite_equal_rate', float('nan')):>12.4f}{entry.get('other_pairs', 0):>8}"
            f"{entry.get('other_equal_rate', float('nan')):>18.4f}"
        )
    print_examples(pairs, first, args.show)
    slow = slowest(pairs, micros, args.slowest)
    for entry in slow:
        print(f"slow: {entry['median_us'] / 1000:8.1f} ms  {entry['reference']!r} vs {entry['candidate']!r}")
    if any(unstable.values()):
        print(f"verdicts that changed between rounds: {unstable}")
    agreement = math_verify_agreement(pairs, first, args.show) if args.math_verify else None
    result = {
        "benchmark": "answer_equivalence",
        "datasets_dir": str(args.datasets_dir),
        "rounds": args.rounds,
        "caches_cleared": cache_count,
        "sympy_cache_cleared": not args.keep_sympy_cache,
        "timing": timing,
        "datasets": per_dataset,
        "unstable_verdicts": unstable,
        "slowest": slow,
        "math_verify": agreement,
        "setup_seconds": setup_seconds,
        "total_seconds": time.perf_counter() - start,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
