"""A real ``vllm serve`` (vLLM's CPU build; the tiny reasoner in the CPU's dtype, its 1,024-token context) on
127.0.0.1 for the served-path tests: started as a subprocess on a free port, ready once its health endpoint answers;
the caller stops it."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from testenv import engine_env

from trac_tasks.data.tiny_reasoner import cpu_dtype

START_TIMEOUT_SECONDS = 300
_PROMPT_IDS = re.compile(r"prompt_token_ids: \[([\d, ]*)\]")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(model: Path, log_path: Path) -> tuple[str, subprocess.Popen]:
    """``vllm serve model`` with prefix caching, cached-token counts in its usage and every request's prompt token
    ids in ``log_path`` (``--enable-log-requests`` at DEBUG level), once healthy: its base URL and the process (the
    caller stops it with :func:`stop`)."""
    port = free_port()
    command = [
        shutil.which("vllm"),
        "serve",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        cpu_dtype(),
        "--max-model-len",
        "1024",
        "--enable-prefix-caching",
        "--block-size",
        "32",
        "--enforce-eager",
        "--enable-prompt-tokens-details",
        "--seed",
        "1234",
        "--enable-log-requests",
    ]
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=engine_env(VLLM_LOGGING_LEVEL="DEBUG"),
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_healthy(base_url, process, log_path)
    except BaseException:
        stop(process)
        raise
    return base_url, process


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the server's process group, SIGKILL if it has not exited 30 s later."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _wait_until_healthy(base_url: str, process: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"vllm serve exited with {process.returncode}:\n{log_path.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{base_url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    raise AssertionError(
        f"vllm serve did not become healthy in {START_TIMEOUT_SECONDS} s:\n{log_path.read_text()[-4000:]}"
    )


def received_prompts(log_path: Path) -> list[list[int]]:
    """The token-id prompt of every request the server logged."""
    return [
        [int(token) for token in match.split(",") if token.strip()]
        for match in _PROMPT_IDS.findall(log_path.read_text(encoding="utf-8"))
    ]
