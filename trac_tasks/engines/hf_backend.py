"""The TrAC hook of lm-eval's ``hf`` backend (transformers), with the same records as the vLLM hook
(docs/architecture.md#hf-backend).

``install`` wraps ``HFLM.generate_until``; only requests carrying a ``trac`` block are handled here, one request at
a time (exact, no padding effects; the HF backend is the small-scale path). Sampling uses lm-eval's own stop
criteria and post-processing. Probes reuse the KV cache generation left behind: the runner remembers which token
ids the cache holds, crops it to the longest prefix it shares with the next probe prompt, and computes only the
rest; ``num_cached_tokens`` records that shared length. Models whose cache cannot be cropped (sliding-window
layers past their window) recompute the probe prompt instead.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

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
    """Small chunks: every response's KV cache is kept until its chunk's probes have run."""

    def __init__(self, lm: Any) -> None:
        if getattr(lm, "backend", "causal") != "causal":
            raise ValueError("TrAC tasks need a decoder-only model: the hf backend here is seq2seq")
        super().__init__(lm, lm.tokenizer, str(getattr(lm.model, "name_or_path", "hf-model")), lm.max_length)
        self.end_ids = _end_ids(lm)
        self._caches: dict[int, _PrefixCache] = {}

    def _tensor(self, ids: Sequence[int]) -> Any:
        import torch

        return torch.tensor([list(ids)], dtype=torch.long, device=self.lm.device)

    @staticmethod
    def _step_logprobs(
        step_logits: Sequence[Any], token_ids: Sequence[int], k: int
    ) -> tuple[list[float], list[list[float]]]:
        """Chosen logprob and top-k logprobs per position, one position at a time (no [T, vocab] copy)."""
        import torch

        chosen, top = [], []
        for logits, token in zip(step_logits, token_ids, strict=True):
            logprobs = torch.log_softmax(logits.reshape(-1).float(), dim=-1)
            chosen.append(float(logprobs[token]))
            top.append(torch.topk(logprobs, k).values.tolist())
        return chosen, top

    def _greedy_config(self, max_new_tokens: int) -> Any:
        """Plain greedy decoding: the model's own generation config (repetition penalty ...) must not apply."""
        from transformers import GenerationConfig

        return GenerationConfig(
            do_sample=False,
            max_new_tokens=max_new_tokens,
            eos_token_id=sorted(self.end_ids),
            pad_token_id=self.tokenizer.pad_token_id,
            return_dict_in_generate=True,
            output_logits=True,
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
        import torch
        from lm_eval.models.utils import handle_stop_sequences, normalize_gen_kwargs, postprocess_generated_text
        from lm_eval.models.utils_hf import stop_sequences_criteria

        eos = self.lm.tok_decode(self.lm.eot_token_id, skip_special_tokens=False)
        think_end = self.lm.think_end_token if isinstance(self.lm.think_end_token, str) else None
        traces = []
        for request, repeat, config in zip(requests, repeats, configs, strict=True):
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
            started = time.perf_counter()
            with torch.no_grad():
                output = self.lm.model.generate(
                    input_ids=self._tensor(prompt_ids),
                    attention_mask=torch.ones_like(self._tensor(prompt_ids)),
                    max_new_tokens=max_gen_toks,
                    pad_token_id=self.tokenizer.pad_token_id,
                    use_cache=True,
                    stopping_criteria=stop_sequences_criteria(self.tokenizer, until, len(prompt_ids), 1),
                    return_dict_in_generate=True,
                    output_logits=True,
                    **kwargs,
                )
            generated = output.sequences[0, len(prompt_ids) :].tolist()
            chosen, top = self._step_logprobs(output.logits, generated, config.top_k)
            ends_with_eos = bool(generated) and generated[-1] in self.end_ids
            raw_text = self.tokenizer.decode(generated, skip_special_tokens=False)  # keeps a special marker
            trace = Trace(
                request=request,
                repeat=repeat,
                config=config,
                prompt_ids=prompt_ids,
                generated_ids=generated,
                body_ids=trace_body(generated, self.end_ids),
                raw_text=raw_text,
                text=postprocess_generated_text(self.lm.tok_decode(generated), until, think_end),
                finish_reason="eos" if ends_with_eos else "length" if len(generated) >= max_gen_toks else "stop",
                chosen=chosen,
                top=top,
                seconds=time.perf_counter() - started,
                until=tuple(until),
                **self._applied_decoding(kwargs),
            )
            # the cache holds every token but the last generated one (whose KV was never computed)
            self._caches[id(trace)] = _PrefixCache(output.past_key_values, (prompt_ids + generated)[:-1])
            traces.append(trace)
        return traces

    def greedy_probes(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob]) -> list[ProbeOutput]:
        import torch

        results = []
        for job in jobs:
            trace = traces[job.index]
            prefix = self._caches[id(trace)]
            cache, shared = prefix.reuse_for(job.prompt_ids)
            started = time.perf_counter()
            with torch.no_grad():
                output = self.lm.model.generate(
                    input_ids=self._tensor(job.prompt_ids),
                    attention_mask=torch.ones_like(self._tensor(job.prompt_ids)),
                    past_key_values=cache,
                    generation_config=self._greedy_config(PROBE_MAX_TOKENS),
                    use_cache=True,
                )
            decoded = output.sequences[0, len(job.prompt_ids) :].tolist()
            if cache is not None:
                prefix.held_ids = (job.prompt_ids + decoded)[:-1]
            chosen, top = self._step_logprobs(output.logits, decoded, trace.config.top_k)
            results.append(
                ProbeOutput(
                    token_ids=decoded,
                    chosen=chosen,
                    top=top,
                    engine_finish_reason="eos" if decoded and decoded[-1] in self.end_ids else "length",
                    num_prompt_tokens=len(job.prompt_ids),
                    num_cached_tokens=shared,
                    seconds=time.perf_counter() - started,
                )
            )
        return results

    def _forward(self, trace: Trace, ids: list[int], max_shared: int | None = None) -> tuple[Any, int]:
        """Logits [positions, vocab] of ``ids[shared:]`` computed on the cache cropped to the shared prefix (at most
        ``max_shared`` tokens of it)."""
        import torch

        prefix = self._caches[id(trace)]
        cache, shared = prefix.reuse_for(ids, max_shared)
        with torch.no_grad():
            logits = self.lm.model(input_ids=self._tensor(ids[shared:]), past_key_values=cache, use_cache=True).logits
        if cache is not None:
            prefix.held_ids = list(ids)
        return logits[0], shared

    def score_tokens(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob]) -> list[ProbeOutput]:
        results = []
        for job in jobs:
            tokens = list(job.tokens)
            trace = traces[job.index]
            started = time.perf_counter()
            # the logits that predict the first scored token sit at the prompt's last position: never reuse past it
            logits, shared = self._forward(trace, job.prompt_ids + tokens, max_shared=len(job.prompt_ids) - 1)
            # logits[i] predicts the token at position shared + i + 1; the scored tokens start at len(prompt)
            first = len(job.prompt_ids) - shared - 1
            chosen, top = self._step_logprobs(logits[first : first + len(tokens)], tokens, trace.config.top_k)
            results.append(
                ProbeOutput(
                    token_ids=list(tokens),
                    chosen=chosen,
                    top=top,
                    engine_finish_reason="teacher_forced",
                    num_prompt_tokens=len(job.prompt_ids),
                    num_cached_tokens=shared,
                    seconds=time.perf_counter() - started,
                )
            )
        return results

    def next_token_logprobs(
        self, traces: Sequence[Trace], jobs: Sequence[ProbeJob], candidates: Sequence[str]
    ) -> list[dict[str, float]]:
        import torch

        results = []
        for job in jobs:
            logits, _ = self._forward(traces[job.index], job.prompt_ids)
            logprobs = torch.log_softmax(logits[-1].float(), dim=-1)
            results.append({candidate: float(logprobs[self.encode(candidate)[0]]) for candidate in candidates})
        return results

    def execute(self, chunk: ChunkState) -> None:
        """The default batch flow; every response's KV cache is dropped when its chunk is done."""
        try:
            super().execute(chunk)
        finally:
            self._caches.clear()
