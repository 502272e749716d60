"""The TrAC hook of lm-eval's ``local-completions`` backend: a model behind vLLM's OpenAI-compatible server
(``vllm serve``), with the same records as the in-process hooks (docs/architecture.md#served-backend).

``install`` wraps ``LocalCompletionsAPI.generate_until``; requests carrying a ``trac`` block run through
:class:`ServedTracRunner`, all others go to lm-eval's own method unchanged. Prompts are tokenized and truncated as
lm-eval's ``vllm`` backend does, then sent as token-id prompts with top-k logprobs and the id of every generated
token (vLLM's ``return_tokens_as_token_ids``). Each finished trace's jobs are queued ahead of the generations not
yet sent (:mod:`trac_tasks.completions_client`), so a probe — prompt + trace ids + cue, again as token ids — meets
its prefix in the server's prefix cache; its cached-token count is the server's
``usage.prompt_tokens_details.cached_tokens`` (``null`` when the server does not report it). Per-response seconds
are the wall time of each request.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from lm_eval.models.utils import has_bos_prefix, maybe_truncate, normalize_gen_kwargs

from trac_tasks.chunk import ChunkState, ProbeJob
from trac_tasks.completions_client import ClientSettings, RequestQueue, ServerRequestError
from trac_tasks.config import NEXT_TOKEN_LOGPROBS, PROBE_MAX_TOKENS, TracConfig, strip_trac
from trac_tasks.progress import LOGGER
from trac_tasks.runner import (
    ProbeOutput,
    Trace,
    TracRunner,
    check_generation_room,
    finish_reason_of,
    hook_generate_until,
    p_true_logprobs,
)

JOB, GENERATION = 0, 1
"""Queue priorities: a finished trace's jobs go before generations not yet sent."""

DETOKENIZATION = {"skip_special_tokens": False, "spaces_between_special_tokens": False}
"""The detokenization lm-eval's in-process vllm backend asks for, so both paths record the same texts."""

TOKEN_ID_PREFIX = "token_id:"
"""How vLLM spells a token with ``return_tokens_as_token_ids``."""


def install(module: ModuleType) -> None:
    """Wrap ``module.LocalCompletionsAPI.generate_until`` so TrAC requests are captured and probed."""
    hook_generate_until(module.LocalCompletionsAPI, ServedTracRunner)


def sample_seed(base_seed: int, request: Any, repeat: int) -> int:
    """The sampling seed of one response: derived from lm-eval's ``seed``, the task, the document and the repeat,
    so the K samples of a question differ (lm-eval sends one seed for all) and a rerun draws the same ones,
    whatever order the server answers in."""
    key = f"{base_seed}/{request.task_name}/{request.doc_id}/{repeat}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") & 0x7FFFFFFF


class ServedTracRunner(TracRunner):
    """The runner on an lm-eval ``LocalCompletionsAPI`` object: one HTTP request per generation and per job."""

    def __init__(self, lm: Any) -> None:
        from lm_eval.models.openai_completions import LocalChatCompletion

        if isinstance(lm, LocalChatCompletion):
            raise ValueError(
                "trac-eval: TrAC tasks send token-id prompts to a completions endpoint: use --model local-completions "
                "with base_url=<server>/v1/completions, not a chat-completions model"
            )
        if lm.tokenizer_backend != "huggingface" or not lm.tokenized_requests:
            raise ValueError(
                "trac-eval: TrAC tasks on --model local-completions send token-id prompts and read the token ids of "
                "every response, so they need the served model's tokenizer here: add tokenizer_backend=huggingface,"
                "tokenizer=<the served model's hub id or folder> to --model_args (and keep tokenized_requests=True)"
            )
        # lm-eval's API client keeps max_length - 1 (a token kept for loglikelihood); the context is max_length, or
        # the server's own max_model_len once the capability check has read it
        super().__init__(lm, lm.tokenizer, str(lm.model), getattr(lm, "_trac_context", lm.max_length + 1))
        self.settings = ClientSettings(
            url=lm.base_url,
            headers=dict(lm.header),
            concurrency=max(1, lm._concurrent),
            attempts=max(1, lm.max_retries),
            timeout=float(lm.timeout),
            verify_certificate=bool(lm.verify_certificate),
        )
        # a chunk's queue drains before the next chunk starts: keep several requests per connection in each chunk
        self.chunk_size = max(TracRunner.chunk_size, 4 * self.settings.concurrency)

    # ----------------------------------------------------------------------------------------- the server check
    def before_generation(self, requests: Sequence[Any], configs: Sequence[TracConfig]) -> None:
        """One small request with everything the tasks will ask of the server, before any generation: token-id
        prompts, generated token ids, top-k logprobs (20 for P(True)), prompt logprobs (teacher forcing); a server
        that lacks one fails here, naming it. The server's context length (``max_model_len`` in ``/v1/models``)
        replaces lm-eval's ``max_length`` when the server reports it. Done once per model object and requirement."""
        top_k = max(config.top_k for config in configs)
        needs_prompt_logprobs = any("teacher_forced" in config.probe_variants for config in configs)
        wanted_logprobs = max([top_k] + [NEXT_TOKEN_LOGPROBS for config in configs if config.p_true])
        checked = self.lm.__dict__.setdefault("_trac_server_checks", set())
        if (wanted_logprobs, needs_prompt_logprobs) in checked:
            return
        payload = {
            "model": self.lm.model,
            "prompt": self.encode("The final answer is") or [self.lm.eot_token_id],
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": wanted_logprobs,
            "return_tokens_as_token_ids": True,
        }
        if needs_prompt_logprobs:
            payload["prompt_logprobs"] = top_k
        answers: list[dict[str, Any]] = []
        queue = RequestQueue(self.settings)
        queue.submit(JOB, payload, lambda body, _: answers.append(body), "capability check")
        try:
            queue.run()
        except ServerRequestError as error:
            raise ServerRequestError(
                f"{error} — before any generation: the TrAC tasks need a server that takes "
                "token-id prompts with these logprobs (vLLM's OpenAI-compatible server)"
            ) from None
        problem = _capability_problem(answers[0], wanted_logprobs, needs_prompt_logprobs)
        if problem:
            raise ValueError(f"trac-eval: the server at {self.settings.url} {problem}; nothing was generated")
        if _cached_tokens(answers[0]) is None:
            LOGGER.warning(
                "trac-eval: the server does not report cached prompt tokens (vLLM: start it with "
                "--enable-prompt-tokens-details); the probes' num_cached_tokens are stored as null"
            )
        checked.add((wanted_logprobs, needs_prompt_logprobs))
        context = _served_context(self.settings, str(self.lm.model))
        if context is not None and context != self.max_length:
            LOGGER.info(
                "trac-eval: the server's context is %d tokens (lm-eval's max_length gave %d); using %d",
                context,
                self.max_length,
                context,
            )
            self.max_length = self.lm._trac_context = context

    # ------------------------------------------------------------------------------------------------ the run
    def execute(self, chunk: ChunkState) -> None:
        """Send the chunk's generations; each response's jobs are queued the moment it arrives, ahead of the
        generations still waiting; each question's records are written the moment its last job returns."""
        prepared = self._generation_payloads(chunk)
        queue = RequestQueue(self.settings)

        def job_done(job: ProbeJob) -> Callable[[dict[str, Any], float], None]:
            return lambda body, seconds: self.job_finished(chunk, job, self._job_result(job, body, seconds), seconds)

        def generation_done(index: int) -> Callable[[dict[str, Any], float], None]:
            def handle(body: dict[str, Any], seconds: float) -> None:
                prompt_ids, payload = prepared[index]
                trace = self._trace(chunk, index, prompt_ids, payload, body, seconds)
                for job in self.trace_finished(chunk, index, trace):
                    queue.submit(JOB, self._job_payload(job, trace.config.top_k), job_done(job), f"{job.variant} job")

            return handle

        for index, (_, payload) in enumerate(prepared):
            queue.submit(GENERATION, payload, generation_done(index), "generation")
        queue.run()

    def _generation_payloads(self, chunk: ChunkState) -> list[tuple[list[int], dict[str, Any]]]:
        """Prompt ids and request body of each generation: tokenized and left-truncated as lm-eval's ``vllm``
        backend does (so both paths send the same prompt ids), the body built by lm-eval's own ``_create_payload``,
        plus top-k logprobs, generated token ids and the sample's own seed."""
        encodings = [self._prompt_ids(request.args[0]) for request in chunk.requests]
        prepared = []
        for request, repeat, config, encoding in zip(
            chunk.requests, chunk.repeats, chunk.configs, encodings, strict=True
        ):
            # lm-eval's normalization and vLLM's detokenization defaults, as the in-process vllm backend applies them
            gen_kwargs = normalize_gen_kwargs(strip_trac(request.args[1]), default_max_gen_toks=self.lm._max_gen_toks)
            max_gen_toks = int(gen_kwargs.pop("max_gen_toks"))
            check_generation_room(max_gen_toks, self.max_length)
            prompt_ids, max_gen_toks = maybe_truncate(
                list(encoding), max_gen_toks=max_gen_toks, max_model_len=self.max_length, side="left", verbose=True
            )
            payload = self.lm._create_payload(
                list(prompt_ids),
                generate=True,
                gen_kwargs={**DETOKENIZATION, **gen_kwargs, "max_gen_toks": max_gen_toks},
                seed=sample_seed(self.lm._seed, request, repeat),
                eos=self.lm.eos_string,
            )
            payload["logprobs"] = max(config.top_k, int(payload.get("logprobs") or 0))
            payload["return_tokens_as_token_ids"] = True
            prepared.append((list(prompt_ids), payload))
        return prepared

    def _prompt_ids(self, prompt: str) -> list[int]:
        """A prompt's token ids as lm-eval's ``vllm`` backend makes them (lm-eval's API client would never add a
        BOS): without special tokens when the prompt already starts with the prefix token's text (a chat template
        writes the BOS), else with the tokenizer's special tokens."""
        prefix_id = self.lm.prefix_token_id
        prefix = self.tokenizer.decode(prefix_id) if prefix_id is not None else None
        return self.tokenizer(prompt, add_special_tokens=not has_bos_prefix(prompt, prefix)).input_ids

    def _trace(
        self,
        chunk: ChunkState,
        index: int,
        prompt_ids: list[int],
        payload: dict[str, Any],
        body: dict[str, Any],
        seconds: float,
    ) -> Trace:
        choice = _only_choice(body)
        generated, chosen, top = _generated_arrays(choice)
        finish_reason = finish_reason_of(choice.get("finish_reason"), choice.get("stop_reason"))
        temperature = float(payload.get("temperature") or 0.0)
        return Trace(
            request=chunk.requests[index],
            repeat=chunk.repeats[index],
            config=chunk.configs[index],
            prompt_ids=prompt_ids,
            generated_ids=generated,
            # an EOS or stop token id ends the list; the trace body the probe continues excludes it
            body_ids=generated[:-1] if finish_reason == "eos" else generated,
            raw_text=choice["text"],
            text=choice["text"],  # what lm-eval's local-completions returns
            finish_reason=finish_reason,
            chosen=chosen,
            top=top,
            seconds=seconds,
            temperature=temperature,
            top_p=float(payload.get("top_p", 1.0)) if temperature > 0 else 1.0,
            until=tuple(payload.get("stop") or ()),
        )

    def _job_payload(self, job: ProbeJob, top_k: int) -> dict[str, Any]:
        """A greedy ≤ 16-token probe, one step with the prompt logprobs of the scored tokens, or one step with the
        20 most likely next tokens — the requests the in-process vLLM hook makes."""
        payload: dict[str, Any] = {"model": self.lm.model, "temperature": 0.0, "max_tokens": 1}
        if job.kind == "score":
            return {**payload, "prompt": job.prompt_ids + list(job.tokens), "prompt_logprobs": top_k}
        logprobs = NEXT_TOKEN_LOGPROBS if job.kind == "next_token" else top_k
        max_tokens = 1 if job.kind == "next_token" else PROBE_MAX_TOKENS
        return {
            **payload,
            "prompt": job.prompt_ids,
            "max_tokens": max_tokens,
            "logprobs": logprobs,
            "return_tokens_as_token_ids": True,
        }

    def _job_result(self, job: ProbeJob, body: dict[str, Any], seconds: float) -> ProbeOutput | dict[str, float]:
        choice = _only_choice(body)
        if job.kind == "next_token":
            (next_tokens,) = choice["logprobs"]["top_logprobs"][:1]
            return p_true_logprobs((self.decode([_token_id(token)]), logprob) for token, logprob in next_tokens.items())
        if job.kind == "score":
            positions = (choice.get("prompt_logprobs") or [])[len(job.prompt_ids) :]
            if len(positions) != len(job.tokens):
                raise RuntimeError(
                    f"trac-eval: the server returned {len(positions)} prompt logprobs for the "
                    f"{len(job.tokens)} teacher-forced tokens"
                )
            return ProbeOutput(
                token_ids=list(job.tokens),
                chosen=[position[str(token)]["logprob"] for token, position in zip(job.tokens, positions, strict=True)],
                top=[[entry["logprob"] for entry in position.values()] for position in positions],
                engine_finish_reason="teacher_forced",
                num_prompt_tokens=len(job.prompt_ids),
                num_cached_tokens=_cached_tokens(body),
                seconds=seconds,
            )
        generated, chosen, top = _generated_arrays(choice)
        return ProbeOutput(
            token_ids=generated,
            chosen=chosen,
            top=top,
            engine_finish_reason="length" if choice.get("finish_reason") == "length" else "eos",
            num_prompt_tokens=len(job.prompt_ids),
            num_cached_tokens=_cached_tokens(body),
            seconds=seconds,
        )


def _only_choice(body: dict[str, Any]) -> dict[str, Any]:
    choices = body.get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        raise RuntimeError(
            f"trac-eval: expected one completion choice per request, the server sent "
            f"{len(choices) if isinstance(choices, list) else 'none'}"
        )
    return choices[0]


def _token_id(token: str) -> int:
    if not token.startswith(TOKEN_ID_PREFIX):
        raise RuntimeError(
            f"trac-eval: the server returned the token {token!r} instead of its id (return_tokens_as_token_ids)"
        )
    return int(token[len(TOKEN_ID_PREFIX) :])


def _generated_arrays(choice: dict[str, Any]) -> tuple[list[int], list[float], list[list[float]]]:
    """Generated token ids, chosen-token logprobs and all returned logprobs per position of one choice."""
    logprobs = choice.get("logprobs") or {}
    tokens, chosen, top = logprobs.get("tokens"), logprobs.get("token_logprobs"), logprobs.get("top_logprobs")
    if tokens is None or chosen is None or top is None or not len(tokens) == len(chosen) == len(top):
        raise RuntimeError("trac-eval: the server's response lacks per-token logprobs for its generated tokens")
    return (
        [_token_id(token) for token in tokens],
        [float(value) for value in chosen],
        [[float(value) for value in position.values()] for position in top],
    )


def _cached_tokens(body: dict[str, Any]) -> int | None:
    """The server's count of prompt tokens served from its prefix cache, or None when it does not report it."""
    details = (body.get("usage") or {}).get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens")
    return int(cached) if cached is not None else None


def _capability_problem(body: dict[str, Any], wanted_logprobs: int, needs_prompt_logprobs: bool) -> str | None:
    """What the capability check's response lacks, in words, or None."""
    choices = body.get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        return "did not answer a token-id prompt with one completion choice"
    logprobs = choices[0].get("logprobs") or {}
    tokens, top = logprobs.get("tokens") or [], logprobs.get("top_logprobs") or []
    if not tokens or not top:
        return "returns no per-token logprobs (the completions API's logprobs parameter)"
    if not all(isinstance(token, str) and token.startswith(TOKEN_ID_PREFIX) for token in tokens):
        return (
            f"returns tokens as text ({tokens[0]!r}), not as ids: TrAC needs the exact generated token ids "
            "(vLLM's return_tokens_as_token_ids)"
        )
    if len(top[0] or {}) < wanted_logprobs:
        return (
            f"returns {len(top[0] or {})} top logprobs per token, the tasks need {wanted_logprobs} "
            "(vLLM: --max-logprobs)"
        )
    if needs_prompt_logprobs and not choices[0].get("prompt_logprobs"):
        return "returns no prompt logprobs, which the teacher_forced probe variant needs (vLLM's prompt_logprobs)"
    return None


def _served_context(settings: ClientSettings, model: str) -> int | None:
    """The served model's context length as the server lists it (vLLM's ``max_model_len`` in ``/v1/models``), or
    None when it does not say."""
    import requests

    models_url = settings.url.rsplit("/completions", 1)[0] + "/models"
    try:
        listed = requests.get(models_url, headers=settings.headers, timeout=30, verify=settings.verify_certificate)
        entries = listed.json().get("data", []) if listed.ok else []
    except (requests.RequestException, ValueError):
        return None
    lengths = [entry.get("max_model_len") for entry in entries if isinstance(entry, dict) and entry.get("id") == model]
    return int(lengths[0]) if lengths and isinstance(lengths[0], int) else None
