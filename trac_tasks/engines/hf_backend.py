"""The TrAC hook of lm-eval's ``hf`` backend (transformers), with the same records as the vLLM hook
(docs/architecture.md#hf-backend).

``install`` wraps ``HFLM.generate_until``; only requests carrying a ``trac`` block are handled here, in batches of
``--batch_size`` left-padded rows that stop one by one (:mod:`trac_tasks.engines.hf_batching`), with lm-eval's own
stop criteria and post-processing. At ``--batch_size 1`` probes reuse the KV cache generation left behind: the runner
remembers which token ids the cache holds, crops it to the longest prefix it shares with the next probe prompt, and
computes only the rest; ``num_cached_tokens`` records that shared length. Models whose cache cannot be cropped
(sliding-window layers past their window) recompute the probe prompt instead. With a larger batch no cache is kept:
probes run in batches too, computed in full, so at most one batch's cache is ever alive.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from trac_tasks.engines.hf_batching import (
    RowStops,
    StepLogprobs,
    cut_rows,
    left_padded,
    padded_forward,
    resolve_batch_size,
    row_logprobs,
)
from trac_tasks.generation.chunk import ChunkState, ProbeJob
from trac_tasks.generation.config import PROBE_MAX_TOKENS, TracConfig, strip_trac
from trac_tasks.generation.probe import trace_body
from trac_tasks.generation.runner import BatchTracRunner, ProbeOutput, Trace, hook_generate_until


def install(module: ModuleType) -> None:
    """Wrap ``module.HFLM.generate_until`` so TrAC requests are captured and probed."""
    hook_generate_until(module.HFLM, HfTracRunner)


def _end_ids(lm: Any) -> set[int]:
    """Every id that ends generation: the tokenizer's EOS and the model's generation-config EOS ids."""
    configured = getattr(getattr(lm.model, "generation_config", None), "eos_token_id", None)
    ids = set(configured if isinstance(configured, (list, tuple)) else [configured])
    return {token for token in ids | {lm.tokenizer.eos_token_id} if token is not None}


class _PrefixCache:
    """A generation's KV cache together with the token ids it holds, cropped on demand to a shared prefix."""

    def __init__(self, cache: Any, held_ids: list[int]) -> None:
        self.cache = cache
        self.held_ids = held_ids

    def reuse_for(self, prompt_ids: list[int], max_shared: int | None = None) -> tuple[Any, int]:
        """The cache cropped to the longest prefix it shares with ``prompt_ids`` (at least one token is left to
        compute; at most ``max_shared`` tokens are reused), and that prefix's length; ``(None, 0)`` when the cache
        cannot be cropped."""
        shared = 0
        limit = min(len(self.held_ids), len(prompt_ids) - 1, len(prompt_ids) if max_shared is None else max_shared)
        while shared < limit and self.held_ids[shared] == prompt_ids[shared]:
            shared += 1
        surplus = self.cache.get_seq_length() - shared
        try:
            if surplus > 0:
                self.cache.crop(-surplus)
        except RuntimeError:
            return None, 0
        self.held_ids = self.held_ids[:shared]
        return self.cache, shared


class HfTracRunner(BatchTracRunner):
    """The runner's engine primitives on an lm-eval ``HFLM`` object (a causal transformers model)."""

    chunk_size = 16
    """Chunks at ``--batch_size 1``: every response's KV cache is kept until its chunk's probes have run. With a
    larger batch no cache outlives its ``generate`` call, and a chunk holds four batches."""

    def __init__(self, lm: Any) -> None:
        if getattr(lm, "backend", "causal") != "causal":
            raise ValueError("TrAC tasks need a decoder-only model: the hf backend here is seq2seq")
        super().__init__(lm, lm.tokenizer, str(getattr(lm.model, "name_or_path", "hf-model")), lm.max_length)
        self.end_ids = _end_ids(lm)
        self.batch_size = resolve_batch_size(lm)
        if self.batch_size > 1:
            self.chunk_size = max(self.chunk_size, 4 * self.batch_size)
        pad_id = self.tokenizer.pad_token_id
        self.pad_id = pad_id if pad_id is not None else min(self.end_ids)
        self._caches: dict[int, _PrefixCache] = {}

    def _greedy_config(self, max_new_tokens: int) -> Any:
        """Plain greedy decoding: the model's own generation config (repetition penalty ...) must not apply."""
        from transformers import GenerationConfig

        return GenerationConfig(
            do_sample=False,
            max_new_tokens=max_new_tokens,
            eos_token_id=sorted(self.end_ids),
            pad_token_id=self.pad_id,
            return_dict_in_generate=True,
            output_logits=True,
            use_cache=True,
        )

    def _applied_decoding(self, kwargs: dict[str, Any]) -> dict[str, float]:
        """Temperature and top-p ``generate`` applies: the request's, else the model's generation config's."""
        defaults = self.lm.model.generation_config
        if not kwargs.get("do_sample", defaults.do_sample):
            return {"temperature": 0.0, "top_p": 1.0}
        return {
            "temperature": float(kwargs.get("temperature", defaults.temperature or 1.0)),
            "top_p": float(kwargs.get("top_p", defaults.top_p or 1.0)),
        }

    # -------------------------------------------------------------------------------------- engine primitives
    def generate(self, requests: Sequence[Any], repeats: Sequence[int], configs: Sequence[TracConfig]) -> list[Trace]:
        """The chunk's responses in batches of ``--batch_size`` rows: requests with the same generation kwargs,
        longest prompts first (as lm-eval's ``Collator`` orders them); returned in request order."""
        from lm_eval.models.utils import handle_stop_sequences, normalize_gen_kwargs

        eos = self.lm.tok_decode(self.lm.eot_token_id, skip_special_tokens=False)
        rows = []
        for index, request in enumerate(requests):
            kwargs = normalize_gen_kwargs(strip_trac(request.args[1]), self.lm.max_gen_toks)
            until = handle_stop_sequences(kwargs.pop("until", None), eos=eos)
            max_gen_toks = kwargs.pop("max_gen_toks")
            if self.lm.max_length - max_gen_toks <= 0:
                raise ValueError(
                    f"task {request.task_name}: max_gen_toks {max_gen_toks} leaves no room for the "
                    f"prompt in the model's {self.lm.max_length} tokens"
                )
            if not kwargs.get("do_sample"):
                kwargs.pop("temperature", None)
                kwargs.pop("top_p", None)
            prompt_ids = list(self.lm.tok_encode(request.args[0], left_truncate_len=self.lm.max_length - max_gen_toks))
            group = repr((sorted(kwargs.items()), until, max_gen_toks))
            rows.append((group, -len(prompt_ids), index, prompt_ids, kwargs, until, max_gen_toks))
        rows.sort(key=lambda row: row[:3])
        traces: list[Trace | None] = [None] * len(requests)
        for _, grouped in itertools.groupby(rows, key=lambda row: row[0]):  # never mix generation kwargs in a call
            group_rows = list(grouped)
            for start in range(0, len(group_rows), self.batch_size):
                batch = group_rows[start : start + self.batch_size]
                _, _, _, _, kwargs, until, max_gen_toks = batch[0]
                indices = [row[2] for row in batch]
                generated = self._generate_batch(
                    [requests[i] for i in indices],
                    [repeats[i] for i in indices],
                    [configs[i] for i in indices],
                    [row[3] for row in batch],
                    dict(kwargs),
                    until,
                    max_gen_toks,
                )
                for index, trace in zip(indices, generated, strict=True):
                    traces[index] = trace
        return traces

    def _generate_batch(
        self,
        requests: Sequence[Any],
        repeats: Sequence[int],
        configs: Sequence[TracConfig],
        prompts: Sequence[list[int]],
        kwargs: dict[str, Any],
        until: list[str],
        max_gen_toks: int,
    ) -> list[Trace]:
        """One ``generate`` call on left-padded prompts sharing ``kwargs``; each row stops on its own
        (:class:`~trac_tasks.engines.hf_batching.RowStops`), and padding never enters a trace."""
        import torch
        from lm_eval.models.utils import postprocess_generated_text
        from lm_eval.models.utils_hf import stop_sequences_criteria
        from transformers import StoppingCriteriaList

        think_end = self.lm.think_end_token if isinstance(self.lm.think_end_token, str) else None
        input_ids, attention_mask = left_padded(prompts, self.pad_id, self.lm.device)
        width = input_ids.shape[1]
        step_logprobs = StepLogprobs([config.top_k for config in configs])
        stops = RowStops(
            stop_sequences_criteria(self.tokenizer, until, width, len(prompts)),
            self.end_ids,
            width,
            len(prompts),
            step_logprobs,
        )
        started = time.perf_counter()
        hook = self.lm.model.register_forward_hook(step_logprobs.hook)
        try:
            with torch.no_grad():
                output = self.lm.model.generate(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    max_new_tokens=max_gen_toks,
                    pad_token_id=self.pad_id,
                    use_cache=True,
                    stopping_criteria=StoppingCriteriaList([stops]),
                    return_dict_in_generate=True,
                    **kwargs,
                )
        finally:
            hook.remove()
        generated_rows = cut_rows(output.sequences, width, stops.lengths)
        seconds = time.perf_counter() - started
        total_tokens = max(sum(len(row) for row in generated_rows), 1)
        traces = []
        for row, (request, repeat, config, prompt_ids, generated) in enumerate(
            zip(requests, repeats, configs, prompts, generated_rows, strict=True)
        ):
            ends_with_eos = bool(generated) and generated[-1] in self.end_ids
            chosen, top = step_logprobs.chosen[row], step_logprobs.top[row]
            trace = Trace(
                request=request,
                repeat=repeat,
                config=config,
                prompt_ids=prompt_ids,
                generated_ids=generated,
                body_ids=trace_body(generated, self.end_ids),
                raw_text=self.tokenizer.decode(generated, skip_special_tokens=False),  # keeps a special marker
                text=postprocess_generated_text(self.lm.tok_decode(generated), until, think_end),
                finish_reason="eos" if ends_with_eos else "length" if len(generated) >= max_gen_toks else "stop",
                chosen=chosen,
                top=top,
                seconds=seconds * len(generated) / total_tokens,  # the batch's time, shared by generated tokens
                until=tuple(until),
                **self._applied_decoding(kwargs),
            )
            if self.batch_size == 1:
                # the cache holds every token but the last generated one (whose KV was never computed)
                self._caches[id(trace)] = _PrefixCache(output.past_key_values, (prompt_ids + generated)[:-1])
            traces.append(trace)
        return traces

    def _batches(self, jobs: Sequence[ProbeJob]) -> list[list[ProbeJob]]:
        """Jobs in batches of ``--batch_size``, longest prompts first (least padding)."""
        ordered = sorted(jobs, key=lambda job: -len(job.prompt_ids))
        return [ordered[start : start + self.batch_size] for start in range(0, len(ordered), self.batch_size)]

    def greedy_probes(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob]) -> list[ProbeOutput]:
        outputs = {
            id(job): self._cached_probe(traces[job.index], job) for job in jobs if id(traces[job.index]) in self._caches
        }
        for batch in self._batches([job for job in jobs if id(job) not in outputs]):
            outputs.update(zip(map(id, batch), self._probe_batch(traces, batch), strict=True))
        return [outputs[id(job)] for job in jobs]

    def _cached_probe(self, trace: Trace, job: ProbeJob) -> ProbeOutput:
        """One probe on its trace's own cache, cropped to the prefix it shares with the probe prompt."""

        prefix = self._caches[id(trace)]
        cache, shared = prefix.reuse_for(job.prompt_ids)
        started = time.perf_counter()
        output = self._generate_probes([job], past_key_values=cache)
        decoded = output.sequences[0, len(job.prompt_ids) :].tolist()
        if cache is not None:
            prefix.held_ids = (job.prompt_ids + decoded)[:-1]
        ((chosen, top),) = row_logprobs(output.logits, [decoded], [trace.config.top_k])
        return self._probe_output(job, decoded, chosen, top, shared, time.perf_counter() - started)

    def _probe_batch(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob]) -> list[ProbeOutput]:
        """Greedy probes of several traces in one ``generate`` call on left-padded prompts, computed in full (no
        trace cache is kept when generation ran in batches); each row is cut at its first end id."""
        from transformers import StoppingCriteriaList

        width = max(len(job.prompt_ids) for job in jobs)
        stops = RowStops([], self.end_ids, width, len(jobs))
        started = time.perf_counter()
        output = self._generate_probes(jobs, stopping_criteria=StoppingCriteriaList([stops]))
        decoded_rows = cut_rows(output.sequences, width, stops.lengths)
        logprobs = row_logprobs(output.logits, decoded_rows, [traces[job.index].config.top_k for job in jobs])
        share = (time.perf_counter() - started) / len(jobs)
        return [
            self._probe_output(job, decoded, chosen, top, 0, share)
            for job, decoded, (chosen, top) in zip(jobs, decoded_rows, logprobs, strict=True)
        ]

    def _generate_probes(self, jobs: Sequence[ProbeJob], **extra: Any) -> Any:
        """Greedy decoding of up to PROBE_MAX_TOKENS tokens after the jobs' left-padded prompts (``extra``: a trace's
        cache, per-row stops)."""
        import torch

        ids, mask = left_padded([job.prompt_ids for job in jobs], self.pad_id, self.lm.device)
        with torch.no_grad():
            return self.lm.model.generate(
                input_ids=ids, attention_mask=mask, generation_config=self._greedy_config(PROBE_MAX_TOKENS), **extra
            )

    def _probe_output(
        self,
        job: ProbeJob,
        decoded: list[int],
        chosen: list[float],
        top: list[list[float]],
        shared: int,
        seconds: float,
    ) -> ProbeOutput:
        return ProbeOutput(
            token_ids=decoded,
            chosen=chosen,
            top=top,
            engine_finish_reason="eos" if decoded and decoded[-1] in self.end_ids else "length",
            num_prompt_tokens=len(job.prompt_ids),
            num_cached_tokens=shared,
            seconds=seconds,
        )

    def _forward(self, trace: Trace, ids: list[int], max_shared: int | None = None) -> tuple[Any, int]:
        """Logits [positions, vocab] of ``ids[shared:]`` computed on the cache cropped to the shared prefix (at most
        ``max_shared`` tokens of it)."""
        import torch

        prefix = self._caches[id(trace)]
        cache, shared = prefix.reuse_for(ids, max_shared)
        ids_tensor, _ = left_padded([ids[shared:]], self.pad_id, self.lm.device)
        with torch.no_grad():
            logits = self.lm.model(input_ids=ids_tensor, past_key_values=cache, use_cache=True).logits
        if cache is not None:
            prefix.held_ids = list(ids)
        return logits[0], shared

    def _job_logits(
        self, traces: Sequence[Trace], jobs: Sequence[ProbeJob], keep_last: Sequence[int]
    ) -> list[tuple[Any, int, float]]:
        """Per job: the logits [keep_last, vocab] of the last ``keep_last`` positions of ``prompt_ids + tokens``,
        the cached length they were computed on, and the seconds attributed to the job — on the trace's own cache
        where it was kept, else in batched forward passes of left-padded rows (computed in full)."""
        results: dict[int, tuple[Any, int, float]] = {}
        for job, last in zip(jobs, keep_last, strict=True):
            if id(traces[job.index]) in self._caches:
                started = time.perf_counter()
                # the logits that predict the first scored token sit at the prompt's last position: never reuse past it
                logits, shared = self._forward(
                    traces[job.index], job.prompt_ids + list(job.tokens), max_shared=len(job.prompt_ids) - 1
                )
                results[id(job)] = (logits[-last:], shared, time.perf_counter() - started)
        last_of = {id(job): last for job, last in zip(jobs, keep_last, strict=True)}
        for batch in self._batches([job for job in jobs if id(job) not in results]):
            started = time.perf_counter()
            width = max(last_of[id(job)] for job in batch)
            logits = padded_forward(
                self.lm.model, [job.prompt_ids + list(job.tokens) for job in batch], self.pad_id, width
            )
            share = (time.perf_counter() - started) / len(batch)
            for row, job in enumerate(batch):
                results[id(job)] = (logits[row, width - last_of[id(job)] :], 0, share)
        return [results[id(job)] for job in jobs]

    def score_tokens(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob]) -> list[ProbeOutput]:
        # the logits predicting the scored tokens: the prompt's last position and every scored token's but the last
        window = [len(job.tokens) + 1 for job in jobs]
        results = []
        for job, (logits, shared, seconds) in zip(jobs, self._job_logits(traces, jobs, window), strict=True):
            tokens = list(job.tokens)
            ((chosen, top),) = row_logprobs(
                logits[: len(tokens)].unsqueeze(1), [tokens], [traces[job.index].config.top_k]
            )
            results.append(
                ProbeOutput(
                    token_ids=tokens,
                    chosen=chosen,
                    top=top,
                    engine_finish_reason="teacher_forced",
                    num_prompt_tokens=len(job.prompt_ids),
                    num_cached_tokens=shared,
                    seconds=seconds,
                )
            )
        return results

    def next_token_logprobs(
        self, traces: Sequence[Trace], jobs: Sequence[ProbeJob], candidates: Sequence[str]
    ) -> list[dict[str, float]]:
        import torch

        results = []
        for logits, _, _ in self._job_logits(traces, jobs, [1] * len(jobs)):
            logprobs = torch.log_softmax(logits[-1].float(), dim=-1)
            results.append({candidate: float(logprobs[self.encode(candidate)[0]]) for candidate in candidates})
        return results

    def execute(self, chunk: ChunkState) -> None:
        """The default batch flow; every response's KV cache is dropped when its chunk is done."""
        try:
            super().execute(chunk)
        finally:
            self._caches.clear()
