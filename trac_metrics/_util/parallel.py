"""Run an independent, pure function over items in worker processes (reports read and evaluate many pairs).

Results come back in input order and are identical to a sequential run; warnings raised in a worker are issued
again in the calling process, so nothing a sequential run would say is lost.
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")
Progress = Callable[[Iterable[Any]], Iterable[Any]]


def default_jobs() -> int:
    """The CPUs this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def parallel_map(
    function: Callable[[Item], Result], items: Sequence[Item], jobs: int | None = None, progress: Progress | None = None
) -> list[Result]:
    """``[function(item) for item in items]`` on up to ``jobs`` processes (default: :func:`default_jobs`; 1 runs
    in this process, as on platforms without ``fork``). ``function`` must be picklable (a module-level function
    or a ``functools.partial`` of one).
    ``progress`` wraps the stream of finished results (e.g. a tqdm bar)."""
    jobs = min(default_jobs() if jobs is None else jobs, len(items))
    if jobs < 1 and items:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if "fork" not in multiprocessing.get_all_start_methods():  # workers inherit the loaded modules only by fork
        jobs = 1
    wrap = progress or (lambda stream: stream)
    if jobs <= 1:
        return list(wrap(_Sized((function(item) for item in items), len(items))))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        outcomes = list(wrap(_Sized(pool.map(_Recording(function), items), len(items))))
    results = []
    for result, caught in outcomes:
        for message, category in caught:
            warnings.warn(message, category, stacklevel=2)
        results.append(result)
    return results


class _Sized:
    """A stream of results with a length, so a progress bar knows its total."""

    def __init__(self, stream: Iterable[Any], length: int) -> None:
        self.stream, self.length = stream, length

    def __iter__(self) -> Iterator[Any]:
        return iter(self.stream)

    def __len__(self) -> int:
        return self.length


class _Recording:
    """``function`` run in a worker, returning its result with the warnings it raised (message, category)."""

    def __init__(self, function: Callable[[Any], Any]) -> None:
        self.function = function

    def __call__(self, item: Any) -> tuple[Any, list[tuple[str, type[Warning]]]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = self.function(item)
        return result, [(str(entry.message), entry.category) for entry in caught]
