"""The TrAC hook of lm-eval's ``vllm`` backend (docs/architecture.md#vllm-backend).

``install`` wraps ``VLLM.generate_until``: requests whose generation kwargs carry a ``trac`` block run through
:class:`VllmTracRunner`; all others go to lm-eval's own method unchanged. Prompts are tokenized, truncated and
stopped with lm-eval's own helpers, so the text returned for a TrAC request is what plain lm-eval returns for the
same sample. The runner drives vLLM's engine step by step and submits each trace probe the moment its trace
finishes, as a token-id prompt whose prompt + trace prefix vLLM has just computed, so its prefix cache serves it
while the prefix is hot (``num_cached_tokens`` is recorded per probe; it counts whole KV blocks, so use
``enable_prefix_caching=True`` and, on CPU, ``block_size=32``).

Generations are captured on vLLM's fast output path when the release has it (:func:`fast_capture_supported`,
docs/architecture.md#vllm-backend): flat logprobs read as numpy arrays, and, for a request whose only stop string is
the EOS token's text, no detokenization in the engine loop; its text is vLLM's own detokenizer run once over the
finished token ids (:func:`capture_completion`), so the records are those of the detokenizing path.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np

from trac_tasks.generation.chunk import ChunkState, ProbeJob
from trac_tasks.generation.config import NEXT_TOKEN_LOGPROBS, PROBE_MAX_TOKENS, TracConfig, strip_trac
from trac_tasks.generation.runner import (
    BatchTracRunner,
    ProbeOutput,
    Trace,
    check_generation_room,
    finish_reason_of,
    hook_generate_until,
    p_true_logprobs,
)


@dataclass(frozen=True)
class Generation:
    """One TrAC generation request: its prompt ids, the ``SamplingParams`` lm-eval's ``generate_until`` would build
    (plus top-k logprobs; ``params``), those the engine gets (``engine_params``: the fast output path's, or
    ``params`` itself) and lm-eval's stop strings (``until``)."""

    prompt_ids: list[int]
    params: Any
    engine_params: Any
    until: list[str]


@dataclass(frozen=True)
class CapturedCompletion:
    """What a record takes from one finished vLLM completion: the generated token ids, vLLM's text, the finish
    reason in the records' terms, the chosen-token logprobs and the returned logprobs per position (a [T, m] array
    with NaN for an entry not returned, or per-position lists, :func:`~trac_tasks.generation.capture.token_summaries`
    takes both)."""

    token_ids: list[int]
    text: str
    finish_reason: str
    chosen: np.ndarray | list[float]
    top: np.ndarray | list[list[float]]


@functools.cache
def fast_capture_supported() -> bool:
    """Whether this vLLM release has the fast output path: every symbol of ``compat.FAST_CAPTURE`` (``SamplingParams``
    with ``flat_logprobs`` and ``detokenize``, ``FlatLogprobs``, the detokenizer class its output processor runs) is
    there (docs/architecture.md#vllm-backend)."""
    from trac_tasks.harness.compat import FAST_CAPTURE, symbol_problem

    return not any(map(symbol_problem, FAST_CAPTURE))


def engine_sampling_params(sampling_params: type, kwargs: dict[str, Any], eos: str) -> Any:
    """The ``SamplingParams`` a generation built from ``kwargs`` (``max_tokens``, ``stop`` ...) is sent with on the
    fast output path: flat logprobs and, when its only stop string is the EOS token's text, neither detokenization
    nor stop strings (the engine still stops at the EOS token id; :func:`capture_completion` detokenizes the
    finished ids and applies the stop strings exactly as the engine loop would have;
    docs/architecture.md#vllm-backend)."""
    fast = {"flat_logprobs": True}
    if all(stop == eos for stop in kwargs.get("stop") or ()):
        fast.update(stop=[], detokenize=False)
    return sampling_params(**{**kwargs, **fast})


def install(module: ModuleType) -> None:
    """Wrap ``module.VLLM.generate_until`` so TrAC requests are captured and probed."""
    hook_generate_until(module.VLLM, VllmTracRunner)


class VllmTracRunner(BatchTracRunner):
    """The runner's engine primitives on an lm-eval ``VLLM`` object (one in-process ``vllm.LLM``)."""

    def __init__(self, lm: Any, sink: Any = None) -> None:
        from vllm import SamplingParams, TokensPrompt

        super().__init__(lm, lm.tokenizer, str(lm.model_args.get("model")), lm.max_length, sink)
        self.sampling_params = SamplingParams
        self.tokens_prompt = TokensPrompt
        self.request_counter = itertools.count()
        self.fast_capture = fast_capture_supported()
        self._engine_tokenizer: Any = None

    @property
    def engine_tokenizer(self) -> Any:
        """The tokenizer vLLM's output processor detokenizes with (the engine's, not lm-eval's copy)."""
        if self._engine_tokenizer is None:
            self._engine_tokenizer = self.lm.model.get_tokenizer()
        return self._engine_tokenizer

    def run(self, requests: Sequence[Any], disable_tqdm: bool = False) -> list[Any]:
        """With lm-eval's ``data_parallel_size > 1``, on that many Ray replicas
        (:mod:`trac_tasks.engines.data_parallel`)."""
        if int(getattr(self.lm, "data_parallel_size", 1) or 1) > 1:
            from trac_tasks.engines.data_parallel import run_on_replicas

            return run_on_replicas(self, requests)
        return super().run(requests, disable_tqdm)

    def _generate(self, prompts: Sequence[list[int]], params: Any) -> list[Any]:
        return self.lm.model.generate(
            [self.tokens_prompt(prompt_token_ids=ids) for ids in prompts],
            sampling_params=params,
            use_tqdm=False,
            lora_request=self.lm.lora_request,
        )

    def _sampling_requests(self, requests: Sequence[Any], configs: Sequence[TracConfig]) -> list[Generation]:
        """Prompt ids, SamplingParams (with top-k logprobs) and lm-eval stop strings of each request, built with
        lm-eval's own helpers exactly as its ``generate_until`` would, and the SamplingParams sent on the fast output
        path (:func:`engine_sampling_params`) where the release has it."""
        from lm_eval.models.utils import maybe_truncate

        eos = self.tokenizer.decode(self.lm.eot_token_id)
        encodings = self.lm.tok_encode([request.args[0] for request in requests])
        prepared = []
        for request, config, encoding in zip(requests, configs, encodings, strict=True):
            kwargs, until, max_gen_toks = self.lm.modify_gen_kwargs(
                strip_trac(request.args[1]), eos=eos, default_max_gen_toks=self.lm.max_gen_toks
            )
            check_generation_room(max_gen_toks, self.lm.max_length)
            prompt_ids, max_gen_toks = maybe_truncate(
                encoding,
                max_gen_toks=max_gen_toks,
                max_model_len=self.lm.max_length,
                side=self.lm.truncation_side,
                verbose=True,
            )
            kwargs["logprobs"] = max(config.top_k, int(kwargs.get("logprobs") or 0))
            stop = [s for s in until if s == eos] if self.lm.think_end_token else until
            settings = dict(max_tokens=max_gen_toks, stop=stop, **kwargs)  # a repeated key raises, as a call would
            params = self.sampling_params(**settings)
            engine_params = engine_sampling_params(self.sampling_params, settings, eos) if self.fast_capture else params
            prepared.append(Generation(list(prompt_ids), params, engine_params, until))
        return prepared

    def execute(self, chunk: ChunkState) -> None:
        """Drive vLLM's engine step by step: each finished trace's jobs (its probe, and for a primary sample the
        ablation probes, teacher-forced scoring and P(True)) are submitted at once, so the prompt + trace prefix is
        still in the prefix cache and the jobs decode alongside the generations still running; each question's
        records are written the moment its last job returns. Without the step API (another vLLM release), the
        public ``LLM.generate`` path generates the chunk and then runs its jobs.

        Engine time is attributed per step, split equally between the requests added and not yet finished (with a
        chunk larger than the engine's ``max_num_seqs`` some of them wait, and are charged all the same); a
        response's ``seconds`` and its jobs' ``seconds`` are the sums of their shares.
        """
        engine = getattr(self.lm.model, "llm_engine", None)
        if not all(hasattr(engine, name) for name in ("add_request", "step", "has_unfinished_requests")):
            super().execute(chunk)
            return
        if engine.has_unfinished_requests():
            raise RuntimeError("trac-eval: the vLLM engine has unfinished requests from another caller")
        prepared = self._sampling_requests(chunk.requests, chunk.configs)
        loop = _EngineLoop(engine, self)

        def job_done(job: ProbeJob) -> Callable[[Any, float], None]:
            return lambda output, seconds: self.job_finished(
                chunk, job, self._job_result(job, output, seconds), seconds
            )

        def generation_done(index: int) -> Callable[[Any, float], None]:
            def handle(output: Any, seconds: float) -> None:
                trace = self._trace(
                    chunk.requests[index], chunk.repeats[index], chunk.configs[index], prepared[index], output, seconds
                )
                for job in self.trace_finished(chunk, index, trace):
                    loop.submit(*self._job_request(job, chunk.traces[job.index]), job_done(job))

            return handle

        try:
            for index, generation in enumerate(prepared):
                loop.submit(generation.prompt_ids, generation.engine_params, generation_done(index))
            loop.run()
        except BaseException:
            loop.abort()  # leave the engine clean for the next call on the same model (also after Ctrl-C)
            raise

    def _job_request(self, job: ProbeJob, trace: Trace) -> tuple[list[int], Any]:
        """The token-id prompt and sampling parameters of a job: a ≤ 16-token probe (greedy, or sampled as the
        response's ``probe_sampling`` says), one step with the prompt logprobs of the scored tokens, or one step with
        the 20 most likely next tokens."""
        top_k = trace.config.top_k
        if job.kind == "score":
            return job.prompt_ids + list(job.tokens), self.sampling_params(
                temperature=0.0, max_tokens=1, prompt_logprobs=top_k
            )
        if job.kind == "next_token":
            return job.prompt_ids, self.sampling_params(temperature=0.0, max_tokens=1, logprobs=NEXT_TOKEN_LOGPROBS)
        temperature, top_p = trace.probe_sampling
        return job.prompt_ids, self.sampling_params(
            temperature=temperature, top_p=top_p, max_tokens=PROBE_MAX_TOKENS, logprobs=top_k
        )

    def _job_result(self, job: ProbeJob, output: Any, seconds: float) -> ProbeOutput | dict[str, float]:
        """A job's engine output in the runner's terms."""
        if job.kind == "next_token":
            return p_true_logprobs(
                (entry.decoded_token, entry.logprob) for entry in output.outputs[0].logprobs[0].values()
            )
        if job.kind == "score":
            chosen, top = _logprob_arrays(job.tokens, output.prompt_logprobs[len(job.prompt_ids) :])
            return ProbeOutput(
                token_ids=list(job.tokens),
                chosen=chosen,
                top=top,
                engine_finish_reason="teacher_forced",
                num_prompt_tokens=len(job.prompt_ids),
                num_cached_tokens=output.num_cached_tokens,
                seconds=seconds,
            )
        completion = output.outputs[0]
        chosen, top = _logprob_arrays(completion.token_ids, completion.logprobs)
        return ProbeOutput(
            token_ids=list(completion.token_ids),
            chosen=chosen,
            top=top,
            engine_finish_reason=_probe_finish_reason(completion.finish_reason),
            num_prompt_tokens=len(job.prompt_ids),
            num_cached_tokens=output.num_cached_tokens,
            seconds=seconds,
        )

    def _trace(
        self, request: Any, repeat: int, config: TracConfig, generation: Generation, output: Any, seconds: float
    ) -> Trace:
        from lm_eval.models.utils import postprocess_generated_text

        tokenizer = None if generation.engine_params.detokenize else self.engine_tokenizer
        captured = capture_completion(output.outputs[0], generation, tokenizer)
        generated = captured.token_ids
        params = generation.params
        return Trace(
            request=request,
            repeat=repeat,
            config=config,
            prompt_ids=generation.prompt_ids,
            generated_ids=generated,
            # an EOS or stop token id ends the list; the trace body the probe continues excludes it
            body_ids=generated[:-1] if captured.finish_reason == "eos" else generated,
            raw_text=captured.text,
            text=postprocess_generated_text(captured.text, generation.until, self.lm.think_end_token),
            finish_reason=captured.finish_reason,
            chosen=captured.chosen,
            top=captured.top,
            seconds=seconds,
            temperature=float(params.temperature),
            top_p=float(params.top_p) if params.temperature > 0 else 1.0,
            until=tuple(generation.until),
        )

    def generate(self, requests: Sequence[Any], repeats: Sequence[int], configs: Sequence[TracConfig]) -> list[Trace]:
        """The whole batch through the public ``LLM.generate`` (the path without the step API)."""
        prepared = self._sampling_requests(requests, configs)
        started = time.perf_counter()
        outputs = self._generate([one.prompt_ids for one in prepared], [one.engine_params for one in prepared])
        seconds = (time.perf_counter() - started) / max(len(prepared), 1)
        return [
            self._trace(request, repeat, config, generation, output, seconds)
            for request, repeat, config, generation, output in zip(
                requests, repeats, configs, prepared, outputs, strict=True
            )
        ]

    def _run_jobs(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob]) -> list[Any]:
        """Jobs of one kind through ``LLM.generate``; their wall time is shared equally."""
        if not jobs:
            return []
        requests = [self._job_request(job, traces[job.index]) for job in jobs]
        started = time.perf_counter()
        outputs = self._generate([prompt for prompt, _ in requests], [params for _, params in requests])
        seconds = (time.perf_counter() - started) / len(jobs)
        return [self._job_result(job, output, seconds) for job, output in zip(jobs, outputs, strict=True)]

    def greedy_probes(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob]) -> list[ProbeOutput]:
        return self._run_jobs(traces, jobs)

    def score_tokens(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob]) -> list[ProbeOutput]:
        """Prompt logprobs of the given tokens (vLLM does not read the prefix cache for such requests)."""
        return self._run_jobs(traces, jobs)

    def next_token_logprobs(
        self, traces: Sequence[Trace], jobs: Sequence[ProbeJob], candidates: Sequence[str]
    ) -> list[dict[str, float]]:
        """Read from the 20 most likely next tokens: a candidate outside them is absent (probability ≈ 0)."""
        return self._run_jobs(traces, jobs)


class _EngineLoop:
    """Submits token-id prompts to vLLM's engine under the runner's own request ids, steps the engine until every
    request is done, and calls each request's handler with its final output and the engine seconds attributed to
    it (each step's wall time shared equally by the requests in flight). Handlers may submit more requests."""

    def __init__(self, engine: Any, runner: VllmTracRunner) -> None:
        self.engine = engine
        self.runner = runner
        self.handlers: dict[str, Callable[[Any, float], None]] = {}
        self.seconds: dict[str, float] = {}

    def submit(self, prompt_ids: list[int], params: Any, handler: Callable[[Any, float], None]) -> None:
        from vllm.sampling_params import RequestOutputKind

        params.output_kind = RequestOutputKind.FINAL_ONLY
        request_id = f"trac-{next(self.runner.request_counter)}"
        self.engine.add_request(
            request_id, self._engine_input(prompt_ids), params, lora_request=self.runner.lm.lora_request
        )
        self.handlers[request_id] = handler
        self.seconds[request_id] = 0.0

    def _engine_input(self, prompt_ids: list[int]) -> Any:
        """The token-id prompt as the engine takes it: rendered by the engine's renderer when it has one (vLLM
        0.32+, the path ``LLM.generate`` takes; a raw prompt is deprecated there), else the raw ``TokensPrompt``.
        The request id the engine's outputs carry stays the one given to ``add_request``."""
        prompt = self.runner.tokens_prompt(prompt_token_ids=prompt_ids)
        renderer = getattr(self.engine, "renderer", None)
        if not callable(getattr(renderer, "render_cmpl", None)):
            return prompt
        (rendered,) = renderer.render_cmpl([prompt], getattr(renderer, "default_cmpl_tok_params", None))
        return rendered

    def abort(self) -> None:
        """Abort every request of this loop still in the engine."""
        if self.handlers:
            self.engine.abort_request(list(self.handlers))
            self.handlers.clear()

    def run(self) -> None:
        while self.engine.has_unfinished_requests():
            started = time.perf_counter()
            outputs = self.engine.step()
            share = (time.perf_counter() - started) / max(len(self.seconds), 1)
            for request_id in self.seconds:
                self.seconds[request_id] += share
            for output in outputs:
                if output.finished and output.request_id in self.handlers:
                    self.handlers.pop(output.request_id)(output, self.seconds.pop(output.request_id))
        if self.handlers:
            raise RuntimeError(
                f"trac-eval: the vLLM engine finished without an output for {len(self.handlers)} requests (aborted?)"
            )


def _probe_finish_reason(engine_reason: str | None) -> str:
    """A probe's finish reason in the records' terms (docs/method.md#probe-decoding-and-cutting): ``"length"`` at its
    token limit, ``"eos"`` for a stop (a stop token or string); any other reason (an aborted request) is an error,
    never a silent ``"eos"``."""
    if engine_reason == "length":
        return "length"
    if engine_reason == "stop":
        return "eos"
    raise RuntimeError(f"trac-eval: vLLM ended a probe with finish reason {engine_reason!r}")


def capture_completion(completion: Any, generation: Generation, tokenizer: Any) -> CapturedCompletion:
    """The token ids, text, finish reason and logprob arrays of a finished completion of ``generation``.

    Sent without detokenization (:func:`engine_sampling_params`), its text is made by vLLM's own detokenizer on
    ``tokenizer`` (the engine's), run once over the finished ids with ``generation.params``, the parameters the
    engine loop would have detokenized with: the same text, and the same stop. When the generated text spells out a
    stop string (the EOS text written in ordinary tokens), the ids, logprobs and finish reason are cut where the
    engine loop would have stopped; the engine computed the tokens after it all the same
    (docs/architecture.md#vllm-backend)."""
    token_ids, text, logprobs = list(completion.token_ids), completion.text, completion.logprobs
    finish_reason = finish_reason_of(completion.finish_reason, completion.stop_reason)
    if not generation.engine_params.detokenize:
        text, stop, kept = detokenize_once(tokenizer, generation, token_ids, completion.finish_reason == "stop")
        if stop is not None:
            token_ids, logprobs, finish_reason = token_ids[:kept], logprobs[:kept], finish_reason_of("stop", stop)
    chosen, top = _logprob_arrays(token_ids, logprobs)
    return CapturedCompletion(token_ids, text, finish_reason, chosen, top)


def detokenize_once(
    tokenizer: Any, generation: Generation, token_ids: list[int], stop_terminated: bool
) -> tuple[str, str | None, int]:
    """The text vLLM's engine loop would have made of ``token_ids`` with ``generation.params``, made by its own
    incremental detokenizer run once over the finished ids: the text, the stop string it ends at (None) and how
    many of the ids precede that stop (docs/architecture.md#vllm-backend). ``stop_terminated``: the engine ended
    the generation at an EOS or stop token id, which is not decoded."""
    from vllm.v1.engine.detokenizer import IncrementalDetokenizer

    request = SimpleNamespace(
        request_id="trac-capture",
        prompt_token_ids=generation.prompt_ids,
        prompt_embeds=None,
        sampling_params=generation.params,
    )
    detokenizer = IncrementalDetokenizer.from_new_request(tokenizer, request)
    stop = detokenizer.update(token_ids, stop_terminated)
    return detokenizer.get_next_output_text(True, False), stop, detokenizer.num_output_tokens()


def _logprob_arrays(
    token_ids: Sequence[int], logprobs: Sequence[Any]
) -> tuple[np.ndarray | list[float], np.ndarray | list[list[float]]]:
    """Chosen-token logprob and all returned logprobs per position: lists from vLLM's per-position dicts, arrays
    from its flat logprobs (:func:`_flat_logprob_arrays`)."""
    if not isinstance(logprobs, list):
        return _flat_logprob_arrays(token_ids, logprobs)
    chosen, top = [], []
    for token_id, position in zip(token_ids, logprobs, strict=True):
        chosen.append(position[token_id].logprob)
        top.append([entry.logprob for entry in position.values()])
    return chosen, top


def _flat_logprob_arrays(token_ids: Sequence[int], flat: Any) -> tuple[np.ndarray, np.ndarray]:
    """vLLM's flat logprobs (``FlatLogprobs``: each position's [sampled id, top ids ...] and their logprobs, one
    list for all positions) as a [T] chosen and a [T, m] returned-logprob array holding what the per-position dicts
    hold: an id listed twice at a position (the sampled token, when it is among the top) counts once, with its last
    value; NaN marks the other copies (docs/architecture.md#vllm-backend)."""
    positions = len(token_ids)
    starts, ends = np.asarray(flat.start_indices, dtype=np.int64), np.asarray(flat.end_indices, dtype=np.int64)
    if len(starts) != positions:
        raise ValueError(f"trac-eval: vLLM returned logprobs of {len(starts)} positions for {positions} tokens")
    if positions == 0:
        return np.zeros(0), np.zeros((0, 0))
    width = int(ends[0] - starts[0])
    if width == 0 or np.any(ends - starts != width) or np.any(starts[1:] != ends[:-1]):
        raise ValueError("trac-eval: vLLM returned flat logprobs with an uneven number of entries per position")
    span = slice(int(starts[0]), int(ends[-1]))
    ids = np.asarray(flat.token_ids[span], dtype=np.int64).reshape(positions, width)
    values = np.asarray(flat.logprobs[span], dtype=np.float64).reshape(positions, width)
    # an entry is repeated when its id comes again later in its row: the dict keeps only the last copy
    later = np.triu(np.ones((width, width), dtype=bool), k=1)
    repeated = ((ids[:, :, None] == ids[:, None, :]) & later).any(axis=2)
    kept_chosen = (ids == np.asarray(token_ids, dtype=np.int64)[:, None]) & ~repeated
    if not kept_chosen.any(axis=1).all():
        raise ValueError("trac-eval: vLLM returned flat logprobs without the generated token's")
    return values[kept_chosen], np.where(repeated, np.nan, values)
