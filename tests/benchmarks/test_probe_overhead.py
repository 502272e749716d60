"""benchmarks/probe_overhead.py without an engine: the rounds (warm-up not counted, rotated order), the wall ratios'
median and spread, the token ratios from the engine's counters (prefix probes' phases included), ratios left out when
an engine lacks a phase, the order of a phase's steps; for ``--server``: a ``/metrics`` page read into token counts,
and a scripted HTTP server standing in for a vLLM server that is missing, not in dev mode, without a prefix cache,
or still holding blocks."""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest
from testenv import REPO

PATH = REPO / "benchmarks" / "probe_overhead.py"
SPEC = importlib.util.spec_from_file_location("probe_overhead", PATH)
probe_overhead = importlib.util.module_from_spec(SPEC)
sys.modules["probe_overhead"] = probe_overhead  # dataclasses look their module up there
SPEC.loader.exec_module(probe_overhead)

SECONDS = {"plain": 10.0, "capture": 11.0, "trac": 12.0, "probes_after": 12.5, "cache_off": 13.0}
SECONDS |= {"trac_prefix": 14.0, "prefix_cache_off": 16.0}
TOKENS = {"plain": 1000, "capture": 1000, "trac": 1100, "probes_after": 1100, "cache_off": 1600}  # computed
TOKENS |= {"trac_prefix": 1400, "prefix_cache_off": 3000}
GENERATED = {"plain": 100, "capture": 100, "trac": 120, "probes_after": 120, "cache_off": 120}
GENERATED |= {"trac_prefix": 180, "prefix_cache_off": 180}


class FakeEngine:
    """Seconds and tokens per phase kind; call number ``slow_call`` (counting from 1) is twice as slow, as
    under a burst of background load."""

    def __init__(self, kinds: tuple[str, ...] = probe_overhead.LONG_KINDS, slow_call: int = 0) -> None:
        self.kinds = kinds
        self.slow_call = slow_call
        self.calls: list[tuple[str, str]] = []

    def run_phase(self, kind, workload, records_dir):
        self.calls.append((kind + workload.suffix, str(records_dir)))
        slow = 2.0 if len(self.calls) == self.slow_call else 1.0
        tokens = probe_overhead.TokenCounts(
            prompt=TOKENS[kind] + 50, computed_prompt=TOKENS[kind] - GENERATED[kind], generated=GENERATED[kind]
        )
        return probe_overhead.PhaseCount(SECONDS[kind] * slow, tokens)

    def describe(self):
        return {"engine": "fake"}


def _phases(engine):
    workloads = [
        probe_overhead.Workload("", [], [], probe_overhead.LONG_KINDS),
        probe_overhead.Workload("_short", [], [], probe_overhead.SHORT_KINDS),
    ]
    return probe_overhead.phases_of(engine, workloads)


def test_warm_up_round_then_rotated_rounds(tmp_path):
    engine = FakeEngine()
    phases = _phases(engine)
    warmup, rounds = probe_overhead.measure(engine, phases, 3, tmp_path)
    names = [phase.name for phase in phases]
    assert warmup.order == names
    assert [one.order for one in rounds] == [names, names[1:] + names[:1], names[2:] + names[:2]]
    assert len(engine.calls) == 4 * len(names)
    assert engine.calls[0] == ("plain", str(tmp_path / "warmup" / "plain"))
    assert engine.calls[len(names)] == ("plain", str(tmp_path / "round1" / "plain"))


def test_wall_ratios_are_medians_over_rounds_and_a_slow_warm_up_does_not_count(tmp_path):
    engine = FakeEngine(slow_call=2)  # the warm-up capture
    _, rounds = probe_overhead.measure(engine, _phases(engine), 3, tmp_path)
    ratios = probe_overhead.ratios(rounds)
    assert ratios["probe_overhead_ratio"] == {
        "median": 12 / 11,
        "min": 12 / 11,
        "max": 12 / 11,
        "per_round": [12 / 11] * 3,
    }
    assert ratios["probe_overhead_token_ratio"] == pytest.approx(1100 / 1000)
    assert ratios["cache_off_token_ratio"] == pytest.approx(1600 / 1000)
    assert ratios["capture_overhead_token_ratio_short"] == 1.0
    assert ratios["cache_off_decoded_token_ratio"] == pytest.approx(1.2)
    assert ratios["prefix_probe_overhead_ratio"]["median"] == 14 / 11
    assert ratios["prefix_probe_overhead_token_ratio"] == pytest.approx(1400 / 1000)
    assert ratios["prefix_cache_off_token_ratio"] == pytest.approx(3000 / 1000)
    assert ratios["prefix_cache_off_decoded_token_ratio"] == pytest.approx(1.8)
    assert probe_overhead.mean_probe_decoded_tokens(rounds, 2 * 3, "trac_prefix", "trac") == pytest.approx(10.0)


def test_one_slow_round_moves_the_spread_not_the_median(tmp_path):
    engine = FakeEngine()
    phases = _phases(engine)
    engine.slow_call = len(phases) + 3  # round 1's trac phase
    _, rounds = probe_overhead.measure(engine, phases, 3, tmp_path)
    wall = probe_overhead.ratios(rounds)["probe_overhead_ratio"]
    assert wall["per_round"] == [24 / 11, 12 / 11, 12 / 11]
    assert (wall["median"], wall["min"], wall["max"]) == (12 / 11, 12 / 11, 24 / 11)
    assert probe_overhead.ratios(rounds)["probe_overhead_token_ratio"] == pytest.approx(1.1)


def test_ratios_of_phases_an_engine_does_not_run_are_left_out(tmp_path):
    engine = FakeEngine(kinds=("plain", "capture", "trac"))
    _, rounds = probe_overhead.measure(engine, _phases(engine), 1, tmp_path)
    assert set(probe_overhead.ratio_names(rounds)) == {
        "probe_overhead_ratio",
        "probe_overhead_ratio_short",
        "capture_overhead_ratio",
        "capture_overhead_ratio_short",
    }


def test_token_counts_sum_vllm_counters_over_engines():
    samples = [
        ("vllm:prompt_tokens", {"engine": "0"}, 300.0),
        ("vllm:prompt_tokens", {"engine": "1"}, 100.0),
        ("vllm:prompt_tokens_by_source", {"engine": "0", "source": "local_compute"}, 120.0),
        ("vllm:prompt_tokens_by_source", {"engine": "0", "source": "local_cache_hit"}, 180.0),
        ("vllm:prompt_tokens_by_source", {"engine": "1", "source": "local_compute"}, 100.0),
        ("vllm:generation_tokens", {"engine": "0"}, 50.0),
        ("vllm:num_preemptions", {"engine": "0"}, 7.0),
    ]
    counts = probe_overhead.TokenCounts.from_metrics(samples)
    assert counts == probe_overhead.TokenCounts(prompt=400, computed_prompt=220, generated=50)
    assert (counts - probe_overhead.TokenCounts(100, 20, 10)).as_dict() == {
        "prompt": 300,
        "cached_prompt": 100,
        "generated": 40,
        "computed": 240,
    }


class FakeRunnerEngine(probe_overhead.RunnerEngine):
    """The shared phase code on a logged fake: what the engine was asked, in order."""

    def __init__(self, fits: bool = True) -> None:
        self.log: list[str] = []
        self.lm = SimpleNamespace(generate_until=lambda requests, disable_tqdm: self.log.append("plain"))

        def prefix_jobs(index, trace):
            return [f"{index}@{f}" for f in trace.config.prefix_probes] if fits else []

        self.runner = SimpleNamespace(trace_probe_job=lambda index, trace: index if fits else None)
        self.runner.prefix_probe_jobs = prefix_jobs
        self.tokens = 0

    def reset_prefix_cache(self):
        self.log.append("reset")

    def counts(self):
        self.log.append("counts")
        self.tokens += 100
        return probe_overhead.TokenCounts(self.tokens, self.tokens, 0)

    def generate(self, requests, configs):
        self.log.append("generate")
        return [SimpleNamespace(chosen=[-0.1], top=[[-0.1, -2.5]], config=config) for config in configs]

    def probes(self, traces, jobs):
        self.log.append(f"probes {list(jobs)}")


@pytest.mark.parametrize(
    ("kind", "steps"),
    [
        ("plain", ["plain"]),
        ("capture", ["generate"]),
        ("probes_after", ["generate", "probes [0, 1]"]),
        ("cache_off", ["generate", "reset", "probes [0, 1]"]),
        ("prefix_cache_off", ["generate", "reset", "probes [0, 1, '0@0.25', '0@0.5', '1@0.25', '1@0.5']"]),
    ],
)
def test_a_phase_resets_the_cache_then_counts_around_its_work(kind, steps):
    engine = FakeRunnerEngine()
    workload = probe_overhead.workloads(2, 8, 4, seed=0, prefix_probes=(0.25, 0.5))[0]
    count = engine.run_phase(kind, workload, Path("unused"))
    assert engine.log == ["reset", "counts", *steps, "counts"]
    assert count.tokens == probe_overhead.TokenCounts(100, 100, 0)


def test_probes_that_do_not_fit_are_not_sent():
    engine = FakeRunnerEngine(fits=False)
    engine.run_phase("probes_after", probe_overhead.workloads(2, 8, 4, seed=0)[0], Path("unused"))
    assert "probes []" in engine.log


# ------------------------------------------------------------------------------------------ --server
METRICS = """# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="/models/tiny"} 400.0
# TYPE vllm:prompt_tokens_created gauge
vllm:prompt_tokens_created{engine="0",model_name="/models/tiny"} 1.7956933211377797e+09
# TYPE vllm:prompt_tokens_by_source_total counter
vllm:prompt_tokens_by_source_total{engine="0",model_name="/models/tiny",source="local_compute"} 220.0
vllm:prompt_tokens_by_source_total{engine="0",model_name="/models/tiny",source="local_cache_hit"} 180.0
vllm:prompt_tokens_by_source_total{engine="0",model_name="/models/tiny",source="external_kv_transfer"} 0.0
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="/models/tiny"} 50.0
vllm:generation_tokens_created{engine="0",model_name="/models/tiny"} 1.7956933211378908e+09
vllm:cache_config_info{block_size="32",enable_prefix_caching="True",engine="0",kv_cache_dtype_skip_layers="[]"} 1.0
python_info{implementation="CPython",major="3",version="3.11.7"} 1.0
"""


def test_a_metrics_page_gives_the_token_counters_and_the_cache_config():
    assert probe_overhead.server_counts(METRICS) == probe_overhead.TokenCounts(
        prompt=400, computed_prompt=220, generated=50
    )
    cache = probe_overhead.metric_info(METRICS, "vllm:cache_config_info")
    assert (cache["block_size"], cache["enable_prefix_caching"]) == ("32", "True")
    assert probe_overhead.metric_info(METRICS, "vllm:absent_info") == {}


class ScriptedServer:
    """An HTTP server on 127.0.0.1 answering ``"METHOD /path"`` with scripted (status, body) pairs, the last one
    repeated; every request is logged."""

    def __init__(self, script: dict[str, list[tuple[int, str]]]) -> None:
        self.script = script
        self.log: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def answer(self) -> None:
                key = f"{self.command} {self.path}"
                outer.log.append(key)
                answers = outer.script.get(key, [(404, '{"detail":"Not Found"}')])
                status, body = answers.pop(0) if len(answers) > 1 else answers[0]
                self.send_response(status)
                self.send_header("Content-Length", str(len(body.encode())))
                self.end_headers()
                self.wfile.write(body.encode())

            do_GET = do_POST = answer

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve():
    servers: list[ScriptedServer] = []

    def start(script):
        servers.append(ScriptedServer(script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def vllm_script(**changes):
    """A vLLM server's answers before any generation, with some replaced."""
    models = {"data": [{"id": "/models/tiny", "max_model_len": 2048}]}
    return {
        "GET /v1/models": [(200, json.dumps(models))],
        "GET /metrics": [(200, METRICS)],
        "POST /reset_prefix_cache": [(200, '{"success":true}')],
        **changes,
    }


def test_a_server_not_in_dev_mode_stops_the_benchmark_before_any_phase(serve):
    server = serve(vllm_script(**{"POST /reset_prefix_cache": [(404, '{"detail":"Not Found"}')]}))
    with pytest.raises(SystemExit, match="start it with VLLM_SERVER_DEV_MODE=1"):
        probe_overhead.main(["--server", server.url + "/"])
    assert server.log == ["GET /v1/models", "GET /metrics", "POST /reset_prefix_cache"]


def test_a_server_without_prefix_cache_or_model_is_refused(serve):
    no_cache = serve(vllm_script(**{"GET /metrics": [(200, METRICS.replace('caching="True"', 'caching="False"'))]}))
    with pytest.raises(SystemExit, match="start it with --enable-prefix-caching"):
        probe_overhead.main(["--server", no_cache.url])
    with pytest.raises(SystemExit, match=r"serves \['/models/tiny'\], not 'other'"):
        probe_overhead.main(["--server", serve(vllm_script()).url, "--model", "other"])


def test_no_server_at_the_url():
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with pytest.raises(SystemExit, match=f"no server answers at http://127.0.0.1:{port}/v1/models"):
        probe_overhead.main(["--server", f"http://127.0.0.1:{port}"])


def test_the_reset_is_retried_while_the_server_still_holds_blocks(serve, monkeypatch):
    monkeypatch.setattr(probe_overhead.time, "sleep", lambda seconds: None)
    held = '{"success":false}'
    server = serve({"POST /reset_prefix_cache": [(200, held), (200, held), (200, '{"success":true}')]})
    probe_overhead.reset_prefix_cache(server.url)
    assert server.log == ["POST /reset_prefix_cache"] * 3
    stuck = serve({"POST /reset_prefix_cache": [(200, held)]})
    with pytest.raises(probe_overhead.ServerError, match="did not reset its prefix cache in 5 attempts"):
        probe_overhead.reset_prefix_cache(stuck.url)


def test_counts_come_from_the_servers_metrics_page(serve):
    server = serve({"GET /metrics": [(200, METRICS)]})
    page = probe_overhead.http_get(f"{server.url}/metrics")
    assert probe_overhead.server_counts(page) == probe_overhead.TokenCounts(400, 220, 50)
    with pytest.raises(probe_overhead.ServerError, match="GET .*/version answered HTTP 404"):
        probe_overhead.http_get(f"{server.url}/version")
