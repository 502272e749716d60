"""Which dtype a CPU runs the tiny reasoner fastest in (docs/guide/tiny-reasoner.md#on-a-cpu).

For each instruction set (this CPU's own, and AVX2 alone: torch's ``ATEN_CPU_CAPABILITY=avx2`` and oneDNN's
``ONEDNN_MAX_CPU_ISA=AVX2``, set before torch loads, as on a CPU without AVX-512) and each dtype (float32,
bfloat16), a fresh interpreter times two workloads: the demo's generations (vLLM's CPU build in process, the 100
``trac_demo`` questions × K = 8 sampled at T = 0.7 with up to 512 tokens, as ``scripts/demo.sh`` asks, without the
probes) and one linear layer of SmolLM2-135M's shape (64 × 576 @ 576 × 1536, the matrix the earlier default
multiplied, the median of 100). The (instruction set, dtype) runs are interleaved over ``--rounds`` rounds; it prints
each run's seconds and tokens per second and, per instruction set, the bf16 / fp32 time ratio (above 1: float32 is
faster).

    python benchmarks/cpu_dtype.py [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ISAS = {"native": {}, "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}}
DTYPES = ("float32", "bfloat16")


def _child(dtype: str) -> dict[str, float]:
    """In a fresh interpreter: the demo's generation and the linear layer, in ``dtype``."""
    import torch
    from vllm import LLM, SamplingParams

    sys.path.insert(0, str(REPO))
    from trac_tasks.data.demo_data import demo_rows
    from trac_tasks.data.tiny_reasoner import chat_prompts, reasoner_path

    a, b = torch.randn(64, 576, dtype=getattr(torch, dtype)), torch.randn(576, 1536, dtype=getattr(torch, dtype))
    linear = []
    for _ in range(100):
        start = time.perf_counter()
        a @ b
        linear.append(time.perf_counter() - start)
    llm = LLM(
        model=str(reasoner_path()),
        dtype=dtype,
        max_model_len=1024,
        enforce_eager=True,
        distributed_executor_backend="uni",
        seed=1234,
        block_size=32,
    )
    prompts = chat_prompts(llm.get_tokenizer(), [row["problem"] for row in demo_rows()])
    sampling = SamplingParams(n=8, temperature=0.7, top_p=0.95, max_tokens=512)
    start = time.perf_counter()
    outputs = llm.generate(prompts, sampling, use_tqdm=False)
    seconds = time.perf_counter() - start
    tokens = sum(len(completion.token_ids) for output in outputs for completion in output.outputs)
    return {"generation_seconds": seconds, "tokens": tokens, "linear_seconds": statistics.median(linear)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    print(f"CPU flags: {_cpu_flags()}; vLLM's CPU build in process; {args.rounds} interleaved round(s)")
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    engine_env = {
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    }
    for _ in range(args.rounds):
        for isa, isa_env in ISAS.items():
            for dtype in DTYPES:
                child = subprocess.run(
                    [sys.executable, __file__, "--child", dtype],
                    capture_output=True,
                    text=True,
                    env={**os.environ, **engine_env, **isa_env},
                    check=True,
                )
                run = json.loads(child.stdout.strip().splitlines()[-1])
                runs.setdefault((isa, dtype), []).append(run)
                print(
                    f"{isa:>6} {dtype:<8}  demo generation {run['generation_seconds']:6.1f} s "
                    f"({run['tokens'] / run['generation_seconds']:7.0f} tokens/s)  "
                    f"SmolLM2 linear {run['linear_seconds'] * 1e3:7.3f} ms",
                    flush=True,
                )
    for isa in ISAS:
        generation, linear = (
            statistics.median(run[key] for run in runs[(isa, "bfloat16")])
            / statistics.median(run[key] for run in runs[(isa, "float32")])
            for key in ("generation_seconds", "linear_seconds")
        )
        print(f"{isa:>6}  bf16 / fp32 time: demo generation {generation:5.2f}, SmolLM2 linear {linear:5.2f}")


def _cpu_flags() -> str:
    flags = Path("/proc/cpuinfo").read_text().split("flags", 2)[1].split("\n", 1)[0].split()
    return ", ".join(flag for flag in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if flag in flags)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(_child(sys.argv[2])))
    else:
        main()
