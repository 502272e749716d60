"""The engine-independent TrAC flow of one ``generate_until`` call (SPEC §1–2), shared by the vLLM and HF hooks.

For each chunk of TrAC requests: generate the K samples with per-token logprobs and run each response's trace
probe on token ids (an engine that can, vLLM, submits each probe the moment its trace finishes, while its prefix is
hot in the cache; the default runs them after the chunk), then the configured ablation probes, optionally P(True),
then write the chunk's immutable records and hand lm-eval the texts with the records attached. An engine subclass
supplies four primitives: sampled generation with logprobs, greedy ≤16-token probes that reuse the cached prefix,
teacher-forced scoring of given tokens, and next-token logprobs of given candidate strings.

Timings: every record stores the engine seconds attributed to it (``timing.generation_seconds``,
``timing.p_true_seconds``, ``probes[v].seconds``), from which a report derives each method's relative latency.
"""

from __future__ import annotations

import os
import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trac_metrics._warnings import TracWarning
from trac_metrics.answers import extract_answer
from trac_metrics.records import ProbeRecord
from trac_tasks.capture import (
    P_TRUE_TEMPLATE,
    GenerationText,
    RecordSink,
    build_record,
    k_largest,
    p_true_probability,
    repeat_indices,
    token_summaries,
)
from trac_tasks.config import PROBE_MAX_TOKENS, TRAC_KEY, TracConfig
from trac_tasks.lm_eval_patches import HOOKED
from trac_tasks.probe import ParsedProbe, needs_marker, parse_probe

CHUNK_SIZE = int(os.environ.get("TRAC_CHUNK_SIZE", "256"))
"""Requests generated together before their probes run and their records are flushed."""


@dataclass
class Trace:
    """One sampled response: its prompt and generated token ids, texts and per-token logprobs."""

    request: Any
    repeat: int
    config: TracConfig
    prompt_ids: list[int]
    generated_ids: list[int]
    body_ids: list[int]
    raw_text: str
    text: str
    finish_reason: str
    chosen: list[float]
    top: list[list[float]]
    seconds: float
    """Engine seconds attributed to generating this response."""
    temperature: float
    top_p: float

    @property
    def decoding(self) -> dict[str, float]:
        """Primary → probe decoding as stored in the record (the probe is greedy, SPEC §2)."""
        return {"temperature": self.temperature, "top_p": self.top_p, "probe_temperature": 0.0}

    @property
    def answer(self) -> str | None:
        return extract_answer(self.text, kind=self.kind, marker=self.config.marker or None)

    @property
    def kind(self) -> str:
        """The answer kind of this response's document."""
        return self.config.kind_for(self.request.doc)


@dataclass(frozen=True)
class ProbeJob:
    """One probe prompt of response ``index``: its exact token ids and the text appended after the prompt and trace
    (marker + cue) for the record."""

    index: int
    variant: str
    appended_text: str
    prompt_ids: list[int]


@dataclass(frozen=True)
class ProbeOutput:
    """What an engine returns for a greedy probe or a teacher-forced scoring."""

    token_ids: list[int]
    chosen: list[float]
    top: list[list[float]]
    engine_finish_reason: str
    num_prompt_tokens: int
    num_cached_tokens: int | None
    seconds: float


class TracRunner(ABC):
    """Runs TrAC requests on one lm-eval model object; subclasses implement the engine primitives.

    The decoded trace probe runs for every sample (it is cheap: its prefix is cached); the ablation probes, the
    teacher-forced scoring and P(True) only for the primary sample (repeat 0), the only one they are used for.
    """

    chunk_size: int = CHUNK_SIZE

    def __init__(self, lm: Any, tokenizer: Any, model_name: str, max_length: int) -> None:
        self.lm = lm
        self.tokenizer = tokenizer
        self.model_name = model_name
        self.max_length = max_length
        if not hasattr(lm, "_trac_sink"):
            lm._trac_sink = RecordSink()
        self.sink: RecordSink = lm._trac_sink
        self._encoded: dict[str, list[int]] = {}

    # ----------------------------------------------------------------------------------------- engine primitives
    @abstractmethod
    def generate(self, requests: Sequence[Any], repeats: Sequence[int], configs: Sequence[TracConfig]) -> list[Trace]:
        """Sample one response per request exactly as lm-eval would, keeping token ids and logprobs."""

    def generate_with_trace_probes(
        self, requests: Sequence[Any], repeats: Sequence[int], configs: Sequence[TracConfig]
    ) -> tuple[list[Trace], list[ProbeOutput | None]]:
        """The responses and, per response, its ``trace`` probe output (None when the probe does not fit the
        context). This default generates the whole chunk, then probes it; engines override it to stream."""
        traces = self.generate(requests, repeats, configs)
        jobs = [job for index, trace in enumerate(traces) if (job := self.trace_probe_job(index, trace))]
        outputs: list[ProbeOutput | None] = [None] * len(traces)
        for job, output in zip(jobs, self.greedy_probes(traces, jobs), strict=True):
            outputs[job.index] = output
        return traces, outputs

    @abstractmethod
    def greedy_probes(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob]) -> list[ProbeOutput]:
        """Greedy ≤ 16-token continuation of each job's prompt, with per-token top-k logprobs."""

    @abstractmethod
    def score_tokens(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob],
                     token_ids: Sequence[list[int]]) -> list[ProbeOutput]:
        """Logprobs of ``token_ids[i]`` placed right after ``jobs[i].prompt_ids`` (teacher forcing)."""

    @abstractmethod
    def next_token_logprobs(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob],
                            candidates: Sequence[str]) -> list[dict[str, float]]:
        """Logprob of each candidate string as the next token after each job's prompt (absent when unknown)."""

    # ------------------------------------------------------------------------------------------------ the flow
    def encode(self, text: str) -> list[int]:
        if text not in self._encoded:
            self._encoded[text] = self.tokenizer(text, add_special_tokens=False).input_ids if text else []
        return list(self._encoded[text])

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def run(self, requests: Sequence[Any]) -> list[GenerationText]:
        """Generate, probe and record ``requests`` chunk by chunk; returns the texts in request order."""
        repeats = repeat_indices(requests)
        configs = [TracConfig.from_gen_kwargs(request.args[1], request.task_name) for request in requests]
        texts: list[GenerationText] = []
        for start in range(0, len(requests), self.chunk_size):
            chunk = slice(start, start + self.chunk_size)
            texts.extend(self._run_chunk(requests[chunk], repeats[chunk], configs[chunk]))
        return texts

    def _run_chunk(self, requests, repeats, configs) -> list[GenerationText]:
        traces, trace_probes = self.generate_with_trace_probes(requests, repeats, configs)
        probes = self._probe_records(traces, trace_probes)
        p_true, p_true_seconds = self._p_true(traces)
        records = [
            build_record(
                trace.request, trace.repeat, trace.config, model=self.model_name,
                prompt_token_count=len(trace.prompt_ids), generated_ids=trace.generated_ids, text=trace.text,
                finish_reason=trace.finish_reason, summaries=token_summaries(trace.chosen, trace.top, trace.config.top_k),
                probes=probes[index], p_true=p_true[index], num_samples=samples, decoding=trace.decoding,
                timing={"generation_seconds": trace.seconds,
                        **({"p_true_seconds": p_true_seconds[index]} if p_true[index] is not None else {})},
            )
            for index, (trace, samples) in enumerate(zip(traces, _sample_counts(requests), strict=True))
        ]
        self.sink.write(records)
        return [GenerationText(record.text, record) for record in records]

    def _suffix(self, config: TracConfig, trace_text: str) -> tuple[str, list[int]]:
        """Marker (unless the trace closed its thinking section already) + cue, as text and ids."""
        marker = config.marker if needs_marker(config.marker, trace_text) else ""
        return marker + config.cue, self.encode(marker) + self.encode(config.cue)

    def _fits(self, job: ProbeJob, new_tokens: int, trace: Trace) -> bool:
        """Whether the job's prompt plus ``new_tokens`` fits the model's context; warns when it does not."""
        if len(job.prompt_ids) + new_tokens <= self.max_length:
            return True
        where = f" ({trace.request.task_name} doc {trace.request.doc_id})"
        warnings.warn(f"trac-eval: the {job.variant} probe{where} needs {len(job.prompt_ids) + new_tokens} tokens, "
                      f"more than the model's {self.max_length}; it is stored as missing", TracWarning, stacklevel=2)
        return False

    def _trace_job(self, index: int, trace: Trace, variant: str = "trace") -> ProbeJob:
        appended, suffix_ids = self._suffix(trace.config, trace.raw_text)
        return ProbeJob(index, variant, appended, trace.prompt_ids + trace.body_ids + suffix_ids)

    def trace_probe_job(self, index: int, trace: Trace) -> ProbeJob | None:
        """The ``trace`` probe of response ``index`` (SPEC §2), or None (with a warning) when it would not fit."""
        job = self._trace_job(index, trace)
        return job if self._fits(job, PROBE_MAX_TOKENS, trace) else None

    def ablation_probe_jobs(self, traces: Sequence[Trace]) -> list[ProbeJob]:
        """The decoded controls of the primary samples, when configured: ``question_only`` and ``shuffled_trace``.
        The shuffled trace is the primary trace of the next question of the same task in the chunk (cyclically);
        with one question in the chunk it is skipped (a warning says so). Probes that would not fit the context
        are skipped with a warning."""
        jobs = []
        for index, trace in enumerate(traces):
            if trace.repeat != 0:
                continue
            variants = trace.config.probe_variants
            if "question_only" in variants:
                appended = trace.config.marker + trace.config.cue
                jobs.append(ProbeJob(index, "question_only", appended, trace.prompt_ids + self.encode(appended)))
            if "shuffled_trace" in variants:
                other = _other_question(index, traces)
                if other is None:
                    warnings.warn(f"trac-eval: no other question in this chunk for the shuffled_trace probe of "
                                  f"{trace.request.task_name} doc {trace.request.doc_id}", TracWarning, stacklevel=2)
                    continue
                appended, suffix_ids = self._suffix(trace.config, traces[other].raw_text)
                jobs.append(ProbeJob(index, "shuffled_trace", appended,
                                     trace.prompt_ids + traces[other].body_ids + suffix_ids))
        return [job for job in jobs if self._fits(job, PROBE_MAX_TOKENS, traces[job.index])]

    def _probe_records(self, traces: Sequence[Trace],
                       trace_probes: Sequence[ProbeOutput | None]) -> list[dict[str, ProbeRecord]]:
        per_response: list[dict[str, ProbeRecord]] = [{} for _ in traces]
        jobs = self.ablation_probe_jobs(traces)
        decoded = [(self._trace_job(index, traces[index]), output)
                   for index, output in enumerate(trace_probes) if output is not None]
        decoded += list(zip(jobs, self.greedy_probes(traces, jobs), strict=True))
        for job, output in decoded:
            config = traces[job.index].config
            parsed = parse_probe(output.token_ids, self.decode, config.cue, config.closing_delimiter(),
                                 output.engine_finish_reason, traces[job.index].kind)
            per_response[job.index][job.variant] = probe_record(job, output, parsed, config.top_k)
        forced = [(index, trace) for index, trace in enumerate(traces)
                  if trace.repeat == 0 and "teacher_forced" in trace.config.probe_variants]
        jobs, answers, token_lists = [], [], []
        for index, trace in forced:
            answer = trace.answer
            tokens = self.encode((answer or "") + (trace.config.closing_delimiter() or ""))
            job = self._trace_job(index, trace, "teacher_forced")
            if self._fits(job, len(tokens), trace):
                jobs.append(job)
                answers.append(answer)
                token_lists.append(tokens)
        for job, answer, tokens, output in zip(jobs, answers, token_lists,
                                               self.score_tokens(traces, jobs, token_lists), strict=True):
            parsed = ParsedProbe(answer=answer, answer_token_count=min(len(self.encode(answer or "")), len(tokens)),
                                 kept_tokens=len(tokens), text=self.decode(tokens), finish_reason="teacher_forced")
            per_response[job.index]["teacher_forced"] = probe_record(job, output, parsed,
                                                                      traces[job.index].config.top_k)
        return per_response

    def _p_true(self, traces: Sequence[Trace]) -> tuple[list[float | None], list[float]]:
        """P(True) baseline (SPEC §5), primary samples only: one extra step after the question and the proposed
        (extracted) answer, asking whether it is correct; P(A) renormalized over the options A and B. Also returns
        the engine seconds per asked response (the batch's wall time shared equally)."""
        jobs = []
        for index, trace in enumerate(traces):
            if trace.repeat == 0 and trace.config.p_true:
                answer = trace.answer
                question = P_TRUE_TEMPLATE.format(answer=answer if answer is not None else "(none)")
                job = ProbeJob(index, "trace", question, trace.prompt_ids + self.encode(question))
                if self._fits(job, 1, trace):
                    jobs.append(job)
        values: list[float | None] = [None] * len(traces)
        started = time.perf_counter()
        for job, letters in zip(jobs, self.next_token_logprobs(traces, jobs, ("A", "B")), strict=True):
            values[job.index] = p_true_probability(letters)
        share = (time.perf_counter() - started) / max(len(jobs), 1)
        return values, [share] * len(traces)


def _sample_counts(requests: Sequence[Any]) -> list[int]:
    """K of each request's document: lm-eval's ``Instance.repeats`` (its task's ``repeats``)."""
    return [int(request.repeats or 1) for request in requests]


def _other_question(index: int, traces: Sequence[Trace]) -> int | None:
    request = traces[index].request
    candidates = [i for i, trace in enumerate(traces)
                  if trace.request.task_name == request.task_name and trace.request.doc_id != request.doc_id
                  and trace.repeat == 0]
    later = [i for i in candidates if i > index]
    return (later or candidates or [None])[0]


def probe_record(job: ProbeJob, output: ProbeOutput, parsed: ParsedProbe, top_k: int) -> ProbeRecord:
    """The stored probe: the engine output cut at the closing delimiter, top-k logprobs padded to width k."""
    kept = parsed.kept_tokens
    return ProbeRecord(
        variant=job.variant, appended_text=job.appended_text, text=parsed.text, answer=parsed.answer,
        token_ids=output.token_ids[:kept], token_logprobs=output.chosen[:kept],
        top_logprobs=[(k_largest(values, top_k) + [float("-inf")] * top_k)[:top_k] for values in output.top[:kept]],
        answer_token_count=parsed.answer_token_count, finish_reason=parsed.finish_reason,
        num_prompt_tokens=output.num_prompt_tokens, num_cached_tokens=output.num_cached_tokens,
        seconds=output.seconds,
    )


def hook_generate_until(backend: type, runner_class: type[TracRunner]) -> None:
    """Replace ``backend.generate_until`` by a router: TrAC requests to ``runner_class``, the rest unchanged."""
    original = backend.generate_until

    def generate_until(self: Any, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        return route_trac_requests(self, requests, disable_tqdm, original, runner_class)

    generate_until.__doc__ = original.__doc__
    setattr(generate_until, HOOKED, True)
    backend.generate_until = generate_until


def route_trac_requests(lm: Any, requests: list[Any], disable_tqdm: bool, original: Any, runner_class: type) -> list[str]:
    """Send TrAC requests to ``runner_class(lm)``, the others to lm-eval's ``original`` method; keep the order."""
    is_trac = [TRAC_KEY in request.args[1] for request in requests]
    if not any(is_trac):
        return original(lm, requests, disable_tqdm)
    if getattr(lm, "data_parallel_size", 1) > 1 or getattr(lm, "world_size", 1) > 1:
        raise ValueError(
            "TrAC tasks need token logprobs and probes on one engine: data parallelism (data_parallel_size > 1 or "
            "several processes) is not supported by the trac-eval hook; use tensor parallelism, or run the TrAC "
            "tasks without data parallelism"
        )
    results: list[str] = [""] * len(requests)
    plain = [index for index, flag in enumerate(is_trac) if not flag]
    if plain:
        for index, text in zip(plain, original(lm, [requests[i] for i in plain], disable_tqdm), strict=True):
            results[index] = text
    trac = [index for index, flag in enumerate(is_trac) if flag]
    for index, text in zip(trac, runner_class(lm).run([requests[i] for i in trac]), strict=True):
        results[index] = text
    return results
