"""Measured latency (docs/method.md#measured-latency): the wall-clock seconds a method waits for, from the records'
``timing.wall_*`` arrival times, beside the accounting of :mod:`trac_metrics.methods` (docs/method.md#relative-latency).

Each record stores, for each of its outputs, the seconds from its chunk's start (when the engine was handed the
batch) to that output's arrival: ``wall_generation``, ``wall_probe_<variant>``, ``wall_p_true``. A method waits for
the latest of the outputs it reads: the generations of the first responses it reads (one, K, or SC@k's k) and the
primary's extra outputs of its cost (its probe, P(True)). Its measured latency on a pair is the sum of that wait
over the questions divided by the sum of the primary generation's own wait (a ratio of totals, so a short question
does not weigh as much as a long one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trac_metrics.methods import Cost
from trac_metrics.records import ResponseRecord

WALL_PREFIX = "wall_"
"""The prefix of the timing keys that hold an output's arrival time."""


@dataclass(frozen=True)
class QuestionWallClock:
    """One question's arrival times: each response's generation in repeat order (the primary first), and the
    primary's other outputs by timing key (``probe_trace``, ``p_true``...)."""

    generations: tuple[float, ...]
    outputs: Mapping[str, float]


def question_wall_clock(records: Sequence[ResponseRecord]) -> QuestionWallClock | None:
    """The arrival times of one question's records; None when any response lacks ``wall_generation`` (records
    written before the measured latency was stored)."""
    ordered = sorted(records, key=lambda record: record.repeat)
    generations = [record.timing.get(f"{WALL_PREFIX}generation") for record in ordered]
    if not ordered or any(value is None for value in generations):
        return None
    outputs = {
        key.removeprefix(WALL_PREFIX): float(value)
        for key, value in ordered[0].timing.items()
        if key.startswith(WALL_PREFIX) and key != f"{WALL_PREFIX}generation"
    }
    return QuestionWallClock(tuple(float(value) for value in generations), outputs)


def measured_latency(questions: Sequence[QuestionWallClock], cost: Cost, k: int) -> float:
    """The wall-clock seconds ``cost``'s method waits for over those of one generation, summed over ``questions``;
    NaN when none of them has every output the method reads (or the generations took no time)."""
    waited = primary = 0.0
    for question in questions:
        read = question.generations[: cost.responses_read(k)]
        extras = [question.outputs.get(key) for key in cost.extra_seconds]
        if len(read) < cost.responses_read(k) or any(value is None for value in extras):
            continue
        waited += max([*read, *extras])
        primary += question.generations[0]
    return waited / primary if primary > 0 else math.nan
