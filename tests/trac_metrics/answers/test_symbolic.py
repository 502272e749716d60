"""The symbolic step (trac_metrics.answers.symbolic, docs/method.md#answers-and-labels): Math-Verify on exact
rationals, and the input caps and work budget that bound it with the same verdict on any machine
(docs/method.md#the-symbolic-work-budget)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from fractions import Fraction

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
    symbolic._parsed.cache_clear()
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


def test_identity_points_are_in_general_position() -> None:
    smooth = list(symbolic.identity_points(3))
    assert len(smooth) == symbolic.SMOOTH_POINTS and smooth == list(symbolic.identity_points(3))  # a fixed seed
    ratios = [point[1] / point[0] for point in smooth if point[0]]  # independent values per variable:
    assert len(set(ratios)) == len(ratios) > 3  # no two points on one line through the origin
    values = [value for point in smooth for value in point]
    assert min(values) < -3 and max(values) > 3 and any(abs(value) < 1 for value in values)
    non_smooth = [point[0] for point in symbolic.identity_points(1, (Fraction(100), Fraction(-100)))]
    assert len(non_smooth) == symbolic.NON_SMOOTH_POINTS and non_smooth[: len(smooth)] == [p[0] for p in smooth]
    for side in (lambda value: value > 100, lambda value: 84 < value < 100, lambda value: value < -100):
        assert sum(bool(side(value)) for value in non_smooth) >= 3  # both sides of each breakpoint, several times
    assert sum(value.is_integer for value in non_smooth) >= 9  # where floor and ceiling jump


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # agree on the line (t, 2t, 3t) or at a few points, differ elsewhere
        (r"\sin y", r"\sin 2x", False),
        ("e^{a+b}", "e^c", False),
        (r"\arctan\frac{y}{x}", r"\arctan 2", False),
        # agree on a region, differ on another (on integers only, for the last)
        ("|x+2|", "x+2", False),
        (r"\sqrt{x^2+4x+4}", "x+2", False),
        (r"\max(x,3)", "3", False),
        (r"\max(x,100)", "100", False),
        (r"\lfloor x\rfloor", r"\lceil x\rceil - 1", False),
        # identities
        (r"\sin(a+b)", r"\sin a\cos b+\cos a\sin b", True),
        (r"\sin^2 y+\cos^2 y", "1", True),
        (r"\max(x,3)", r"\frac{x+3+|x-3|}{2}", True),
    ],
)
def test_identity_verdict_off_the_line_and_on_both_sides_of_a_break(a: str, b: str, expected: bool) -> None:
    first, second = symbolic.algebra(a)[0], symbolic.algebra(b)[0]
    assert symbolic.identity_verdict(first, second) is expected
    assert symbolic.identity_verdict(second, first) is expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (r"1-\frac{1}{52!}", "1", False),
        (r"\frac{10^{56}}{10^{56}+1}", "1", False),
        (r"\frac{10^{56}}{10^{56}+1}", r"1-\frac{1}{10^{56}+1}", True),
        (r"\frac{2^{64}-1}{2^{64}}", r"1-2^{-64}", True),
    ],
)
def test_every_rational_is_compared_exactly_whatever_its_form(a: str, b: str, expected: bool) -> None:
    assert symbolic.constant_verdict(symbolic.algebra(a), symbolic.algebra(b)) is expected
    assert equivalent(a, b) is expected
