"""What the TrAC probe costs on the vLLM engine: probe, cache-off and capture overhead as ratios from one run.

Every phase runs on the same engine instance, through the code lm-eval runs (lm-eval's ``VLLM`` model object and
trac-eval's hooked runner), on the same prompts, with the prefix cache reset between phases:

- ``plain``: lm-eval's own ``generate_until`` (no logprobs, no TrAC);
- ``capture``: generation with top-k logprobs + the per-token summaries the records store;
- ``trac``: capture + every response's trace probe, each submitted the moment its trace finishes (streaming);
- ``probes_after``: capture, then all probes after the whole batch (the prefix may have been evicted);
- ``cache_off``: capture, prefix cache reset, then all probes (no prefix reuse: the paper's 1.16× setting).

Traces are forced to a length drawn between ``--trace-tokens`` and 1.5 times that (``min_tokens = max_tokens``),
so they end at different steps as real traces do; the short-trace ratio uses ``--short-trace-tokens``.
Ratios: ``probe_overhead_ratio`` = trac / capture, ``cache_off_ratio`` = cache_off / capture,
``capture_overhead_ratio`` = capture / plain. The last line printed is one JSON object.

    python benchmarks/probe_overhead.py [--model DIR] [--traces 8] [--trace-tokens 512] [--short-trace-tokens 64]
        [--block-size 32] [--dtype bfloat16] [--eager/--no-eager] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

QUESTIONS = (
    "A train travels {a} km in {b} hours. Then it travels {c} km more at the same speed. How long does the whole "
    "trip take, in hours?",
    "A shop sells pencils at {a} cents each and pens at {b} cents each. How much do {c} pencils and {a} pens cost?",
    "The sum of three consecutive integers is {a}{b}. What is the largest of them if the smallest is {c}?",
)


def _on_cpu() -> bool:
    import torch

    return not torch.cuda.is_available()


def _cpu_defaults() -> None:
    """The settings that let vLLM's CPU build start on a small machine (see scripts/cpu_env.sh)."""
    for key, value in {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
                       "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}.items():
        os.environ.setdefault(key, value)


def _requests(n: int, trace_tokens: int, seed: int, trac: bool) -> list[Any]:
    """``n`` lm-eval Instances (K = 1 each) whose traces have seeded lengths in [trace_tokens, 1.5·trace_tokens]."""
    from lm_eval.api.instance import Instance

    rng = np.random.default_rng(seed)
    requests = []
    for index in range(n):
        a, b, c = (int(value) for value in rng.integers(2, 60, size=3))
        question = QUESTIONS[index % len(QUESTIONS)].format(a=a, b=b, c=c)
        length = int(rng.integers(trace_tokens, trace_tokens * 3 // 2 + 1))
        gen_kwargs: dict[str, Any] = {"until": [], "do_sample": True, "temperature": 0.7, "top_p": 0.95,
                                      "max_gen_toks": length, "min_tokens": length}
        if trac:
            gen_kwargs["trac"] = {"answer_kind": "math", "reference": "0"}
        prompt = f"Solve the following problem step by step. End your response with the final answer in \\boxed{{}}." \
                 f"\n\n{question}\n"
        requests.append(Instance("generate_until", {"question": question}, (prompt, gen_kwargs), idx=0,
                                 metadata=("probe_overhead", index, 1)))
    return requests


class Phases:
    """Times the benchmark's phases on one lm-eval ``VLLM`` object and keeps what they produced."""

    def __init__(self, lm: Any, records_dir: str) -> None:
        from trac_tasks.vllm_backend import VllmTracRunner

        class CollectingRunner(VllmTracRunner):
            """The hooked runner, keeping each trace and its probe's raw engine output (all decoded tokens)."""

            def trace_finished(self, chunk: Any, index: int, trace: Any) -> list[Any]:
                self.traces[index] = trace
                return super().trace_finished(chunk, index, trace)

            def job_finished(self, chunk: Any, job: Any, output: Any, seconds: float) -> None:
                if job.variant == "trace":
                    self.probe_outputs[job.index] = output
                super().job_finished(chunk, job, output, seconds)

        self.lm = lm
        self.runner = CollectingRunner(lm)
        self.records_dir = Path(records_dir)
        self.seconds: dict[str, float] = {}

    def timed(self, name: str, work: Callable[[], Any]) -> Any:
        self.lm.model.reset_prefix_cache()
        started = time.perf_counter()
        result = work()
        self.seconds[name] = time.perf_counter() - started
        return result

    def _traces(self, requests: Sequence[Any]) -> list[Any]:
        from trac_tasks.capture import token_summaries
        from trac_tasks.config import TracConfig

        configs = [TracConfig.from_gen_kwargs(request.args[1], "probe_overhead") for request in requests]
        traces = self.runner.generate(requests, [0] * len(requests), configs)
        for trace in traces:
            token_summaries(trace.chosen, trace.top, trace.config.top_k)
        return traces

    def _streamed(self, requests: Sequence[Any], records_subdir: str) -> tuple[list[Any], list[Any]]:
        """What a TrAC run does: the runner's own flow (streamed probes, records written per question, into
        ``records_subdir`` of the records folder)."""
        from trac_tasks.capture import RecordSink

        self.runner.sink = RecordSink(self.records_dir / records_subdir)
        self.runner.traces = [None] * len(requests)
        self.runner.probe_outputs = [None] * len(requests)
        self.runner.run(requests, disable_tqdm=True)
        return list(self.runner.traces), list(self.runner.probe_outputs)

    def _probes_after(self, requests: Sequence[Any], reset_cache: bool) -> list[Any]:
        traces = self._traces(requests)
        if reset_cache:
            self.lm.model.reset_prefix_cache()
        jobs = [self.runner.trace_probe_job(index, trace) for index, trace in enumerate(traces)]
        return self.runner.greedy_probes(traces, jobs)

    def run(self, plain: Sequence[Any], trac: Sequence[Any], label: str = "") -> tuple[list[Any], list[Any]]:
        self.timed(f"plain{label}", lambda: self.lm.generate_until(list(plain), disable_tqdm=True))
        self.timed(f"capture{label}", lambda: self._traces(trac))
        traces, probes = self.timed(f"trac{label}", lambda: self._streamed(trac, f"trac{label}"))
        if not label:
            self.timed("probes_after", lambda: self._probes_after(trac, reset_cache=False))
            self.timed("cache_off", lambda: self._probes_after(trac, reset_cache=True))
        return traces, probes


def _record_bytes_per_token(records_dir: str) -> float:
    """Stored JSONL bytes per generated token of the records written in ``records_dir``."""
    from trac_metrics.records import iter_records

    files = sorted(Path(records_dir).rglob("*.jsonl"))
    total_bytes = sum(path.stat().st_size for path in files)
    total_tokens = sum(record.num_tokens for path in files for record in iter_records(path))
    return total_bytes / total_tokens


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="model folder or hub id (default: the bundled tiny model)")
    parser.add_argument("--traces", type=int, default=8)
    parser.add_argument("--trace-tokens", type=int, default=512)
    parser.add_argument("--short-trace-tokens", type=int, default=64)
    parser.add_argument("--block-size", type=int, default=32)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--eager", action=argparse.BooleanOptionalAction, default=None,
                        help="enforce_eager (default: on for CPU, off on GPU)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import trac_tasks._autoload  # noqa: F401  (the hook, as the .pth file installs it for lm_eval)

    on_cpu = _on_cpu()
    if on_cpu:
        _cpu_defaults()
    model = args.model
    if model is None:
        from trac_tasks.tiny_model import ensure_tiny_model

        model = str(ensure_tiny_model())
    from lm_eval.models.vllm_causallms import VLLM

    max_len = args.trace_tokens * 3 // 2 + 256
    lm = VLLM(pretrained=model, dtype=args.dtype, max_model_len=max_len, enable_prefix_caching=True,
              block_size=args.block_size, enforce_eager=on_cpu if args.eager is None else args.eager,
              seed=1234, **({"distributed_executor_backend": "uni"} if on_cpu else {}))
    records_dir = tempfile.mkdtemp(prefix="probe_overhead_records_")
    phases = Phases(lm, records_dir)
    warmup = _requests(2, 16, args.seed + 1, trac=True)
    phases._streamed(warmup, "warmup")

    long_trac = _requests(args.traces, args.trace_tokens, args.seed, trac=True)
    long_plain = _requests(args.traces, args.trace_tokens, args.seed, trac=False)
    traces, probes = phases.run(long_plain, long_trac)
    short_trac = _requests(args.traces, args.short_trace_tokens, args.seed, trac=True)
    short_plain = _requests(args.traces, args.short_trace_tokens, args.seed, trac=False)
    short_traces, _ = phases.run(short_plain, short_trac, label="_short")

    seconds = phases.seconds
    cached = np.asarray([probe.num_cached_tokens or 0 for probe in probes], dtype=float)
    prompt = np.asarray([probe.num_prompt_tokens for probe in probes], dtype=float)
    probe_tokens = np.asarray([len(probe.token_ids) for probe in probes], dtype=float)
    trace_tokens = np.asarray([len(trace.generated_ids) for trace in traces], dtype=float)
    device = "cpu: " + (platform.processor() or platform.machine()) + f" ({os.cpu_count()} cores)"
    if not on_cpu:
        import torch

        device = torch.cuda.get_device_name(0)
    result = {
        "probe_overhead_ratio": seconds["trac"] / seconds["capture"],
        "probe_overhead_ratio_short": seconds["trac_short"] / seconds["capture_short"],
        "probes_after_batch_ratio": seconds["probes_after"] / seconds["capture"],
        "cache_off_ratio": seconds["cache_off"] / seconds["capture"],
        "capture_overhead_ratio": seconds["capture"] / seconds["plain"],
        "capture_overhead_ratio_short": seconds["capture_short"] / seconds["plain_short"],
        "decode_floor_ratio": 1.0 + float(probe_tokens.sum() / trace_tokens.sum()),
        "probe_prefix_cache_fraction": float(cached.sum() / prompt.sum()),
        "probe_prefix_cache_fraction_min": float((cached / prompt).min()),
        "mean_trace_tokens": float(trace_tokens.mean()),
        "mean_short_trace_tokens": float(np.mean([len(trace.generated_ids) for trace in short_traces])),
        "mean_probe_tokens": float(probe_tokens.mean()),
        "record_bytes_per_token": _record_bytes_per_token(os.path.join(records_dir, "trac")),
        "traces": args.traces,
        "block_size": args.block_size,
        "dtype": args.dtype,
        "engine": f"vllm {_vllm_version()}",
        "device": device,
        "model": model,
        "seconds": {name: round(value, 3) for name, value in seconds.items()},
    }
    print(f"{'phase':<16}{'seconds':>10}")
    for name, value in seconds.items():
        print(f"{name:<16}{value:>10.2f}")
    for key, value in result.items():
        if isinstance(value, float):
            print(f"{key:<34}{value:>10.4f}")
    print(json.dumps(result))
    return result


def _vllm_version() -> str:
    import vllm

    return vllm.__version__


if __name__ == "__main__":
    main()
