"""The symbolic step (trac_metrics.answers.symbolic, docs/method.md#answers-and-labels): Math-Verify on exact
rationals, and the time limit that bounds it on any thread."""

from __future__ import annotations

import signal
import sys
import threading
import time

import pytest

from trac_metrics.answers import symbolic


def _elapsed_since(start: float) -> float:
    return time.perf_counter() - start


def _busy_python_calls(seconds: float) -> None:
    """Loop for ``seconds`` making Python-level calls, as sympy does all the time."""
    start = time.perf_counter()
    while _elapsed_since(start) < seconds:
        pass


@pytest.mark.timeout(0)  # pytest-timeout's own SIGALRM timer would leave the main-thread timer in use
def test_time_limit_interrupts_on_main_thread_and_restores_state() -> None:
    previous_handler = signal.getsignal(signal.SIGALRM)
    start = time.perf_counter()
    with pytest.raises(symbolic.SymbolicBudgetExceeded):
        with symbolic.time_limit(0.2):
            _busy_python_calls(5.0)
    assert time.perf_counter() - start < 1.0
    assert signal.getsignal(signal.SIGALRM) is previous_handler
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_time_limit_interrupts_on_worker_thread_and_restores_state() -> None:
    outcome: dict[str, object] = {}

    def work() -> None:
        start = time.perf_counter()
        try:
            with symbolic.time_limit(0.2):
                _busy_python_calls(5.0)
        except symbolic.SymbolicBudgetExceeded:
            outcome["interrupted_after"] = time.perf_counter() - start
        outcome["trace_after"] = sys.gettrace()

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(timeout=10)
    assert outcome["interrupted_after"] < 1.0  # type: ignore[operator]
    assert outcome["trace_after"] is None


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
