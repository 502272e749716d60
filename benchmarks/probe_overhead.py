"""What the TrAC probe costs on the vLLM engine: probe, cache-off and capture overhead, as wall-time ratios (median and
spread over interleaved rounds) and as token ratios (the tokens the engine computed, which no background load moves).

Every phase runs on the same engine, through the code lm-eval runs (lm-eval's ``VLLM`` model object and trac-eval's
hooked runner), on the same prompts, with the prefix cache reset before it:

- ``plain``: lm-eval's own ``generate_until`` (no logprobs, no TrAC);
- ``capture``: generation with top-k logprobs + the per-token summaries the records store;
- ``trac``: capture + every response's trace probe, each submitted the moment its trace finishes (streaming), records
  written per question: the runner lm-eval runs;
- ``probes_after``: capture, then all probes after the whole batch (the prefix may have been evicted);
- ``cache_off``: capture, prefix cache reset, then all probes (no prefix reuse: the paper's 1.16× setting).

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
``cache_off_ratio`` = cache_off / capture, ``capture_overhead_ratio`` = capture / plain, and the ``_short`` ones. The
last line printed is one JSON object: per wall ratio ``{median, min, max, per_round}``; its token ratios under the
name with ``_ratio`` → ``_token_ratio`` and ``_decoded_token_ratio`` (``probe_overhead_token_ratio``,
``cache_off_decoded_token_ratio``...); what the ``trac`` phases' records show; every round's order, seconds and token
counts (``warmup``, ``rounds``).

How a phase runs and what it counted is the engine object's business (:class:`Engine`; here
:class:`InProcessEngine`, one ``vllm.LLM`` in this process); the rounds, ratios and summaries take any engine.

    python benchmarks/probe_overhead.py [--model DIR] [--traces 8] [--trace-tokens 256] [--short-trace-tokens 64]
        [--rounds 3] [--block-size 32] [--dtype bfloat16] [--eager/--no-eager] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
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
LONG_KINDS = ("plain", "capture", "trac", "probes_after", "cache_off")
SHORT_KINDS = ("plain", "capture", "trac")
RATIOS = {
    "probe_overhead_ratio": ("trac", "capture"),
    "probe_overhead_ratio_short": ("trac_short", "capture_short"),
    "probes_after_batch_ratio": ("probes_after", "capture"),
    "cache_off_ratio": ("cache_off", "capture"),
    "capture_overhead_ratio": ("capture", "plain"),
    "capture_overhead_ratio_short": ("capture_short", "plain_short"),
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
    """The prompts of a set of phases: lm-eval Instances without (``plain``) and with (``trac``) a TrAC block."""

    suffix: str
    plain: list[Any]
    trac: list[Any]
    kinds: tuple[str, ...]


@dataclass(frozen=True)
class Phase:
    """A phase of a round: its name (kind + workload suffix), what it runs and on which prompts."""

    name: str
    kind: str
    workload: Workload


class Engine(Protocol):
    """What the rounds need of an engine: the phase kinds it runs (ratios of phases it lacks are left out), one phase
    run (prefix cache reset first; a ``trac`` phase writes its records into ``records_dir``) with its wall seconds and
    the engine's token counters over it, and what to call it in the JSON (``engine``, ``device``, ``model``).

    An engine for a running ``vllm serve`` implements the same: its phases through lm-eval's ``local-completions``
    model and trac-eval's served hook, its counts from the server's ``/metrics`` before and after the phase (the
    same counters, parsed into :meth:`TokenCounts.from_metrics`)."""

    kinds: tuple[str, ...]

    def run_phase(self, kind: str, workload: Workload, records_dir: Path) -> PhaseCount: ...

    def describe(self) -> dict[str, str]: ...


# ------------------------------------------------------------------------------------------ the in-process engine
class InProcessEngine:
    """Phases on one lm-eval ``VLLM`` object (one ``vllm.LLM`` in this process, built with ``disable_log_stats=False``
    so its Prometheus token counters run), through trac-eval's hooked runner."""

    kinds = LONG_KINDS

    def __init__(self, lm: Any, model: str) -> None:
        from trac_tasks.vllm_backend import VllmTracRunner

        self.lm = lm
        self.model = model
        self.runner = VllmTracRunner(lm)

    def run_phase(self, kind: str, workload: Workload, records_dir: Path) -> PhaseCount:
        work: dict[str, Callable[[], Any]] = {
            "plain": lambda: self.lm.generate_until(list(workload.plain), disable_tqdm=True),
            "capture": lambda: self._traces(workload.trac),
            "trac": lambda: self._streamed(workload.trac, records_dir),
            "probes_after": lambda: self._probes_after(workload.trac, reset_cache=False),
            "cache_off": lambda: self._probes_after(workload.trac, reset_cache=True),
        }
        self.lm.model.reset_prefix_cache()
        before = self._counts()
        started = time.perf_counter()
        work[kind]()
        seconds = time.perf_counter() - started
        return PhaseCount(seconds, self._counts() - before)

    def describe(self) -> dict[str, str]:
        import vllm

        return {"engine": f"vllm {vllm.__version__} (in process)", "device": _device(), "model": self.model}

    def _counts(self) -> TokenCounts:
        from vllm.v1.metrics.reader import Counter

        return TokenCounts.from_metrics(
            (metric.name, metric.labels, metric.value)
            for metric in self.lm.model.get_metrics()
            if isinstance(metric, Counter)
        )

    def _traces(self, requests: Sequence[Any]) -> list[Any]:
        from trac_tasks.capture import token_summaries
        from trac_tasks.config import TracConfig

        configs = [TracConfig.from_gen_kwargs(request.args[1], "probe_overhead") for request in requests]
        traces = self.runner.generate(requests, [0] * len(requests), configs)
        for trace in traces:
            token_summaries(trace.chosen, trace.top, trace.config.top_k)
        return traces

    def _streamed(self, requests: Sequence[Any], records_dir: Path) -> None:
        from trac_tasks.capture import RecordSink

        self.runner.sink = RecordSink(records_dir)
        self.runner.run(requests, disable_tqdm=True)

    def _probes_after(self, requests: Sequence[Any], reset_cache: bool) -> None:
        traces = self._traces(requests)
        if reset_cache:
            self.lm.model.reset_prefix_cache()
        jobs = [self.runner.trace_probe_job(index, trace) for index, trace in enumerate(traces)]
        self.runner.greedy_probes(traces, jobs)


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


def mean_probe_decoded_tokens(rounds: Sequence[Round], traces: int) -> float:
    """Tokens each trace probe decoded, on average: generated tokens of ``trac`` minus those of ``capture``."""
    extra = sum(one.counts["trac"].tokens.generated - one.counts["capture"].tokens.generated for one in rounds)
    return extra / (traces * len(rounds))


# ------------------------------------------------------------------------------------------ what the records show
def record_summary(records_dir: Path, rounds: int, phase: str) -> dict[str, float]:
    """From the records ``phase`` wrote in the counted rounds: the probe prompt tokens served from the prefix cache
    (the mean fraction and the smallest), the mean trace length and the stored JSONL bytes per generated token."""
    from trac_metrics.records import iter_records

    folders = [records_dir / f"round{index + 1}" / phase for index in range(rounds)]
    files = sorted(path for folder in folders for path in folder.rglob("*.jsonl"))
    records = [record for path in files for record in iter_records(path)]
    probes = [record.probes["trace"] for record in records]
    cached = np.asarray([probe.num_cached_tokens or 0 for probe in probes], dtype=float)
    prompt = np.asarray([probe.num_prompt_tokens for probe in probes], dtype=float)
    tokens = sum(record.num_tokens for record in records)
    return {
        "probe_prefix_cache_fraction": float(cached.sum() / prompt.sum()),
        "probe_prefix_cache_fraction_min": float((cached / prompt).min()),
        "mean_trace_tokens": tokens / len(records),
        "record_bytes_per_token": sum(path.stat().st_size for path in files) / tokens,
    }


# ------------------------------------------------------------------------------------------ the command
def _requests(n: int, trace_tokens: int, seed: int, trac: bool) -> list[Any]:
    """``n`` lm-eval Instances (K = 1 each) whose traces have seeded lengths in [trace_tokens, 1.5·trace_tokens]."""
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
            gen_kwargs["trac"] = {"answer_kind": "math", "reference": "0"}
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


def workloads(traces: int, trace_tokens: int, short_trace_tokens: int, seed: int) -> list[Workload]:
    """The long traces (every phase) and the short ones (plain, capture, trac)."""
    return [
        Workload(suffix, _requests(traces, tokens, seed, trac=False), _requests(traces, tokens, seed, trac=True), kinds)
        for suffix, tokens, kinds in (("", trace_tokens, LONG_KINDS), ("_short", short_trace_tokens, SHORT_KINDS))
    ]


def _in_process_engine(args: argparse.Namespace) -> InProcessEngine:
    """lm-eval's ``VLLM`` on the model, with prefix caching and vLLM's token counters on (CPU settings without a
    GPU, see scripts/cpu_env.sh)."""
    import torch

    import trac_tasks._autoload  # noqa: F401  (the hook, as the .pth file installs it for lm_eval)

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
        from trac_tasks.tiny_model import ensure_tiny_model

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
    parser.add_argument("--model", default=None, help="model folder or hub id (default: the bundled tiny model)")
    parser.add_argument("--traces", type=int, default=8)
    parser.add_argument("--trace-tokens", type=int, default=256)
    parser.add_argument("--short-trace-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3, help="counted rounds after the warm-up round")
    parser.add_argument("--block-size", type=int, default=32)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument(
        "--eager",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="enforce_eager (default: on for CPU, off on GPU)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    engine = _in_process_engine(args)
    phases = phases_of(engine, workloads(args.traces, args.trace_tokens, args.short_trace_tokens, args.seed))
    with tempfile.TemporaryDirectory(prefix="probe_overhead_records_") as records_dir:
        warmup, rounds = measure(engine, phases, args.rounds, Path(records_dir))
        records = record_summary(Path(records_dir), len(rounds), "trac")
        short_records = record_summary(Path(records_dir), len(rounds), "trac_short")
    measured = ratios(rounds)
    result = {
        **measured,
        "mean_probe_decoded_tokens": mean_probe_decoded_tokens(rounds, args.traces),
        **records,
        "mean_short_trace_tokens": short_records["mean_trace_tokens"],
        "traces": args.traces,
        "trace_tokens": args.trace_tokens,
        "short_trace_tokens": args.short_trace_tokens,
        "block_size": args.block_size,
        "dtype": args.dtype,
        **engine.describe(),
        "warmup": warmup.as_dict(),
        "rounds": [one.as_dict() for one in rounds],
    }
    _print_tables(warmup, rounds, measured)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
