"""Memory a request implies, checked before the work starts, so an oversized request is one clear error instead of a
MemoryError after minutes (``trac report --resamples``, ``--n-bins``).

The limit is the memory available now: Linux's ``MemAvailable``, lowered to what the process's cgroup (a container)
still allows; elsewhere the physical memory. The estimates (``bootstrap.bootstrap_memory``,
``heads.newton_memory``) count only the large arrays of a computation: they are lower bounds, so a refused request
could not have finished.
"""

from __future__ import annotations

import os
from pathlib import Path


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
