"""End to end: a seeded ``lm_eval --model vllm`` run gives the same results, samples and records on vLLM's fast output
path (flat logprobs, no detokenization in the engine loop, vectorized token summaries) as on the detokenizing path,
which the runner takes on a vLLM release without the fast path (docs/architecture.md#vllm-backend):
``scripts/compare_runs.py`` finds them identical but for wall-clock fields. One pair of runs covers the bundled demo
task and a thinking model's traces, open (probed with the marker appended) and closed (``</think>`` generated, a
special token the generated text keeps and lm-eval's post-processing, given ``think_end_token``, splits at)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from lm_eval_runs import (
    CLOSED_TASK,
    LOCAL_TASK,
    LmEvalRun,
    lm_eval_command,
    write_closed_thinking_task,
    write_local_math500_task,
)
from testenv import REPO, engine_env
from transformers import AutoTokenizer

from trac_metrics.records import iter_records
from trac_tasks.engines.vllm_backend import fast_capture_supported

pytestmark = pytest.mark.engine

LIMIT, K, MAX_GEN_TOKS = 4, 2, 24
DEMO_REPEATS = 4  # trac_demo's K
DETOKENIZING = (
    "import sys; import trac_tasks.engines.vllm_backend as backend; "
    "backend.fast_capture_supported = lambda: False; "  # a vLLM release without the fast output path
    "from lm_eval.__main__ import cli_evaluate; sys.exit(cli_evaluate())"
)

SPEC = importlib.util.spec_from_file_location("compare_runs", REPO / "scripts" / "compare_runs.py")
compare_runs = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(compare_runs)


def _run(root: Path, tasks_dir: Path, model: Path, fast: bool) -> Path:
    out = root / ("fast" if fast else "detokenizing")
    model_args = (
        f"pretrained={model},dtype=bfloat16,max_model_len=2048,enable_prefix_caching=True,"
        "block_size=32,enforce_eager=True,distributed_executor_backend=uni,seed=1234,think_end_token=</think>"
    )
    command = lm_eval_command(
        tasks_dir,
        "vllm",
        model_args,
        out,
        "--limit",
        str(LIMIT),
        "--apply_chat_template",
        "--log_samples",
        tasks=f"trac_demo,{LOCAL_TASK},{CLOSED_TASK}",
    )
    if not fast:
        command[:1] = [sys.executable, "-c", DETOKENIZING]
    result = subprocess.run(command, capture_output=True, text=True, timeout=2400, env=engine_env(), cwd=root)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    return out


def test_the_fast_path_records_what_the_detokenizing_path_records(tmp_path, thinking_model, capsys):
    assert fast_capture_supported(), (
        "the installed vLLM must have the fast output path for this comparison to mean anything"
    )
    marker_id = AutoTokenizer.from_pretrained(thinking_model).convert_tokens_to_ids("</think>")
    tasks_dir = write_local_math500_task(tmp_path, LIMIT, K, max_gen_toks=MAX_GEN_TOKS)
    write_closed_thinking_task(tasks_dir, marker_id, MAX_GEN_TOKS)
    detokenizing = _run(tmp_path, tasks_dir, thinking_model, fast=False)
    fast = _run(tmp_path, tasks_dir, thinking_model, fast=True)
    assert compare_runs.main([str(detokenizing), str(fast)]) == 0, capsys.readouterr().out
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "results: identical (3 tasks)",
        f"samples: identical ({3 * LIMIT} lines)",
        f"records: identical ({LIMIT * (DEMO_REPEATS + 2 * K)} lines)",
    ]
    records = {
        task: [record for path in LmEvalRun(fast, "").record_files(task) for record in iter_records(path)]
        for task in (LOCAL_TASK, CLOSED_TASK)
    }
    # both kinds of thinking trace are among what was compared
    assert [len(one) for one in records.values()] == [LIMIT * K, LIMIT * K]
    assert all(record.answer is None and marker_id not in record.token_ids for record in records[LOCAL_TASK])
    for record in records[CLOSED_TASK]:  # lm-eval's post-processing (think_end_token) scored the part after it
        assert record.token_ids[0] == marker_id and record.generated_text.startswith("</think>")
        assert "</think>" not in record.text
