"""End to end: a seeded ``lm_eval --model vllm`` run of ``trac_demo`` gives the same results, samples and records on
vLLM's fast output path (flat logprobs, no detokenization in the engine loop, vectorized token summaries) as on the
detokenizing path, which the runner takes on a vLLM release without the fast path (docs/architecture.md#vllm-backend):
``scripts/compare_runs.py`` finds them identical but for wall-clock fields."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, engine_env

pytestmark = pytest.mark.engine

LIMIT = 4
DETOKENIZING = (
    "import sys; import trac_tasks.engines.vllm_backend as backend; "
    "backend.fast_capture_supported = lambda: False; "  # a vLLM release without the fast output path
    "from lm_eval.__main__ import cli_evaluate; sys.exit(cli_evaluate())"
)

SPEC = importlib.util.spec_from_file_location("compare_runs", REPO / "scripts" / "compare_runs.py")
compare_runs = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(compare_runs)


def _demo_run(root: Path, tiny_model: Path, fast: bool) -> Path:
    out = root / ("fast" if fast else "detokenizing")
    model_args = (
        f"pretrained={tiny_model},dtype=bfloat16,max_model_len=2048,enable_prefix_caching=True,"
        "block_size=32,enforce_eager=True,distributed_executor_backend=uni,seed=1234"
    )
    command = [shutil.which("lm_eval")] if fast else [sys.executable, "-c", DETOKENIZING]
    command += ["--tasks", "trac_demo", "--model", "vllm", "--model_args", model_args, "--limit", str(LIMIT)]
    command += ["--apply_chat_template", "--log_samples", "--output_path", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=2400, env=engine_env(), cwd=root)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    return out


def test_the_fast_path_records_what_the_detokenizing_path_records(tmp_path, tiny_model, capsys):
    detokenizing = _demo_run(tmp_path, tiny_model, fast=False)
    fast = _demo_run(tmp_path, tiny_model, fast=True)
    assert compare_runs.main([str(detokenizing), str(fast)]) == 0, capsys.readouterr().out
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "results: identical (1 tasks)",
        f"samples: identical ({LIMIT} lines)",
        f"records: identical ({4 * LIMIT} lines)",
    ]
