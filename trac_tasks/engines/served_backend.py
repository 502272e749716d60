"""The TrAC hook of lm-eval's ``local-completions`` backend: a model behind vLLM's OpenAI-compatible server
(``vllm serve``), with the same records as the in-process hooks (docs/architecture.md#served-backend).

``install`` wraps ``LocalCompletionsAPI.generate_until``; requests carrying a ``trac`` block run through
:class:`ServedTracRunner`, all others go to lm-eval's own method unchanged. Prompts are tokenized and truncated as
lm-eval's ``vllm`` backend does, then sent as token-id prompts with top-k logprobs and the id of every generated
token (vLLM's ``return_tokens_as_token_ids``). Each finished trace's jobs are queued ahead of the generations not
yet sent (:mod:`trac_tasks.engines.completions_client`), so a probe — prompt + reasoning ids + marker + cue, again as
token ids — meets its prefix in the server's prefix cache; its cached-token count is the server's
``usage.prompt_tokens_details.cached_tokens`` (``null`` when the server does not report it, and ``null`` with one
warning when what it reports is not a token count). Per-response seconds are the wall time of each request.

Every response field a record is built from is checked before anything is recorded (:func:`_positions`,
:func:`_scored`): token ids spelled ``token_id:<id>`` within the tokenizer's vocabulary, finite logprobs ≤ 0, at
least as many top logprobs per position as were asked for, a finish reason vLLM gives. A response that breaks one
of these stops the run with one line naming the server, the request and the field
(:class:`~trac_tasks.engines.completions_client.MalformedResponse`); nothing of it reaches a record. The per-token
fields of a generation are checked column by column (:func:`_checked_columns`: one joined string and one numpy
array per field, no per-token Python objects beyond those of the JSON parse), and only a response that fails there
is walked position by position to name the field at fault (docs/architecture.md#served-backend).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Sequence
from itertools import chain
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np
from lm_eval.models.utils import has_bos_prefix, maybe_truncate, normalize_gen_kwargs

from trac_tasks.engines.completions_client import ClientSettings, MalformedResponse, RequestQueue, ServerRequestError
from trac_tasks.generation.capture import padded_rows
from trac_tasks.generation.chunk import ChunkState, ProbeJob
from trac_tasks.generation.config import NEXT_TOKEN_LOGPROBS, PROBE_MAX_TOKENS, TracConfig, strip_trac
from trac_tasks.generation.progress import LOGGER
from trac_tasks.generation.runner import (
    ProbeOutput,
    Trace,
    TracRunner,
    check_generation_room,
    finish_reason_of,
    hook_generate_until,
    p_true_logprobs,
)
from trac_tasks.harness.lm_eval_hooks import dataset_doc_id

JOB, GENERATION = 0, 1
"""Queue priorities: a finished trace's jobs go before generations not yet sent."""

DETOKENIZATION = {"skip_special_tokens": False, "spaces_between_special_tokens": False}
"""The detokenization lm-eval's in-process vllm backend asks for, so both paths record the same texts."""

TOKEN_ID_PREFIX = "token_id:"
"""How vLLM spells a token with ``return_tokens_as_token_ids``."""

LOGPROB_TOLERANCE = 1e-5
"""How far above 0 a served logprob may lie and still be read as 0.0: the float rounding of a near-certain token's
log-softmax. A logprob further above 0 is refused (a probability above 1)."""

FINISH_REASONS = ("stop", "length")
"""The finish reasons of a completion vLLM returns (``abort`` is retried by the client): anything else is refused."""


def install(module: ModuleType) -> None:
    """Wrap ``module.LocalCompletionsAPI.generate_until`` so TrAC requests are captured and probed."""
    hook_generate_until(module.LocalCompletionsAPI, ServedTracRunner)


def sample_seed(base_seed: int, request: Any, repeat: int) -> int:
    """The sampling seed of one response: derived from lm-eval's ``seed``, the task, the document and the repeat,
    so the K samples of a question differ (lm-eval sends one seed for all) and a rerun draws the same ones,
    whatever order the server answers in."""
    key = f"{base_seed}/{request.task_name}/{dataset_doc_id(request)}/{repeat}".encode()
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
        self.vocabulary = len(self.tokenizer)
        self._warned_cache_count = False
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
        if _reported_cached_tokens(answers[0]) is None:
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

        def job_done(job: ProbeJob, payload: dict[str, Any], what: str) -> Callable[[dict[str, Any], float], None]:
            def handle(body: dict[str, Any], seconds: float) -> None:
                result = self._job_result(job, payload, body, seconds, what)
                self.job_finished(chunk, job, result, seconds)

            return handle

        def generation_done(index: int) -> Callable[[dict[str, Any], float], None]:
            def handle(body: dict[str, Any], seconds: float) -> None:
                prompt_ids, payload = prepared[index]
                trace = self._trace(chunk, index, prompt_ids, payload, body, seconds)
                for job in self.trace_finished(chunk, index, trace):
                    job_payload = self._job_payload(job, trace.config.top_k, trace.probe_sampling)
                    what = f"{job.variant} job {_request_name(chunk, job.index)}"
                    queue.submit(JOB, job_payload, job_done(job, job_payload, what), what)

            return handle

        for index, (_, payload) in enumerate(prepared):
            queue.submit(GENERATION, payload, generation_done(index), f"generation {_request_name(chunk, index)}")
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
        positions = _positions(choice, int(payload["logprobs"]), self.vocabulary)
        generated = positions.token_ids
        finish_reason = finish_reason_of(_finish_reason(choice), _stop_reason(choice))
        temperature = float(payload.get("temperature") or 0.0)
        return Trace(
            request=chunk.requests[index],
            repeat=chunk.repeats[index],
            config=chunk.configs[index],
            prompt_ids=prompt_ids,
            generated_ids=generated,
            # an EOS or stop token id ends the list; the trace body the probe continues excludes it
            body_ids=generated[:-1] if finish_reason == "eos" else generated,
            raw_text=_text(choice),
            text=_text(choice),  # what lm-eval's local-completions returns
            finish_reason=finish_reason,
            chosen=positions.chosen,
            top=positions.top,
            seconds=seconds,
            temperature=temperature,
            top_p=float(payload.get("top_p", 1.0)) if temperature > 0 else 1.0,
            until=tuple(payload.get("stop") or ()),
        )

    def _job_payload(self, job: ProbeJob, top_k: int, sampling: tuple[float, float] = (0.0, 1.0)) -> dict[str, Any]:
        """A ≤ 16-token probe (greedy, or sampled at ``sampling``'s temperature and top-p), one step with the prompt
        logprobs of the scored tokens, or one step with the 20 most likely next tokens — the requests the in-process
        vLLM hook makes."""
        payload: dict[str, Any] = {"model": self.lm.model, "temperature": 0.0, "max_tokens": 1}
        if job.kind == "score":
            return {**payload, "prompt": job.prompt_ids + list(job.tokens), "prompt_logprobs": top_k}
        logprobs = NEXT_TOKEN_LOGPROBS if job.kind == "next_token" else top_k
        max_tokens = 1 if job.kind == "next_token" else PROBE_MAX_TOKENS
        temperature, top_p = sampling if job.kind == "decode" else (0.0, 1.0)
        return {
            **payload,
            "prompt": job.prompt_ids,
            "max_tokens": max_tokens,
            "logprobs": logprobs,
            "return_tokens_as_token_ids": True,
            **({"temperature": temperature, "top_p": top_p} if temperature > 0 else {}),
        }

    def _job_result(
        self, job: ProbeJob, payload: dict[str, Any], body: dict[str, Any], seconds: float, what: str
    ) -> ProbeOutput | dict[str, float]:
        """A job's output from its response, every field checked (:func:`_positions`, :func:`_scored`)."""
        choice = _only_choice(body)
        if job.kind == "next_token":
            positions = _positions(choice, int(payload["logprobs"]), self.vocabulary)
            if not positions.token_ids:
                raise MalformedResponse("choices[0].logprobs.tokens", "is empty: the next token was asked for")
            returned = positions.top_ids[0] >= 0
            return p_true_logprobs(
                (self.decode([int(token)]), float(logprob))
                for token, logprob in zip(positions.top_ids[0][returned], positions.top[0][returned], strict=True)
            )
        if job.kind == "score":
            asked = int(payload["prompt_logprobs"])
            chosen, top = _scored(choice, len(job.prompt_ids), job.tokens, asked, self.vocabulary)
            return ProbeOutput(
                token_ids=list(job.tokens),
                chosen=chosen,
                top=top,
                engine_finish_reason="teacher_forced",
                num_prompt_tokens=len(job.prompt_ids),
                num_cached_tokens=self._cache_count(body, what, len(job.prompt_ids)),
                seconds=seconds,
            )
        positions = _positions(choice, int(payload["logprobs"]), self.vocabulary)
        return ProbeOutput(
            token_ids=positions.token_ids,
            chosen=positions.chosen,
            top=positions.top,
            # a probe sends no stop strings: "stop" is its EOS or a stop token id
            engine_finish_reason="length" if _finish_reason(choice) == "length" else "eos",
            num_prompt_tokens=len(job.prompt_ids),
            num_cached_tokens=self._cache_count(body, what, len(job.prompt_ids)),
            seconds=seconds,
        )

    def _cache_count(self, body: dict[str, Any], what: str, prompt_tokens: int) -> int | None:
        """The probe's ``num_cached_tokens``: the server's ``usage.prompt_tokens_details.cached_tokens`` when it is
        an integer from 0 to the request's ``prompt_tokens``; null when the server does not report it, and null with
        one warning per run when what it reports is no token count of this prompt (``-3``, ``"lots"``, ``1.5``, more
        tokens than the prompt has: docs/guide/reliability.md#numbers-a-report-can-use)."""
        cached = _reported_cached_tokens(body)
        if cached is None or (_is_int(cached) and 0 <= cached <= prompt_tokens):
            return cached
        if not self._warned_cache_count:
            self._warned_cache_count = True
            LOGGER.warning(
                "trac-eval: the server at %s answered a %s request of %d prompt tokens with "
                "usage.prompt_tokens_details.cached_tokens %s, which is no token count of that prompt: stored as "
                "null (num_cached_tokens), as is any other such count of this run",
                self.settings.url,
                what,
                prompt_tokens,
                _shown(cached),
            )
        return None


def _request_name(chunk: ChunkState, index: int) -> str:
    """Which response a request belongs to, for errors: ``(task doc 3 repeat 0)``."""
    request = chunk.requests[index]
    return f"({request.task_name} doc {request.doc_id} repeat {chunk.repeats[index]})"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    """A response value as JSON text cut to 40 characters, for one-line errors."""
    text = json.dumps(value, ensure_ascii=True, default=repr)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _only_choice(body: dict[str, Any]) -> dict[str, Any]:
    choices = body.get("choices")
    if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
        raise MalformedResponse("choices", f"must be a list of one completion choice, got {_shown(choices)}")
    return choices[0]


def _text(choice: dict[str, Any]) -> str:
    text = choice.get("text")
    if not isinstance(text, str):
        raise MalformedResponse("choices[0].text", f"must be a string, got {_shown(text)}")
    return text


def _finish_reason(choice: dict[str, Any]) -> str:
    """The choice's finish reason, one of :data:`FINISH_REASONS` (a null one is refused, never read as EOS)."""
    reason = choice.get("finish_reason")
    if reason not in FINISH_REASONS:
        raise MalformedResponse("choices[0].finish_reason", f"must be one of {FINISH_REASONS}, got {_shown(reason)}")
    return reason


def _stop_reason(choice: dict[str, Any]) -> str | int | None:
    """vLLM's ``stop_reason``: the stop string or stop token id that ended the generation, null for EOS."""
    reason = choice.get("stop_reason")
    if reason is not None and not isinstance(reason, (str, int)):
        raise MalformedResponse("choices[0].stop_reason", f"must be a string, an integer or null, got {_shown(reason)}")
    return reason


TOKEN_ID_PATTERN = re.compile(r"-?[0-9]{1,12}")
"""A token id as text: an integer of at most 12 digits (longer is no id; its range is checked after parsing)."""


def _token_id(token: Any, field: str, vocabulary: int, prefix: str = TOKEN_ID_PREFIX) -> int:
    """The id a response spells ``<prefix><id>`` (``token_id:<id>``, vLLM's ``return_tokens_as_token_ids``; a bare
    id for prompt-logprob keys), within the tokenizer's vocabulary ``0 .. vocabulary - 1`` (an id outside it cannot
    be decoded, nor have come from the model)."""
    if not isinstance(token, str) or not token.startswith(prefix):
        raise MalformedResponse(field, f"must be a token id spelled {prefix + '<id>'!r}, got {_shown(token)}")
    digits = token[len(prefix) :]
    if not TOKEN_ID_PATTERN.fullmatch(digits):
        raise MalformedResponse(field, f"must be a token id spelled {prefix + '<id>'!r}, got {_shown(token)}")
    token_id = int(digits)
    if not 0 <= token_id < vocabulary:
        raise MalformedResponse(field, f"is token {token_id}, outside the tokenizer's vocabulary 0..{vocabulary - 1}")
    return token_id


def _logprob(value: Any, field: str) -> float:
    """A served log-probability: a finite number ≤ 0. A value at most :data:`LOGPROB_TOLERANCE` above 0 (float
    rounding of a near-certain token) is read as 0.0; NaN, ±inf, an integer beyond float range, a larger positive
    value, null or a non-number raise :class:`MalformedResponse`."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise MalformedResponse(field, f"must be a finite log-probability <= 0, got {_shown(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise MalformedResponse(field, f"must be a finite log-probability <= 0, got {_shown(value)}")
    if number > LOGPROB_TOLERANCE:
        raise MalformedResponse(field, f"must be a log-probability <= 0, got {_shown(value)}")
    return min(number, 0.0)


def _top_entries(
    position: Any, field: str, asked: int, vocabulary: int, prefix: str = TOKEN_ID_PREFIX
) -> list[tuple[int, float]]:
    """The (token id, logprob) pairs of one position's top logprobs; at least ``asked`` of them (vLLM returns the
    top ``asked``, plus the sampled or scored token when it is outside them). ``prefix`` spells the keys' ids:
    ``token_id:`` for generated tokens, whose values are logprobs; none for prompt logprobs, whose values are
    ``{"logprob": ...}`` objects."""
    if not isinstance(position, dict):
        raise MalformedResponse(field, f"must be an object of top logprobs, got {_shown(position)}")
    if len(position) < asked:
        raise MalformedResponse(field, f"holds {len(position)} top logprobs; {asked} were asked for")
    entries = []
    for key, value in position.items():
        where = f"{field}[{_shown(key)}]"
        token = _token_id(key, where, vocabulary, prefix)
        if not prefix:
            value, where = (value.get("logprob") if isinstance(value, dict) else value), f"{where}.logprob"
        entries.append((token, _logprob(value, where)))
    return entries


class Positions(NamedTuple):
    """The checked per-token fields of one choice: generated token ids, chosen-token logprobs [T], and each
    position's top logprobs as [T, m] arrays of ids (-1 where a position holds fewer than m) and logprobs (NaN
    there), in the order the server sent them."""

    token_ids: list[int]
    chosen: np.ndarray
    top_ids: np.ndarray
    top: np.ndarray


def _positions(choice: dict[str, Any], asked: int, vocabulary: int) -> Positions:
    """Generated token ids, chosen-token logprobs and the top (id, logprob) pairs per position of one choice, each
    field checked (:func:`_token_id`, :func:`_logprob`, :func:`_top_entries` with ``asked`` top logprobs): column by
    column (:func:`_checked_columns`), and position by position (:func:`_walked_positions`) when a column fails, to
    name the field at fault."""
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict):
        raise MalformedResponse("choices[0].logprobs", f"must be an object of token logprobs, got {_shown(logprobs)}")
    columns = {}
    for name in ("tokens", "token_logprobs", "top_logprobs"):
        columns[name] = logprobs.get(name)
        if not isinstance(columns[name], list):
            raise MalformedResponse(f"choices[0].logprobs.{name}", f"must be a list, got {_shown(columns[name])}")
    tokens, chosen, top = columns["tokens"], columns["token_logprobs"], columns["top_logprobs"]
    if not len(tokens) == len(chosen) == len(top):
        raise MalformedResponse(
            "choices[0].logprobs",
            f"holds {len(tokens)} tokens, {len(chosen)} token_logprobs and {len(top)} top_logprobs",
        )
    checked = _checked_columns(tokens, chosen, top, asked, vocabulary)
    return checked if checked is not None else _walked_positions(tokens, chosen, top, asked, vocabulary)


def _walked_positions(tokens: list[Any], chosen: list[Any], top: list[Any], asked: int, vocabulary: int) -> Positions:
    """The per-token fields checked one position and one entry at a time; the first field that fails raises
    :class:`MalformedResponse` naming it."""
    entries = [
        _top_entries(position, f"choices[0].logprobs.top_logprobs[{t}]", asked, vocabulary)
        for t, position in enumerate(top)
    ]
    pairs = [pair for position in entries for pair in position]
    return Positions(
        [_token_id(token, f"choices[0].logprobs.tokens[{t}]", vocabulary) for t, token in enumerate(tokens)],
        np.asarray([_logprob(value, f"choices[0].logprobs.token_logprobs[{t}]") for t, value in enumerate(chosen)]),
        *_rows([len(position) for position in entries], [i for i, _ in pairs], [value for _, value in pairs]),
    )


TOKEN_IDS_PATTERN = re.compile(rf"(?:{TOKEN_ID_PREFIX}[0-9]{{1,12}}\n)*{TOKEN_ID_PREFIX}[0-9]{{1,12}}")
"""Token ids spelled ``token_id:<id>``, one a line: what :func:`_token_id` accepts, negative ids left out (refused)."""


def _checked_columns(
    tokens: list[Any], chosen: list[Any], top: list[Any], asked: int, vocabulary: int
) -> Positions | None:
    """The fields :func:`_positions` reads, checked a column at a time: every token and top-logprob key spelled
    ``token_id:<id>`` within the vocabulary, every logprob a finite number ≤ :data:`LOGPROB_TOLERANCE` (read as at
    most 0.0), every position an object of at least ``asked`` top logprobs. None when any check fails."""
    if not set(map(type, tokens)) <= {str} or not set(map(type, top)) <= {dict}:
        return None
    counts = [len(position) for position in top]
    if min(counts, default=asked) < asked:
        return None
    token_ids, top_ids = _id_column(tokens, vocabulary), _id_column(list(chain.from_iterable(top)), vocabulary)
    chosen_values = _logprob_column(chosen)
    top_values = _logprob_column(list(chain.from_iterable(map(dict.values, top))))
    if token_ids is None or top_ids is None or chosen_values is None or top_values is None:
        return None
    return Positions(token_ids.tolist(), chosen_values, *_rows(counts, top_ids, top_values))


def _id_column(keys: list[str], vocabulary: int) -> np.ndarray | None:
    """The ids of ``token_id:<id>`` strings, or None unless every one is spelled so and lies in the vocabulary."""
    if not keys:
        return np.zeros(0, dtype=np.int64)
    joined = "\n".join(keys)
    if not TOKEN_IDS_PATTERN.fullmatch(joined):
        return None
    ids = np.asarray(list(map(int, joined[len(TOKEN_ID_PREFIX) :].split("\n" + TOKEN_ID_PREFIX))), dtype=np.int64)
    return ids if len(ids) == len(keys) and ids.max() < vocabulary else None  # a key holding a line break: no id


def _logprob_column(values: list[Any]) -> np.ndarray | None:
    """The logprobs as :func:`_logprob` reads them (float rounding above 0 as 0.0), or None unless every one is a
    finite number (no bool) at most :data:`LOGPROB_TOLERANCE`."""
    if not set(map(type, values)) <= {float, int}:
        return None
    try:
        array = np.asarray(values, dtype=np.float64)
    except OverflowError:  # an integer beyond float range
        return None
    if not np.isfinite(array).all() or (array > LOGPROB_TOLERANCE).any():
        return None
    return np.where(array > 0, 0.0, array)


def _rows(counts: Sequence[int], ids: Sequence[int], values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Top-logprob ids and values of all positions in order, ``counts[t]`` of them for position t, as [T, m] id and
    logprob arrays (-1 and NaN where a position holds fewer)."""
    return padded_rows(counts, ids, -1, np.int64), padded_rows(counts, values)


def _scored(
    choice: dict[str, Any], prompt_length: int, tokens: Sequence[int], asked: int, vocabulary: int
) -> tuple[list[float], list[list[float]]]:
    """Chosen and top logprobs of the teacher-forced ``tokens`` from the prompt logprobs after the
    ``prompt_length``-token prefix; each position must hold its scored token and ``asked`` top logprobs."""
    prompt_logprobs = choice.get("prompt_logprobs")
    if not isinstance(prompt_logprobs, list):
        raise MalformedResponse("choices[0].prompt_logprobs", f"must be a list, got {_shown(prompt_logprobs)}")
    positions = prompt_logprobs[prompt_length:]
    if len(positions) != len(tokens):
        raise MalformedResponse(
            "choices[0].prompt_logprobs",
            f"holds {len(positions)} positions after the {prompt_length}-token prefix; {len(tokens)} "
            "teacher-forced tokens were sent",
        )
    chosen, top = [], []
    for offset, (token, position) in enumerate(zip(tokens, positions, strict=True)):
        field = f"choices[0].prompt_logprobs[{prompt_length + offset}]"
        entries = dict(_top_entries(position, field, asked, vocabulary, prefix=""))
        if token not in entries:
            raise MalformedResponse(field, f"lacks the logprob of the scored token {token}")
        chosen.append(entries[token])
        top.append(list(entries.values()))
    return chosen, top


def _reported_cached_tokens(body: dict[str, Any]) -> Any:
    """What the server reports as ``usage.prompt_tokens_details.cached_tokens`` (None when it reports nothing)."""
    usage = body.get("usage")
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    return details.get("cached_tokens") if isinstance(details, dict) else None


def _capability_problem(body: dict[str, Any], wanted_logprobs: int, needs_prompt_logprobs: bool) -> str | None:
    """What the capability check's response lacks, in words, or None."""
    choices = body.get("choices")
    if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
        return "did not answer a token-id prompt with one completion choice"
    logprobs = choices[0].get("logprobs")
    tokens, top = (logprobs.get("tokens"), logprobs.get("top_logprobs")) if isinstance(logprobs, dict) else (0, 0)
    if not tokens or not top or not isinstance(tokens, list) or not isinstance(top, list):
        return "returns no per-token logprobs (the completions API's logprobs parameter)"
    if not all(isinstance(token, str) and token.startswith(TOKEN_ID_PREFIX) for token in tokens):
        return (
            f"returns tokens as text ({tokens[0]!r}), not as ids: TrAC needs the exact generated token ids "
            "(vLLM's return_tokens_as_token_ids)"
        )
    returned = len(top[0]) if isinstance(top[0], dict) else 0
    if returned < wanted_logprobs:
        return f"returns {returned} top logprobs per token, the tasks need {wanted_logprobs} (vLLM: --max-logprobs)"
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
