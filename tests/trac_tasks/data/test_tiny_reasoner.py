"""The shipped tiny reasoner (trac_tasks/data/tiny-reasoner): a complete Llama model folder that vLLM's CPU build
accepts, small enough to ship, a tokenizer whose ``<think>`` / ``</think>`` are special tokens and a ChatML template,
and a greedy accuracy on the demo questions equal to what its training run recorded."""

from __future__ import annotations

import json

import pytest
from transformers import AutoConfig, AutoTokenizer

from trac_tasks.data.demo_data import demo_rows
from trac_tasks.data.tiny_reasoner import CARD_FIELDS, greedy_accuracy, reasoner_path

VLLM_CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)  # vLLM 0.32's CPU attention


def test_the_folder_is_a_llama_model_vllm_cpu_loads_and_small_enough_to_ship():
    folder = reasoner_path()
    config = AutoConfig.from_pretrained(folder)
    assert config.architectures == ["LlamaForCausalLM"]
    assert config.head_dim in VLLM_CPU_HEAD_SIZES
    training = json.loads((folder / CARD_FIELDS).read_text())
    assert 0.5e6 <= training["parameters"] <= 20e6
    assert (folder / "model.safetensors").stat().st_size <= 20 * 2**20
    assert (folder / "README.md").is_file(), "the model card"


def test_think_tags_are_special_tokens_and_the_template_is_chatml():
    tokenizer = AutoTokenizer.from_pretrained(reasoner_path())
    for tag in ("<think>", "</think>"):
        ids = tokenizer(tag, add_special_tokens=False).input_ids
        assert len(ids) == 1 and ids[0] in tokenizer.all_special_ids, tag
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "2 + 2?"}], tokenize=False, add_generation_prompt=True
    )
    assert prompt == "<|im_start|>user\n2 + 2?<|im_end|>\n<|im_start|>assistant\n"
    assert tokenizer.eos_token == "<|im_end|>"
    assert [tokenizer.decode([i]) for i in tokenizer("1234", add_special_tokens=False).input_ids] == list("1234")


@pytest.mark.engine
def test_greedy_accuracy_on_the_demo_questions_is_what_training_recorded():
    """The figure a rebuild (``python scripts/train_tiny_reasoner.py``) must reproduce, and that the model card
    states: greedy decoding by transformers in float32 on the CPU."""
    folder = reasoner_path()
    recorded = json.loads((folder / CARD_FIELDS).read_text())["greedy_demo_accuracy"]
    assert greedy_accuracy(folder, demo_rows()) == pytest.approx(recorded, abs=0.03)  # the model card's tolerance
