"""The TrAC hook of lm-eval's ``hf`` backend (transformers), with the same records as the vLLM hook
(docs/architecture.md#hf-backend).

``install`` wraps ``HFLM.generate_until``; only requests carrying a ``trac`` block are handled here, in batches of
``--batch_size`` left-padded rows that stop one by one (:mod:`trac_tasks.engines.hf_batching`), with lm-eval's own
stop criteria and post-processing. Each batch's probes run right after it, on the KV cache its generation left behind
(:mod:`trac_tasks.engines.hf_probes`): a job computes only what its prompt does not share with its trace's row, and
``num_cached_tokens`` records the shared length. The cache is released when the batch's probes are done, so at most
one batch's cache is ever alive.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from trac_tasks.engines.hf_batching import (
    RowStops,
    StepLogprobs,
    cut_rows,
    fitted_prompt,
    left_padded,
    read_logprobs,
    resolve_batch_size,
)
from trac_tasks.engines.hf_probes import HeldCache, extend_rows, probe_rows, reusable
from trac_tasks.generation.chunk import ChunkState, ProbeJob
from trac_tasks.generation.config import PROBE_MAX_TOKENS, strip_trac
from trac_tasks.generation.probe import trace_body
from trac_tasks.generation.runner import (
    P_TRUE_CANDIDATES,
    ProbeOutput,
    Trace,
    TracRunner,
    check_generation_room,
    hook_generate_until,
)


def install(module: ModuleType) -> None:
    """Wrap ``module.HFLM.generate_until`` so TrAC requests are captured and probed."""
    hook_generate_until(module.HFLM, HfTracRunner)


def _end_ids(lm: Any) -> set[int]:
    """Every id that ends generation: the tokenizer's EOS and the model's generation-config EOS ids."""
    configured = getattr(getattr(lm.model, "generation_config", None), "eos_token_id", None)
    ids = set(configured if isinstance(configured, (list, tuple)) else [configured])
    return {token for token in ids | {lm.tokenizer.eos_token_id} if token is not None}


@dataclass(frozen=True)
class _Batch:
    """The requests of one ``generate`` call: their indices in the chunk, prompt ids and shared generation kwargs."""

    indices: list[int]
    prompts: list[list[int]]
    kwargs: dict[str, Any]
    until: list[str]
    max_gen_toks: int


def _rounds(jobs: Sequence[ProbeJob], rows: dict[int, int], size: int) -> list[list[ProbeJob | None]]:
    """The jobs laid out on a batch's ``size`` rows (``rows``: a response's row), at most one per row in each
    round."""
    rounds: list[list[ProbeJob | None]] = []
    for job in jobs:
        row = rows[job.index]
        free = next((slots for slots in rounds if slots[row] is None), None)
        if free is None:
            free = [None] * size
            rounds.append(free)
        free[row] = job
    return rounds


class HfTracRunner(TracRunner):
    """TrAC on an lm-eval ``HFLM`` object (a causal transformers model): each batch generated, then its jobs run on
    its KV cache (docs/architecture.md#hf-backend)."""

    chunk_size = 16
    """Requests handed over together at ``--batch_size 1``; with a larger batch a chunk holds four batches. Only one
    batch's cache is alive at a time whatever the chunk holds."""

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

    def _applied_decoding(self, kwargs: dict[str, Any]) -> dict[str, float]:
        """Temperature and top-p ``generate`` applies: the request's, else the model's generation config's."""
        defaults = self.lm.model.generation_config
        if not kwargs.get("do_sample", defaults.do_sample):
            return {"temperature": 0.0, "top_p": 1.0}
        return {
            "temperature": float(kwargs.get("temperature", defaults.temperature or 1.0)),
            "top_p": float(kwargs.get("top_p", defaults.top_p or 1.0)),
        }

    def execute(self, chunk: ChunkState) -> None:
        """Batch by batch: generate, then run the jobs of the batch's traces on its cache, which is released before
        the next batch; jobs of earlier batches' traces (a shuffled-trace probe whose partner came later), and every
        job when the cache cannot be reused, are computed in full after it, in batches of ``--batch_size``."""
        for batch in self._plan(chunk.requests):
            rest = self._generate_and_probe(chunk, batch)
            for kind in ("decode", "score", "next_token"):
                for part in self._batches([job for job in rest if job.kind == kind]):
                    self._run_round(chunk, part, None)

    def _plan(self, requests: Sequence[Any]) -> list[_Batch]:
        """The chunk's ``generate`` calls of up to ``--batch_size`` rows: requests with the same generation kwargs,
        longest prompts first (as lm-eval's ``Collator`` orders them)."""
        from lm_eval.models.utils import handle_stop_sequences, normalize_gen_kwargs

        eos = self.lm.tok_decode(self.lm.eot_token_id, skip_special_tokens=False)
        rows = []
        for index, request in enumerate(requests):
            kwargs = normalize_gen_kwargs(strip_trac(request.args[1]), self.lm.max_gen_toks)
            until = handle_stop_sequences(kwargs.pop("until", None), eos=eos)
            max_gen_toks = kwargs.pop("max_gen_toks")
            check_generation_room(max_gen_toks, self.lm.max_length)
            if not kwargs.get("do_sample"):
                kwargs.pop("temperature", None)
                kwargs.pop("top_p", None)
            prompt_ids = fitted_prompt(
                self.lm.tok_encode(request.args[0]),
                self.lm.max_length - max_gen_toks,
                f"task {request.task_name} doc {request.doc_id}",
            )
            group = repr((sorted(kwargs.items()), until, max_gen_toks))
            rows.append((group, -len(prompt_ids), index, prompt_ids, kwargs, until, max_gen_toks))
        rows.sort(key=lambda row: row[:3])
        batches = []
        for _, grouped in itertools.groupby(rows, key=lambda row: row[0]):  # never mix generation kwargs in a call
            group_rows = list(grouped)
            for start in range(0, len(group_rows), self.batch_size):
                part = group_rows[start : start + self.batch_size]
                _, _, _, _, kwargs, until, max_gen_toks = part[0]
                batches.append(_Batch([row[2] for row in part], [row[3] for row in part], kwargs, until, max_gen_toks))
        return batches

    def _generate_and_probe(self, chunk: ChunkState, batch: _Batch) -> list[ProbeJob]:
        """Generate ``batch``, report its traces and run the jobs they unlock on its cache, a round per job kind and
        row (:mod:`~trac_tasks.engines.hf_probes`); returns the jobs left to compute in full. The cache is released
        on return."""
        traces, held = self._generate_batch(chunk, batch)
        jobs = [
            job
            for index, trace in zip(batch.indices, traces, strict=True)
            for job in self.trace_finished(chunk, index, trace)
        ]
        if held is None:
            return jobs
        rows = {index: row for row, index in enumerate(batch.indices)}
        for kind in ("decode", "score", "next_token"):
            on_cache = [job for job in jobs if job.kind == kind and job.index in rows]
            for slots in _rounds(on_cache, rows, len(batch.indices)):
                self._run_round(chunk, slots, held)
        return [job for job in jobs if job.index not in rows]

    def _generate_batch(self, chunk: ChunkState, batch: _Batch) -> tuple[list[Trace], HeldCache | None]:
        """One ``generate`` call on the batch's left-padded prompts; each row stops on its own
        (:class:`~trac_tasks.engines.hf_batching.RowStops`), and padding never enters a trace. Returns the traces
        and the cache generation left behind (None when it cannot be reused)."""
        import torch
        from lm_eval.models.utils import postprocess_generated_text
        from lm_eval.models.utils_hf import stop_sequences_criteria
        from transformers import StoppingCriteriaList

        configs = [chunk.configs[index] for index in batch.indices]
        think_end = self.lm.think_end_token if isinstance(self.lm.think_end_token, str) else None
        input_ids, attention_mask = left_padded(batch.prompts, self.pad_id, self.lm.device)
        width = input_ids.shape[1]
        step_logprobs = StepLogprobs([config.top_k for config in configs])
        stops = RowStops(
            stop_sequences_criteria(self.tokenizer, batch.until, width, len(batch.prompts)),
            self.end_ids,
            width,
            len(batch.prompts),
            step_logprobs,
        )
        started = time.perf_counter()
        hook = self.lm.model.register_forward_hook(step_logprobs.hook)
        try:
            with torch.no_grad():
                output = self.lm.model.generate(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    max_new_tokens=batch.max_gen_toks,
                    pad_token_id=self.pad_id,
                    use_cache=True,
                    stopping_criteria=StoppingCriteriaList([stops]),
                    return_dict_in_generate=True,
                    **batch.kwargs,
                )
        finally:
            hook.remove()
        generated_rows = cut_rows(output.sequences, width, stops.lengths)
        logprob_rows = step_logprobs.rows()
        seconds = time.perf_counter() - started
        total_tokens = max(sum(len(row) for row in generated_rows), 1)
        traces = []
        for row, (index, prompt_ids, generated) in enumerate(
            zip(batch.indices, batch.prompts, generated_rows, strict=True)
        ):
            ends_with_eos = bool(generated) and generated[-1] in self.end_ids
            body = trace_body(generated, self.end_ids)
            chosen, top, vocabulary_means = logprob_rows[row]
            traces.append(
                Trace(
                    request=chunk.requests[index],
                    repeat=chunk.repeats[index],
                    config=chunk.configs[index],
                    prompt_ids=prompt_ids,
                    generated_ids=generated,
                    body_ids=body,
                    # keeps a special marker (</think>), not the closing end token: the text vLLM stores
                    raw_text=self.tokenizer.decode(body, skip_special_tokens=False),
                    text=postprocess_generated_text(self.lm.tok_decode(generated), batch.until, think_end),
                    finish_reason="eos"
                    if ends_with_eos
                    else "length"
                    if len(generated) >= batch.max_gen_toks
                    else "stop",
                    chosen=chosen,
                    top=top,
                    vocabulary_mean=vocabulary_means,
                    seconds=seconds * len(generated) / total_tokens,  # the batch's time, shared by generated tokens
                    until=tuple(batch.until),
                    **self._applied_decoding(batch.kwargs),
                )
            )
        cache = output.past_key_values
        held = HeldCache(cache, batch.prompts, generated_rows, width) if reusable(cache) else None
        return traces, held

    def _batches(self, jobs: Sequence[ProbeJob]) -> list[list[ProbeJob]]:
        """Jobs in batches of ``--batch_size``, longest prompts first (least padding)."""
        ordered = sorted(jobs, key=lambda job: -len(job.prompt_ids))
        return [ordered[start : start + self.batch_size] for start in range(0, len(ordered), self.batch_size)]

    def _run_round(self, chunk: ChunkState, slots: Sequence[ProbeJob | None], held: HeldCache | None) -> None:
        """Jobs of one kind, at most one per row of ``held`` (None: on an empty cache, computed in full), in one
        batched pass (a decoded probe: one per step); each job's result is reported to :meth:`job_finished`."""
        import torch

        jobs = [job for job in slots if job is not None]
        kind = jobs[0].kind
        started = time.perf_counter()
        shared = [
            0 if held is None or job is None else held.shared(row, job.prompt_ids) for row, job in enumerate(slots)
        ]
        new_rows = [
            [self.pad_id] if job is None else [*job.prompt_ids[count:], *job.tokens]
            for job, count in zip(slots, shared, strict=True)
        ]
        cache, prefix = (None, None) if held is None else (held.cache, held.prefix_mask(shared))
        top_ks = [0 if job is None else chunk.traces[job.index].config.top_k for job in slots]
        try:
            if kind == "decode":
                live = [job is not None for job in slots]
                decoded = probe_rows(
                    self.lm.model,
                    cache,
                    prefix,
                    new_rows,
                    live,
                    self.pad_id,
                    self.end_ids,
                    PROBE_MAX_TOKENS,
                    max(top_ks),
                    [(0.0, 1.0) if job is None else chunk.traces[job.index].probe_sampling for job in slots],
                )
            else:
                keep = max(len(job.tokens) + 1 for job in jobs)
                logits, _, _ = extend_rows(self.lm.model, cache, prefix, new_rows, self.pad_id, keep)
        finally:
            if held is not None:
                held.restore()
        share = (time.perf_counter() - started) / len(jobs)
        for row, job in enumerate(slots):
            if job is None:
                continue
            if kind == "decode":
                tokens, chosen, top = decoded[row]
                reason = "eos" if tokens and tokens[-1] in self.end_ids else "length"
            elif kind == "score":
                # the logits predicting the scored tokens: at the prompt's last position and every scored one's but
                # the last
                tokens = list(job.tokens)
                at = logits.shape[1] - len(tokens) - 1
                picked, best = read_logprobs(
                    logits[row : row + 1, at : at + len(tokens)],
                    torch.tensor([tokens], dtype=torch.long, device=logits.device),
                    top_ks[row],
                )
                chosen, top, reason = picked[0].tolist(), best[0].tolist(), "teacher_forced"
            else:
                self.job_finished(chunk, job, self._letter_logprobs(logits[row, -1]), share)
                continue
            output = ProbeOutput(
                token_ids=tokens,
                chosen=chosen,
                top=[values[: top_ks[row]] for values in top],
                engine_finish_reason=reason,
                num_prompt_tokens=len(job.prompt_ids),
                num_cached_tokens=shared[row],
                seconds=share,
            )
            self.job_finished(chunk, job, output, share)

    def _letter_logprobs(self, logits: Any) -> dict[str, float]:
        """The logprob of each P(True) candidate's first token, from one position's logits [vocab]."""
        import torch

        logprobs = torch.log_softmax(logits.float(), dim=-1)
        return {candidate: float(logprobs[self.encode(candidate)[0]]) for candidate in P_TRUE_CANDIDATES}
