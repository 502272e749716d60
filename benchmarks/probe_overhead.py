"""What the TrAC probe costs on the vLLM engine: probe, cache-off and capture overhead, as wall-time ratios (median and
spread over interleaved rounds) and as token ratios (the tokens the engine computed, which no background load moves).

Every phase runs on the same engine, through the code lm-eval runs (lm-eval's ``VLLM`` model object, or its
``LocalCompletionsAPI`` with ``--server``, and trac-eval's hooked runner), on the same prompts, with the prefix cache
reset before it:

- ``plain``: lm-eval's own ``generate_until`` (no logprobs, no TrAC);
- ``capture``: generation with top-k logprobs + the per-token summaries the records store;
- ``trac``: capture + every response's trace probe, each submitted the moment its trace finishes (streaming), records
  written per question: the runner lm-eval runs;
- ``probes_after``: capture, then all probes after the whole batch (the prefix may have been evicted);
- ``cache_off``: capture, prefix cache reset, then all probes (no prefix reuse: the paper's 1.16× setting);
- ``trac_prefix``: ``trac`` with prefix probes (docs/method.md#prefix-probes) at ``--prefix-probes`` fractions of
  each trace, streamed with its trace probe;
- ``prefix_cache_off``: ``cache_off`` with those prefix probes beside each trace probe.

Traces are forced to a length drawn between ``--trace-tokens`` and 1.5 times that (``min_tokens = max_tokens``), so
they end at different steps as real traces do; the ``_short`` phases (plain, capture, trac) use
``--short-trace-tokens``.

Rounds: one warm-up round (every phase once, not counted), then ``--rounds`` rounds of every phase, the order rotated
by one phase per round so that no phase always runs first. A wall ratio is taken within each round; its median, min
and max over the rounds are reported. A token ratio divides the tokens the engine computed, i.e. prompt tokens not
served from the prefix cache plus generated tokens, read from vLLM's own counters
(``vllm:prompt_tokens_by_source{source="local_compute"}``, ``vllm:generation_tokens``) and summed over the counted
rounds: background load does not move it. The decoded-token ratio divides generated tokens only (a prefill token
costs far less than a decode step).

Ratios: ``probe_overhead_ratio`` = trac / capture, ``probes_after_batch_ratio`` = probes_after / capture,
``cache_off_ratio`` = cache_off / capture, ``capture_overhead_ratio`` = capture / plain, the ``_short`` ones, and
with prefix probes ``prefix_probe_overhead_ratio`` = trac_prefix / capture and ``prefix_cache_off_ratio`` =
prefix_cache_off / capture, next to the trace probe alone's. The
last line printed is one JSON object: per wall ratio ``{median, min, max, per_round}``; its token ratios under the
name with ``_ratio`` → ``_token_ratio`` and ``_decoded_token_ratio`` (``probe_overhead_token_ratio``,
``cache_off_decoded_token_ratio``...); what the ``trac`` phases' records show; every round's order, seconds and token
counts (``warmup``, ``rounds``).

How a phase runs and what it counted is the engine object's business (:class:`Engine`): :class:`InProcessEngine`,
one ``vllm.LLM`` in this process, or with ``--server URL`` :class:`ServedEngine`, a running ``vllm serve``
reached through lm-eval's ``local-completions`` model and trac-eval's served runner
(docs/architecture.md#served-backend), the prefix cache reset through the server's ``/reset_prefix_cache`` (start
it with ``VLLM_SERVER_DEV_MODE=1``) and the counters read from its ``/metrics`` (so it must serve nothing else
meanwhile). The rounds, ratios and summaries take any engine.

    python benchmarks/probe_overhead.py [--model DIR] [--traces 8] [--trace-tokens 256] [--short-trace-tokens 64]
        [--prefix-probes 0.25,0.5,0.75] [--rounds 3] [--block-size 32] [--dtype bfloat16] [--eager/--no-eager]
        [--seed 0]
    python benchmarks/probe_overhead.py --server http://127.0.0.1:8000 [--model NAME] [--tokenizer DIR]
        [--num-concurrent 32] [--traces 8] ...
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

QUESTIONS = (
    (
        "A train travels {a} km in {b} hours. Then it travels {c} km more at the same speed. How long does the whole "
        "trip take, in hours?"
    ),
    "A shop sells pencils at {a} cents each and pens at {b} cents each. How much do {c} pencils and {a} pens cost?",
    "The sum of three consecutive integers is {a}{b}. What is the largest of them if the smallest is {c}?",
)
LONG_KINDS = ("plain", "capture", "trac", "probes_after", "cache_off", "trac_prefix", "prefix_cache_off")
SHORT_KINDS = ("plain", "capture", "trac")
RATIOS = {
    "probe_overhead_ratio": ("trac", "capture"),
    "probe_overhead_ratio_short": ("trac_short", "capture_short"),
    "probes_after_batch_ratio": ("probes_after", "capture"),
    "cache_off_ratio": ("cache_off", "capture"),
    "capture_overhead_ratio": ("capture", "plain"),
    "capture_overhead_ratio_short": ("capture_short", "plain_short"),
    "prefix_probe_overhead_ratio": ("trac_prefix", "capture"),
    "prefix_cache_off_ratio": ("prefix_cache_off", "capture"),
}
"""Each ratio's (numerator phase, denominator phase)."""


# ------------------------------------------------------------------------------------------ what a phase counted
@dataclass(frozen=True)
class TokenCounts:
    """Token counters of the engine: prompt tokens (all), prompt tokens computed (not served from the prefix cache),
    generated tokens."""

    prompt: int = 0
    computed_prompt: int = 0
    generated: int = 0

    @classmethod
    def from_metrics(cls, samples: Iterable[tuple[str, Mapping[str, str], float]]) -> TokenCounts:
        """Sum vLLM's Prometheus counters over its engines, from (name without ``_total``, labels, value) samples as
        ``LLM.get_metrics()`` and a parser of a server's ``/metrics`` give them."""
        prompt = computed_prompt = generated = 0.0
        for name, labels, value in samples:
            if name == "vllm:prompt_tokens":
                prompt += value
            elif name == "vllm:prompt_tokens_by_source" and labels.get("source") == "local_compute":
                computed_prompt += value
            elif name == "vllm:generation_tokens":
                generated += value
        return cls(int(prompt), int(computed_prompt), int(generated))

    def __sub__(self, other: TokenCounts) -> TokenCounts:
        return TokenCounts(
            self.prompt - other.prompt, self.computed_prompt - other.computed_prompt, self.generated - other.generated
        )

    @property
    def computed(self) -> int:
        """Tokens the engine computed: uncached prompt tokens + generated tokens."""
        return self.computed_prompt + self.generated

    def as_dict(self) -> dict[str, int]:
        """The counts as the JSON stores them (cached prompt tokens and computed tokens spelled out)."""
        return {
            "prompt": self.prompt,
            "cached_prompt": self.prompt - self.computed_prompt,
            "generated": self.generated,
            "computed": self.computed,
        }


@dataclass(frozen=True)
class PhaseCount:
    """One run of one phase: its wall seconds and the engine's token counters over it."""

    seconds: float
    tokens: TokenCounts


@dataclass(frozen=True)
class Workload:
    """The prompts of a set of phases: lm-eval Instances without (``plain``) and with (``trac``) a TrAC block, and
    with one that also asks for prefix probes (``prefix``)."""

    suffix: str
    plain: list[Any]
    trac: list[Any]
    kinds: tuple[str, ...]
    prefix: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class Phase:
    """A phase of a round: its name (kind + workload suffix), what it runs and on which prompts."""

    name: str
    kind: str
    workload: Workload


class Engine(Protocol):
    """What the rounds need of an engine: the phase kinds it runs (ratios of phases it lacks are left out), one phase
    run (prefix cache reset first; a ``trac`` phase writes its records into ``records_dir``) with its wall seconds and
    the engine's token counters over it, and what to call it in the JSON (``engine``, ``device``, ``model``...)."""

    kinds: tuple[str, ...]

    def run_phase(self, kind: str, workload: Workload, records_dir: Path) -> PhaseCount: ...

    def describe(self) -> dict[str, Any]: ...


# ------------------------------------------------------------------------------------------ the engines
class RunnerEngine(ABC):
    """The phases on an lm-eval model object (``lm``) and trac-eval's runner on it (``runner``); an engine supplies
    the prefix-cache reset, its token counters, sampled generation with logprobs and greedy trace probes, and
    :meth:`Engine.describe`."""

    kinds = LONG_KINDS
    lm: Any
    runner: Any

    def run_phase(self, kind: str, workload: Workload, records_dir: Path) -> PhaseCount:
        work: dict[str, Callable[[], Any]] = {
            "plain": lambda: self.plain(workload.plain),
            "capture": lambda: self._traces(workload.trac),
            "trac": lambda: self._streamed(workload.trac, records_dir),
            "probes_after": lambda: self._probes_after(workload.trac, reset_cache=False),
            "cache_off": lambda: self._probes_after(workload.trac, reset_cache=True),
            "trac_prefix": lambda: self._streamed(workload.prefix, records_dir),
            "prefix_cache_off": lambda: self._probes_after(workload.prefix, reset_cache=True),
        }
        self.reset_prefix_cache()
        before = self.counts()
        started = time.perf_counter()
        work[kind]()
        seconds = time.perf_counter() - started
        return PhaseCount(seconds, self.counts() - before)

    def plain(self, requests: Sequence[Any]) -> None:
        """lm-eval's own ``generate_until``."""
        self.lm.generate_until(list(requests), disable_tqdm=True)

    @abstractmethod
    def reset_prefix_cache(self) -> None: ...

    @abstractmethod
    def counts(self) -> TokenCounts:
        """The engine's token counters now."""

    @abstractmethod
    def generate(self, requests: Sequence[Any], configs: Sequence[Any]) -> list[Any]:
        """One sampled trace (token ids and top-k logprobs) per request, as the runner generates them."""

    @abstractmethod
    def probes(self, traces: Sequence[Any], jobs: Sequence[Any]) -> None:
        """The greedy probes of ``jobs``, as the runner sends them."""

    def _traces(self, requests: Sequence[Any]) -> list[Any]:
        from trac_tasks.generation.capture import token_summaries
        from trac_tasks.generation.config import TracConfig

        traces = self.generate(
            requests, [TracConfig.from_gen_kwargs(request.args[1], "probe_overhead") for request in requests]
        )
        for trace in traces:
            token_summaries(trace.chosen, trace.top, trace.config.top_k)
        return traces

    def _streamed(self, requests: Sequence[Any], records_dir: Path) -> None:
        from trac_tasks.generation.capture import RecordSink

        self.runner.sink = RecordSink(records_dir)
        self.runner.run(requests, disable_tqdm=True)

    def _probes_after(self, requests: Sequence[Any], reset_cache: bool) -> None:
        traces = self._traces(requests)
        if reset_cache:
            self.reset_prefix_cache()
        jobs = [self.runner.trace_probe_job(index, trace) for index, trace in enumerate(traces)]
        jobs += [job for index, trace in enumerate(traces) for job in self.runner.prefix_probe_jobs(index, trace)]
        self.probes(traces, [job for job in jobs if job is not None])


class InProcessEngine(RunnerEngine):
    """Phases on one lm-eval ``VLLM`` object (one ``vllm.LLM`` in this process, built with ``disable_log_stats=False``
    so its Prometheus token counters run), through trac-eval's hooked runner."""

    def __init__(self, lm: Any, model: str) -> None:
        from trac_tasks.engines.vllm_backend import VllmTracRunner

        self.lm = lm
        self.model = model
        self.runner = VllmTracRunner(lm)

    def describe(self) -> dict[str, Any]:
        import vllm

        return {"engine": f"vllm {vllm.__version__} (in process)", "device": _device(), "model": self.model}

    def reset_prefix_cache(self) -> None:
        self.lm.model.reset_prefix_cache()

    def counts(self) -> TokenCounts:
        from vllm.v1.metrics.reader import Counter

        return TokenCounts.from_metrics(
            (metric.name, metric.labels, metric.value)
            for metric in self.lm.model.get_metrics()
            if isinstance(metric, Counter)
        )

    def generate(self, requests: Sequence[Any], configs: Sequence[Any]) -> list[Any]:
        return self.runner.generate(requests, [0] * len(requests), configs)

    def probes(self, traces: Sequence[Any], jobs: Sequence[Any]) -> None:
        self.runner.greedy_probes(traces, jobs)


class ServerError(RuntimeError):
    """The server is missing, or cannot do what the benchmark needs of it."""


class ServedEngine(RunnerEngine):
    """Phases against a running ``vllm serve``, through lm-eval's ``LocalCompletionsAPI`` (``--model
    local-completions``) and trac-eval's served runner; the prefix cache is reset through ``/reset_prefix_cache``
    and the token counters are read from ``/metrics``. Those counters are the server's, all requests together: it
    must serve nothing else while the benchmark runs."""

    def __init__(self, lm: Any, url: str) -> None:
        from trac_tasks.engines.served_backend import ServedTracRunner

        class TracesOnly(ServedTracRunner):
            """The served runner whose finished traces unlock no jobs: its ``execute`` sends the generations only
            and keeps their traces in the chunk."""

            def trace_finished(self, chunk: Any, index: int, trace: Any) -> list[Any]:
                chunk.traces[index] = trace
                return []

        self.lm = lm
        self.url = url
        self.runner = ServedTracRunner(lm)
        self.traces_only = TracesOnly(lm)

    def describe(self) -> dict[str, Any]:
        version = json.loads(http_get(f"{self.url}/version")).get("version", "?")
        block_size = metric_info(http_get(f"{self.url}/metrics"), "vllm:cache_config_info").get("block_size", "")
        return {
            "engine": f"vllm {version} (served at {self.url}, num_concurrent={self.lm._concurrent})",
            "device": "the server's",
            "model": str(self.lm.model),
            "block_size": int(block_size) if block_size.isdigit() else None,
        }

    def reset_prefix_cache(self) -> None:
        reset_prefix_cache(self.url)

    def counts(self) -> TokenCounts:
        return server_counts(http_get(f"{self.url}/metrics"))

    def plain(self, requests: Sequence[Any]) -> None:
        """lm-eval's own ``generate_until``, one call per request, ``num_concurrent`` calls at a time: lm-eval's API
        client sends one group of equal generation kwargs at a time, and each forced trace length is a group of its
        own, where a task's requests (one group) would all be in flight together."""
        with ThreadPoolExecutor(max(1, self.lm._concurrent)) as pool:
            list(pool.map(lambda request: self.lm.generate_until([request], disable_tqdm=True), requests))

    def generate(self, requests: Sequence[Any], configs: Sequence[Any]) -> list[Any]:
        from trac_tasks.generation.chunk import ChunkState

        chunk = ChunkState(requests, [0] * len(requests), configs)
        self.traces_only.execute(chunk)
        return chunk.traces

    def probes(self, traces: Sequence[Any], jobs: Sequence[Any]) -> None:
        from trac_tasks.engines.completions_client import RequestQueue
        from trac_tasks.engines.served_backend import JOB

        queue = RequestQueue(self.runner.settings)
        for job in jobs:
            payload = self.runner._job_payload(job, traces[job.index].config.top_k)
            queue.submit(
                JOB, payload, lambda body, seconds, job=job: self.runner._job_result(job, body, seconds), "probe"
            )
        queue.run()


# ------------------------------------------------------------------------------------------ talking to the server
METRIC_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
METRIC_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def metric_samples(text: str) -> Iterator[tuple[str, dict[str, str], float]]:
    """Every sample of a Prometheus text page (a vLLM server's ``/metrics``): (name, labels, value)."""
    for line in text.splitlines():
        match = METRIC_LINE.match(line)
        if match:
            yield match.group(1), dict(METRIC_LABEL.findall(match.group(2) or "")), float(match.group(3))


def metric_info(text: str, name: str) -> dict[str, str]:
    """The labels of an info metric (``vllm:cache_config_info``), empty when the page lacks it."""
    return next((labels for sample, labels, _ in metric_samples(text) if sample == name), {})


def server_counts(text: str) -> TokenCounts:
    """The token counters of a ``/metrics`` page (counter samples are named ``<counter>_total``)."""
    return TokenCounts.from_metrics(
        (name.removesuffix("_total"), labels, value)
        for name, labels, value in metric_samples(text)
        if name.endswith("_total")
    )


def http_request(url: str, method: str = "GET") -> tuple[int, str]:
    """The status and text of one request (an error status is returned, a missing server raises)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=b"" if method == "POST" else None, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")
    except urllib.error.URLError as error:
        raise ServerError(f"no server answers at {url} ({error.reason})") from None


def http_get(url: str) -> str:
    status, text = http_request(url)
    if status != 200:
        raise ServerError(f"GET {url} answered HTTP {status}: {text[:200]}")
    return text


def reset_prefix_cache(url: str, attempts: int = 5) -> None:
    """Empty the server's prefix cache. vLLM serves ``POST /reset_prefix_cache`` in dev mode only, and answers
    ``{"success": false}`` while blocks are still held (retried after a second)."""
    for _ in range(attempts):
        status, text = http_request(f"{url}/reset_prefix_cache", "POST")
        if status == 404:
            raise ServerError(
                f"the server at {url} has no /reset_prefix_cache endpoint (vLLM serves it in dev mode only): start "
                "it with VLLM_SERVER_DEV_MODE=1 set, so that every phase starts from an empty prefix cache"
            )
        if status != 200:
            raise ServerError(f"the server at {url} refused to reset its prefix cache (HTTP {status}): {text[:200]}")
        answer = json.loads(text) if text.strip() else {}
        if not isinstance(answer, dict) or answer.get("success", True):
            return
        time.sleep(1.0)
    raise ServerError(
        f"the server at {url} did not reset its prefix cache in {attempts} attempts (blocks still held: is it "
        "serving other requests?)"
    )


def _device() -> str:
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return "cpu: " + (platform.processor() or platform.machine()) + f" ({os.cpu_count()} cores)"


# ------------------------------------------------------------------------------------------ rounds and ratios
@dataclass(frozen=True)
class Round:
    """One round: the phase order it ran and what each phase counted."""

    order: list[str]
    counts: dict[str, PhaseCount]

    def as_dict(self) -> dict[str, Any]:
        """The round as the JSON stores it: phase order, seconds and token counts per phase."""
        return {
            "order": self.order,
            "seconds": {name: round(self.counts[name].seconds, 3) for name in self.order},
            "tokens": {name: self.counts[name].tokens.as_dict() for name in self.order},
        }


def phases_of(engine: Engine, workloads: Sequence[Workload]) -> list[Phase]:
    """Every phase the engine can run, workload by workload."""
    return [
        Phase(kind + workload.suffix, kind, workload)
        for workload in workloads
        for kind in workload.kinds
        if kind in engine.kinds
    ]


def rotated(phases: Sequence[Phase], by: int) -> list[Phase]:
    """The phase order of a round: ``phases`` rotated left by ``by``."""
    shift = by % len(phases)
    return [*phases[shift:], *phases[:shift]]


def run_round(engine: Engine, phases: Sequence[Phase], records_dir: Path) -> Round:
    """Every phase once, in the given order; a ``trac`` phase's records go to ``records_dir/<phase>``."""
    counts = {}
    for phase in phases:
        counts[phase.name] = engine.run_phase(phase.kind, phase.workload, records_dir / phase.name)
        print(f"  {phase.name:<16}{counts[phase.name].seconds:>9.2f} s", flush=True)
    return Round([phase.name for phase in phases], counts)


def measure(engine: Engine, phases: Sequence[Phase], rounds: int, records_dir: Path) -> tuple[Round, list[Round]]:
    """A warm-up round (records in ``records_dir/warmup``), then ``rounds`` counted rounds (``records_dir/round<n>``,
    n from 1) with the order rotated by one phase per round."""
    print("warm-up round", flush=True)
    warmup = run_round(engine, phases, records_dir / "warmup")
    counted = []
    for index in range(rounds):
        print(f"round {index + 1} of {rounds}", flush=True)
        counted.append(run_round(engine, rotated(phases, index), records_dir / f"round{index + 1}"))
    return warmup, counted


def ratio_names(rounds: Sequence[Round]) -> list[str]:
    """The ratios whose two phases ran."""
    ran = set(rounds[0].counts)
    return [name for name, (numerator, denominator) in RATIOS.items() if {numerator, denominator} <= ran]


def wall_ratio(rounds: Sequence[Round], name: str) -> dict[str, Any]:
    """A wall-time ratio taken within each round: its median, min, max and per-round values."""
    numerator, denominator = RATIOS[name]
    values = [one.counts[numerator].seconds / one.counts[denominator].seconds for one in rounds]
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "per_round": values}


def token_ratio(rounds: Sequence[Round], name: str, tokens: str) -> float:
    """A ratio of token counts (``tokens``: ``"computed"`` or ``"generated"``), each summed over the rounds."""
    numerator, denominator = RATIOS[name]
    return sum(getattr(one.counts[numerator].tokens, tokens) for one in rounds) / sum(
        getattr(one.counts[denominator].tokens, tokens) for one in rounds
    )


def token_ratio_name(name: str, tokens: str) -> str:
    """``probe_overhead_ratio`` → ``probe_overhead_token_ratio`` (computed tokens) or
    ``probe_overhead_decoded_token_ratio`` (generated tokens); also with a ``_short`` ending."""
    return name.replace("_ratio", "_token_ratio" if tokens == "computed" else "_decoded_token_ratio")


def ratios(rounds: Sequence[Round]) -> dict[str, Any]:
    """Every wall ratio (median and spread) and its computed-token and decoded-token ratios."""
    result: dict[str, Any] = {}
    for name in ratio_names(rounds):
        result[name] = wall_ratio(rounds, name)
        for tokens in ("computed", "generated"):
            result[token_ratio_name(name, tokens)] = token_ratio(rounds, name, tokens)
    return result


def mean_probe_decoded_tokens(
    rounds: Sequence[Round], traces: int, phase: str = "trac", base: str = "capture"
) -> float:
    """Tokens each probe decoded, on average: generated tokens of ``phase`` minus those of ``base`` over the
    ``traces`` probes each round added (by default the trace probes: ``trac`` minus ``capture``)."""
    extra = sum(one.counts[phase].tokens.generated - one.counts[base].tokens.generated for one in rounds)
    return extra / (traces * len(rounds))


# ------------------------------------------------------------------------------------------ what the records show
def record_summary(records_dir: Path, rounds: int, phase: str) -> dict[str, float]:
    """From the records ``phase`` wrote in the counted rounds: the trace probes' prompt tokens served from the prefix
    cache (the mean fraction and the smallest), the same of the prefix probes (``prefix_probe_…``, when the records
    hold any), the mean trace length and the stored JSONL bytes per generated token."""
    from trac_metrics.records import iter_records

    folders = [records_dir / f"round{index + 1}" / phase for index in range(rounds)]
    files = sorted(path for folder in folders for path in folder.rglob("*.jsonl"))
    records = [record for path in files for record in iter_records(path)]
    tokens = sum(record.num_tokens for record in records)
    summary = cache_fractions("probe", [record.probes["trace"] for record in records])
    prefix_probes = [probe for record in records for probe in record.prefix_probes]
    if prefix_probes:
        summary |= cache_fractions("prefix_probe", prefix_probes)
    return {
        **summary,
        "mean_trace_tokens": tokens / len(records),
        "record_bytes_per_token": sum(path.stat().st_size for path in files) / tokens,
    }


def cache_fractions(name: str, probes: Sequence[Any]) -> dict[str, float]:
    """The share of the ``probes``' prompt tokens served from the prefix cache, over all of them and the smallest."""
    cached = np.asarray([probe.num_cached_tokens or 0 for probe in probes], dtype=float)
    prompt = np.asarray([probe.num_prompt_tokens for probe in probes], dtype=float)
    return {
        f"{name}_prefix_cache_fraction": float(cached.sum() / prompt.sum()),
        f"{name}_prefix_cache_fraction_min": float((cached / prompt).min()),
    }


# ------------------------------------------------------------------------------------------ the command
def _requests(n: int, trace_tokens: int, seed: int, trac: bool, prefix_probes: Sequence[float] = ()) -> list[Any]:
    """``n`` lm-eval Instances (K = 1 each) whose traces have seeded lengths in [trace_tokens, 1.5·trace_tokens]; with
    ``trac`` a TrAC block, asking for ``prefix_probes``."""
    from lm_eval.api.instance import Instance

    rng = np.random.default_rng(seed)
    requests = []
    for index in range(n):
        a, b, c = (int(value) for value in rng.integers(2, 60, size=3))
        question = QUESTIONS[index % len(QUESTIONS)].format(a=a, b=b, c=c)
        length = int(rng.integers(trace_tokens, trace_tokens * 3 // 2 + 1))
        gen_kwargs: dict[str, Any] = {
            "until": [],
            "do_sample": True,
            "temperature": 0.7,
            "top_p": 0.95,
            "max_gen_toks": length,
            "min_tokens": length,
        }
        if trac:
            gen_kwargs["trac"] = {"answer_kind": "math", "reference": "0", "prefix_probes": list(prefix_probes)}
        prompt = (
            f"Solve the following problem step by step. End your response with the final answer in \\boxed{{}}."
            f"\n\n{question}\n"
        )
        requests.append(
            Instance(
                "generate_until",
                {"question": question},
                (prompt, gen_kwargs),
                idx=0,
                metadata=("probe_overhead", index, 1),
            )
        )
    return requests


def workloads(
    traces: int,
    trace_tokens: int,
    short_trace_tokens: int,
    seed: int,
    prefix_probes: Sequence[float] = (0.25, 0.5, 0.75),
) -> list[Workload]:
    """The long traces (every phase; the prefix-probe phases ask for ``prefix_probes``) and the short ones (plain,
    capture, trac)."""
    return [
        Workload(
            suffix,
            _requests(traces, tokens, seed, trac=False),
            _requests(traces, tokens, seed, trac=True),
            kinds,
            _requests(traces, tokens, seed, trac=True, prefix_probes=prefix_probes) if suffix == "" else [],
        )
        for suffix, tokens, kinds in (("", trace_tokens, LONG_KINDS), ("_short", short_trace_tokens, SHORT_KINDS))
    ]


def _in_process_engine(args: argparse.Namespace) -> InProcessEngine:
    """lm-eval's ``VLLM`` on the model, with prefix caching and vLLM's token counters on (CPU settings without a
    GPU, see scripts/cpu_env.sh)."""
    import torch

    import trac_tasks.harness.autoload  # noqa: F401  (the hook, as the .pth file installs it for lm_eval)

    on_cpu = not torch.cuda.is_available()
    if on_cpu:
        for key, value in {
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
            "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        }.items():
            os.environ.setdefault(key, value)
    model = args.model
    if model is None:
        from trac_tasks.data.tiny_model import ensure_tiny_model

        model = str(ensure_tiny_model())
    from lm_eval.models.vllm_causallms import VLLM

    lm = VLLM(
        pretrained=model,
        dtype=args.dtype,
        max_model_len=args.trace_tokens * 3 // 2 + 256,
        enable_prefix_caching=True,
        block_size=args.block_size,
        disable_log_stats=False,
        enforce_eager=on_cpu if args.eager is None else args.eager,
        seed=1234,
        **({"distributed_executor_backend": "uni"} if on_cpu else {}),
    )
    return InProcessEngine(lm, model)


def _served_engine(args: argparse.Namespace) -> ServedEngine:
    """lm-eval's ``LocalCompletionsAPI`` on the server's model (``--model``, default the first it lists) with the
    model's tokenizer loaded here (``--tokenizer``, default the model id: a folder or hub id) and the server's
    context length, once the server has shown that it caches prefixes and resets its cache on request."""
    import trac_tasks.harness.autoload  # noqa: F401  (the hook, as the .pth file installs it for lm_eval)

    url = args.server.rstrip("/")
    models = {entry["id"]: entry for entry in json.loads(http_get(f"{url}/v1/models"))["data"]}
    model = args.model or next(iter(models))
    if model not in models:
        raise ServerError(f"the server at {url} serves {sorted(models)}, not {model!r}")
    cache = metric_info(http_get(f"{url}/metrics"), "vllm:cache_config_info")
    if cache.get("enable_prefix_caching") == "False":
        raise ServerError(f"the server at {url} runs without a prefix cache: start it with --enable-prefix-caching")
    reset_prefix_cache(url)
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    lm = LocalCompletionsAPI(
        model=model,
        base_url=f"{url}/v1/completions",
        tokenizer=args.tokenizer or model,
        num_concurrent=args.num_concurrent,
        max_length=int(models[model].get("max_model_len") or 2048),
        max_retries=1,  # a retried request would count its tokens twice: a failure stops the benchmark instead
        timeout=3600,
    )
    return ServedEngine(lm, url)


def _print_tables(warmup: Round, rounds: Sequence[Round], measured: Mapping[str, Any]) -> None:
    """Seconds per phase and round with the computed tokens per round (mean), then every ratio."""
    print(
        f"{'phase':<16}{'warm-up':>10}"
        + "".join(f"{f'round {i + 1}':>10}" for i in range(len(rounds)))
        + f"{'tokens':>10}"
    )
    for name in warmup.order:
        tokens = statistics.mean(one.counts[name].tokens.computed for one in rounds)
        print(
            f"{name:<16}{warmup.counts[name].seconds:>10.2f}"
            + "".join(f"{one.counts[name].seconds:>10.2f}" for one in rounds)
            + f"{tokens:>10.1f}"
        )
    print(f"{'ratio':<30}{'median':>9}{'min':>9}{'max':>9}{'tokens':>9}{'decoded':>9}")
    for name in ratio_names(rounds):
        wall = measured[name]
        print(
            f"{name:<30}{wall['median']:>9.4f}{wall['min']:>9.4f}{wall['max']:>9.4f}"
            f"{measured[token_ratio_name(name, 'computed')]:>9.4f}"
            f"{measured[token_ratio_name(name, 'generated')]:>9.4f}"
        )


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model",
        default=None,
        help="model folder or hub id (default: the bundled tiny model); with --server, the served model's name "
        "(default: the first the server lists)",
    )
    parser.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="measure a running vllm serve (started with VLLM_SERVER_DEV_MODE=1, serving nothing else) instead of "
        "an engine in this process, e.g. http://127.0.0.1:8000",
    )
    parser.add_argument("--tokenizer", default=None, help="with --server: the model's tokenizer (default: --model)")
    parser.add_argument("--num-concurrent", type=int, default=32, help="with --server: lm-eval's num_concurrent")
    parser.add_argument("--traces", type=int, default=8)
    parser.add_argument("--trace-tokens", type=int, default=256)
    parser.add_argument("--short-trace-tokens", type=int, default=64)
    parser.add_argument(
        "--prefix-probes",
        type=lambda text: tuple(float(value) for value in text.split(",")),
        default=(0.25, 0.5, 0.75),
        metavar="F,F,...",
        help="fractions of each trace after which the prefix-probe phases also probe (docs/method.md#prefix-probes)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="counted rounds after the warm-up round")
    parser.add_argument("--block-size", type=int, default=32, help="in process (a server has its own)")
    parser.add_argument("--dtype", default="bfloat16", help="in process (a server has its own)")
    parser.add_argument(
        "--eager",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="enforce_eager in process (default: on for CPU, off on GPU)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    try:
        engine = _served_engine(args) if args.server else _in_process_engine(args)
        loads = workloads(args.traces, args.trace_tokens, args.short_trace_tokens, args.seed, args.prefix_probes)
        phases = phases_of(engine, loads)
        with tempfile.TemporaryDirectory(prefix="probe_overhead_records_") as records_dir:
            warmup, rounds = measure(engine, phases, args.rounds, Path(records_dir))
            records = record_summary(Path(records_dir), len(rounds), "trac")
            short_records = record_summary(Path(records_dir), len(rounds), "trac_short")
            prefix_records = record_summary(Path(records_dir), len(rounds), "trac_prefix")
        described = engine.describe()
    except ServerError as error:
        raise SystemExit(f"probe_overhead: {error}") from None
    measured = ratios(rounds)
    result = {
        **measured,
        "mean_probe_decoded_tokens": mean_probe_decoded_tokens(rounds, args.traces),
        "mean_prefix_probe_decoded_tokens": mean_probe_decoded_tokens(
            rounds, args.traces * len(args.prefix_probes), "trac_prefix", "trac"
        ),
        **records,
        **{key: value for key, value in prefix_records.items() if key.startswith("prefix_probe_")},
        "mean_short_trace_tokens": short_records["mean_trace_tokens"],
        "traces": args.traces,
        "trace_tokens": args.trace_tokens,
        "short_trace_tokens": args.short_trace_tokens,
        "prefix_probes": list(args.prefix_probes),
        **({} if args.server else {"block_size": args.block_size, "dtype": args.dtype}),
        **described,
        "warmup": warmup.as_dict(),
        "rounds": [one.as_dict() for one in rounds],
    }
    _print_tables(warmup, rounds, measured)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
