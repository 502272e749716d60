"""What TrAC costs on ``--model hf`` over plain lm-eval's own batched HF path (docs/guide/performance.md#hf-batching).

Three runs on one lm-eval ``HFLM`` model object per batch size, in one process, on the same prompts and the same
work: Q questions of very different prompt lengths × K samples × exactly ``--max-gen-toks`` tokens each
(``min_new_tokens`` holds the end token back, so every run generates the same number of tokens), greedy:

- ``plain_batched``: lm-eval's own ``HFLM.generate_until`` at ``--batch-size`` (K identical requests per question, as
  lm-eval's ``repeats`` sends them);
- ``trac_batched``: the same requests with a ``trac`` block (trace probe on, the task defaults otherwise), through
  the trac-eval hook at ``--batch-size``: generation with logprobs, probes, records written (to a temporary folder);
- ``plain_batch_1``: lm-eval's own path at batch size 1.

Each run is timed whole after one untimed warm-up call, in wall-clock seconds (``perf_counter``) and in this
process's CPU seconds (``process_time``: on a CPU shared with other work, the part of the wall time that was this
run's own); ``--rounds`` repeats the three in turn and keeps each run's median. torch uses ``--threads`` CPU threads
in all three runs (default 1: a shared CPU's second core is another process's, and threads waiting for it make the
timings noise). Printed: per run the seconds, CPU seconds and generated tokens per second, then the ratios
``trac_batched / plain_batched`` (the cost of TrAC; also each round's, for their spread) and ``plain_batch_1 /
plain_batched`` (what batching buys); the last line is one JSON object.

``--model`` is any model folder (default: the bundled tiny reasoner); ``--random-weights`` builds the folder's
architecture with random weights instead of loading them (a realistic-shape GPU workload with no weights to carry).

    python benchmarks/hf_batching.py [--model DIR] [--device cpu|cuda] [--dtype float32] [--batch-size 16]
        [--questions 4] [--repeats 4] [--max-gen-toks 64] [--rounds 1] [--threads 1] [--random-weights]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

TRAC = {"answer_kind": "math", "reference": "4", "probe_variants": ["trace"]}
PREAMBLE = "Read the question carefully and check every step. "


def _requests(questions: int, repeats: int, max_gen_toks: int, trac: bool) -> list:
    """K identical requests per question (lm-eval's ``repeats``), prompts from 1 to ~8 preamble sentences long."""
    from lm_eval.api.instance import Instance

    requests = []
    for doc_id in range(questions):
        kwargs = {"until": [], "do_sample": False, "max_gen_toks": max_gen_toks, "min_new_tokens": max_gen_toks}
        if trac:
            kwargs["trac"] = TRAC
        prompt = PREAMBLE * (1 + 7 * doc_id // max(questions - 1, 1)) + f"What is {doc_id} + 4?\n"
        instance = Instance(
            "generate_until", {"q": doc_id}, (prompt, kwargs), idx=0, metadata=("bench", doc_id, repeats)
        )
        instance.repeats = repeats
        requests.extend([instance] * repeats)
    return requests


def _model(args: argparse.Namespace, batch_size: int):
    from lm_eval.models.huggingface import HFLM

    if not args.random_weights:
        return HFLM(pretrained=str(args.model), device=args.device, dtype=args.dtype, batch_size=batch_size)
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_config(config, torch_dtype=getattr(torch, args.dtype)).to(args.device)
    return HFLM(pretrained=model, tokenizer=AutoTokenizer.from_pretrained(args.model), batch_size=batch_size)


def _timed(call) -> tuple[float, float]:
    """Wall-clock and CPU seconds of ``call()``."""
    started, cpu_started = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - started, time.process_time() - cpu_started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None, help="a model folder (default: the tiny reasoner)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--max-gen-toks", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads, the same in all three runs")
    parser.add_argument("--random-weights", action="store_true")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.model is None:
        from trac_tasks.data.tiny_reasoner import reasoner_path

        args.model = reasoner_path()

    import trac_tasks.harness.autoload  # noqa: F401  (the backend hook, as the .pth file installs it)

    os.environ["TRAC_RECORDS_DIR"] = tempfile.mkdtemp(prefix="hf_batching_records_")
    batched, single = _model(args, args.batch_size), _model(args, 1)
    plain = _requests(args.questions, args.repeats, args.max_gen_toks, trac=False)
    trac = _requests(args.questions, args.repeats, args.max_gen_toks, trac=True)
    runs = {
        "plain_batched": lambda: batched.generate_until(plain, disable_tqdm=True),
        "trac_batched": lambda: batched.generate_until(trac, disable_tqdm=True),
        "plain_batch_1": lambda: single.generate_until(plain, disable_tqdm=True),
    }
    batched.generate_until(plain[: args.repeats], disable_tqdm=True)  # warm-up: first-call set-up, not timed
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    cpu_seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            wall, cpu = _timed(run)
            seconds[name].append(wall)
            cpu_seconds[name].append(cpu)
    tokens = args.questions * args.repeats * args.max_gen_toks
    result = {
        "model": str(args.model),
        "random_weights": args.random_weights,
        "device": args.device,
        "dtype": args.dtype,
        "batch_size": args.batch_size,
        "questions": args.questions,
        "repeats": args.repeats,
        "max_gen_toks": args.max_gen_toks,
        "rounds": args.rounds,
        "threads": args.threads,
        "generated_tokens": tokens,
    }
    print(f"{'run':<15} {'seconds':>9} {'CPU s':>9} {'tokens/s':>10}")
    for name, values in seconds.items():
        median, cpu_median = statistics.median(values), statistics.median(cpu_seconds[name])
        result[f"{name}_seconds"] = round(median, 3)
        result[f"{name}_cpu_seconds"] = round(cpu_median, 3)
        result[f"{name}_tokens_per_second"] = round(tokens / median, 1)
        print(f"{name:<15} {median:>9.2f} {cpu_median:>9.2f} {tokens / median:>10.1f}")
    result["trac_over_plain_batched"] = round(result["trac_batched_seconds"] / result["plain_batched_seconds"], 3)
    result["trac_over_plain_batched_by_round"] = [
        round(trac / plain, 3) for trac, plain in zip(seconds["trac_batched"], seconds["plain_batched"], strict=True)
    ]
    result["trac_over_plain_batched_cpu"] = round(
        result["trac_batched_cpu_seconds"] / result["plain_batched_cpu_seconds"], 3
    )
    result["plain_batch_1_over_plain_batched"] = round(
        result["plain_batch_1_seconds"] / result["plain_batched_seconds"], 3
    )
    print(
        f"TrAC / plain at batch {args.batch_size}: {result['trac_over_plain_batched']:.3f} "
        f"(by round: {', '.join(map(str, result['trac_over_plain_batched_by_round']))}; "
        f"CPU seconds: {result['trac_over_plain_batched_cpu']:.3f})"
    )
    print(f"plain batch 1 / plain batch {args.batch_size}: {result['plain_batch_1_over_plain_batched']:.3f}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
