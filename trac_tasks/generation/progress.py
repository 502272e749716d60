"""What a person watching a TrAC run sees: one live progress bar and, per task, one closing summary line.

The bar (tqdm on stderr, like vLLM's own) counts finished generations against the total and shows the finished
probes and the generated tokens per second; it redraws at most once a second, so a log file gets no flood, and
lm-eval's ``disable_tqdm`` turns it off. The summary line is logged through lm-eval's logger.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from trac_metrics.features.cache_share import (
    ProbeCacheCounts,
    format_share,
    prefix_probe_cache_counts,
    probe_cache_counts,
)
from trac_metrics.records import ResponseRecord

LOGGER = logging.getLogger("lm_eval.trac_eval")
"""trac-eval's log lines go through lm-eval's logger (its handler, format and ``LMEVAL_LOG_LEVEL``)."""


class RunProgress:
    """The live bar of one ``generate_until`` call's TrAC requests."""

    def __init__(self, total: int, disable: bool) -> None:
        self.started = time.perf_counter()
        self.tokens = 0
        self.probes = 0
        self.bar = tqdm(
            total=total,
            desc="TrAC generations",
            unit="gen",
            file=sys.stderr,
            disable=disable,
            mininterval=1.0,
            miniters=1,
            dynamic_ncols=True,
        )

    def trace_finished(self, generated_tokens: int) -> None:
        self.tokens += generated_tokens
        self._postfix()
        self.bar.update(1)

    def job_finished(self) -> None:
        self.probes += 1
        self._postfix()

    def _postfix(self) -> None:
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        self.bar.set_postfix_str(f"probes {self.probes}, {self.tokens / elapsed:.1f} tok/s", refresh=False)

    def close(self) -> None:
        self.bar.close()


@dataclass
class TaskSummary:
    """Running totals of one task's written records, for its closing log line."""

    task: str
    path: Path | None = None
    questions: int = 0
    samples: int = 0
    trace_tokens: int = 0
    probe_cache: ProbeCacheCounts = field(default_factory=ProbeCacheCounts)
    prefix_probe_cache: ProbeCacheCounts = field(default_factory=ProbeCacheCounts)
    generation_seconds: float = 0.0
    probe_seconds: float = 0.0
    p_true_asked: int = 0
    p_true_undefined: int = 0

    def add_question(self, records: list[ResponseRecord], path: Path) -> None:
        self.path = path
        self.questions += 1
        self.probe_cache += probe_cache_counts(records)
        self.prefix_probe_cache += prefix_probe_cache_counts(records)
        for record in records:
            self.samples += 1
            self.trace_tokens += record.num_tokens
            self.generation_seconds += float(record.timing.get("generation_seconds") or 0.0)
            self.probe_seconds += float(record.timing.get("p_true_seconds") or 0.0)
            if record.p_true is not None:
                self.p_true_asked += 1
                self.p_true_undefined += math.isnan(record.p_true)
            for probe in (*record.probes.values(), *record.prefix_probes):
                self.probe_seconds += float(probe.seconds or 0.0)

    def p_true_warning(self) -> str | None:
        """The warning for P(True) answers stored as NaN (docs/method.md#ptrue), or None when every one is defined."""
        if not self.p_true_undefined:
            return None
        return (
            f"trac-eval: task {self.task}: P(True) is NaN for {self.p_true_undefined} of {self.p_true_asked} "
            "questions: neither option letter (A / B) was among the model's most likely next tokens after the P(True) "
            "prompt (a model that does not follow the prompt's instruction); their P(True) metrics are NaN"
        )

    def line(self) -> str:
        mean_tokens = self.trace_tokens / self.samples if self.samples else float("nan")
        share = format_share(self.probe_cache)  # docs/method.md#probe-cache-share
        if self.prefix_probe_cache.prompt_tokens:  # docs/method.md#prefix-probes
            share += f" (prefix probes {format_share(self.prefix_probe_cache)})"
        return (
            f"trac-eval: task {self.task}: {self.questions} questions, {self.samples} samples, mean trace "
            f"{mean_tokens:.0f} tokens, probe prompts served from the prefix cache {share}, engine seconds "
            f"probes {self.probe_seconds:.1f} vs generations {self.generation_seconds:.1f}; records in "
            f"{self.path}"
        )
