"""A served model that goes away mid-run: the real ``lm_eval --model local-completions`` CLI against a real
``vllm serve`` that is stopped once two questions are on disk (docs/architecture.md#served-backend). Its own module,
so no other server is alive while it runs."""

from __future__ import annotations

import subprocess
import time
from collections import Counter

import pytest
from lm_eval_runs import LOCAL_TASK, lm_eval_command, write_local_math500_task
from testenv import engine_env
from vllm_server import stop, vllm_server

from trac_metrics.records import iter_records

pytestmark = pytest.mark.engine


def test_a_server_lost_mid_run_ends_in_a_clear_error_after_bounded_retries(tmp_path, tiny_model):
    """The server stops once two questions are on disk: the client retries each open request ``max_retries`` times,
    then lm_eval exits with an error naming the server, and every question written so far is whole."""
    n_docs, k = 12, 2
    tasks = write_local_math500_task(tmp_path, n_docs, k, max_gen_toks=160)
    out = tmp_path / "out"
    with vllm_server(tiny_model, tmp_path / "vllm_serve.log") as (base_url, server_process):
        model_args = (
            f"model={tiny_model},base_url={base_url}/v1/completions,num_concurrent=2,max_retries=2,"
            f"tokenizer={tiny_model},max_length=2048"
        )
        command = lm_eval_command(tasks, "local-completions", model_args, out, "--apply_chat_template")
        client = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=engine_env(), cwd=tmp_path
        )
        try:
            deadline = time.monotonic() + 1800
            while time.monotonic() < deadline and client.poll() is None:
                files = list((out / "trac_records").glob(f"{LOCAL_TASK}.*.jsonl"))
                if files and files[0].read_bytes().count(b"\n") >= 2 * k:
                    stop(server_process)
                    break
                time.sleep(0.2)
            log, _ = client.communicate(timeout=600)
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
    assert client.returncode != 0, log[-4000:]
    assert f"the server at {base_url}/v1/completions did not answer" in log and "in 2 attempts" in log, log[-4000:]
    (path,) = (out / "trac_records").glob(f"{LOCAL_TASK}.*.jsonl")
    per_question = Counter(record.doc_id for record in iter_records(path))
    assert 2 <= len(per_question) < n_docs and set(per_question.values()) == {k}
