"""The served path checks a response's per-token fields column by column (docs/architecture.md#served-backend): on
every answer the position-by-position checks accept, it gives the very same ids and logprobs; on every answer they
refuse (or read unusually), it gives way to them, so the error names the field as before.

A served model that answers wrong: every response field
a record is built from is checked before anything is recorded, and what a server sends wrong ends the run with one
line naming the server, the request and the field, or becomes a documented null, never a record that ``trac`` refuses
later or a crash inside lm-eval. The server is a small OpenAI-compatible stand-in on loopback (a real ``vllm serve``
cannot be made to misbehave), answering as vLLM does, with one answer spoiled per test."""

from __future__ import annotations

import copy
import json
import logging
import math
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from trac_metrics.records import iter_records
from trac_tasks.engines.completions_client import MalformedResponse, ServerRequestError
from trac_tasks.engines.served_backend import LOGPROB_TOLERANCE, _checked_columns, _positions, _walked_positions
from trac_tasks.engines.vllm_backend import _probe_finish_reason

VOCABULARY = 50
ASKED = 5


def _choice(rng: np.random.Generator, positions: int) -> dict[str, Any]:
    """A completion choice as vLLM's server writes it, through JSON: each position's top ``ASKED`` ids (plus the
    sampled one when outside them), some logprobs exactly 0, -0.0, a rounding error above 0, or integers."""
    tokens, chosen, top = [], [], []
    for _ in range(positions):
        token = int(rng.integers(0, VOCABULARY))
        ids = [int(i) for i in rng.choice(VOCABULARY, size=ASKED + int(rng.random() < 0.2), replace=False)]
        values = list(-rng.exponential(1.0, size=len(ids)))
        special = (0.0, -0.0, LOGPROB_TOLERANCE / 2, -3, 0)
        values = [special[int(draw * 25)] if draw < 0.2 else value for draw, value in zip(rng.random(len(ids)), values)]
        tokens.append(f"token_id:{token}")
        chosen.append(values[0])
        top.append({f"token_id:{i}": value for i, value in zip(ids, values, strict=True)})
    choice = {"text": "x", "logprobs": {"tokens": tokens, "token_logprobs": chosen, "top_logprobs": top}}
    return json.loads(json.dumps(choice))


def _same(one: Any, other: Any) -> bool:
    return (
        one.token_ids == other.token_ids
        and one.chosen.tobytes() == other.chosen.tobytes()
        and np.array_equal(one.top_ids, other.top_ids)
        and one.top.tobytes() == other.top.tobytes()
    )


def _columns(choice: dict[str, Any]) -> tuple[list[Any], list[Any], list[Any]]:
    logprobs = choice["logprobs"]
    return logprobs["tokens"], logprobs["token_logprobs"], logprobs["top_logprobs"]


@pytest.mark.parametrize("seed", range(20))
def test_the_column_checks_read_what_the_position_checks_read(seed):
    choice = _choice(np.random.default_rng(seed), positions=int(np.random.default_rng(seed).integers(0, 40)))
    checked = _checked_columns(*_columns(choice), ASKED, VOCABULARY)
    assert checked is not None
    assert _same(checked, _walked_positions(*_columns(choice), ASKED, VOCABULARY))
    assert _same(_positions(choice, ASKED, VOCABULARY), checked)
    assert (checked.top[~np.isnan(checked.top)] <= 0).all() and (checked.chosen <= 0).all()


SPOILED = {
    "NaN logprob": ("token_logprobs", 0, math.nan),
    "+inf top logprob": ("top_logprobs", 1, {"token_id:1": math.inf, **{f"token_id:{i}": -1.0 for i in range(2, 6)}}),
    "positive logprob": ("token_logprobs", 2, 0.5),
    "bool logprob": ("token_logprobs", 0, False),
    "null logprob": ("token_logprobs", 1, None),
    "string logprob": ("token_logprobs", 1, "-0.5"),
    "huge integer": ("token_logprobs", 1, -(10**400)),
    "short top": ("top_logprobs", 0, {"token_id:1": -1.0, "token_id:2": -2.0}),
    "null position": ("top_logprobs", 0, None),
    "negative id": ("tokens", 0, "token_id:-5"),
    "id past the vocabulary": ("tokens", 1, f"token_id:{VOCABULARY}"),
    "thirteen digits": ("tokens", 1, "token_id:1234567890123"),
    "not an id": ("tokens", 2, "token_id:abc"),
    "an int id": ("tokens", 2, 7),
    "a key holding a line break": (
        "top_logprobs",
        2,
        {"token_id:1\ntoken_id:2": -1.0, **{f"token_id:{i}": -1.0 for i in range(3, 8)}},
    ),
    "unicode digits": ("tokens", 0, "token_id:\u0661"),
}


@pytest.mark.parametrize("case", SPOILED)
def test_an_answer_the_position_checks_refuse_gives_way_to_them(case):
    column, index, value = SPOILED[case]
    choice = _choice(np.random.default_rng(0), positions=4)
    choice["logprobs"][column][index] = value
    assert _checked_columns(*_columns(choice), ASKED, VOCABULARY) is None
    with pytest.raises(MalformedResponse, match=rf"choices\[0\]\.logprobs\.{column}\[{index}\]"):
        _positions(choice, ASKED, VOCABULARY)


def test_an_id_written_with_leading_zeros_reads_the_same_both_ways():
    choice = _choice(np.random.default_rng(1), positions=3)
    choice["logprobs"]["tokens"][0] = "token_id:007"
    checked = _checked_columns(*_columns(choice), ASKED, VOCABULARY)
    assert checked is not None and checked.token_ids[0] == 7
    assert _same(checked, _walked_positions(*_columns(choice), ASKED, VOCABULARY))


TASK = "served_hardening"
CONTEXT = 1536
ANSWER = "The answer is \\boxed{5}"
Spoil = Callable[[dict[str, Any]], dict[str, Any] | bytes]
"""Changes a correct answer body into the misbehaving one (bytes are sent as they are)."""


class FakeCompletionsServer:
    """Answers vLLM's way: the first POST is the capability check, then generations (they carry a ``seed``), greedy
    probes (``max_tokens`` 16), teacher-forced scorings (``prompt_logprobs`` only) and P(True) steps; ``spoil`` maps
    one of those kinds to what changes its answers."""

    def __init__(self, tokenizer: Any, spoil: dict[str, Spoil]) -> None:
        self.tokenizer, self.spoil, self.kinds, self.payloads = tokenizer, spoil, [], []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                kind = server.kind_of(payload)
                server.kinds.append(kind)
                server.payloads.append((kind, payload))
                body = server.answer(kind, payload)
                if kind in server.spoil:
                    body = server.spoil[kind](copy.deepcopy(body))
                self.send(body if isinstance(body, bytes) else json.dumps(body).encode())

            def do_GET(self) -> None:  # noqa: N802 - http.server's name: the model list (vLLM's /v1/models)
                self.send(json.dumps({"data": [{"id": "tiny", "max_model_len": CONTEXT}]}).encode())

            def send(self, data: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/completions"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def kind_of(self, payload: dict[str, Any]) -> str:
        if not self.kinds:
            return "check"
        if "seed" in payload:
            return "generation"
        if "logprobs" not in payload:
            return "score"
        return "next_token" if payload["max_tokens"] == 1 else "probe"

    def ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def answer(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The correct answer: the sample's ids and logprobs, each position with the top logprobs asked for."""
        extra = {}
        if "prompt_logprobs" in payload:
            top, prompt = payload["prompt_logprobs"], payload["prompt"]
            extra["prompt_logprobs"] = [None] + [self.scored(token, top) for token in prompt[1:]]
        if kind == "score":
            return self.completion(self.ids("5")[:1], 1, **extra)
        tokens = {
            "check": self.ids("5"),
            "generation": [*self.ids(ANSWER), self.tokenizer.eos_token_id],
            "probe": self.ids("5}"),
            "next_token": self.ids("A"),
        }[kind]
        return self.completion(tokens, payload["logprobs"], **extra)

    def completion(self, tokens: list[int], top: int, **extra: Any) -> dict[str, Any]:
        logprobs = {
            "tokens": [f"token_id:{token}" for token in tokens],
            "token_logprobs": [-0.25] * len(tokens),
            "top_logprobs": [
                {f"token_id:{other}": -0.25 - rank for rank, other in enumerate(self.top(token, top))}
                for token in tokens
            ],
        }
        choice = {"text": self.tokenizer.decode(tokens), "logprobs": logprobs, "finish_reason": "stop", **extra}
        return {"choices": [choice], "usage": {"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 8}}}

    @staticmethod
    def top(token: int, count: int) -> list[int]:
        """``token`` and the ids after it in a position's top ``count``."""
        return [token, *(other for other in range(100, 101 + count) if other != token)][:count]

    def scored(self, token: int, top: int) -> dict[str, dict[str, float]]:
        return {str(item): {"logprob": -0.5 - rank, "rank": rank + 1} for rank, item in enumerate(self.top(token, top))}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def records_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRAC_RECORDS_DIR", str(tmp_path / "records"))
    return tmp_path / "records"


@pytest.fixture
def served(tiny_model, tiny_tokenizer, records_dir):
    """``served(spoil, trac)``: the fake server (spoiled as asked) and a TrAC run of two questions on it through
    :class:`ServedTracRunner`; returns the server, and the run's error message or None."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    from trac_tasks.engines.served_backend import ServedTracRunner

    servers: list[FakeCompletionsServer] = []

    def run(spoil: dict[str, Spoil], trac: dict[str, Any] | None = None) -> tuple[FakeCompletionsServer, str | None]:
        server = FakeCompletionsServer(tiny_tokenizer, spoil)
        servers.append(server)
        lm = LocalCompletionsAPI(
            model="tiny", base_url=server.url, tokenizer=str(tiny_model), tokenizer_backend="huggingface"
        )
        block = {"answer_kind": "math", "reference": "5", **(trac or {})}
        requests = []
        for doc_id in range(2):
            kwargs = {"until": [], "max_gen_toks": 32, "temperature": 0.0, "trac": block}
            instance = Instance(
                "generate_until", {"q": doc_id}, (f"What is {doc_id} + 5?", kwargs), 0, (TASK, doc_id, 1)
            )
            instance.repeats = 1
            requests.append(instance)
        try:
            ServedTracRunner(lm).run(requests, disable_tqdm=True)
        except ServerRequestError as error:
            return server, str(error)
        return server, None

    yield run
    for server in servers:
        server.close()


def written(records_dir: Path) -> list[Any]:
    return [record for path in sorted(records_dir.glob(f"{TASK}.*.jsonl")) for record in iter_records(path)]


def at(path: str, value: Any) -> Spoil:
    """Set the dotted ``path`` (``choices.0.logprobs.tokens.0``) of the answer to ``value``."""

    def spoil(body: dict[str, Any]) -> dict[str, Any]:
        *parents, last = path.split(".")
        holder: Any = body
        for part in parents:
            holder = holder[int(part)] if isinstance(holder, list) else holder[part]
        holder[int(last) if isinstance(holder, list) else last] = value
        return body

    return spoil


def fewer_top_logprobs(body: dict[str, Any]) -> dict[str, Any]:
    top = body["choices"][0]["logprobs"]["top_logprobs"]
    top[1] = dict(list(top[1].items())[:2])
    return body


def test_a_sampled_probe_is_asked_for_at_the_probe_temperature_and_recorded(served, records_dir):
    """docs/method.md#probe-decoding-and-cutting: ``trac.probe_temperature`` samples the decoded probes (the scoring
    and P(True) steps stay greedy) and every record names it."""
    server, error = served({}, {"probe_variants": ["trace", "teacher_forced"], "probe_temperature": 0.7})
    assert error is None
    probes = [payload for kind, payload in server.payloads if kind == "probe"]
    assert probes and all((payload["temperature"], payload["top_p"]) == (0.7, 1.0) for payload in probes)
    assert all(payload["temperature"] == 0.0 for kind, payload in server.payloads if kind == "score")
    assert {record.decoding["probe_temperature"] for record in written(records_dir)} == {0.7}
    server, error = served({})
    assert all(payload["temperature"] == 0.0 for kind, payload in server.payloads if kind == "probe")


def test_a_well_behaved_server_gives_complete_records(served, records_dir):
    server, error = served({}, {"probe_variants": ["trace", "teacher_forced"], "p_true": True})
    assert error is None
    records = written(records_dir)
    assert [record.doc_id for record in records] == [0, 1]
    assert {"check", "generation", "probe", "score", "next_token"} == set(server.kinds)
    assert all(record.probes["trace"].num_cached_tokens == 8 for record in records)
    assert set(records[0].probes) == {"trace", "teacher_forced"} and records[0].p_true is not None


GENERATION = "generation (served_hardening doc 0 repeat 0)"
PROBE = "trace job (served_hardening doc 0 repeat 0)"
SCORE = "teacher_forced job (served_hardening doc 0 repeat 0)"
LOGPROBS = "choices[0].logprobs"
REFUSED = {
    # a NaN logprob (lm-eval died in process_results on it), +inf, a probability above one, a missing one
    "nan logprob": (
        "generation",
        at("choices.0.logprobs.token_logprobs.0", float("nan")),
        f"{LOGPROBS}.token_logprobs[0]",
        "got NaN",
    ),
    "inf top logprob": (
        "generation",
        at("choices.0.logprobs.top_logprobs.2.token_id:100", float("inf")),
        'top_logprobs[2]["token_id:100"]',
        "got Infinity",
    ),
    "positive logprob": (
        "probe",
        at("choices.0.logprobs.token_logprobs.1", 0.5),
        f"{LOGPROBS}.token_logprobs[1]",
        "log-probability <= 0, got 0.5",
    ),
    "null logprob": (
        "generation",
        at("choices.0.logprobs.token_logprobs.3", None),
        f"{LOGPROBS}.token_logprobs[3]",
        "got null",
    ),
    # fewer top logprobs than asked after the capability check
    "2 of 5 top logprobs": (
        "generation",
        fewer_top_logprobs,
        f"{LOGPROBS}.top_logprobs[1]",
        "holds 2 top logprobs; 5 were asked",
    ),
    # token ids outside the vocabulary or not ids at all
    "negative id": (
        "generation",
        at("choices.0.logprobs.tokens.2", "token_id:-5"),
        f"{LOGPROBS}.tokens[2]",
        "is token -5, outside the tokenizer's vocabulary 0..49151",
    ),
    "id past the vocabulary": (
        "probe",
        at("choices.0.logprobs.tokens.0", "token_id:999999"),
        f"{LOGPROBS}.tokens[0]",
        "is token 999999, outside",
    ),
    "id past int32": (
        "generation",
        at("choices.0.logprobs.tokens.0", "token_id:4294967297"),
        f"{LOGPROBS}.tokens[0]",
        "is token 4294967297, outside",
    ),
    "id not a number": (
        "generation",
        at("choices.0.logprobs.tokens.1", "token_id:abc"),
        f"{LOGPROBS}.tokens[1]",
        "spelled 'token_id:<id>', got \"token_id:abc\"",
    ),
    "id sent as an int": (
        "generation",
        at("choices.0.logprobs.tokens.1", 7),
        f"{LOGPROBS}.tokens[1]",
        "spelled 'token_id:<id>', got 7",
    ),
    "top key not an id": (
        "generation",
        at("choices.0.logprobs.top_logprobs.0", {f"x{i}": -1.0 for i in range(5)}),
        'top_logprobs[0]["x0"]',
        "spelled 'token_id:<id>'",
    ),
    # null structures
    "null logprobs": (
        "generation",
        at("choices.0.logprobs", None),
        LOGPROBS,
        "must be an object of token logprobs, got null",
    ),
    "null top_logprobs": (
        "generation",
        at("choices.0.logprobs.top_logprobs", None),
        f"{LOGPROBS}.top_logprobs",
        "must be a list, got null",
    ),
    "null top position": (
        "probe",
        at("choices.0.logprobs.top_logprobs.0", None),
        f"{LOGPROBS}.top_logprobs[0]",
        "got null",
    ),
    "text not a string": ("generation", at("choices.0.text", None), "choices[0].text", "must be a string"),
    "no choice": ("generation", at("choices", []), "'choices'", "one completion choice, got []"),
    # a probe that ended without a reason was stored as 'eos'
    "null probe finish reason": ("probe", at("choices.0.finish_reason", None), "choices[0].finish_reason", "got null"),
    "odd finish reason": (
        "generation",
        at("choices.0.finish_reason", "tool_calls"),
        "choices[0].finish_reason",
        'got "tool_calls"',
    ),
    # teacher forcing
    "null prompt_logprobs": (
        "score",
        at("choices.0.prompt_logprobs", None),
        "choices[0].prompt_logprobs",
        "must be a list, got null",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_malformed_answer_is_one_line_naming_server_request_and_field_and_nothing_is_written(
    served, records_dir, case
):
    kind, spoil, field, problem = REFUSED[case]
    server, error = served({kind: spoil}, {"probe_variants": ["trace", "teacher_forced"]})
    request = {"generation": GENERATION, "probe": PROBE, "score": SCORE}[kind]
    assert error is not None and "\n" not in error, error
    assert f"the server at {server.url} answered a {request} request with a malformed response" in error, error
    assert field in error and problem in error, error
    assert written(records_dir) == []


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{"choices": [{"text": "\xff\xfe"}]}', "a body that is not valid UTF-8 (byte 0xff at offset 23)"),
        ({"object": "error", "message": "The model `tiny` does not exist.", "code": 404}, "does not exist"),
        ({"error": {"message": "prompt too long", "type": "BadRequestError"}}, "with an error (HTTP 200): 'prompt too"),
    ],
)
def test_a_body_that_is_no_completion_is_one_line_with_the_servers_words(served, records_dir, body, problem):
    server, error = served({"generation": lambda _: body})
    assert error is not None and "\n" not in error, error
    assert f"the server at {server.url} answered a {GENERATION} request with" in error and problem in error, error
    assert written(records_dir) == []


@pytest.mark.parametrize("cached", [-3, "lots", 1.5, True, 10**6])  # 10**6: more than the prompt has
def test_a_cache_count_that_is_no_count_is_stored_as_null_with_one_warning(served, records_dir, caplog, cached):
    """Both questions' probes report it: one warning names the server, the first request and the field; the
    records read back (a -3 was written, and every ``trac`` command refused the file)."""
    with caplog.at_level(logging.WARNING, logger="lm_eval.trac_eval"):
        server, error = served({"probe": at("usage.prompt_tokens_details.cached_tokens", cached)})
    assert error is None
    assert [record.probes["trace"].num_cached_tokens for record in written(records_dir)] == [None, None]
    (warning,) = [message for message in caplog.messages if "cached_tokens" in message]
    assert server.url in warning and PROBE in warning and f"cached_tokens {json.dumps(cached)}" in warning


def test_a_logprob_a_rounding_error_above_zero_is_read_as_zero(served, records_dir):
    _, error = served({"generation": at("choices.0.logprobs.token_logprobs.0", 3e-7)})
    assert error is None
    first = written(records_dir)[0]
    assert first.token_logprobs[0] == 0.0 and (first.token_logprobs <= 0).all()


@pytest.mark.parametrize(("engine_reason", "expected"), [("length", "length"), ("stop", "eos"), ("abort", None)])
def test_an_in_process_probe_finish_reason_is_mapped_or_refused(engine_reason: str, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(RuntimeError, match="finish reason 'abort'"):
            _probe_finish_reason(engine_reason)
    else:
        assert _probe_finish_reason(engine_reason) == expected
