"""The Python calls a piece of work makes, counted by a profile function: a measure of work that is the same on any
machine, however busy (docs/method.md#the-symbolic-work-budget), and that no trace function of the work hides."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def calls_made(work: Callable[[], T]) -> tuple[T, int]:
    """``work()`` and the Python function calls it made (every ``call`` event: generators' resumptions included)."""
    made = [0]

    def count(frame: object, event: str, arg: object) -> None:
        if event == "call":
            made[0] += 1

    previous = sys.getprofile()
    sys.setprofile(count)
    try:
        result = work()
    finally:
        sys.setprofile(previous)
    return result, made[0]
