"""Probe construction and parsing on real token ids of the tiny model's tokenizer (docs/method.md#the-answer-probe),
and where a prefix probe cuts the trace (docs/method.md#prefix-probes)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trac_tasks.generation.config import DEFAULT_CUE, TracConfig
from trac_tasks.generation.probe import answer_token_span, parse_probe, prefix_cut, trace_body


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


# ------------------------------------------------------------------ prefix probes: where the trace is cut

STEPS = ["We", " add", " 2", ".", "5", " and", " 3", ".", " Then", " x", "\n", "y", " is", " 7", "!", " Done"]
"""16 token pieces: "We add 2.5 and 3. Then x\\ny is 7! Done"; steps end after tokens 8 (3.), 11 (\\n), 15 (!)."""


def pieces_decoder(pieces):
    return lambda ids: "".join(pieces[i] for i in ids)


@pytest.mark.parametrize(
    ("fraction", "kept"),
    [
        (0.05, 0),  # n = 0: nothing kept
        (0.25, 4),  # n = 4 ends at "2." of 2.5: a decimal point ends no step, no boundary before: n itself
        (0.5, 8),  # n = 8 ends at "3."; the space after it is token 9's: a sentence end
        (0.75, 11),  # n = 12: back to the newline
        (0.9, 11),  # n = 14: "7" not yet followed by "!"
        (0.95, 15),  # n = 15: "!" followed by " Done"
    ],
)
def test_the_trace_is_cut_after_the_last_step_boundary_before_the_fraction(fraction, kept):
    assert prefix_cut(list(range(len(STEPS))), fraction, pieces_decoder(STEPS)) == kept


def test_the_token_position_is_the_exact_fraction_of_the_reasoning():
    pieces = ["a"] * 100  # no boundary: the cut is n = ⌊f·R⌋, and 0.29 · 100 is 28.999… in floating point
    assert [prefix_cut(list(range(100)), f, pieces_decoder(pieces)) for f in (0.29, 0.57, 0.99)] == [29, 57, 99]


def reference_cut(pieces: list[str], fraction: float) -> int:
    """docs/method.md#prefix-probes written out token by token: from token n down, the first token whose own
    characters (within the text of the first n tokens) hold a newline, or a sentence end followed by whitespace."""
    n = int(fraction * 1000 + 0.5) * len(pieces) // 1000
    text, limit = "".join(pieces[: n + 1]), len("".join(pieces[:n]))
    for c in range(n, 0, -1):
        start, end = len("".join(pieces[: c - 1])), min(len("".join(pieces[:c])), limit)
        for position in range(start, end):
            char, after = text[position], text[position + 1 : position + 2]
            if char == "\n" or (char in ".!?" and after.isspace() and after != ""):
                return c
    return n


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["a", " b", ".", "\n", " ", "3", ".5", "!", "? ", "x.", "", "\n\n"]), max_size=40),
    st.integers(1, 999),
)
def test_the_cut_matches_the_rule_written_out_token_by_token(pieces, thousandths):
    fraction = thousandths / 1000
    assert prefix_cut(list(range(len(pieces))), fraction, pieces_decoder(pieces)) == reference_cut(pieces, fraction)


def test_a_real_tokenizers_cut_ends_a_step(tiny_tokenizer):
    text = "First we add 2.5 and 3.5 to get 6.\nThen we double it. The result is 12, so we are done"
    ids = encode(tiny_tokenizer, text)
    decode = decoder(tiny_tokenizer)
    n = int(0.3 * len(ids))
    assert "." not in decode(ids[:n]).replace("2.5", "") and prefix_cut(ids, 0.3, decode) == n  # no step ends yet
    for fraction, step_end in ((0.6, "to get 6.\n"), (0.9, "we double it.")):
        kept = prefix_cut(ids, fraction, decode)
        assert kept <= int(fraction * len(ids)) and decode(ids[:kept]).endswith(step_end)


def _pieces_decoder(pieces):
    return lambda ids: "".join(pieces[i] for i in ids)


def test_the_answer_span_covers_the_tokens_of_the_last_statement_straddling_ones_included():
    pieces = ["<think>x = 42</think>", " So ", "\\boxed{4", "2}", "."]
    decode = _pieces_decoder(pieces)
    ids = list(range(len(pieces)))
    # the 42 of the reasoning is not the answer's statement; the box's straddles tokens 2 and 3
    assert answer_token_span(ids, decode, "42", "math", "</think>") == (2, 4)
    assert answer_token_span(ids, decode, None, "math", "</think>") is None
    assert answer_token_span(ids, decode, "42.0", "math", "</think>") is None  # not written so: no span


def test_a_real_tokenizers_answer_span_spells_the_boxed_answer_not_the_summary_line(tiny_tokenizer):
    text = "Tom has 13 pens in the end.\nThe final answer is \\boxed{13}."
    ids = tiny_tokenizer(text, add_special_tokens=False)["input_ids"]
    decode = lambda chosen: tiny_tokenizer.decode(chosen)  # noqa: E731
    start, end = answer_token_span(ids, decode, "13", "math", None)
    assert decode(ids[start:end]).strip() == "13" and decode(ids[:start]).endswith("\\boxed{")
