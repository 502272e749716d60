"""The served path's HTTP side without an engine (docs/architecture.md#served-backend): request priorities, bounded
retries, and the up-front check that refuses a server which cannot serve TrAC requests. The server here is a small
scripted HTTP server standing in for APIs that cannot run on this machine (other vendors', failing ones); the real
``vllm serve`` path is tested end to end in test_lm_eval_served.py."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
from vllm_server import free_port

from trac_tasks.engines.completions_client import ClientSettings, RequestQueue, ServerRequestError
from trac_tasks.generation.config import TracConfig
from trac_tasks.generation.runner import check_generation_room

SERVED_CONTEXT = 1536
"""The context length the scripted server lists for its model."""


class ScriptedServer:
    """Answers POSTs with the scripted (status, JSON body) pairs in turn (the last one repeats); keeps each payload."""

    def __init__(self, *answers: tuple[int, dict]) -> None:
        self.answers = list(answers)
        self.payloads: list[dict] = []
        script = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                script.payloads.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                status, body = script.answers.pop(0) if len(script.answers) > 1 else script.answers[0]
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name: the model list (vLLM's /v1/models)
                data = json.dumps({"data": [{"id": "tiny", "max_model_len": SERVED_CONTEXT}]}).encode()
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

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(autouse=True)
def records_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAC_RECORDS_DIR", str(tmp_path / "records"))


@pytest.fixture
def scripted():
    servers: list[ScriptedServer] = []

    def start(*answers: tuple[int, dict]) -> ScriptedServer:
        servers.append(ScriptedServer(*answers))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


OK = (200, {"choices": [{"text": "x"}]})


def test_a_finished_traces_jobs_go_before_the_generations_still_waiting(scripted):
    server = scripted(OK)
    queue = RequestQueue(ClientSettings(url=server.url, concurrency=1))
    order: list[str] = []

    def generation_done(name: str):
        def handle(body: dict, seconds: float) -> None:
            assert body == OK[1] and seconds > 0
            order.append(name)
            if name == "generation 0":
                queue.submit(0, {"name": "probe 0"}, lambda *_: order.append("probe 0"), "probe")

        return handle

    for index in range(3):
        queue.submit(1, {"name": f"generation {index}"}, generation_done(f"generation {index}"), "generation")
    queue.run()
    assert order == ["generation 0", "probe 0", "generation 1", "generation 2"]
    assert [payload["name"] for payload in server.payloads] == order


def test_busy_answers_and_aborted_generations_are_retried_with_back_off_then_succeed(scripted, caplog):
    aborted = (200, {"choices": [{"text": "The ans", "finish_reason": "abort"}]})  # vLLM shutting down
    server = scripted((503, {"error": "busy"}), aborted, OK)
    queue = RequestQueue(ClientSettings(url=server.url, attempts=3))
    bodies: list[dict] = []
    queue.submit(1, {}, lambda body, _: bodies.append(body), "generation")
    with caplog.at_level(logging.WARNING, logger="lm_eval.trac_eval"):
        queue.run()
    assert bodies == [OK[1]] and len(server.payloads) == 3
    retries = [message for message in caplog.messages if "attempt" in message]
    assert len(retries) == 2 and "HTTP 503" in retries[0] and "aborted" in retries[1]


@pytest.mark.parametrize(
    ("answer", "sent", "message"),
    [
        ((503, {"error": "busy"}), 2, r"did not answer a trace job request in 2 attempts.*HTTP 503"),
        ((400, {"error": "logprobs too large"}), 1, r"refused a trace job request \(HTTP 400\).*logprobs too large"),
    ],
)
def test_failures_get_bounded_attempts_refusals_none_then_a_clear_error(scripted, answer, sent, message):
    server = scripted(answer)
    queue = RequestQueue(ClientSettings(url=server.url, attempts=2))
    queue.submit(1, {}, lambda *_: pytest.fail("no answer expected"), "trace job")
    with pytest.raises(ServerRequestError, match=message):
        queue.run()
    assert len(server.payloads) == sent


def test_a_server_that_is_gone_is_a_clear_error():
    queue = RequestQueue(ClientSettings(url=f"http://127.0.0.1:{free_port()}/v1/completions", attempts=2))
    queue.submit(1, {}, lambda *_: None, "generation")
    with pytest.raises(ServerRequestError, match="did not answer a generation request in 2 attempts"):
        queue.run()


# ------------------------------------------------------------------------------------------- the up-front check
def _client(url: str, tiny_model, **model_args):
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    return LocalCompletionsAPI(model="tiny", base_url=url, tokenizer=str(tiny_model), **model_args)


def _check(url: str, tiny_model, trac: dict, lm=None):
    """The up-front check of a runner on ``lm`` (a new client by default); returns the runner."""
    from trac_tasks.engines.served_backend import ServedTracRunner

    config = TracConfig.from_gen_kwargs({"trac": {"answer_kind": "math", "reference": "1", **trac}}, "task")
    runner = ServedTracRunner(lm or _client(url, tiny_model, tokenizer_backend="huggingface"))
    runner.before_generation([None], [config])
    return runner


def _choice(tokens: list[str], top: int, **extra: object) -> tuple[int, dict]:
    return 200, {
        "choices": [
            {
                "text": "",
                "logprobs": {
                    "tokens": tokens,
                    "token_logprobs": [-0.1] * len(tokens),
                    "top_logprobs": [{f"{token}{i}": -0.1 * i for i in range(top)} for token in tokens],
                },
                **extra,
            }
        ],
        "usage": {"prompt_tokens": 4, "prompt_tokens_details": {"cached_tokens": 0}},
    }


@pytest.mark.parametrize(
    ("answer", "trac", "problem"),
    [
        (_choice(["The"], 5), {}, "returns tokens as text .* return_tokens_as_token_ids"),
        ((200, {"choices": [{"text": "The"}]}), {}, "returns no per-token logprobs"),
        (_choice(["token_id:1"], 5), {"p_true": True}, "returns 5 top logprobs per token, the tasks need 20"),
        (_choice(["token_id:1"], 5), {"probe_variants": ["trace", "teacher_forced"]}, "returns no prompt logprobs"),
    ],
)
def test_a_server_lacking_what_trac_needs_is_refused_before_any_generation(scripted, tiny_model, answer, trac, problem):
    server = scripted(answer)
    with pytest.raises(ValueError, match=f"the server at .* {problem}.*nothing was generated"):
        _check(server.url, tiny_model, trac)
    (payload,) = server.payloads
    assert payload["return_tokens_as_token_ids"] is True and payload["max_tokens"] == 1


def test_a_server_refusing_the_check_request_is_named_before_any_generation(scripted, tiny_model):
    server = scripted((400, {"error": "Requested sample logprobs of 20, which is greater than max allowed: 5"}))
    with pytest.raises(ServerRequestError, match="HTTP 400.*greater than max allowed.*before any generation"):
        _check(server.url, tiny_model, {"p_true": True})


def test_a_capable_server_passes_and_a_missing_cache_count_is_said(scripted, tiny_model, caplog):
    status, body = _choice(["token_id:1"], 20)
    server = scripted((status, {**body, "usage": {"prompt_tokens": 4}}))
    with caplog.at_level(logging.WARNING, logger="lm_eval.trac_eval"):
        _check(server.url, tiny_model, {"p_true": True})
    assert any("does not report cached prompt tokens" in message for message in caplog.messages)


def test_trac_tasks_need_a_local_tokenizer(tiny_model):
    from trac_tasks.engines.served_backend import ServedTracRunner

    with pytest.raises(ValueError, match="tokenizer_backend=huggingface"):
        ServedTracRunner(_client("http://127.0.0.1:9/v1/completions", tiny_model, tokenizer_backend=None))


def test_the_check_runs_once_per_requirement_and_takes_the_servers_context(scripted, tiny_model):
    server = scripted(_choice(["token_id:1"], 20))
    lm = _client(server.url, tiny_model, tokenizer_backend="huggingface", max_length=4096)
    assert _check(server.url, tiny_model, {}, lm).max_length == SERVED_CONTEXT
    _check(server.url, tiny_model, {}, lm)
    assert len(server.payloads) == 1, "the same requirements are checked once per model object"
    runner = _check(server.url, tiny_model, {"p_true": True}, lm)
    assert len(server.payloads) == 2 and server.payloads[1]["logprobs"] == 20
    assert runner.max_length == SERVED_CONTEXT, "a later runner on the same model keeps the server's context"


def test_a_token_limit_without_room_for_a_prompt_is_refused():
    check_generation_room(1535, SERVED_CONTEXT)
    with pytest.raises(ValueError, match="max_gen_toks 8192 leaves no room for a prompt in the model's 1536-token"):
        check_generation_room(8192, SERVED_CONTEXT)


def test_chat_completion_models_are_pointed_to_the_completions_endpoint(tiny_model):
    from lm_eval.models.openai_completions import LocalChatCompletion

    from trac_tasks.engines.served_backend import ServedTracRunner

    lm = LocalChatCompletion(model="tiny", base_url="http://127.0.0.1:9/v1/chat/completions", tokenizer=str(tiny_model))
    with pytest.raises(ValueError, match="use --model local-completions"):
        ServedTracRunner(lm)


@pytest.mark.parametrize("chat", [True, False])
def test_prompt_ids_are_those_of_lm_evals_vllm_backend(tiny_model, tiny_tokenizer, chat):
    """The in-process backend's own tokenization (lm-eval's ``VLLM.tok_encode``) on a chat-templated prompt (it
    starts with the BOS text) and on a plain one."""
    from lm_eval.models.vllm_causallms import VLLM

    from trac_tasks.engines.served_backend import ServedTracRunner

    message = [{"role": "user", "content": "What is 2 + 3?"}]
    prompt = (
        tiny_tokenizer.apply_chat_template(message, tokenize=False, add_generation_prompt=True)
        if chat
        else "Question: What is 2 + 3?\nAnswer:"
    )
    in_process = SimpleNamespace(
        tokenizer=tiny_tokenizer, add_bos_token=None, prefix_token_id=tiny_tokenizer.bos_token_id
    )
    runner = ServedTracRunner(_client("http://127.0.0.1:9/v1/completions", tiny_model, tokenizer_backend="huggingface"))
    assert runner._prompt_ids(prompt) == VLLM.tok_encode(in_process, prompt)
