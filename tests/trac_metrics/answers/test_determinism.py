"""A verdict is a function of the two answers only (docs/method.md#the-symbolic-work-budget): the same whether the
comparison runs in a fresh state (every cache empty) or after other comparisons have filled sympy's cache and the
checker's, and the same in processes with different hash seeds (whose sets iterate in different orders), on a few
hundred pairs drawn with a fixed seed (identities and near-misses: polynomials, trigonometric and exponential
identities, rationals, non-smooth functions, surds)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Callable
from math import factorial
from pathlib import Path
from typing import NamedTuple

from call_count import calls_made
from sympy.core.cache import clear_cache

from trac_metrics.answers import counting_undecided, equivalence, equivalent, symbolic
from trac_metrics.answers.normalization import math_form

SEED = 48
DRAWS = 12


class Pair(NamedTuple):
    family: str
    first: str
    second: str
    expected: bool  # what a careful grader says: every identity holds for all values, every near-miss fails somewhere


def _trigonometric(rng: random.Random, u: str, v: str, c: int) -> list[Pair]:
    return [
        Pair("trig", rf"\sin({u}+{v})", rf"\sin {u}\cos {v}+\cos {u}\sin {v}", True),
        Pair("trig", rf"\sin({u}+{v})", rf"\sin {u}\cos {v}-\cos {u}\sin {v}", False),
        Pair("trig", rf"\cos({u}-{v})", rf"\cos {u}\cos {v}+\sin {u}\sin {v}", True),
        Pair("trig", rf"\sin {c}{u}", rf"{c}\sin {u}", False),
        Pair("trig", rf"\sin 2{u}", rf"2\sin {u}\cos {u}", True),
        Pair("trig", rf"\cos 2{u}", rf"2\cos^2 {u}", False),
        Pair("trig", rf"\cos 2{u}", rf"1-2\sin^2 {u}", True),
        Pair("trig", rf"\sin {v}", rf"\sin {c}{u}", False),
    ]


def _algebraic(rng: random.Random, u: str, v: str, c: int) -> list[Pair]:
    d = rng.randint(2, 9)
    return [
        Pair("polynomial", f"({u}+{c})^2", f"{u}^2+{2 * c}{u}+{c * c}", True),
        Pair("polynomial", f"({u}+{c})^2", f"{u}^2+{c}{u}+{c * c}", False),
        Pair("polynomial", f"({u}-{v})({u}+{v})", f"{u}^2-{v}^2", True),
        Pair("rational function", rf"\frac{{{u}^2-{d * d}}}{{{u}-{d}}}", f"{u}+{d}", True),
        Pair("rational function", rf"\frac{{1}}{{{u}}}+\frac{{1}}{{{v}}}", rf"\frac{{2}}{{{u}+{v}}}", False),
        Pair("exponential", f"e^{{{u}+{v}}}", f"e^{{{u}}}e^{{{v}}}", True),
        Pair("exponential", f"e^{{{u}+{v}}}", f"e^{{{u}{v}}}", False),
        Pair("exponential", rf"\ln(e^{{{c}{u}}})", f"{c}{u}", True),
    ]


def _non_smooth(rng: random.Random, u: str, v: str, c: int) -> list[Pair]:
    return [
        Pair("non-smooth", f"|{u}+{c}|", f"{u}+{c}", False),
        Pair("non-smooth", f"|{u}|^2", f"{u}^2", True),
        Pair("non-smooth", rf"\max({u},{c})", str(c), False),
        Pair("non-smooth", rf"\sqrt{{{u}^2+{2 * c}{u}+{c * c}}}", f"{u}+{c}", False),
        Pair("non-smooth", rf"\lfloor {u}\rfloor", rf"\lceil {u}\rceil-1", False),
    ]


def _constants(rng: random.Random, u: str, v: str, c: int) -> list[Pair]:
    p, q, k = rng.randint(1, 97), rng.randint(2, 97), rng.randint(2, 9)
    n = rng.randint(10, 24)  # 24! has 24 digits: within the input caps
    return [
        Pair("rational", rf"\frac{{{p}}}{{{q}}}", rf"\frac{{{k * p}}}{{{k * q}}}", True),
        Pair("rational", rf"\frac{{{p}}}{{{q}}}", rf"\frac{{{p + 1}}}{{{q}}}", False),
        Pair("rational", rf"1-\frac{{1}}{{{n}!}}", "1", False),
        Pair("rational", rf"1-\frac{{1}}{{{n}!}}", rf"\frac{{{factorial(n) - 1}}}{{{factorial(n)}}}", True),
        Pair("surd", rf"\sqrt{{{c * c * k}}}", rf"{c}\sqrt{{{k}}}", True),
        Pair("surd", rf"\sqrt{{{c * c * k}}}", rf"{c + 1}\sqrt{{{k}}}", False),
    ]


FAMILIES: tuple[Callable[[random.Random, str, str, int], list[Pair]], ...] = (
    _trigonometric,
    _algebraic,
    _non_smooth,
    _constants,
)


def drawn_pairs() -> list[Pair]:
    rng = random.Random(SEED)
    pairs = []
    for _ in range(DRAWS):
        u, v = rng.sample("abpquvwxyz", 2)
        c = rng.randint(2, 9)
        for family in FAMILIES:
            pairs += family(rng, u, v, c)
    return pairs


def empty_every_cache() -> None:
    for cache in (symbolic._parsed, symbolic._algebra, equivalence._bounded_math_equivalent, math_form):
        cache.cache_clear()
    clear_cache()


def verdicts(pairs: list[Pair], fresh: bool) -> list[tuple[bool, int]]:
    """Each pair's verdict and whether it was undecided: from a fresh state (every cache emptied before it), or
    with every cache as earlier comparisons left it (only the verdict itself not remembered)."""
    found = []
    for pair in pairs:
        if fresh:
            empty_every_cache()
        else:
            equivalence._bounded_math_equivalent.cache_clear()
        with counting_undecided() as undecided:
            found.append((equivalent(pair.first, pair.second), undecided.comparisons))
    return found


def related(pairs: list[Pair]) -> list[tuple[str, str]]:
    """Comparisons that fill the caches with the same answers and their parts: each pair reversed, each answer
    against the next pair's answers and against itself with a term added."""
    shifted = pairs[1:] + pairs[:1]
    return [
        comparison
        for pair, after in zip(pairs, shifted, strict=True)
        for comparison in (
            (pair.second, pair.first),
            (pair.first, after.second),
            (pair.second, after.first),
            (pair.first, f"{pair.first}+1"),
        )
    ]


def test_a_verdict_does_not_depend_on_what_was_compared_before() -> None:
    pairs = drawn_pairs()
    assert len(pairs) >= 300
    symbolic.warm_up_math_verify()
    fresh = verdicts(pairs, fresh=True)
    for first, second in related(pairs)[::-1]:
        equivalent(first, second)
    warm = verdicts(pairs, fresh=False)
    changed = [(pair, before, after) for pair, before, after in zip(pairs, fresh, warm, strict=True) if before != after]
    assert not changed, changed
    wrong = [(pair, verdict) for pair, (verdict, _) in zip(pairs, fresh, strict=True) if verdict != pair.expected]
    assert not wrong, wrong


HASH_SEEDS = ("0", "1")
WORK_SPREAD = 0.02
"""How far the work of one comparison may differ between processes (relative): sympy's sets of names iterate in the
order of the process's hash seed, which the checker's fixed order of assumption facts leaves a trace of (about 1 %)."""


def fresh_verdicts_and_work() -> list[tuple[bool, int, int]]:
    """Each drawn pair's verdict, undecided count and the Python calls its comparison makes from a fresh state."""
    symbolic.warm_up_math_verify()
    found = []
    for pair in drawn_pairs():
        empty_every_cache()
        with counting_undecided() as undecided:
            verdict, calls = calls_made(lambda pair=pair: equivalent(pair.first, pair.second))
        found.append((verdict, undecided.comparisons, calls))
    return found


def _in_process_with_hash_seed(seed: str) -> list[tuple[bool, int, int]]:
    """:func:`fresh_verdicts_and_work` in a new Python process whose hash seed is ``seed``."""
    here = Path(__file__).resolve().parent
    code = (
        f"import json, sys; sys.path[:0] = [{str(here)!r}, {str(here.parents[1] / 'support')!r}]; "
        "from test_determinism import fresh_verdicts_and_work; print(json.dumps(fresh_verdicts_and_work()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONHASHSEED": seed},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return [tuple(item) for item in json.loads(done.stdout.splitlines()[-1])]


def test_a_verdict_does_not_depend_on_the_process_hash_seed() -> None:
    """Two processes with different hash seeds give every drawn pair the same verdict and undecided count, and
    count nearly the same work for it (within ``WORK_SPREAD``), so no verdict near the budget flips between them."""
    first, second = (_in_process_with_hash_seed(seed) for seed in HASH_SEEDS)
    assert len(first) == len(second) == len(drawn_pairs()) >= 300
    differing = [(pair, a, b) for pair, a, b in zip(drawn_pairs(), first, second, strict=True) if a[:2] != b[:2]]
    assert not differing, differing
    spread = max(abs(a[2] - b[2]) / max(a[2], b[2]) for a, b in zip(first, second, strict=True))
    assert spread <= WORK_SPREAD, spread


def test_sympy_checks_assumptions_in_sorted_order_only_inside_a_comparison() -> None:
    """The sorted order is ours alone: after a comparison sympy shuffles as it did, for whatever else the process
    runs (the user's own sympy code, lm-eval's tasks)."""
    import importlib

    from trac_metrics.answers.equivalence import equivalent

    assumptions = importlib.import_module("sympy.core.assumptions")  # ``sympy.core.assumptions`` is also a function
    shuffle = assumptions.shuffle  # sympy's own seeded generator's
    assert shuffle is not list.sort
    assert equivalent(r"\sin^2 x + \cos^2 x", "1")
    assert assumptions.shuffle is shuffle
