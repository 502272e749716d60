"""The engine-independent TrAC flow of one ``generate_until`` call (docs/architecture.md#the-generation-runner), shared
by the vLLM and HF hooks.

Before anything is generated, every task's templates are checked on its documents. Then, chunk by chunk: the K
samples of each question are generated with per-token logprobs; each finished trace unlocks its jobs (the trace
probe on token ids for every sample, and its prefix probes when the task asks for them; for the primary sample the
configured ablation probes, teacher-forced scoring and P(True)); the moment a question's samples and jobs are all
done its immutable records are written and flushed (:mod:`trac_tasks.generation.chunk`), so a crash loses only the
questions in flight. An engine that can interleave (vLLM's step API) submits each job the moment its trace finishes,
while the prefix is hot in the cache; the default :meth:`TracRunner.execute` generates the chunk, then runs the jobs
in batches. An engine subclass supplies four primitives: sampled generation with logprobs, greedy ≤16-token probes
that reuse the cached prefix, teacher-forced scoring of given tokens, and next-token logprobs of given candidate
strings.

Timings: every record stores the engine seconds attributed to it (``timing.generation_seconds``,
``timing.p_true_seconds``, ``probes[v].seconds``), from which a report derives each method's relative latency, and
the wall-clock seconds from its chunk's start to the arrival of each of its outputs (``timing.wall_generation``,
``timing.wall_probe_<variant>``, ``timing.wall_p_true``), from which it derives the measured latency.
"""

from __future__ import annotations

import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lm_eval.models.utils import postprocess_generated_text

from trac_metrics._warnings import TracWarning
from trac_metrics.answers import extract_answer
from trac_metrics.records import (
    AFTER_ANSWER,
    CUE_VARIANTS,
    CUT_BEFORE_ANSWER,
    DECODING_TOP_K,
    PREFIX_CONTEXT,
    PREFIX_VARIANT,
    QUESTION_CONTEXT,
    REASONING,
    WHOLE,
    ProbeRecord,
)
from trac_tasks.generation.capture import (
    P_TRUE_TEMPLATE,
    GenerationText,
    RecordSink,
    build_record,
    k_largest,
    p_true_probability,
    repeat_indices,
    token_summaries,
)
from trac_tasks.generation.chunk import ChunkState, ProbeJob
from trac_tasks.generation.config import PROBE_MAX_TOKENS, TRAC_KEY, TracConfig, sampling_top_k
from trac_tasks.generation.probe import ParsedProbe, answer_statement_cut, answer_token_span, parse_probe, prefix_cut
from trac_tasks.generation.progress import LOGGER, RunProgress, TaskSummary
from trac_tasks.generation.thinking import AUTO, ThinkingMarker, detect_marker
from trac_tasks.harness.compat import require_trac_hooks
from trac_tasks.harness.lm_eval_hooks import HOOKED, dataset_doc_id, records_dir
from trac_tasks.harness.task_scoring import scorer_of

P_TRUE_CANDIDATES = ("A", "B")


def p_true_logprobs(entries: Iterable[tuple[str, float]]) -> dict[str, float]:
    """The logprob of each P(True) candidate letter among an engine's most likely next tokens (decoded text,
    logprob): the most likely token that reads as the letter counts; a letter not among them is absent."""
    found: dict[str, float] = {}
    for text, logprob in sorted(entries, key=lambda entry: -entry[1]):
        letter = (text or "").strip()
        if letter in P_TRUE_CANDIDATES and letter not in found:
            found[letter] = logprob
    return found


def check_generation_room(max_gen_toks: int, context: int) -> None:
    """Refuse a token limit that leaves no room for a prompt (lm-eval's truncation would send an empty prompt)."""
    if max_gen_toks >= context:
        raise ValueError(
            f"trac-eval: max_gen_toks {max_gen_toks} leaves no room for a prompt in the model's {context}-token "
            "context: lower max_gen_toks (--gen_kwargs max_gen_toks=N) or give the model a longer context "
            "(max_model_len / max_length in --model_args)"
        )


def finish_reason_of(engine_reason: str | None, stop_reason: str | int | None) -> str:
    """A generation's finish reason in the records' terms, from vLLM's (in-process and served alike): ``"eos"`` (an
    end-of-sequence or stop token id, kept as the last token id), ``"stop:<string>"`` (an lm-eval stop sequence) or
    ``"length"`` (cut at the token limit)."""
    if engine_reason == "length":
        return "length"
    if engine_reason != "stop":
        raise RuntimeError(f"trac-eval: vLLM ended a generation with finish reason {engine_reason!r}")
    if stop_reason is None or isinstance(stop_reason, int):
        return "eos"
    return f"stop:{stop_reason}"


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
    chosen: Sequence[float]
    top: Sequence[Sequence[float]]
    """Returned logprobs per position: lists, or a [T, m] array with NaN for an entry not returned."""
    seconds: float
    """Engine seconds attributed to generating this response."""
    temperature: float
    top_p: float
    until: tuple[str, ...] = ()
    """lm-eval's stop strings of the request (applied to the answer part after the thinking marker)."""
    vocabulary_mean: Sequence[float] | None = None
    """Per position, the mean logprob over the whole vocabulary, where the engine has the full distribution (the HF
    backend): the full-vocabulary self-certainty's input (docs/method.md#self-certainty); None elsewhere."""

    @property
    def decoding(self) -> dict[str, float]:
        """Primary → probe decoding as stored in the record (docs/method.md#probe-decoding-and-cutting), with the
        primary's sampling top-k when one limited it (:func:`~trac_tasks.generation.config.sampling_top_k` of the
        request's generation kwargs; none for a greedy primary)."""
        decoding = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "probe_temperature": float(self.config.probe_temperature),
        }
        top_k = sampling_top_k(self.request.args[1]) if self.temperature > 0 else None
        return decoding if top_k is None else {**decoding, DECODING_TOP_K: top_k}

    @property
    def probe_sampling(self) -> tuple[float, float]:
        """(temperature, top-p) of this response's decoded probes: greedy (0, 1) by default; sampled at
        ``trac.probe_temperature`` with the primary's top-p (docs/method.md#probe-decoding-and-cutting)."""
        temperature = float(self.config.probe_temperature)
        return (temperature, float(self.top_p)) if temperature > 0 else (0.0, 1.0)

    @property
    def kind(self) -> str:
        """The answer kind of this response's document."""
        return self.config.kind_for(self.request.doc)


@dataclass(frozen=True)
class ProbeOutput:
    """What an engine returns for a greedy probe or a teacher-forced scoring."""

    token_ids: list[int]
    chosen: Sequence[float]
    top: Sequence[Sequence[float]]
    """Returned logprobs per position: lists, or a [T, m] array with NaN for an entry not returned."""
    engine_finish_reason: str
    num_prompt_tokens: int
    num_cached_tokens: int | None
    seconds: float


class TracRunner(ABC):
    """Runs TrAC requests on one lm-eval model object; subclasses implement :meth:`execute` on their engine.

    The decoded trace probe and the prefix probes run for every sample (they are cheap: their prefixes are cached);
    the ablation probes, the teacher-forced scoring and P(True) only for the primary sample (repeat 0), the only one
    they are used for.
    """

    chunk_size: int = 256
    """Requests handed to the engine together (their records are still written question by question)."""

    def __init__(self, lm: Any, tokenizer: Any, model_name: str, max_length: int, sink: Any = None) -> None:
        """``sink`` receives each complete question's records; by default the run's records file, shared by every
        call on the same model object while the records folder stays the same."""
        self.lm = lm
        self.tokenizer = tokenizer
        self.model_name = model_name
        self.max_length = max_length
        if sink is None:
            directory = records_dir()
            if getattr(lm, "_trac_sink", None) is None or lm._trac_sink.directory != directory:
                lm._trac_sink = RecordSink(directory)
            sink = lm._trac_sink
        self.sink = sink
        self._encoded: dict[str, list[int]] = {}
        self._markers: dict[str, ThinkingMarker] = {}
        self.progress: RunProgress | None = None

    @abstractmethod
    def execute(self, chunk: ChunkState) -> None:
        """Generate the chunk's responses and run the jobs they unlock, reporting each result to
        :meth:`trace_finished` / :meth:`job_finished` (which write every question the moment it is complete)."""

    # ------------------------------------------------------------------------------------------------ the flow
    def encode(self, text: str) -> list[int]:
        if text not in self._encoded:
            self._encoded[text] = self.tokenizer(text, add_special_tokens=False).input_ids if text else []
        return list(self._encoded[text])

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def marker_for(self, config: TracConfig) -> ThinkingMarker:
        """The end-of-thinking marker in force: the task's ``trac.marker``, or for ``auto`` the one found from
        lm-eval's ``think_end_token``, the tokenizer or the chat template (:mod:`trac_tasks.generation.thinking`)."""
        if config.marker not in self._markers:
            text = config.marker
            if text == AUTO:
                text = detect_marker(self.tokenizer, getattr(self.lm, "think_end_token", None))
                LOGGER.info(
                    "trac-eval: end-of-thinking marker %s", repr(text) if text else "none (not a thinking model)"
                )
            self._markers[config.marker] = ThinkingMarker.build(text, self.encode)
        return self._markers[config.marker]

    def answer_of(self, trace: Trace) -> str | None:
        """The response's answer: read after its last end-of-thinking marker; none when its thinking is still open
        (cut before answering); lm-eval's text when the model did not think. A task labelled by its own scoring
        reads it with its own filter from lm-eval's text (docs/method.md#task-scored-labels)."""
        marker = self.marker_for(trace.config)
        state = marker.state(trace.prompt_ids, trace.body_ids, trace.raw_text)
        if state == "open":
            return None
        if trace.config.label_source:
            return scorer_of(trace.request.task_name).answer(trace.request.doc, trace.text, trace.kind)
        if state == "none":
            return extract_answer(trace.text, kind=trace.kind)
        answer_ids = marker.answer_ids(trace.body_ids)
        if answer_ids is None:  # written with other token boundaries: the text after the marker
            tail = trace.raw_text[trace.raw_text.rindex(marker.text) + len(marker.text) :]
        else:
            tail = self.decode(answer_ids)
        # lm-eval's stop strings apply to the answer part, as they do to the text lm-eval scores
        return extract_answer(postprocess_generated_text(tail, list(trace.until), None), kind=trace.kind)

    def before_generation(self, requests: Sequence[Any], configs: Sequence[TracConfig]) -> None:  # noqa: B027
        """Checks an engine makes once the documents are validated and before anything is generated (none here)."""

    def run(self, requests: Sequence[Any], disable_tqdm: bool = False) -> list[GenerationText]:
        """Generate, probe and record ``requests`` chunk by chunk; returns the texts in request order."""
        repeats = repeat_indices(requests)
        configs = validated_configs(requests)
        for config in dict.fromkeys(configs):  # a model whose marker cannot be found is refused before generating
            self.marker_for(config)
        self.before_generation(requests, configs)
        self.summaries: dict[str, TaskSummary] = {}
        self.progress = RunProgress(len(requests), disable=disable_tqdm)
        texts: list[GenerationText] = []
        try:
            for part in _question_aligned_chunks(repeats, self.chunk_size):
                chunk = ChunkState(requests[part], repeats[part], configs[part])
                self.execute(chunk)
                if chunk.unfinished:
                    raise RuntimeError(
                        f"trac-eval: the engine finished without an output for "
                        f"{len(chunk.unfinished)} of {len(chunk.requests)} generations"
                    )
                self._write_complete(chunk)
                texts.extend(chunk.texts)
        finally:
            self.progress.close()
        for summary in self.summaries.values():
            LOGGER.info(summary.line())
            if (undefined := summary.p_true_warning()) is not None:
                warnings.warn(undefined, TracWarning, stacklevel=2)
        return texts

    def trace_finished(self, chunk: ChunkState, index: int, trace: Trace) -> list[ProbeJob]:
        """Store a finished trace; returns the jobs it unlocks (its own, and the shuffled-trace probe of a primary
        that was waiting for this trace). Questions it completes are written."""
        chunk.traces[index] = trace
        chunk.arrive(index, "generation")
        chunk.answers[index] = self.answer_of(trace)
        self.progress.trace_finished(len(trace.generated_ids))
        jobs = self._jobs_of(chunk, index)
        for waiting in sorted(chunk.waiting_for_partner):
            jobs += self._shuffled_job(chunk, waiting)
        chunk.open(jobs)
        self._write_complete(chunk)
        return jobs

    def job_finished(
        self, chunk: ChunkState, job: ProbeJob, output: ProbeOutput | dict[str, float], seconds: float
    ) -> None:
        """Store a job's output in its response's probes (or P(True)); questions it completes are written."""
        trace = chunk.traces[job.index]
        if job.kind == "next_token":
            chunk.p_true[job.index] = p_true_probability(output)
            chunk.p_true_seconds[job.index] = seconds
        elif job.kind == "score":
            parsed = ParsedProbe(
                answer=job.answer,
                kept_tokens=len(job.tokens),
                text=self.decode(job.tokens),
                answer_token_count=min(len(self.encode(job.answer or "")), len(job.tokens)),
                finish_reason="teacher_forced",
            )
            chunk.probes[job.index][job.variant] = probe_record(job, output, parsed, trace.config.top_k)
        else:
            parsed = parse_probe(
                output.token_ids,
                self.decode,
                trace.config.cue,
                trace.config.closing_delimiter(),
                output.engine_finish_reason,
                trace.kind,
            )
            record = probe_record(job, output, parsed, trace.config.top_k)
            if job.fraction is None:
                chunk.probes[job.index][job.variant] = record
            else:
                chunk.prefix_probes[job.index].append(record)
        chunk.finish_job(job)
        self.progress.job_finished()
        self._write_complete(chunk)

    def write_question(self, task: str, records: list[Any]) -> None:
        """Append and flush one complete question's records; count them for the task's summary line."""
        path = self.sink.write(records)
        self.summaries.setdefault(task, TaskSummary(task)).add_question(records, path)

    def _write_complete(self, chunk: ChunkState) -> None:
        """Build, write and flush the records of every question that just became complete."""
        for (task, _), indices in chunk.complete_questions():
            records = [self._record(chunk, index) for index in indices]
            self.write_question(task, records)
            for index, record in zip(indices, records, strict=True):
                chunk.texts[index] = GenerationText(record.text, record)

    def _record(self, chunk: ChunkState, index: int) -> Any:
        trace = chunk.traces[index]
        p_true = chunk.p_true[index]
        label = None
        if trace.config.label_source:
            label = scorer_of(trace.request.task_name).label(trace.request.doc, trace.text)
        return build_record(
            trace.request,
            trace.repeat,
            trace.config,
            model=self.model_name,
            prompt_token_count=len(trace.prompt_ids),
            generated_ids=trace.generated_ids,
            text=trace.text,
            generated_text=trace.raw_text,
            answer=chunk.answers[index],
            marker=self.marker_for(trace.config).text,
            finish_reason=trace.finish_reason,
            summaries=token_summaries(trace.chosen, trace.top, trace.config.top_k),
            vocabulary_mean_logprob=trace.vocabulary_mean,
            probes=chunk.probes[index],
            prefix_probes=chunk.prefix_probes[index],
            reasoning_tokens=self.marker_for(trace.config).reasoning_length(trace.body_ids, self.decode),
            answer_tokens=answer_token_span(
                trace.body_ids, self.decode, chunk.answers[index], trace.kind, self.marker_for(trace.config).text
            ),
            p_true=p_true,
            label=label,
            num_samples=int(trace.request.repeats or 1),
            decoding=trace.decoding,
            timing={
                "generation_seconds": trace.seconds,
                **({"p_true_seconds": chunk.p_true_seconds[index]} if p_true is not None else {}),
                **{f"wall_{key}": seconds for key, seconds in chunk.arrived[index].items()},
            },
        )

    # ---------------------------------------------------------------------------------------------- the jobs
    def _jobs_of(self, chunk: ChunkState, index: int) -> list[ProbeJob]:
        """Response ``index``'s jobs once its trace is finished: the trace probe and the configured prefix probes,
        and for a primary sample the configured control probes (question-only, shuffled-trace, restatement after the
        answer), the cue variants, teacher-forced scoring and P(True). Jobs whose prompt would not fit the model's
        context are skipped with a warning (stored as missing)."""
        trace = chunk.traces[index]
        answer = chunk.answers[index]
        trace_job = self._trace_job(index, trace)
        jobs = [trace_job, *self._prefix_jobs(index, trace)]
        if trace.repeat == 0:
            config = trace.config
            if "question_only" in config.probe_variants:
                appended, suffix_ids = self._suffix(config, closes_thinking=bool(self.marker_for(config).ids))
                prompt_ids = trace.prompt_ids + suffix_ids
                jobs.append(ProbeJob(index, "question_only", appended, prompt_ids, QUESTION_CONTEXT, 0))
            if "after_answer" in config.probe_variants:
                jobs.append(self._after_answer_job(index, trace))
            jobs += [self._trace_job(index, trace, v) for v in config.probe_variants if v in CUE_VARIANTS]
            if "teacher_forced" in config.probe_variants:
                tokens = tuple(self.encode((answer or "") + (config.closing_delimiter() or "")))
                jobs.append(
                    ProbeJob(
                        index,
                        "teacher_forced",
                        trace_job.appended_text,
                        trace_job.prompt_ids,
                        trace_job.context,
                        trace_job.context_tokens,
                        kind="score",
                        tokens=tokens,
                        answer=answer,
                    )
                )
            if config.p_true:
                question = P_TRUE_TEMPLATE.format(answer=answer if answer is not None else "(none)")
                jobs.append(
                    ProbeJob(
                        index,
                        "p_true",
                        question,
                        trace.prompt_ids + self.encode(question),
                        QUESTION_CONTEXT,
                        0,
                        kind="next_token",
                    )
                )
            if "shuffled_trace" in config.probe_variants:
                chunk.waiting_for_partner.add(index)
        return [job for job in jobs if self._fits(job, trace)]

    def _prefix_jobs(self, index: int, trace: Trace) -> list[ProbeJob]:
        """The prefix probes of response ``index`` (docs/method.md#prefix-probes): for each configured fraction, the
        probe prompt built as the trace probe's is, after the trace cut at a step boundary before that fraction of
        its reasoning tokens (:func:`~trac_tasks.generation.probe.prefix_cut`)."""
        marker = self.marker_for(trace.config)
        reasoning = trace.body_ids[: marker.reasoning_length(trace.body_ids, self.decode)]
        jobs = []
        for fraction in trace.config.prefix_probes:
            kept = prefix_cut(reasoning, fraction, self.decode)
            body = reasoning[:kept]
            open_after = marker.state(trace.prompt_ids, body, self.decode(body)) == "open"
            appended, suffix_ids = self._suffix(trace.config, closes_thinking=open_after)
            prompt_ids = trace.prompt_ids + body + suffix_ids
            jobs.append(
                ProbeJob(
                    index,
                    PREFIX_VARIANT,
                    appended,
                    prompt_ids,
                    PREFIX_CONTEXT,
                    kept,
                    fraction=fraction,
                    trace_tokens=kept,
                )
            )
        return jobs

    def _shuffled_job(self, chunk: ChunkState, index: int) -> list[ProbeJob]:
        """The shuffled-trace probe of primary ``index``: its prompt with the reasoning of the primary response of
        the next question of the same task in the chunk (cyclically; read as :meth:`probe_context` reads a
        response's own), once that trace is finished; none (with a warning) when the chunk holds no other question
        of the task."""
        if chunk.traces[index] is None:
            return []
        other = _other_question(index, chunk.requests, chunk.repeats)
        trace = chunk.traces[index]
        if other is None:
            chunk.waiting_for_partner.discard(index)
            warnings.warn(
                f"trac-eval: no other question in this chunk for the shuffled_trace probe of "
                f"{trace.request.task_name} doc {trace.request.doc_id}",
                TracWarning,
                stacklevel=2,
            )
            return []
        partner = chunk.traces[other]
        if partner is None:
            return []
        chunk.waiting_for_partner.discard(index)
        context, ids, closes = self.probe_context(partner)
        appended, suffix_ids = self._suffix(trace.config, closes)
        job = ProbeJob(index, "shuffled_trace", appended, trace.prompt_ids + ids + suffix_ids, context, len(ids))
        return [job] if self._fits(job, trace) else []

    def probe_context(self, trace: Trace) -> tuple[str, list[int], bool]:
        """What of ``trace``'s response the paper's probe Q_θ(x, r) reads (docs/method.md#probe-prompt): its
        context kind, those response ids r, and whether the end-of-thinking marker follows them.

        - closed thinking section: the ids before its last marker (``reasoning``), then the marker;
        - open thinking section (cut at the token limit): every generated id (``whole``), then the marker;
        - no thinking section: the ids before the line stating its final answer (``cut_before_answer``,
          :func:`~trac_tasks.generation.probe.answer_statement_cut`), or every id when it states none (``whole``);
          no marker.
        """
        marker = self.marker_for(trace.config)
        state = marker.state(trace.prompt_ids, trace.body_ids, trace.raw_text)
        if state == "closed":
            return REASONING, trace.body_ids[: marker.reasoning_length(trace.body_ids, self.decode)], True
        if state == "open":
            return WHOLE, list(trace.body_ids), True
        cut = answer_statement_cut(trace.body_ids, self.decode, trace.kind, marker.text or None)
        if cut is None:
            return WHOLE, list(trace.body_ids), False
        return CUT_BEFORE_ANSWER, trace.body_ids[:cut], False

    def _suffix(self, config: TracConfig, closes_thinking: bool, variant: str = "trace") -> tuple[str, list[int]]:
        """What follows the question and the response ids in a probe prompt, as text and ids: the end-of-thinking
        marker when ``closes_thinking``, then the cue of probe ``variant`` (docs/method.md#probe-prompt,
        docs/method.md#cue-variants)."""
        marker = self.marker_for(config)
        cue = config.variant_cue(variant)
        if closes_thinking and marker.ids:
            return marker.text + cue, [*marker.ids, *self.encode(cue)]
        return cue, self.encode(cue)

    def _fits(self, job: ProbeJob, trace: Trace) -> bool:
        """Whether the job's prompt plus what it adds fits the model's context; warns when it does not."""
        # a scoring request still decodes one token after the scored ones
        new_tokens = {"decode": PROBE_MAX_TOKENS, "score": len(job.tokens) + 1, "next_token": 1}[job.kind]
        if len(job.prompt_ids) + new_tokens <= self.max_length:
            return True
        where = f" ({trace.request.task_name} doc {trace.request.doc_id})"
        warnings.warn(
            f"trac-eval: the {job.variant} job{where} needs {len(job.prompt_ids) + new_tokens} tokens, "
            f"more than the model's {self.max_length}; it is stored as missing",
            TracWarning,
            stacklevel=2,
        )
        return False

    def _trace_job(self, index: int, trace: Trace, variant: str = "trace") -> ProbeJob:
        """The paper's probe Q_θ(x, r): prompt ⊕ r ⊕ marker ⊕ cue (:meth:`probe_context`); for a cue variant
        (docs/method.md#cue-variants) the same with the variant's cue."""
        context, ids, closes = self.probe_context(trace)
        appended, suffix_ids = self._suffix(trace.config, closes, variant)
        return ProbeJob(index, variant, appended, trace.prompt_ids + ids + suffix_ids, context, len(ids))

    def _after_answer_job(self, index: int, trace: Trace) -> ProbeJob:
        """The ``after_answer`` control (docs/method.md#probe-variants): the whole generation, the answer it wrote
        included, then the marker when its thinking section is still open, then the cue — the probe of records
        before schema trac-record/2."""
        marker = self.marker_for(trace.config)
        open_trace = marker.state(trace.prompt_ids, trace.body_ids, trace.raw_text) == "open"
        appended, suffix_ids = self._suffix(trace.config, closes_thinking=open_trace)
        prompt_ids = trace.prompt_ids + trace.body_ids + suffix_ids
        return ProbeJob(index, "after_answer", appended, prompt_ids, AFTER_ANSWER, len(trace.body_ids))

    def trace_probe_job(self, index: int, trace: Trace) -> ProbeJob | None:
        """The ``trace`` probe of response ``index`` (docs/method.md#probe-prompt), or None (with a warning) when it
        would not fit."""
        job = self._trace_job(index, trace)
        return job if self._fits(job, trace) else None

    def prefix_probe_jobs(self, index: int, trace: Trace) -> list[ProbeJob]:
        """The prefix probes of response ``index`` its task asks for (docs/method.md#prefix-probes), those that would
        not fit left out (with a warning)."""
        return [job for job in self._prefix_jobs(index, trace) if self._fits(job, trace)]


class BatchTracRunner(TracRunner):
    """A runner whose engine offers four batch primitives; :meth:`execute` generates the whole chunk, then runs the
    jobs in one batch per kind (engines that can interleave override it and use the primitives as a fallback)."""

    @abstractmethod
    def generate(self, requests: Sequence[Any], repeats: Sequence[int], configs: Sequence[TracConfig]) -> list[Trace]:
        """Sample one response per request exactly as lm-eval would, keeping token ids and logprobs."""

    @abstractmethod
    def greedy_probes(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob]) -> list[ProbeOutput]:
        """Greedy ≤ 16-token continuation of each job's prompt, with per-token top-k logprobs."""

    @abstractmethod
    def score_tokens(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob]) -> list[ProbeOutput]:
        """Logprobs of ``job.tokens`` placed right after ``job.prompt_ids`` (teacher forcing)."""

    @abstractmethod
    def next_token_logprobs(
        self, traces: Sequence[Trace], jobs: Sequence[ProbeJob], candidates: Sequence[str]
    ) -> list[dict[str, float]]:
        """Logprob of each candidate string as the next token after each job's prompt (absent when unknown)."""

    def execute(self, chunk: ChunkState) -> None:
        traces = self.generate(chunk.requests, chunk.repeats, chunk.configs)
        jobs = [job for index, trace in enumerate(traces) for job in self.trace_finished(chunk, index, trace)]
        batches = {
            "decode": lambda batch: self.greedy_probes(chunk.traces, batch),
            "score": lambda batch: self.score_tokens(chunk.traces, batch),
            "next_token": lambda batch: self.next_token_logprobs(chunk.traces, batch, P_TRUE_CANDIDATES),
        }
        for kind, run_batch in batches.items():
            batch = [job for job in jobs if job.kind == kind]
            started = time.perf_counter()
            outputs = run_batch(batch) if batch else []
            share = (time.perf_counter() - started) / max(len(batch), 1)
            for job, output in zip(batch, outputs, strict=True):
                self.job_finished(chunk, job, output, share)


def _question_aligned_chunks(repeats: Sequence[int], size: int) -> list[slice]:
    """Consecutive slices of about ``size`` requests that never split a question's K samples (lm-eval passes them
    in a row, repeat 0 first) and hold at least two questions where there are two (the shuffled-trace probe borrows
    another question's trace from its chunk)."""
    if not repeats:
        return []
    starts, questions = [0], 0
    for index, repeat in enumerate(repeats):
        if repeat != 0:
            continue
        if index - starts[-1] >= size and questions >= 2:
            starts.append(index)
            questions = 0
        questions += 1
    if questions == 1 and len(starts) > 1:  # a lone last question joins the chunk before it
        starts.pop()
    return [slice(start, end) for start, end in zip(starts, [*starts[1:], len(repeats)], strict=True)]


def _other_question(index: int, requests: Sequence[Any], repeats: Sequence[int]) -> int | None:
    """The primary sample of the next question of the same task in the chunk (cyclically), or None."""
    request = requests[index]
    candidates = [
        i
        for i, other in enumerate(requests)
        if other.task_name == request.task_name and other.doc_id != request.doc_id and repeats[i] == 0
    ]
    later = [i for i in candidates if i > index]
    return (later or candidates or [None])[0]


def validated_configs(requests: Sequence[Any]) -> list[TracConfig]:
    """Each request's ``trac`` block, after every task's templates are checked on its documents
    (:func:`validate_documents`)."""
    configs = [TracConfig.from_gen_kwargs(request.args[1], request.task_name) for request in requests]
    validate_documents(requests, configs)
    return configs


def validate_documents(requests: Sequence[Any], configs: Sequence[TracConfig]) -> None:
    """Render every task's templates (``reference``, a templated ``answer_kind``) and look up its
    ``metadata_fields`` on each of its documents before anything is generated, so a broken YAML fails at once
    with the task, the template and the first failing document instead of after an hour of generation."""
    seen: set[tuple[str, str]] = set()
    for request, config in zip(requests, configs, strict=True):
        key = (request.task_name, str(request.doc_id))
        if key in seen:
            continue
        seen.add(key)
        try:
            config.render_reference(request.doc)
            config.kind_for(request.doc)
            config.metadata_of(request.doc)
        except ValueError as error:
            raise ValueError(f"task {request.task_name}, document {dataset_doc_id(request)}: {error}") from None


def probe_record(job: ProbeJob, output: ProbeOutput, parsed: ParsedProbe, top_k: int) -> ProbeRecord:
    """The stored probe: the engine output cut at the closing delimiter, top-k logprobs padded to width k."""
    kept = parsed.kept_tokens
    return ProbeRecord(
        variant=job.variant,
        appended_text=job.appended_text,
        text=parsed.text,
        answer=parsed.answer,
        token_ids=output.token_ids[:kept],
        token_logprobs=output.chosen[:kept],
        top_logprobs=[(k_largest(values, top_k) + [float("-inf")] * top_k)[:top_k] for values in output.top[:kept]],
        answer_token_count=parsed.answer_token_count,
        finish_reason=parsed.finish_reason,
        num_prompt_tokens=output.num_prompt_tokens,
        num_cached_tokens=output.num_cached_tokens,
        context=job.context,
        context_tokens=job.context_tokens,
        seconds=output.seconds,
        fraction=job.fraction,
        trace_tokens=job.trace_tokens,
    )


def hook_generate_until(backend: type, runner_class: type[TracRunner]) -> None:
    """Replace ``backend.generate_until`` by a router: TrAC requests to ``runner_class``, the rest unchanged."""
    original = backend.generate_until

    def generate_until(self: Any, requests: list[Any], *args: Any, **kwargs: Any) -> list[str]:
        return route_trac_requests(self, requests, original, runner_class, *args, **kwargs)

    generate_until.__doc__ = original.__doc__
    setattr(generate_until, HOOKED, True)
    backend.generate_until = generate_until


def route_trac_requests(
    lm: Any, requests: list[Any], original: Any, runner_class: type, *args: Any, **kwargs: Any
) -> list[str]:
    """Send TrAC requests to ``runner_class(lm)``, the others to lm-eval's ``original`` method called with the same
    extra arguments (``disable_tqdm``, positional or keyword); keep the order."""
    is_trac = [TRAC_KEY in request.args[1] for request in requests]
    if not any(is_trac):
        return original(lm, requests, *args, **kwargs)
    require_trac_hooks(only_failed=True)
    if getattr(lm, "world_size", 1) > 1:
        raise ValueError(
            "TrAC tasks need each probe on the engine that generated its trace: several lm-eval processes "
            "(accelerate / torchrun) are not supported by the trac-eval hook; use data_parallel_size=N with --model "
            "vllm, or a vLLM server with --data-parallel-size and --model local-completions"
        )
    results: list[str] = [""] * len(requests)
    plain = [index for index, flag in enumerate(is_trac) if not flag]
    if plain:
        for index, text in zip(plain, original(lm, [requests[i] for i in plain], *args, **kwargs), strict=True):
            results[index] = text
    trac = [index for index, flag in enumerate(is_trac) if flag]
    disable_tqdm = bool(args[0] if args else kwargs.get("disable_tqdm", False))
    for index, text in zip(trac, runner_class(lm).run([requests[i] for i in trac], disable_tqdm), strict=True):
        results[index] = text
    return results
