"""The served path checks a response's per-token fields column by column (docs/architecture.md#served-backend): on
every answer the position-by-position checks accept, it gives the very same ids and logprobs; on every answer they
refuse (or read unusually), it gives way to them, so the error names the field as before
(tests/test_hardening_served.py checks those messages end to end)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from trac_tasks.engines.completions_client import MalformedResponse
from trac_tasks.engines.served_backend import LOGPROB_TOLERANCE, _checked_columns, _positions, _walked_positions

VOCABULARY = 50
ASKED = 5


def _choice(rng: np.random.Generator, positions: int) -> dict[str, Any]:
    """A completion choice as vLLM's server writes it, through JSON: each position's top ``ASKED`` ids (plus the
    sampled one when outside them), some logprobs exactly 0, -0.0, a rounding error above 0, or integers."""
    tokens, chosen, top = [], [], []
    for _ in range(positions):
        token = int(rng.integers(0, VOCABULARY))
        ids = [int(i) for i in rng.choice(VOCABULARY, size=ASKED + int(rng.random() < 0.2), replace=False)]
        values = list(-rng.exponential(1.0, size=len(ids)))
        special = (0.0, -0.0, LOGPROB_TOLERANCE / 2, -3, 0)
        values = [special[int(draw * 25)] if draw < 0.2 else value for draw, value in zip(rng.random(len(ids)), values)]
        tokens.append(f"token_id:{token}")
        chosen.append(values[0])
        top.append({f"token_id:{i}": value for i, value in zip(ids, values, strict=True)})
    choice = {"text": "x", "logprobs": {"tokens": tokens, "token_logprobs": chosen, "top_logprobs": top}}
    return json.loads(json.dumps(choice))


def _same(one: Any, other: Any) -> bool:
    return (
        one.token_ids == other.token_ids
        and one.chosen.tobytes() == other.chosen.tobytes()
        and np.array_equal(one.top_ids, other.top_ids)
        and one.top.tobytes() == other.top.tobytes()
    )


def _columns(choice: dict[str, Any]) -> tuple[list[Any], list[Any], list[Any]]:
    logprobs = choice["logprobs"]
    return logprobs["tokens"], logprobs["token_logprobs"], logprobs["top_logprobs"]


@pytest.mark.parametrize("seed", range(20))
def test_the_column_checks_read_what_the_position_checks_read(seed):
    choice = _choice(np.random.default_rng(seed), positions=int(np.random.default_rng(seed).integers(0, 40)))
    checked = _checked_columns(*_columns(choice), ASKED, VOCABULARY)
    assert checked is not None
    assert _same(checked, _walked_positions(*_columns(choice), ASKED, VOCABULARY))
    assert _same(_positions(choice, ASKED, VOCABULARY), checked)
    assert (checked.top[~np.isnan(checked.top)] <= 0).all() and (checked.chosen <= 0).all()


SPOILED = {
    "NaN logprob": ("token_logprobs", 0, math.nan),
    "+inf top logprob": ("top_logprobs", 1, {"token_id:1": math.inf, **{f"token_id:{i}": -1.0 for i in range(2, 6)}}),
    "positive logprob": ("token_logprobs", 2, 0.5),
    "bool logprob": ("token_logprobs", 0, False),
    "null logprob": ("token_logprobs", 1, None),
    "string logprob": ("token_logprobs", 1, "-0.5"),
    "huge integer": ("token_logprobs", 1, -(10**400)),
    "short top": ("top_logprobs", 0, {"token_id:1": -1.0, "token_id:2": -2.0}),
    "null position": ("top_logprobs", 0, None),
    "negative id": ("tokens", 0, "token_id:-5"),
    "id past the vocabulary": ("tokens", 1, f"token_id:{VOCABULARY}"),
    "thirteen digits": ("tokens", 1, "token_id:1234567890123"),
    "not an id": ("tokens", 2, "token_id:abc"),
    "an int id": ("tokens", 2, 7),
    "a key holding a line break": (
        "top_logprobs",
        2,
        {"token_id:1\ntoken_id:2": -1.0, **{f"token_id:{i}": -1.0 for i in range(3, 8)}},
    ),
    "unicode digits": ("tokens", 0, "token_id:\u0661"),
}


@pytest.mark.parametrize("case", SPOILED)
def test_an_answer_the_position_checks_refuse_gives_way_to_them(case):
    column, index, value = SPOILED[case]
    choice = _choice(np.random.default_rng(0), positions=4)
    choice["logprobs"][column][index] = value
    assert _checked_columns(*_columns(choice), ASKED, VOCABULARY) is None
    with pytest.raises(MalformedResponse, match=rf"choices\[0\]\.logprobs\.{column}\[{index}\]"):
        _positions(choice, ASKED, VOCABULARY)


def test_an_id_written_with_leading_zeros_reads_the_same_both_ways():
    choice = _choice(np.random.default_rng(1), positions=3)
    choice["logprobs"]["tokens"][0] = "token_id:007"
    checked = _checked_columns(*_columns(choice), ASKED, VOCABULARY)
    assert checked is not None and checked.token_ids[0] == 7
    assert _same(checked, _walked_positions(*_columns(choice), ASKED, VOCABULARY))
