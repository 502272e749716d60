"""Bookkeeping of one chunk of TrAC requests while an engine works on it: which engine jobs each finished trace
unlocks, which outputs are still outstanding, and which questions are complete and can be written.

A *question* is one lm-eval ``Instance`` (task, document) and its K responses. It is complete when all K traces
are finished, every job they unlocked has its output, and no primary sample still waits for the trace its
``shuffled_trace`` probe borrows. The runner writes a question's records the moment it is complete, so a crash
loses only questions still in flight.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from trac_metrics.records import ProbeRecord
from trac_tasks.generation.config import TracConfig

QuestionKey = tuple[str, str]


@dataclass(frozen=True)
class ProbeJob:
    """One engine request a response needs after its trace.

    ``kind`` is ``"decode"`` (a greedy ≤ 16-token probe of ``prompt_ids``), ``"score"`` (teacher-forced logprobs of
    ``tokens`` placed after ``prompt_ids``) or ``"next_token"`` (the next-token logprobs P(True) reads).
    ``appended_text`` is what follows the prompt and trace in the probe prompt (marker + cue), kept in the record.
    ``context`` names what of a response the prompt holds after the question (docs/method.md#probe-prompt:
    :data:`~trac_metrics.records.PROBE_CONTEXTS`) and ``context_tokens`` how many of its generated tokens.
    A prefix probe (variant ``prefix``, docs/method.md#prefix-probes) has its ``fraction`` f and the ``trace_tokens``
    of reasoning its prompt keeps; every other job has neither.
    """

    index: int
    variant: str
    appended_text: str
    prompt_ids: list[int]
    context: str
    context_tokens: int
    kind: str = "decode"
    tokens: tuple[int, ...] = ()
    answer: str | None = None
    fraction: float | None = None
    trace_tokens: int | None = None


@dataclass
class ChunkState:
    """What is known about each response of a chunk: its trace, its stored probes and P(True), its open jobs."""

    requests: Sequence[Any]
    repeats: Sequence[int]
    configs: Sequence[TracConfig]
    traces: list[Any] = field(init=False)
    answers: list[str | None] = field(init=False)
    """Each response's answer, read once when its trace finishes (its records and its jobs use it)."""
    probes: list[dict[str, ProbeRecord]] = field(init=False)
    prefix_probes: list[list[ProbeRecord]] = field(init=False)
    """Each response's prefix probes, in the order they finished (the record sorts them by fraction)."""
    p_true: list[float | None] = field(init=False)
    p_true_seconds: list[float | None] = field(init=False)
    texts: list[Any] = field(init=False)
    """The text handed back to lm-eval for each response, set when its question is written."""
    open_jobs: list[int] = field(init=False)
    started: float = field(init=False)
    """``time.perf_counter()`` when the chunk was handed to the engine: the origin of its wall-clock times."""
    arrived: list[dict[str, float]] = field(init=False)
    """Per response, the wall-clock seconds from the chunk's start to the arrival of each of its outputs, under the
    output's timing key (``generation``, ``probe_<variant>``, ``p_true``; docs/method.md#measured-latency)."""
    waiting_for_partner: set[int] = field(init=False, default_factory=set)
    written: set[QuestionKey] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        size = len(self.requests)
        self.traces = [None] * size
        self.answers = [None] * size
        self.probes = [{} for _ in range(size)]
        self.prefix_probes = [[] for _ in range(size)]
        self.p_true = [None] * size
        self.p_true_seconds = [None] * size
        self.texts = [None] * size
        self.open_jobs = [0] * size
        self.started = time.perf_counter()
        self.arrived = [{} for _ in range(size)]
        self.questions: dict[QuestionKey, list[int]] = {}
        for index, request in enumerate(self.requests):
            self.questions.setdefault(question_key(request), []).append(index)

    def open(self, jobs: Sequence[ProbeJob]) -> None:
        """Count ``jobs`` as submitted."""
        for job in jobs:
            self.open_jobs[job.index] += 1

    def finish_job(self, job: ProbeJob) -> None:
        self.open_jobs[job.index] -= 1
        self.arrive(job.index, "p_true" if job.kind == "next_token" else f"probe_{job.variant}")

    def arrive(self, index: int, key: str) -> None:
        """Note that response ``index``'s output ``key`` arrived now (the last of several, e.g. prefix probes)."""
        self.arrived[index][key] = time.perf_counter() - self.started

    def complete_questions(self) -> Iterator[tuple[QuestionKey, list[int]]]:
        """Questions that just became complete (each is yielded once)."""
        for key, indices in self.questions.items():
            if key in self.written:
                continue
            if all(
                self.traces[i] is not None and self.open_jobs[i] == 0 and i not in self.waiting_for_partner
                for i in indices
            ):
                self.written.add(key)
                yield key, indices

    @property
    def unfinished(self) -> list[int]:
        return [index for index, trace in enumerate(self.traces) if trace is None]


def question_key(request: Any) -> QuestionKey:
    return (request.task_name, str(request.doc_id))
