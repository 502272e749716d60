"""The end-of-thinking marker: detection from lm-eval's argument, the tokenizer and the chat template, and the
open / closed / none state of a trace, on real tokenizers (the tiny model's and its thinking-style copy)."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from trac_tasks.generation.thinking import ThinkingMarker, detect_marker


def _encode(tokenizer):
    return lambda text: tokenizer(text, add_special_tokens=False).input_ids


def test_a_tokenizer_without_thinking_tokens_has_no_marker(tiny_tokenizer):
    assert detect_marker(tiny_tokenizer, None) == ""


def test_the_thinking_token_of_the_tokenizer_is_found(thinking_model):
    tokenizer = AutoTokenizer.from_pretrained(thinking_model)
    assert detect_marker(tokenizer, None) == "</think>"


def test_lm_evals_think_end_token_wins(thinking_model):
    tokenizer = AutoTokenizer.from_pretrained(thinking_model)
    assert detect_marker(tokenizer, "<|im_end|>") == "<|im_end|>"
    think_end_id = tokenizer.convert_tokens_to_ids("</think>")
    assert detect_marker(tokenizer, think_end_id) == "</think>"
    assert detect_marker(tokenizer, str(think_end_id)) == "</think>"


def test_the_chat_templates_closing_tag_is_found(tiny_model):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    tokenizer.chat_template += "{% if reasoning %}<reasoning>{{ reasoning }}</reasoning>{% endif %}"
    assert detect_marker(tokenizer, None) == ""
    tokenizer.chat_template += "{% if thoughts %}<thinking>{{ thoughts }}</thinking>{% endif %}"
    assert detect_marker(tokenizer, None) == "</thinking>"


@pytest.fixture(scope="module")
def marker(thinking_model):
    tokenizer = AutoTokenizer.from_pretrained(thinking_model)
    return ThinkingMarker.build("</think>", _encode(tokenizer)), _encode(tokenizer)


def test_a_special_marker_is_one_token_with_its_opener(marker):
    built, _ = marker
    assert len(built.ids) == 1 and len(built.opener_ids) == 1 and built.ids != built.opener_ids


def test_states_of_a_trace(marker):
    built, encode = marker
    prompt_opening = encode("<|im_start|>assistant\n<think>\n")
    prompt_plain = encode("<|im_start|>assistant\n")
    prompt_closed_empty = encode("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    reasoning = encode("2 + 2 is 4")
    answered = encode("2 + 2 is 4</think>The answer is \\boxed{4}")
    assert built.state(prompt_opening, reasoning) == "open"  # cut inside thinking
    assert built.state(prompt_opening, answered) == "closed"
    assert built.state(prompt_plain, encode("<think>") + reasoning) == "open"  # the model opened it itself
    assert built.state(prompt_plain, reasoning) == "none"  # never thought
    assert built.state(prompt_closed_empty, reasoning) == "none"  # enable_thinking=False style prompt
    assert encode("The answer is \\boxed{4}") == built.answer_ids(answered)
    assert built.answer_ids(reasoning) is None


def test_no_marker_means_no_thinking(marker):
    _, encode = marker
    assert ThinkingMarker.build("", encode).state(encode("<think>"), encode("x")) == "none"


def test_a_marker_without_an_opener_is_open_until_written(marker):
    _, encode = marker
    custom = ThinkingMarker.build("### Final", encode)
    assert custom.opener_ids is None
    assert custom.state(encode("q"), encode("thinking")) == "open"
    written = "thinking ### Final 4"
    assert custom.state(encode("q"), encode(written), written) == "closed"  # found in the text
