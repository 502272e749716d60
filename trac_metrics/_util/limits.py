"""Limits checked while or before work runs, so an oversized request or a runaway computation ends in a clear,
reproducible outcome instead of a MemoryError after minutes or a hang.

Memory (``trac report --resamples``, ``--n-bins``): the memory a request implies is checked before the work starts.
The limit is the memory available now: Linux's ``MemAvailable``, lowered to what the process's cgroup (a container)
still allows; elsewhere the physical memory. The estimates (``bootstrap.bootstrap_memory``,
``heads.newton_memory``) count only the large arrays of a computation: they are lower bounds, so a refused request
could not have finished.

Work (the answer checker's symbolic step, docs/method.md#answer-equivalence): :func:`work_limit` counts the Python
function calls a block makes and stops it after a fixed number, a budget that is the same on any machine however
busy it is, unlike seconds. A CPU-time limit far above what the budget can take stays as a safety net for the rare
call that is slow by itself.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType


class MemoryLimitError(ValueError):
    """A request needs more memory than is available."""


def _number_in(path: str, prefix: str = "") -> int | None:
    """The integer after ``prefix`` on the first line of ``path`` that starts with it (None when unreadable)."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith(prefix) and line[len(prefix) :].split()[0].isdecimal():
            return int(line[len(prefix) :].split()[0])
    return None


def memory_limit() -> int:
    """Bytes a new computation may allocate now (see the module docstring)."""
    available = _number_in("/proc/meminfo", "MemAvailable:")
    if available is None:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    cgroup_max, cgroup_used = _number_in("/sys/fs/cgroup/memory.max"), _number_in("/sys/fs/cgroup/memory.current")
    if cgroup_max is None or cgroup_used is None:  # memory.max is "max" without a limit
        return available * 1024
    return min(available * 1024, cgroup_max - cgroup_used)


def size_text(n_bytes: float) -> str:
    """``n_bytes`` in binary units with one decimal, e.g. ``3.7 GiB``."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    value, unit = float(n_bytes), 0
    while value >= 1024 and unit < len(units) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.1f} {units[unit]}"


def require_memory(request: str, needed: int, purpose: str) -> None:
    """Raise :class:`MemoryLimitError` when ``needed`` bytes exceed :func:`memory_limit`, e.g. "--resamples
    100000000 needs at least ~152.8 GiB for 1 pair(s) with 50 questions in all; the limit is 12.0 GiB (memory
    available now)" (``request`` = "--resamples 100000000", ``purpose`` = "for 1 pair(s) ...")."""
    limit = memory_limit()
    if needed > limit:
        raise MemoryLimitError(
            f"{request} needs at least ~{size_text(needed)} {purpose}; the limit is "
            f"{size_text(limit)} (memory available now)"
        )


class WorkLimitExceeded(BaseException):
    """A block made more Python calls than its :func:`work_limit` allows; a BaseException, so that no
    ``except Exception`` of a library it runs swallows it."""


class CpuLimitExceeded(WorkLimitExceeded):
    """A block used its :func:`work_limit`'s CPU time before its calls ran out (the safety net fired)."""


_CHECK_EVERY = 256
"""Calls between two checks of the CPU clock."""
_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
"""Code flags of frames that may run only to be closed (a generator dropped before its end, as ``all(...)`` drops
its argument) or to be finalized (``__del__``): an exception the trace function raises there is lost, and Python
turns tracing off when its trace function raises, so the block would run on uncounted. The limits are checked at the
next call of any other frame instead."""


class _Meter:
    """The calls a block may still make (``left``) and the CPU time at which its safety net fires."""

    __slots__ = ("cpu_deadline", "left")

    def __init__(self, calls: int, cpu_seconds: float) -> None:
        self.left = calls
        self.cpu_deadline = time.thread_time() + cpu_seconds


_ACTIVE = threading.local()


@contextlib.contextmanager
def work_limit(calls: int, cpu_seconds: float) -> Iterator[None]:
    """Raise :class:`WorkLimitExceeded` once the block has made ``calls`` Python function calls, or
    :class:`CpuLimitExceeded` once it has used ``cpu_seconds`` of this thread's CPU time.

    A trace function on this thread counts every Python call (a generator's resumption included): the count of a
    given computation does not depend on the machine's speed or load. The call limit is checked at every call, so
    that it stops at ``calls`` (or at the first call after it that is not a generator's, see ``_RESUMABLE``), the
    CPU time every ``_CHECK_EVERY`` calls; a limit whose exception a finalizer swallowed raises on exit from the
    block. Blocks inside :func:`uncounted` are not traced. Tracing slows pure-Python work about twofold, and nothing
    stops a single long C call. The previous trace function is restored on exit; in nested limits only the innermost
    counts.
    """
    if calls < 1 or not cpu_seconds > 0:
        raise ValueError(f"a work limit needs calls >= 1 and cpu_seconds > 0, got {calls} and {cpu_seconds}")
    meter = _Meter(calls, cpu_seconds)

    def count_call(frame: FrameType, event: str, arg: object) -> None:
        meter.left -= 1
        if frame.f_code.co_flags & _RESUMABLE or frame.f_code.co_name == "__del__":
            return  # where a raised exception may be lost (see _RESUMABLE): the next call checks
        if meter.left <= 0:
            raise WorkLimitExceeded
        if not meter.left % _CHECK_EVERY and time.thread_time() > meter.cpu_deadline:
            raise CpuLimitExceeded

    previous_trace, previous_meter = sys.gettrace(), getattr(_ACTIVE, "meter", None)
    _ACTIVE.meter = meter
    sys.settrace(count_call)
    try:
        yield
    finally:
        sys.settrace(previous_trace)
        _ACTIVE.meter = previous_meter
    if meter.left <= 0:  # the limit was reached, but its exception was lost in a finalizer: still over the limit
        raise WorkLimitExceeded


@contextlib.contextmanager
def uncounted() -> Iterator[None]:
    """Inside an active :func:`work_limit`, the block runs untraced: its calls are neither counted nor slowed by the
    trace function (about twofold for pure-Python work such as a LaTeX parser), and the CPU-time net does not see
    it. For work whose result is cached, so that a count does not depend on what was computed before: its cost is
    bounded some other way (the answer checker's input caps)."""
    meter = getattr(_ACTIVE, "meter", None)
    if meter is None:
        yield
        return
    trace = sys.gettrace()
    _ACTIVE.meter = None  # an uncounted block nested in this one needs no restoring either
    sys.settrace(None)
    try:
        yield
    finally:
        sys.settrace(trace)
        _ACTIVE.meter = meter
