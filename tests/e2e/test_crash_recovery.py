"""Fault injection on the real engine: an ``lm_eval --model vllm`` run killed with SIGKILL mid-run keeps every
question it finished, and ``trac report`` reads what it left."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter

import pytest
from lm_eval_runs import LOCAL_TASK, lm_eval_command, write_local_math500_task
from testenv import engine_env

from trac_metrics.cli import main
from trac_metrics.records import iter_records

pytestmark = pytest.mark.engine

N_DOCS, K = 8, 2


def test_a_run_killed_mid_run_keeps_every_finished_question(tmp_path, tiny_model, capsys):
    tasks = write_local_math500_task(tmp_path, N_DOCS, K, max_gen_toks=64)
    out = tmp_path / "out"
    # two sequences at a time: the questions finish one after another, so the kill lands between them
    model_args = (
        f"pretrained={tiny_model},dtype=bfloat16,max_model_len=2048,enable_prefix_caching=True,"
        "block_size=32,enforce_eager=True,distributed_executor_backend=uni,seed=1234,max_num_seqs=2"
    )
    command = lm_eval_command(tasks, "vllm", model_args, out, "--apply_chat_template")
    log = (tmp_path / "lm_eval.log").open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=engine_env(), cwd=tmp_path)
    records_seen_while_running = 0
    try:
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline and process.poll() is None:
            files = list((out / "trac_records").glob(f"{LOCAL_TASK}.*.jsonl"))
            lines = files[0].read_bytes().count(b"\n") if files else 0
            if lines >= 2 * K:
                records_seen_while_running = lines
                os.kill(process.pid, signal.SIGKILL)
                break
            time.sleep(0.2)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        log.close()
    assert process.returncode == -signal.SIGKILL, (tmp_path / "lm_eval.log").read_text()[-4000:]
    assert 2 * K <= records_seen_while_running < N_DOCS * K, "records must appear question by question"

    (path,) = (out / "trac_records").glob(f"{LOCAL_TASK}.*.jsonl")
    records = list(iter_records(path))
    per_question = Counter(record.doc_id for record in records)
    assert 2 <= len(per_question) < N_DOCS
    assert set(per_question.values()) == {K}, "a question is written whole, with all its K samples"
    assert all("trace" in record.probes and record.num_samples == K for record in records)

    main(["report", str(out), "--out", str(tmp_path / "report"), "--resamples", "50"])
    assert "TrAC" in capsys.readouterr().out
    assert (tmp_path / "report" / "leaderboard.csv").exists()
