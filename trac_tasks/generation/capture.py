"""Backend-independent parts of the capture hook: repeat indexing, token summaries, records and where they go.

Both the vLLM and the HF hook turn each TrAC request into a :class:`GenerationText`: the string lm-eval expects,
carrying the immutable :class:`~trac_metrics.records.ResponseRecord` of that response to the task's
``process_results``. Records are also appended to ``<records dir>/<task>.<run stamp>.jsonl`` as each question
completes. The records dir is ``<output path>/trac_records`` of the running lm-eval evaluation, else
``$TRAC_RECORDS_DIR``, else ``./trac_records`` (:func:`records_dir`).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from trac_metrics.features import topk_entropy
from trac_metrics.records import BUILT_IN_LABELLER, ProbeRecord, RecordWriter, ResponseRecord
from trac_tasks.generation.config import TracConfig
from trac_tasks.generation.progress import LOGGER
from trac_tasks.harness.lm_eval_hooks import dataset_doc_id, record_file_task, records_dir

P_TRUE_TEMPLATE = "\n\nProposed answer: {answer}\nIs the proposed answer correct?\n(A) True\n(B) False\nThe answer is ("
"""P(True) (Kadavath et al. 2022), asked after the question prompt and the primary's extracted answer (not the
trace): the probability of "A" renormalized over {A, B} (docs/method.md#ptrue)."""


class GenerationText(str):
    """The generated text handed back to lm-eval, with the response's TrAC record attached.

    lm-eval may build one from a plain string: a ``generate_until`` task casts its target to the type of the
    response it compares it with (``type(result)(gold)``), so the record is optional (None on such a copy)."""

    record: ResponseRecord | None

    def __new__(cls, text: str, record: ResponseRecord | None = None) -> GenerationText:
        instance = super().__new__(cls, text)
        instance.record = record
        return instance

    def __reduce__(self) -> tuple[Any, ...]:
        return (GenerationText, (str(self), self.record))


def repeat_indices(requests: Sequence[Any]) -> list[int]:
    """The repeat index of each request: lm-eval passes the same Instance K times in a row for ``repeats: K``."""
    seen: dict[int, int] = {}
    indices = []
    for request in requests:
        index = seen.get(id(request), 0)
        seen[id(request)] = index + 1
        indices.append(index)
    return indices


def padded_rows(
    lengths: Sequence[int], values: Sequence[float] | np.ndarray, fill: float = np.nan, dtype: Any = np.float64
) -> np.ndarray:
    """A [T, m] array whose row t holds the next ``lengths[t]`` of ``values`` (all positions' entries in order), and
    ``fill`` after a row shorter than the longest (m)."""
    counts = np.asarray(lengths, dtype=np.int64)
    held = np.arange(int(counts.max(initial=0))) < counts[:, None]
    rows = np.full(held.shape, fill, dtype=dtype)
    rows[held] = values
    return rows


def k_largest(values: Sequence[float] | np.ndarray, k: int) -> list[float] | np.ndarray:
    """The k largest finite logprobs of one position, in decreasing order, as a list (the engine may return k + 1
    entries: the top k plus a sampled token outside them); or, given a [T, m] array (NaN for an entry not
    returned), those of every row at once as a [T, k] array, NaN-padded where a row holds fewer
    (docs/method.md#token-summaries)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    rows = np.asarray(values, dtype=np.float64)
    if rows.ndim == 1:
        best = k_largest(rows.reshape(1, -1), k)[0]
        return best[~np.isnan(best)].tolist()
    if rows.ndim != 2:
        raise ValueError(f"logprobs must be one position or a [T, m] array, got shape {rows.shape}")
    # sorting the negated values puts the largest first and every non-finite entry (as NaN) last
    best = -np.sort(np.where(np.isfinite(rows), -rows, np.nan), axis=1)[:, :k]
    return np.pad(best, ((0, 0), (0, k - best.shape[1])), constant_values=np.nan)


def token_summaries(
    chosen: Sequence[float] | np.ndarray, top: Sequence[Sequence[float]] | np.ndarray, k: int
) -> dict[str, np.ndarray]:
    """Per-token λ_t, η_t and mean of the top-k logprobs (docs/method.md#token-summaries) from the engine's returned
    logprobs.

    ``top[t]`` holds the returned logprobs at position t (k of them, or k + 1 when the sampled token was outside the
    top k); only the k largest finite ones are used. ``top`` is a list of such lists, or a [T, m] array whose NaN
    entries stand for entries not returned (the engines' flat output, docs/architecture.md#vllm-backend).
    """
    chosen_array = np.asarray(chosen, dtype=np.float64)
    if not isinstance(top, np.ndarray):  # per-position lists: one [T, m] array, NaN after a shorter position's
        top = padded_rows(list(map(len, top)), list(chain.from_iterable(top)))
    top_k = k_largest(top, k)
    with np.errstate(invalid="ignore"):
        mean_top = np.nanmean(top_k, axis=1) if len(top) else np.zeros(0)
    return {
        "token_logprobs": chosen_array,
        "topk_entropy": topk_entropy(top_k, k=k) if len(top) else np.zeros(0),
        "topk_mean_logprob": mean_top,
    }


def p_true_probability(letter_logprobs: Mapping[str, float]) -> float:
    """P(True) = p(A) / (p(A) + p(B)) from the logprobs of the next token's "A" and "B" (NaN if neither returned)."""
    a = letter_logprobs.get("A", -math.inf)
    b = letter_logprobs.get("B", -math.inf)
    if a == -math.inf and b == -math.inf:
        return float("nan")
    top = max(a, b)
    return math.exp(a - top) / (math.exp(a - top) + math.exp(b - top))


def build_record(
    request: Any,
    repeat: int,
    config: TracConfig,
    *,
    model: str,
    prompt_token_count: int,
    generated_ids: Sequence[int],
    text: str,
    generated_text: str,
    answer: str | None,
    marker: str,
    finish_reason: str,
    summaries: Mapping[str, np.ndarray],
    probes: Mapping[str, ProbeRecord],
    prefix_probes: Sequence[ProbeRecord] = (),
    reasoning_tokens: int | None = None,
    answer_tokens: tuple[int, int] | None = None,
    p_true: float | None,
    label: bool | None,
    num_samples: int,
    decoding: Mapping[str, float],
    timing: Mapping[str, float],
    vocabulary_mean_logprob: Sequence[float] | None = None,
) -> ResponseRecord:
    """Assemble the immutable record of one response of an lm-eval ``Instance`` (``num_samples``: K; ``decoding``:
    the primary temperature / top-p the engine applied and the probe temperature; ``text``: what lm-eval scores,
    ``generated_text``: the whole decoded generation, stored when it differs; ``marker``: the end-of-thinking
    marker in force, ``answer``: the answer read after it, :mod:`trac_tasks.generation.thinking`; ``prefix_probes``:
    its prefix probes in any order, stored in increasing order of fraction, docs/method.md#prefix-probes;
    ``reasoning_tokens``: how many leading generated tokens are its reasoning, docs/method.md#trace-length;
    ``answer_tokens``: [start, end) of the generated tokens that spell its answer,
    docs/method.md#answer-token-log-probability;
    ``vocabulary_mean_logprob``: where the engine has the full distribution, the mean logprob over the vocabulary at
    each position, docs/method.md#self-certainty)."""
    doc = request.doc
    kind = config.kind_for(doc)
    return ResponseRecord(
        task=request.task_name,
        doc_id=dataset_doc_id(request),
        repeat=repeat,
        model=model,
        answer_kind=kind,
        prompt_token_count=prompt_token_count,
        text=text,
        answer=answer,
        reference=config.render_reference(doc),
        finish_reason=finish_reason,
        top_k=config.top_k,
        token_ids=np.asarray(generated_ids, dtype=np.int32),
        probes=dict(probes),
        prefix_probes=tuple(sorted(prefix_probes, key=lambda probe: probe.fraction)),
        reasoning_tokens=reasoning_tokens,
        answer_tokens=answer_tokens,
        p_true=p_true,
        timing=dict(timing),
        metadata=config.metadata_of(doc),
        num_samples=num_samples,
        decoding=dict(decoding),
        marker=marker,
        generated_text=generated_text if generated_text != text else None,
        label=label,
        label_source=config.label_source or None,
        labeller=None if config.labels == BUILT_IN_LABELLER else config.labels,
        vocabulary_mean_logprob=None
        if vocabulary_mean_logprob is None
        else np.asarray(vocabulary_mean_logprob, dtype=np.float32),
        **summaries,
    )


class RecordSink:
    """One append-only JSONL file per task for this run, named ``<task>.<run stamp>.jsonl``; the stamp is the
    start time plus the process id, so two runs started in the same second never share a file."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or records_dir()
        self.stamp = f"{time.strftime('%Y-%m-%dT%H-%M-%S')}-{os.getpid()}"
        self._writers: dict[str, RecordWriter] = {}

    def path_for(self, task: str) -> Path:
        return self.directory / f"{record_file_task(task)}.{self.stamp}.jsonl"

    def write(self, records: Sequence[ResponseRecord]) -> Path | None:
        """Append ``records`` (any tasks) and flush each file; returns the file of the last task written."""
        by_task: dict[str, list[ResponseRecord]] = {}
        for record in records:
            by_task.setdefault(record.task, []).append(record)
        for task, task_records in by_task.items():
            if task not in self._writers:
                self._writers[task] = RecordWriter(self.path_for(task))
                LOGGER.info("trac-eval: writing records of task %s to %s", task, self.path_for(task))
            self._writers[task].write_batch(task_records)
        return self.path_for(records[-1].task) if records else None
