"""The work limit (trac_metrics._util.limits.work_limit, docs/method.md#the-symbolic-work-budget): a budget of counted
Python calls that stops a block at the same point however slow the machine is, with a CPU-time safety net."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator

import pytest

from trac_metrics._util.limits import CpuLimitExceeded, WorkLimitExceeded, uncounted, work_limit


def step() -> None:
    """One counted call."""


def calls_before_the_limit(calls: int, work_per_call: float = 0.0) -> int:
    """How many ``step`` calls a block makes before a limit of ``calls`` stops it; ``work_per_call`` seconds of
    busy waiting between two calls stand for a slower or busier machine."""
    made = 0
    with pytest.raises(WorkLimitExceeded), work_limit(calls, cpu_seconds=60):
        while True:
            deadline = time.perf_counter() + work_per_call
            while time.perf_counter() < deadline:
                pass  # no call: the loop only takes time
            step()
            made += 1
    return made


def test_the_limit_stops_after_the_same_number_of_calls_however_slow_the_calls_are() -> None:
    quiet = calls_before_the_limit(5000)
    assert 5000 - 20 <= quiet < 5000  # the perf_counter calls of the loop are C calls: not counted
    assert calls_before_the_limit(5000, work_per_call=2e-4) == quiet == calls_before_the_limit(5000)


def test_a_block_within_the_limit_runs_to_its_end_and_the_trace_is_restored() -> None:
    previous = sys.gettrace()
    with work_limit(1000, cpu_seconds=60):
        for _ in range(900):
            step()
    assert sys.gettrace() is previous
    with pytest.raises(WorkLimitExceeded), work_limit(1000, cpu_seconds=60):
        for _ in range(1100):
            step()
    assert sys.gettrace() is previous


def test_uncounted_calls_are_given_back() -> None:
    with work_limit(1000, cpu_seconds=60):
        for _ in range(3):
            with uncounted():
                for _ in range(900):
                    step()
        for _ in range(900):
            step()
    with uncounted():  # outside a limit: nothing to give back
        step()


def test_uncounted_work_runs_untraced() -> None:
    """The block runs without the trace function (which doubles the time of pure-Python work), nested blocks
    included, and the limit's tracing resumes after it."""
    with work_limit(1000, cpu_seconds=60):
        traced = sys.gettrace()
        with uncounted():
            assert sys.gettrace() is None
            with uncounted():
                assert sys.gettrace() is None
            assert sys.gettrace() is None
        assert sys.gettrace() is traced is not None


def test_the_cpu_safety_net_stops_calls_that_are_slow_by_themselves() -> None:
    def slow_call() -> None:
        sum(range(20_000))  # one C call: CPU time without counted calls

    start = time.thread_time()
    with pytest.raises(CpuLimitExceeded), work_limit(10**9, cpu_seconds=0.2):
        while True:
            slow_call()
    assert time.thread_time() - start < 5


def test_the_limit_counts_on_a_worker_thread_only_for_that_thread() -> None:
    outcome: dict[str, object] = {}

    def work() -> None:
        outcome["made"] = calls_before_the_limit(3000)
        outcome["trace_after"] = sys.gettrace()

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(timeout=60)
    assert outcome == {"made": calls_before_the_limit(3000), "trace_after": None}


@pytest.mark.parametrize(("calls", "cpu_seconds"), [(0, 1.0), (10, 0.0), (10, float("nan"))])
def test_a_limit_needs_positive_bounds(calls: int, cpu_seconds: float) -> None:
    with pytest.raises(ValueError, match="a work limit needs"), work_limit(calls, cpu_seconds):
        pass


def test_a_limit_reached_while_a_generator_closes_is_not_lost() -> None:
    """A generator dropped before its end (``all(...)`` on a generator) resumes only to close, where an exception is
    lost and Python turns tracing off: the limit must still stop the block, for every budget, and nothing is lost."""
    lost: list[object] = []

    def values() -> Iterator[int]:
        yield 1
        yield 2

    def work() -> None:
        while True:
            found = values()
            next(found)
            del found  # closed: the generator resumes to exit
            step()

    hook = sys.unraisablehook
    sys.unraisablehook = lost.append
    try:
        for calls in range(1, 40):
            with pytest.raises(WorkLimitExceeded), work_limit(calls, cpu_seconds=60):
                work()
    finally:
        sys.unraisablehook = hook
    assert not lost
