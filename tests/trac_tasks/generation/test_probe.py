"""Probe construction and parsing on real token ids of the tiny model's tokenizer (docs/method.md#the-answer-probe)."""

from __future__ import annotations

import pytest

from trac_tasks.generation.config import DEFAULT_CUE, TracConfig
from trac_tasks.generation.probe import parse_probe, trace_body


def encode(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False).input_ids


def decoder(tokenizer):
    return lambda ids: tokenizer.decode(list(ids), skip_special_tokens=True)


def test_truncated_trace_keeps_all_tokens():
    # A trace cut at the generation limit has no EOS: its whole body is the probe prefix (docs/method.md#probe-prompt).
    assert trace_body([5, 6, 7], {2}) == [5, 6, 7]
    assert trace_body([5, 2, 2], {2}) == [5]


def test_suffix_is_cut_at_the_brace_that_closes_the_box(tiny_tokenizer):
    suffix = encode(tiny_tokenizer, "\\frac{1}{2}}. So the answer")
    parsed = parse_probe(suffix, decoder(tiny_tokenizer), DEFAULT_CUE, "}", "length", "math")
    assert parsed.finish_reason == "stop"
    assert parsed.text == "\\frac{1}{2}}"
    assert parsed.answer == "\\frac{1}{2}"
    kept_text = decoder(tiny_tokenizer)(suffix[: parsed.kept_tokens])
    assert kept_text.startswith("\\frac{1}{2}}") and not decoder(tiny_tokenizer)(
        suffix[: parsed.kept_tokens - 1]
    ).startswith("\\frac{1}{2}}")
    # L counts the tokens that spell ã, the closing brace's own token excluded when it holds nothing else
    answer_only = decoder(tiny_tokenizer)(suffix[: parsed.answer_token_count])
    assert answer_only.startswith("\\frac{1}{2}") and parsed.answer_token_count <= parsed.kept_tokens


def test_unclosed_suffix_at_the_token_limit_has_no_answer(tiny_tokenizer):
    suffix = encode(tiny_tokenizer, "1234567 and then it keeps going")
    parsed = parse_probe(suffix, decoder(tiny_tokenizer), DEFAULT_CUE, "}", "length", "math")
    assert (parsed.answer, parsed.finish_reason, parsed.kept_tokens) == (None, "length", len(suffix))


def test_immediately_closed_box_is_a_missing_answer(tiny_tokenizer):
    parsed = parse_probe(encode(tiny_tokenizer, "}"), decoder(tiny_tokenizer), DEFAULT_CUE, "}", "eos", "math")
    assert parsed.answer is None and parsed.answer_token_count == 0 and parsed.finish_reason == "stop"


def test_multiple_choice_cue_with_parenthesis(tiny_tokenizer):
    config = TracConfig(answer_kind="mc", reference="{{label}}", cue="\n\nThe answer is (")
    assert config.closing_delimiter() == ")"
    parsed = parse_probe(encode(tiny_tokenizer, "B) because"), decoder(tiny_tokenizer), config.cue, ")", "eos", "mc")
    assert parsed.answer == "B" and parsed.text == "B)"


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"answer_kind": "math"}, "needs \\['reference'\\]"),
        ({"answer_kind": "prose", "reference": "{{a}}"}, "answer_kind must be one of"),
        ({"answer_kind": "math", "reference": "{{a}}", "probe_variants": ["question_only"]}, "must include 'trace'"),
        ({"answer_kind": "math", "reference": "{{a}}", "cue_text": "x"}, "unknown trac switches \\['cue_text'\\]"),
        ({"answer_kind": "math", "reference": "{{a}}", "top_k": 0}, "top_k must be between"),
    ],
)
def test_bad_trac_blocks_name_the_task_and_the_problem(block, message):
    with pytest.raises(ValueError, match=f"task my_task: .*{message}"):
        TracConfig.from_gen_kwargs({"trac": block}, "my_task")


def test_reference_template_is_rendered_on_the_doc():
    config = TracConfig.from_gen_kwargs(
        {"trac": {"answer_kind": "math", "reference": "{{answer.split('####')[-1].strip()}}"}}, "gsm8k"
    )
    assert config.render_reference({"answer": "work...\n#### 1,234"}) == "1,234"
