"""The TrAC hook of lm-eval's ``vllm`` backend (SPEC §1–2).

``install`` wraps ``VLLM.generate_until``: requests whose generation kwargs carry a ``trac`` block run through
:class:`VllmTracRunner`; all others go to lm-eval's own method unchanged. Prompts are tokenized, truncated and
stopped with lm-eval's own helpers, so the text returned for a TrAC request is what plain lm-eval returns for the
same sample. The runner drives vLLM's engine step by step and submits each trace probe the moment its trace
finishes, as a token-id prompt whose prompt + trace prefix vLLM has just computed, so its prefix cache serves it
while the prefix is hot (``num_cached_tokens`` is recorded per probe; it counts whole KV blocks, so use
``enable_prefix_caching=True`` and, on CPU, ``block_size=32``).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from trac_tasks.config import PROBE_MAX_TOKENS, TracConfig, strip_trac
from trac_tasks.runner import ProbeJob, ProbeOutput, Trace, TracRunner, hook_generate_until


def install(module: ModuleType) -> None:
    """Wrap ``module.VLLM.generate_until`` so TrAC requests are captured and probed."""
    hook_generate_until(module.VLLM, VllmTracRunner)


class VllmTracRunner(TracRunner):
    """The runner's engine primitives on an lm-eval ``VLLM`` object (one in-process ``vllm.LLM``)."""

    def __init__(self, lm: Any) -> None:
        from vllm import SamplingParams, TokensPrompt

        super().__init__(lm, lm.tokenizer, str(lm.model_args.get("model")), lm.max_length)
        self.sampling_params = SamplingParams
        self.tokens_prompt = TokensPrompt
        self._request_counter = itertools.count()

    def _generate(self, prompts: Sequence[list[int]], params: Any) -> list[Any]:
        return self.lm.model.generate([self.tokens_prompt(prompt_token_ids=ids) for ids in prompts],
                                      sampling_params=params, use_tqdm=False, lora_request=self.lm.lora_request)

    def _sampling_requests(self, requests: Sequence[Any], configs: Sequence[TracConfig]) -> list[tuple[list[int], Any, list[str]]]:
        """Prompt ids, SamplingParams (with top-k logprobs) and lm-eval stop strings of each request, built with
        lm-eval's own helpers exactly as its ``generate_until`` would."""
        from lm_eval.models.utils import maybe_truncate

        eos = self.tokenizer.decode(self.lm.eot_token_id)
        encodings = self.lm.tok_encode([request.args[0] for request in requests])
        prepared = []
        for request, config, encoding in zip(requests, configs, encodings, strict=True):
            kwargs, until, max_gen_toks = self.lm.modify_gen_kwargs(
                strip_trac(request.args[1]), eos=eos, default_max_gen_toks=self.lm.max_gen_toks)
            prompt_ids, max_gen_toks = maybe_truncate(
                encoding, max_gen_toks=max_gen_toks, max_model_len=self.lm.max_length,
                side=self.lm.truncation_side, verbose=True)
            kwargs["logprobs"] = max(config.top_k, int(kwargs.get("logprobs") or 0))
            stop = [s for s in until if s == eos] if self.lm.think_end_token else until
            prepared.append((list(prompt_ids), self.sampling_params(max_tokens=max_gen_toks, stop=stop, **kwargs),
                             until))
        return prepared

    def generate(self, requests: Sequence[Any], repeats: Sequence[int], configs: Sequence[TracConfig]) -> list[Trace]:
        return self._stream(requests, repeats, configs, with_probes=False)[0]

    def generate_with_trace_probes(
        self, requests: Sequence[Any], repeats: Sequence[int], configs: Sequence[TracConfig]
    ) -> tuple[list[Trace], list[ProbeOutput | None]]:
        return self._stream(requests, repeats, configs, with_probes=True)

    def _stream(self, requests: Sequence[Any], repeats: Sequence[int], configs: Sequence[TracConfig],
                with_probes: bool) -> tuple[list[Trace], list[ProbeOutput | None]]:
        """Drive vLLM's engine step by step: each finished trace's probe is submitted at once, so its prompt +
        trace prefix is still in the prefix cache and the probe decodes alongside the generations still running.

        Engine time is attributed per step, split equally between the requests added and not yet finished (with a
        chunk larger than the engine's ``max_num_seqs`` some of them wait, and are charged all the same); a
        response's ``seconds`` and its probe's ``seconds`` are the sums of their shares.
        """
        engine = self.lm.model.llm_engine
        if engine.has_unfinished_requests():
            raise RuntimeError("trac-eval: the vLLM engine has unfinished requests from another caller")
        prepared = self._sampling_requests(requests, configs)
        probe_params = self.sampling_params(temperature=0.0, max_tokens=PROBE_MAX_TOKENS,
                                            logprobs=max(config.top_k for config in configs))
        clock = _StepClock()
        generations = dict(zip(clock.add(self._enqueue([ids for ids, _, _ in prepared],
                                                       [params for _, params, _ in prepared])),
                               range(len(requests)), strict=True))
        probe_jobs: dict[str, ProbeJob] = {}
        traces: list[Trace | None] = [None] * len(requests)
        probes: list[ProbeOutput | None] = [None] * len(requests)
        while engine.has_unfinished_requests():
            for output in clock.step(engine):
                seconds = clock.seconds.pop(output.request_id)
                if output.request_id in generations:
                    index = generations[output.request_id]
                    prompt_ids, params, until = prepared[index]
                    trace = traces[index] = self._trace(requests[index], repeats[index], configs[index], prompt_ids,
                                                        params, until, output, seconds)
                    job = self.trace_probe_job(index, trace) if with_probes else None
                    if job is not None:
                        probe_jobs[clock.add(self._enqueue([job.prompt_ids], [probe_params]))[0]] = job
                else:
                    job = probe_jobs[output.request_id]
                    probes[job.index] = _probe_output(job, output, seconds)
        missing = [index for index, trace in enumerate(traces) if trace is None]
        if missing:
            raise RuntimeError(f"trac-eval: the vLLM engine finished without an output for {len(missing)} of "
                               f"{len(traces)} generations (aborted requests?)")
        return traces, probes

    def _enqueue(self, prompts: Sequence[list[int]], params: Sequence[Any]) -> list[str]:
        """Add token-id prompts to the engine under this runner's own request ids (the ids its outputs carry);
        only final outputs are returned by the engine's steps."""
        from vllm.sampling_params import RequestOutputKind

        engine = self.lm.model.llm_engine
        request_ids = []
        for prompt_ids, sampling in zip(prompts, params, strict=True):
            sampling.output_kind = RequestOutputKind.FINAL_ONLY
            request_id = f"trac-{next(self._request_counter)}"
            engine.add_request(request_id, self.tokens_prompt(prompt_token_ids=prompt_ids), sampling,
                               lora_request=self.lm.lora_request)
            request_ids.append(request_id)
        return request_ids

    def _trace(self, request: Any, repeat: int, config: TracConfig, prompt_ids: list[int], params: Any,
               until: list[str], output: Any, seconds: float) -> Trace:
        from lm_eval.models.utils import postprocess_generated_text

        completion = output.outputs[0]
        chosen, top = _logprob_arrays(completion.token_ids, completion.logprobs)
        finish_reason = _finish_reason(completion)
        generated = list(completion.token_ids)
        return Trace(
            request=request, repeat=repeat, config=config, prompt_ids=prompt_ids, generated_ids=generated,
            # an EOS or stop token id ends the list; the trace body the probe continues excludes it
            body_ids=generated[:-1] if finish_reason == "eos" else generated,
            raw_text=completion.text,
            text=postprocess_generated_text(completion.text, until, self.lm.think_end_token),
            finish_reason=finish_reason, chosen=chosen, top=top, seconds=seconds,
            temperature=float(params.temperature), top_p=float(params.top_p) if params.temperature > 0 else 1.0,
        )

    def greedy_probes(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob]) -> list[ProbeOutput]:
        if not jobs:
            return []
        top_k = max(traces[job.index].config.top_k for job in jobs)
        started = time.perf_counter()
        outputs = self._generate([job.prompt_ids for job in jobs], self.sampling_params(
            temperature=0.0, max_tokens=PROBE_MAX_TOKENS, logprobs=top_k))
        seconds = (time.perf_counter() - started) / len(jobs)
        return [_probe_output(job, output, seconds) for job, output in zip(jobs, outputs, strict=True)]

    def score_tokens(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob],
                     token_ids: Sequence[list[int]]) -> list[ProbeOutput]:
        """Prompt logprobs of the given tokens (vLLM does not read the prefix cache for such requests)."""
        if not jobs:
            return []
        top_k = max(traces[job.index].config.top_k for job in jobs)
        started = time.perf_counter()
        outputs = self._generate([job.prompt_ids + tokens for job, tokens in zip(jobs, token_ids, strict=True)],
                                 self.sampling_params(temperature=0.0, max_tokens=1, prompt_logprobs=top_k))
        seconds = (time.perf_counter() - started) / len(jobs)
        results = []
        for job, tokens, output in zip(jobs, token_ids, outputs, strict=True):
            chosen, top = _logprob_arrays(tokens, output.prompt_logprobs[len(job.prompt_ids):])
            results.append(ProbeOutput(token_ids=list(tokens), chosen=chosen, top=top,
                                       engine_finish_reason="teacher_forced", num_prompt_tokens=len(job.prompt_ids),
                                       num_cached_tokens=output.num_cached_tokens, seconds=seconds))
        return results

    def next_token_logprobs(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob],
                            candidates: Sequence[str]) -> list[dict[str, float]]:
        """Read from the 20 most likely next tokens: a candidate outside them is absent (probability ≈ 0)."""
        if not jobs:
            return []
        outputs = self._generate([job.prompt_ids for job in jobs],
                                 self.sampling_params(temperature=0.0, max_tokens=1, logprobs=20))
        results = []
        for output in outputs:
            found: dict[str, float] = {}
            for entry in sorted(output.outputs[0].logprobs[0].values(), key=lambda item: -item.logprob):
                text = (entry.decoded_token or "").strip()
                if text in candidates and text not in found:
                    found[text] = entry.logprob
            results.append(found)
        return results


class _StepClock:
    """Runs engine steps and attributes each step's wall time equally to the requests in flight during it."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, request_ids: Sequence[str]) -> list[str]:
        for request_id in request_ids:
            self.seconds[request_id] = 0.0
        return list(request_ids)

    def step(self, engine: Any) -> list[Any]:
        """One engine step; returns the outputs of the requests that finished in it."""
        started = time.perf_counter()
        outputs = engine.step()
        share = (time.perf_counter() - started) / max(len(self.seconds), 1)
        for request_id in self.seconds:
            self.seconds[request_id] += share
        return [output for output in outputs if output.finished]


def _probe_output(job: ProbeJob, output: Any, seconds: float) -> ProbeOutput:
    completion = output.outputs[0]
    chosen, top = _logprob_arrays(completion.token_ids, completion.logprobs)
    return ProbeOutput(
        token_ids=list(completion.token_ids), chosen=chosen, top=top,
        engine_finish_reason="length" if completion.finish_reason == "length" else "eos",
        num_prompt_tokens=len(job.prompt_ids), num_cached_tokens=output.num_cached_tokens, seconds=seconds,
    )


def _logprob_arrays(token_ids: Sequence[int], logprobs: Sequence[Any]) -> tuple[list[float], list[list[float]]]:
    """Chosen-token logprob and all returned logprobs per position, from vLLM's per-position dicts."""
    chosen, top = [], []
    for token_id, position in zip(token_ids, logprobs, strict=True):
        chosen.append(position[token_id].logprob)
        top.append([entry.logprob for entry in position.values()])
    return chosen, top


def _finish_reason(completion: Any) -> str:
    """``"eos"`` (an end-of-sequence or stop token id, kept as the last token id), ``"stop:<string>"`` (an lm-eval
    stop sequence) or ``"length"`` (cut at the token limit)."""
    if completion.finish_reason == "length":
        return "length"
    if completion.stop_reason is None or isinstance(completion.stop_reason, int):
        return "eos"
    return f"stop:{completion.stop_reason}"
