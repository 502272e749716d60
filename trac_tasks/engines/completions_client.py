"""Requests to an OpenAI-compatible completions server for the served TrAC path (docs/architecture.md#served-backend).

A :class:`RequestQueue` keeps a fixed number of requests in flight (lm-eval's ``num_concurrent``). Requests wait in
priority order: the jobs a finished trace unlocks (its probe, ...) go before generations not yet sent, so a probe
reaches the server while the prefix its trace just computed is still in the server's prefix cache. Each request
gets bounded retries with exponential back-off on connection errors, timeouts, the HTTP statuses a busy or
restarting server answers and generations the server aborted; any other HTTP error, or the last failed attempt,
raises :class:`ServerRequestError` and stops the queue (the records of questions already complete are on disk by
then). So does an answer that breaks the protocol, without another attempt: a body that is not UTF-8 JSON, an
error object sent with HTTP 200 (its own message is kept), or a field a handler refuses (:class:`MalformedResponse`);
each is one line naming the server, the request and the field.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trac_tasks.generation.progress import LOGGER

RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""HTTP statuses of a server that is busy, restarting or behind a gateway that timed out: worth another attempt."""

MAX_BACKOFF_SECONDS = 10.0

Handler = Callable[[dict[str, Any], float], None]
"""Called with a request's JSON response and its wall seconds (the successful attempt's)."""


class ServerRequestError(RuntimeError):
    """A request the server refused, did not answer within the allowed attempts, or answered malformed."""


class MalformedResponse(ValueError):
    """Raised by a :data:`Handler` for a response field that breaks the protocol: ``field`` is its path in the
    response (``choices[0].logprobs.token_logprobs[3]``), ``problem`` what is wrong with it. The queue reports it as a
    :class:`ServerRequestError` naming the server and the request."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"field {field!r} {problem}")
        self.field = field


@dataclass(frozen=True)
class ClientSettings:
    """Where and how to send requests: lm-eval's ``base_url``, headers, ``num_concurrent``, ``max_retries``
    (attempts per request), ``timeout`` (seconds per attempt) and certificate check."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    concurrency: int = 1
    attempts: int = 3
    timeout: float = 300.0
    verify_certificate: bool = True


@dataclass(frozen=True)
class _Request:
    payload: dict[str, Any]
    handle: Handler
    what: str


class RequestQueue:
    """Requests waiting for one of ``settings.concurrency`` connections, lowest priority number first (then in the
    order submitted). Handlers run on the event loop and may :meth:`submit` more requests."""

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        self._waiting: list[tuple[int, int, _Request]] = []
        self._order = itertools.count()
        self._wakeup: asyncio.Event | None = None
        self._in_flight = 0

    def submit(self, priority: int, payload: dict[str, Any], handle: Handler, what: str) -> None:
        """Queue ``payload``; ``handle`` gets its response. ``what`` names the request in errors."""
        heapq.heappush(self._waiting, (priority, next(self._order), _Request(payload, handle, what)))
        if self._wakeup is not None:
            self._wakeup.set()

    def run(self) -> None:
        """Send every queued request (and those the handlers add) until none is left; raises the first error."""
        asyncio.run(self._run())

    async def _run(self) -> None:
        import aiohttp

        self._wakeup = asyncio.Event()
        connector = aiohttp.TCPConnector(limit=self.settings.concurrency, ssl=self.settings.verify_certificate)
        timeout = aiohttp.ClientTimeout(total=self.settings.timeout)
        async with aiohttp.ClientSession(
            connector=connector, timeout=timeout, headers=self.settings.headers
        ) as session:
            workers = [asyncio.create_task(self._worker(session)) for _ in range(self.settings.concurrency)]
            try:
                await asyncio.gather(*workers)
            finally:
                for worker in workers:
                    worker.cancel()
                await asyncio.gather(*workers, return_exceptions=True)

    async def _worker(self, session: Any) -> None:
        """Take the most urgent waiting request until nothing waits and nothing in flight can add more."""
        while True:
            if not self._waiting:
                if self._in_flight == 0:
                    self._wakeup.set()  # let the other workers see that the queue is drained
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            _, _, request = heapq.heappop(self._waiting)
            self._in_flight += 1
            try:
                body, seconds = await self._post(session, request)
                try:
                    request.handle(body, seconds)
                except MalformedResponse as error:
                    raise ServerRequestError(
                        f"trac-eval: the server at {self.settings.url} answered a {request.what} request with a "
                        f"malformed response: {error}; nothing of it was recorded"
                    ) from None
            finally:
                self._in_flight -= 1
                self._wakeup.set()

    async def _post(self, session: Any, request: _Request) -> tuple[dict[str, Any], float]:
        """One request with bounded retries; returns its JSON body and the successful attempt's wall seconds."""
        import aiohttp

        url, attempts = self.settings.url, max(1, self.settings.attempts)
        problem = ""
        for attempt in range(1, attempts + 1):
            started = time.perf_counter()
            try:
                async with session.post(url, json=request.payload) as response:
                    raw = await response.read()
                    if response.status == 200:
                        body = _json_body(raw, url, request.what)
                        if not _aborted(body):
                            return body, time.perf_counter() - started
                        problem = "the server aborted the request (shutting down?)"
                    elif response.status not in RETRIED_STATUSES:
                        raise ServerRequestError(
                            f"trac-eval: the server at {url} refused a {request.what} request "
                            f"(HTTP {response.status}): {raw[:500].decode('utf-8', errors='replace')}"
                        )
                    else:
                        problem = f"HTTP {response.status}: {raw[:200].decode('utf-8', errors='replace')}"
            except (TimeoutError, aiohttp.ClientError) as error:
                problem = f"{type(error).__name__}: {error}".rstrip(": ")
            if attempt < attempts:
                delay = min(MAX_BACKOFF_SECONDS, 2.0 ** (attempt - 1))
                LOGGER.warning(
                    "trac-eval: a %s request to %s failed (%s); attempt %d of %d in %.0f s",
                    request.what,
                    url,
                    problem,
                    attempt + 1,
                    attempts,
                    delay,
                )
                await asyncio.sleep(delay)
        raise ServerRequestError(
            f"trac-eval: the server at {url} did not answer a {request.what} request in "
            f"{attempts} attempts (last: {problem}); the records of every question finished so "
            "far are written"
        )


def _aborted(body: dict[str, Any]) -> bool:
    """Whether the server answered but aborted the generation (vLLM's finish reason ``abort``, e.g. while it shuts
    down): an attempt to repeat, like a lost connection."""
    choices = body.get("choices")
    return isinstance(choices, list) and any(
        isinstance(choice, dict) and choice.get("finish_reason") == "abort" for choice in choices
    )


def _json_body(raw: bytes, url: str, what: str) -> dict[str, Any]:
    """The JSON object of an HTTP 200 answer. A body that is not UTF-8, not a JSON object, or an error object (vLLM's
    ``{"object": "error", "message": ...}`` or the OpenAI ``{"error": {"message": ...}}``) sent with status 200
    raises :class:`ServerRequestError` with the server's own words."""
    where = f"trac-eval: the server at {url} answered a {what} request"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ServerRequestError(
            f"{where} with a body that is not valid UTF-8 (byte {raw[error.start]:#04x} at offset {error.start})"
        ) from None
    try:
        body = json.loads(text)
    except json.JSONDecodeError:
        body = None
    if not isinstance(body, dict):
        raise ServerRequestError(f"{where} with something that is not a JSON object: {text[:200]!r}")
    message = _error_message(body)
    if message is not None:
        raise ServerRequestError(f"{where} with an error (HTTP 200): {message[:500]!r}")
    return body


def _error_message(body: dict[str, Any]) -> str | None:
    """The server's message when ``body`` is an error object instead of a completion, else None."""
    if "choices" in body:
        return None
    error = body.get("error")
    if isinstance(error, dict):
        return str(error.get("message", error))
    if error is not None:
        return str(error)
    if body.get("object") == "error":
        return str(body.get("message", body))
    return None
