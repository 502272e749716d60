"""Engines shared by the end-to-end tests: one real ``lm_eval`` run (or one ``vllm serve``) feeds every test that only
reads its outputs, instead of each test module starting its own."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from lm_eval_runs import LmEvalRun, thinking_run, write_thinking_tasks
from vllm_server import start_server, stop


@pytest.fixture(scope="session")
def thinking_tasks(tmp_path_factory, thinking_model) -> Path:
    """The thinking model's task folder: open traces (the local MATH-500 rows) and closed ones (marker forced)."""
    return write_thinking_tasks(tmp_path_factory.mktemp("thinking_tasks"), thinking_model)


@pytest.fixture(scope="session")
def thinking_vllm_run(tmp_path_factory, thinking_tasks, thinking_model) -> LmEvalRun:
    """One seeded ``lm_eval --model vllm`` run of the thinking-style model on vLLM's fast output path, over
    :data:`~lm_eval_runs.THINKING_TASKS` (``trac_demo``, open and closed thinking traces)."""
    return thinking_run(tmp_path_factory.mktemp("thinking_vllm"), thinking_tasks, thinking_model, fast=True)


class ServedModel:
    """A real ``vllm serve`` of the tiny reasoner shared by the served tests, started on first use and again after a
    test stopped it (the server-lost test does)."""

    def __init__(self, model: Path, folder: Path) -> None:
        self._model, self._folder = model, folder
        self._process: subprocess.Popen | None = None
        self.base_url = ""
        self.log_path = folder / "vllm_serve.log"

    def running(self) -> ServedModel:
        if self._process is None or self._process.poll() is not None:
            self.log_path = self._folder / f"vllm_serve.{len(list(self._folder.iterdir()))}.log"
            self.base_url, self._process = start_server(self._model, self.log_path)
        return self

    def stop(self) -> None:
        if self._process is not None:
            stop(self._process)

    @property
    def process(self) -> subprocess.Popen:
        assert self._process is not None
        return self._process


@pytest.fixture(scope="session")
def served_model(tmp_path_factory, reasoner_model) -> Iterator[ServedModel]:
    served = ServedModel(reasoner_model, tmp_path_factory.mktemp("served_model"))
    try:
        yield served
    finally:
        served.stop()
