"""The end-of-thinking marker: detection from lm-eval's argument, the tokenizer and the chat template, and the
open / closed / none state of a trace, on real tokenizers (the tiny model's and its thinking-style copy)."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from trac_tasks.generation.thinking import MarkerNotFound, ThinkingMarker, detect_marker, opener_of


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


# ------------------------------------------------------------------------- markers beyond </think>


@pytest.fixture(scope="module")
def bracket_tokenizer(tiny_model, tmp_path_factory):
    """A Magistral-style tokenizer: ``[THINK]`` / ``[/THINK]`` added as special tokens, a chat template whose
    generation prompt opens the thinking section with ``[THINK]`` (a small local fixture, no download)."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    tokenizer.add_special_tokens({"additional_special_tokens": ["[THINK]", "[/THINK]"]})
    tokenizer.chat_template = tokenizer.chat_template.replace(
        "{{ '<|im_start|>assistant\n' }}", "{{ '<|im_start|>assistant\n[THINK]' }}"
    )
    folder = tmp_path_factory.mktemp("bracket_tokenizer")
    tokenizer.save_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)


def test_a_bracket_marker_is_detected_with_its_opener(bracket_tokenizer):
    assert detect_marker(bracket_tokenizer, None) == "[/THINK]"
    encode = _encode(bracket_tokenizer)
    built = ThinkingMarker.build("[/THINK]", encode)
    assert len(built.ids) == 1 and built.opener_ids == tuple(encode("[THINK]")) and len(built.opener_ids) == 1
    prompt = encode("<|im_start|>assistant\n[THINK]")
    assert built.state(prompt, encode("2 + 2 is 4")) == "open"
    body = encode("2 + 2 is 4") + encode("[/THINK]") + encode("The answer is 4")
    assert built.state(prompt, body) == "closed"
    assert built.reasoning_length(body) == len(encode("2 + 2 is 4"))


@pytest.mark.parametrize(
    ("closing", "opener"),
    [
        ("</think>", "<think>"),
        ("[/THINK]", "[THINK]"),
        ("◁/think▷", "◁think▷"),
        ("<|END_THINKING|>", "<|START_THINKING|>"),
        ("</seed:think>", "<seed:think>"),
        ("<|end_of_thought|>", "<|begin_of_thought|>"),
    ],
)
def test_every_known_closing_form_is_found_in_a_chat_template_with_its_opener(tiny_model, closing, opener):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    tokenizer.chat_template += "{% if thoughts %}" + opener + "{{ thoughts }}" + closing + "{% endif %}"
    assert detect_marker(tokenizer, None) == closing
    assert opener_of(closing) == opener


def test_a_template_that_opens_thinking_without_a_known_marker_is_refused_with_a_one_line_request(tiny_model):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    tokenizer.chat_template = tokenizer.chat_template.replace(
        "{{ '<|im_start|>assistant\n' }}", "{{ '<|im_start|>assistant\n<|thinking|>' }}"
    )
    with pytest.raises(MarkerNotFound, match="think_end_token") as error:
        detect_marker(tokenizer, None)
    assert "'<|thinking|>'" in str(error.value) and "\n" not in str(error.value)
    assert detect_marker(tokenizer, "<|/thinking|>") == "<|/thinking|>", "think_end_token still wins"


def test_a_marker_written_with_other_token_boundaries_is_found_in_the_text(thinking_tokenizer):
    """A marker that is plain text ("### Final") may be tokenized differently inside a trace than alone: the
    reasoning then ends where the marker's text starts (the tokens wholly before it)."""
    encode = _encode(thinking_tokenizer)
    decode = lambda ids: thinking_tokenizer.decode(list(ids), skip_special_tokens=True)  # noqa: E731
    custom = ThinkingMarker.build("### Final", encode)
    body = encode("thinking a while ### Final: 4")  # " ###" is one token here, not the marker's first
    assert custom.reasoning_length(body) == len(body), "without the text, an unmatched marker leaves every id"
    kept = custom.reasoning_length(body, decode)
    assert decode(body[:kept]) == "thinking a while" and decode(body[kept:]) == " ### Final: 4"
