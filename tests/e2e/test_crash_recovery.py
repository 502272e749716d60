"""Fault injection on the real engine: an ``lm_eval --model vllm`` run killed with SIGKILL mid-run keeps every
question it finished, and ``trac report`` reads what it left; a run interrupted with Ctrl-C (SIGINT) stops, keeps
its finished questions, and a rerun of only its missing questions (``--samples``) into the same folder, warned
about the earlier file, completes it for ``trac report``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter

import pytest
from lm_eval_runs import LOCAL_TASK, REASONER_ROWS, lm_eval_command, reasoner_vllm_args, write_local_math500_task
from testenv import engine_env

from trac_metrics.cli import main
from trac_metrics.records import iter_records
from trac_metrics.reporting.runs import load_pairs

pytestmark = pytest.mark.engine

N_DOCS, K = 16, 2
MAX_GEN_TOKS = 256  # most of the tiny reasoner's traces close their thinking and answer within it
MODEL_ARGS = reasoner_vllm_args("max_num_seqs=2")
"""Two sequences at a time: the questions finish one after another, so the kill lands between them."""


def interrupt_after_two_questions(command: list[str], out, log_path, sign: signal.Signals) -> tuple[int, int]:
    """Run ``command``, send ``sign`` once two questions' records are written; its exit code and the record lines
    seen then."""
    log = log_path.open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=engine_env(), cwd=out.parent)
    records_seen_while_running = 0
    try:
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline and process.poll() is None:
            files = list((out / "trac_records").glob(f"{LOCAL_TASK}.*.jsonl"))
            lines = files[0].read_bytes().count(b"\n") if files else 0
            if lines >= 2 * K:
                records_seen_while_running = lines
                os.kill(process.pid, sign)
                break
            time.sleep(0.2)
        process.wait(timeout=120)  # an interrupted run stops; it does not hang
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
    return process.returncode, records_seen_while_running


def test_a_run_killed_mid_run_keeps_every_finished_question(tmp_path, capsys):
    tasks = write_local_math500_task(tmp_path, N_DOCS, K, max_gen_toks=MAX_GEN_TOKS, rows=REASONER_ROWS)
    out = tmp_path / "out"
    command = lm_eval_command(tasks, "vllm", MODEL_ARGS, out, "--apply_chat_template")
    returncode, records_seen_while_running = interrupt_after_two_questions(
        command, out, tmp_path / "lm_eval.log", signal.SIGKILL
    )
    assert returncode == -signal.SIGKILL, (tmp_path / "lm_eval.log").read_text()[-4000:]
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


def test_a_run_interrupted_with_ctrl_c_is_completed_by_rerunning_its_missing_questions(tmp_path):
    tasks = write_local_math500_task(tmp_path, N_DOCS, K, max_gen_toks=MAX_GEN_TOKS, rows=REASONER_ROWS)
    out = tmp_path / "out"
    command = lm_eval_command(tasks, "vllm", MODEL_ARGS, out, "--apply_chat_template")
    returncode, _ = interrupt_after_two_questions(command, out, tmp_path / "first.log", signal.SIGINT)
    assert returncode != 0, (tmp_path / "first.log").read_text()[-4000:]
    (first,) = (out / "trac_records").glob(f"{LOCAL_TASK}.*.jsonl")
    finished = Counter(record.doc_id for record in iter_records(first))
    assert set(finished.values()) == {K} and 1 <= len(finished) < N_DOCS

    missing = [doc for doc in range(N_DOCS) if doc not in finished]
    rerun = subprocess.run(
        [*command, "--samples", json.dumps({LOCAL_TASK: missing})],
        capture_output=True,
        text=True,
        timeout=1800,
        env=engine_env(),
        cwd=tmp_path,
    )
    log = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0, log[-4000:]
    assert f"already holds records of task {LOCAL_TASK} ({first.name})" in log
    second = next(path for path in (out / "trac_records").glob(f"{LOCAL_TASK}.*.jsonl") if path != first)
    assert sorted({record.doc_id for record in iter_records(second)}) == missing, "records name the dataset index"

    (pair,) = load_pairs([out])  # the two files are one run of every question
    assert [evidence["doc_id"] for evidence in pair.evidences] == list(range(N_DOCS))
    assert len(pair.sources) == 2
