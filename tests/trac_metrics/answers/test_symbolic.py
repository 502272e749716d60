"""The symbolic step (trac_metrics.answers.symbolic, docs/method.md#answers-and-labels): Math-Verify on exact
rationals, and the input caps and work budget that bound it with the same verdict on any machine
(docs/method.md#the-symbolic-work-budget)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from trac_metrics.answers import equivalence, equivalent, symbolic

SLOW_BUT_LEGIT_PAIRS = [
    # (a, b, equivalent): strings of no other test, so that their parsing and sympy's work start cold; each takes a
    # few tenths of a second there, the last one about a second
    (r"\sin^2 y+\cos^2 y", "1", True),
    (r"\cos 2u", r"1-2\sin^2 u", True),
    (r"\frac{1}{1-w}+\frac{1}{1+w}", r"\frac{2}{1-w^2}", True),
    (r"\tan v", r"\frac{\sin v}{\cos v}", True),
    (r"(-\infty,-3)\cup(5,\infty)", r"(5,\infty)\cup(-\infty,-3)", True),
    (r"q\geq7", r"[7,\infty)", True),
    (r"y=-2+\frac{x}{5}", "x-5y-10=0", True),
    ("K=3^{M-1}+2", r"g(z)=\frac{2}{z}", False),
]
SLOWDOWN = 10


def faster(clock: Callable[[], float]) -> Callable[[], float]:
    """``clock`` running ``SLOWDOWN`` times faster: every budget in seconds lasts as long as on a machine that many
    times slower or busier."""
    start = clock()
    return lambda: start + SLOWDOWN * (clock() - start)


def verdicts_on_a_worker_thread() -> list[bool]:
    """The verdict of every slow-but-legit pair, computed afresh (no cached parse or verdict) on a worker thread."""
    symbolic.parsed.cache_clear()
    equivalence._bounded_math_equivalent.cache_clear()
    found: list[bool] = []
    worker = threading.Thread(target=lambda: found.extend(equivalent(a, b) for a, b, _ in SLOW_BUT_LEGIT_PAIRS))
    worker.start()
    worker.join(timeout=600)
    return found


@pytest.mark.filterwarnings("error::trac_metrics._warnings.TracWarning")  # the CPU-time safety net never fires
def test_a_ten_times_slower_machine_gives_the_same_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    # the 1.5-second wall-clock budget this replaced said "not equivalent" to pairs that took 0.4 s on a quiet machine
    with monkeypatch.context() as slow_machine:
        for name in ("monotonic", "perf_counter", "thread_time"):
            slow_machine.setattr(time, name, faster(getattr(time, name)))
        slow = verdicts_on_a_worker_thread()
    quiet = verdicts_on_a_worker_thread()
    assert slow == quiet == [expected for _, _, expected in SLOW_BUT_LEGIT_PAIRS]


def test_a_comparison_over_its_work_budget_is_not_equivalent(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, _ = SLOW_BUT_LEGIT_PAIRS[0]
    equivalence._bounded_math_equivalent.cache_clear()
    monkeypatch.setattr(symbolic, "SYMBOLIC_WORK_BUDGET", 1000)
    with symbolic.counting_undecided() as outer:
        with symbolic.counting_undecided() as inner:
            assert not equivalent(a, b)
        assert inner.comparisons == 1  # undecided, counted
        assert not equivalent(b, a)  # the cached undecided verdict counts again: no dependence on the cache
    assert outer.comparisons == 2 and inner.comparisons == 1
    with symbolic.counting_undecided() as later:
        assert equivalent(a, a) and not equivalent("1", "2")  # decided without the symbolic step
    assert later.comparisons == 0  # nothing leaks from an earlier block
    equivalence._bounded_math_equivalent.cache_clear()
    monkeypatch.undo()
    with symbolic.counting_undecided() as decided:
        assert equivalent(a, b)
    assert decided.comparisons == 0


def test_nesting_depth_counts_every_bracket_kind() -> None:
    assert symbolic.nesting_depth(r"\frac{1}{\left(2+[x]\right)}") == 3
    assert symbolic.nesting_depth("a)b(c") == 1  # an unmatched closer is ignored
    assert symbolic.nesting_depth("x") == 0


def nested(depth: int) -> str:
    return "(" * depth + "x" + ")" * depth


def test_the_input_caps_keep_long_or_deeply_nested_answers_from_sympy(monkeypatch: pytest.MonkeyPatch) -> None:
    depth = symbolic.MAX_SYMBOLIC_DEPTH
    assert not symbolic.exceeds_symbolic_caps(nested(depth), "1") and symbolic.exceeds_symbolic_caps(nested(depth + 1))
    assert symbolic.exceeds_symbolic_caps("1+" * 150 + "1")
    assert not symbolic.exceeds_symbolic_caps("x+yes") and symbolic.too_costly_for_sympy("x+yes", "1")  # words
    symbolic.warm_up_math_verify()  # the once-per-process set-up parses its own answers: not the capped ones
    monkeypatch.setattr(symbolic, "parse", lambda *args, **kwargs: pytest.fail("a capped answer was parsed"))
    deep = nested(40)  # parsing it took Math-Verify several seconds
    assert equivalent(deep, deep) and not equivalent(deep, nested(41)) and not equivalent(deep, "x")


@pytest.mark.parametrize(
    ("a", "b"),
    [("1000000", "1000001"), ("123456789", "123456790"), (r"\frac{1}{10^8}", "0.00000002"), ("0.5", "0.5000001")],
)
def test_math_verify_path_compares_numbers_exactly(a: str, b: str) -> None:
    # The symbolic checker alone (bypassing the number rule) must not call distinct numbers equal either.
    assert not symbolic.symbolically_equal(a, b)
    assert not symbolic.symbolically_equal(b, a)


def test_decimals_reach_math_verify_as_exact_rationals() -> None:
    assert symbolic.symbolically_equal("0.5x", r"\frac{x}{2}")
    assert symbolic.symbolically_equal(r"\frac{x}{2}", "0.5x")
    assert not symbolic.symbolically_equal("0.5000001x", r"\frac{x}{2}")
