"""The TrAC hook of lm-eval's ``vllm`` backend (SPEC §1–2).

``install`` wraps ``VLLM.generate_until``: requests whose generation kwargs carry a ``trac`` block run through
:class:`VllmTracRunner`; all others go to lm-eval's own method unchanged. Prompts are tokenized, truncated and
stopped with lm-eval's own helpers, so the text returned for a TrAC request is what plain lm-eval returns for the
same sample. Probes run right after their chunk's generations, as token-id prompts whose prompt + trace prefix vLLM
has just computed, so its prefix cache serves it (``num_cached_tokens`` is recorded per probe; it counts whole KV
blocks, so use ``enable_prefix_caching=True`` and, on CPU, ``block_size=32``).
"""

from __future__ import annotations

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

    def _generate(self, prompts: Sequence[list[int]], params: Any) -> list[Any]:
        return self.lm.model.generate([self.tokens_prompt(prompt_token_ids=ids) for ids in prompts],
                                      sampling_params=params, use_tqdm=False, lora_request=self.lm.lora_request)

    def generate(self, requests: Sequence[Any], repeats: Sequence[int], configs: Sequence[TracConfig]) -> list[Trace]:
        from lm_eval.models.utils import maybe_truncate, postprocess_generated_text

        eos = self.tokenizer.decode(self.lm.eot_token_id)
        encodings = self.lm.tok_encode([request.args[0] for request in requests])
        prompts, params, stops = [], [], []
        for request, config, encoding in zip(requests, configs, encodings, strict=True):
            kwargs, until, max_gen_toks = self.lm.modify_gen_kwargs(
                strip_trac(request.args[1]), eos=eos, default_max_gen_toks=self.lm.max_gen_toks)
            prompt_ids, max_gen_toks = maybe_truncate(
                encoding, max_gen_toks=max_gen_toks, max_model_len=self.lm.max_length,
                side=self.lm.truncation_side, verbose=True)
            kwargs["logprobs"] = max(config.top_k, int(kwargs.get("logprobs") or 0))
            stop = [s for s in until if s == eos] if self.lm.think_end_token else until
            prompts.append(list(prompt_ids))
            params.append(self.sampling_params(max_tokens=max_gen_toks, stop=stop, **kwargs))
            stops.append(until)
        outputs = self._generate(prompts, params)
        traces = []
        for request, repeat, config, prompt_ids, until, output in zip(
                requests, repeats, configs, prompts, stops, outputs, strict=True):
            completion = output.outputs[0]
            chosen, top = _logprob_arrays(completion.token_ids, completion.logprobs)
            finish_reason = _finish_reason(completion)
            generated = list(completion.token_ids)
            traces.append(Trace(
                request=request, repeat=repeat, config=config, prompt_ids=prompt_ids, generated_ids=generated,
                # an EOS or stop token id ends the list; the trace body the probe continues excludes it
                body_ids=generated[:-1] if finish_reason == "eos" else generated,
                raw_text=completion.text,
                text=postprocess_generated_text(completion.text, until, self.lm.think_end_token),
                finish_reason=finish_reason, chosen=chosen, top=top,
            ))
        return traces

    def greedy_probes(self, traces: Sequence[Trace], jobs: Sequence[ProbeJob]) -> list[ProbeOutput]:
        if not jobs:
            return []
        top_k = max(traces[job.index].config.top_k for job in jobs)
        started = time.perf_counter()
        outputs = self._generate([job.prompt_ids for job in jobs], self.sampling_params(
            temperature=0.0, max_tokens=PROBE_MAX_TOKENS, logprobs=top_k))
        seconds = (time.perf_counter() - started) / len(jobs)
        results = []
        for job, output in zip(jobs, outputs, strict=True):
            completion = output.outputs[0]
            chosen, top = _logprob_arrays(completion.token_ids, completion.logprobs)
            results.append(ProbeOutput(
                token_ids=list(completion.token_ids), chosen=chosen, top=top,
                engine_finish_reason="length" if completion.finish_reason == "length" else "eos",
                num_prompt_tokens=len(job.prompt_ids), num_cached_tokens=output.num_cached_tokens, seconds=seconds,
            ))
        return results

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
