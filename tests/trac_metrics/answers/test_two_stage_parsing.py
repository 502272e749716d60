"""Two-stage LaTeX parsing (trac_metrics.answers._two_stage_parsing, docs/method.md#the-symbolic-work-budget): the
same parse as Math-Verify's own, on every answer of the contract and equivalence tables, in fewer calls."""

from __future__ import annotations

import ast
from pathlib import Path

from call_count import calls_made

from trac_metrics.answers._two_stage_parsing import _INSTALLED, two_stage_parsing
from trac_metrics.answers.normalization import math_form
from trac_metrics.answers.symbolic import GRAMMAR_WARM_UP, too_costly_for_sympy

TABLES = [Path(__file__).with_name(name) for name in ("test_answer_contract.py", "test_equivalence.py")]
"""Test files whose string literals (the answers of their tables) are parsed both ways."""


def latex_parse(text: str) -> object:
    """latex2sympy2's parse of ``text`` (Math-Verify's LaTeX parser, uncached), or the error it raises."""
    from latex2sympy2_extended.latex2sympy2 import latex2sympy

    try:
        return latex2sympy(text)
    except Exception as error:  # noqa: BLE001 - the error is the parse's outcome, compared below
        return f"{type(error).__name__}: {error}"


def answers() -> list[str]:
    """Every short string literal of :data:`TABLES` (read as data with ``ast``), normalized, that the symbolic step
    would parse, and the set-up's answers."""
    literals = {
        node.value
        for path in TABLES
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) <= 80
    }
    normalized = {math_form(text).value for text in literals}
    return sorted(text for text in normalized if text and not too_costly_for_sympy(text, "")) + list(GRAMMAR_WARM_UP)


def test_two_stages_give_the_parse_of_one_stage() -> None:
    assert _INSTALLED
    texts = answers()
    assert len(texts) > 200
    differ = []
    for text in texts:
        one_stage = latex_parse(text)
        with two_stage_parsing():
            two_stages = latex_parse(text)
        if str(one_stage) != str(two_stages) or type(one_stage) is not type(two_stages):
            differ.append((text, one_stage, two_stages))
    assert not differ, differ


def test_two_stages_make_fewer_calls_on_a_function_of_a_power() -> None:
    text = r"\cos(11^{77})"  # in no other test: ANTLR's full-context prediction runs afresh in each LL parse
    _, one_stage = calls_made(lambda: latex_parse(text))
    with two_stage_parsing():
        _, two_stages = calls_made(lambda: latex_parse(text))
    assert two_stages * 2 < one_stage, (two_stages, one_stage)
