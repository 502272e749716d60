"""vLLM's fast output path gives the records of the detokenizing path (docs/architecture.md#vllm-backend).

Without a model: the vectorized token summaries equal the per-position loop they replaced
(``benchmarks/frontend_cost.py``'s ``loop_token_summaries``) bit for bit on random rows (k + 1 entries, -inf, NaN,
±0, +inf, empty rows); vLLM's flat logprobs read as arrays hold what its per-position dicts hold; and the same
engine-core outputs, run through vLLM's own ``OutputProcessor`` once with lm-eval's SamplingParams (detokenized,
per-position dicts) and once with the fast path's (flat logprobs, no detokenization), give the same token ids, text,
finish reason, lm-eval text and token summaries: on reasoning text with non-ASCII symbols, on a thinking-style text
with special tokens, at the token limit, when the generation spells the EOS text out in ordinary tokens (cut where
the engine loop's stop check would have stopped it) and after a prompt that ends inside a UTF-8 character.

A vLLM release without the engine step API: the runner falls back to the public ``LLM.generate`` (jobs after
each chunk) and writes the same records. The real in-process engine and the tiny model; only the step API is hidden
(a newer release cannot be installed here).
"""

from __future__ import annotations

import importlib.util
import math
import sys
import warnings
from typing import Any

import numpy as np
import pytest
from testenv import REPO

from trac_metrics.records import iter_records
from trac_tasks.engines.vllm_backend import (
    Generation,
    _flat_logprob_arrays,
    _logprob_arrays,
    capture_completion,
    engine_sampling_params,
    fast_capture_supported,
)
from trac_tasks.generation.capture import RecordSink, k_largest, token_summaries
from trac_tasks.generation.config import DEFAULT_CUE

PATH = REPO / "benchmarks" / "frontend_cost.py"
SPEC = importlib.util.spec_from_file_location("frontend_cost", PATH)
frontend_cost = importlib.util.module_from_spec(SPEC)
sys.modules["frontend_cost"] = frontend_cost  # dataclasses look their module up there
SPEC.loader.exec_module(frontend_cost)

TOP_K = 5
THINK = ("<think>", "</think>")


def _random_rows(rng: np.random.Generator, k: int) -> list[list[float]]:
    """Up to 30 positions of 0 .. k + 1 logprobs each, some -inf, NaN, +inf, 0.0 or -0.0."""
    rows = []
    for _ in range(int(rng.integers(0, 30))):
        values = list(-rng.exponential(1.0, size=int(rng.integers(0, k + 2))))
        for index in range(len(values)):
            draw = rng.random()
            special = (-math.inf, math.nan, 0.0, -0.0, math.inf)
            if draw < 0.25:
                values[index] = special[int(draw / 0.05)]
        rows.append(values)
    return rows


def _summaries_or_error(summarize: Any, chosen: Any, top: Any, k: int) -> dict[str, bytes] | str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # nanmean of a row without a finite value
        try:
            summary = summarize(chosen, top, k)
        except ValueError as error:  # a position without any finite logprob
            return str(error)
    return {name: array.tobytes() for name, array in summary.items()}


@pytest.mark.parametrize("seed", range(40))
def test_vectorized_summaries_equal_the_per_position_loop_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    for k in (1, 2, TOP_K):
        top = _random_rows(rng, k)
        chosen = list(-rng.exponential(1.0, size=len(top)))
        reference = _summaries_or_error(frontend_cost.loop_token_summaries, chosen, top, k)
        assert _summaries_or_error(token_summaries, chosen, top, k) == reference
        # the same rows as one NaN-padded array (the flat path's form)
        width = max(map(len, top), default=0)
        padded = np.full((len(top), width), np.nan)
        for position, values in enumerate(top):
            padded[position, : len(values)] = values
        assert _summaries_or_error(token_summaries, np.asarray(chosen), padded, k) == reference


def test_k_largest_of_one_position_and_of_rows():
    values = [-0.5, math.nan, -3.0, -math.inf, -0.1, math.inf, -2.0]
    assert k_largest(values, 3) == sorted((v for v in values if math.isfinite(v)), reverse=True)[:3]
    assert k_largest([math.nan], 2) == [] and k_largest([], 1) == []
    rows = k_largest(np.array([[-1.0, -0.5, np.nan], [np.nan, np.nan, -4.0]]), 2)
    np.testing.assert_array_equal(rows, [[-0.5, -1.0], [-4.0, np.nan]])
    with pytest.raises(ValueError, match="k must be >= 1"):
        k_largest(values, 0)
    with pytest.raises(ValueError, match="one position or a"):
        k_largest(np.zeros((2, 2, 2)), 1)


@pytest.mark.filterwarnings("ignore:Mean of empty slice")
def test_a_row_without_a_finite_logprob_is_named_in_both_forms():
    top = [[-1.0, -2.0], [math.nan, -math.inf]]
    with pytest.raises(ValueError, match="row 1"):
        token_summaries([-1.0, -2.0], top, 2)
    with pytest.raises(ValueError, match="row 1"):
        token_summaries(np.array([-1.0, -2.0]), np.array(top), 2)


# ------------------------------------------------------------------------------------------ vLLM's two containers
needs_fast_path = pytest.mark.skipif(not fast_capture_supported(), reason="this vLLM has no fast output path")


def _containers(rows: np.ndarray, values: np.ndarray, k: int) -> tuple[Any, Any]:
    """vLLM's per-position dicts and its FlatLogprobs, filled by vLLM's own function from the same rows."""
    from vllm.logprobs import append_logprobs_for_next_position, create_sample_logprobs

    dicts, flat = create_sample_logprobs(False), create_sample_logprobs(True)
    for ids, logprobs in zip(rows.tolist(), values.tolist(), strict=True):
        for container in (dicts, flat):
            append_logprobs_for_next_position(container, ids, logprobs, [None] * len(ids), 1, k)
    return dicts, flat


@needs_fast_path
@pytest.mark.parametrize("seed", range(10))
def test_flat_logprobs_hold_what_the_per_position_dicts_hold(seed):
    """The sampled token first (at its top rank, or outside the top k), a top id repeated, equal values."""
    rng = np.random.default_rng(seed)
    positions = 50
    sampled = rng.integers(0, 40, size=positions)
    rows = np.concatenate([sampled[:, None], rng.integers(0, 40, size=(positions, TOP_K))], axis=1)
    inside = rng.random(positions) < 0.7
    rows[inside, rng.integers(1, TOP_K + 1, size=positions)[inside]] = sampled[inside]
    values = np.round(-rng.exponential(1.0, size=rows.shape), 1)  # rounding makes ties
    dicts, flat = _containers(rows, values, TOP_K)
    chosen, top = _logprob_arrays(sampled.tolist(), dicts)
    flat_chosen, flat_top = _flat_logprob_arrays(sampled.tolist(), flat)
    assert flat_chosen.tolist() == chosen
    for position, expected in enumerate(top):
        assert sorted(flat_top[position][~np.isnan(flat_top[position])].tolist()) == sorted(expected)
    assert _summaries_or_error(token_summaries, flat_chosen, flat_top, TOP_K) == _summaries_or_error(
        frontend_cost.loop_token_summaries, chosen, top, TOP_K
    )


@needs_fast_path
def test_flat_logprobs_that_do_not_fit_the_tokens_are_refused():
    rows = np.array([[7, 7, 3], [5, 1, 2]])
    _, flat = _containers(rows, -np.ones(rows.shape), 2)
    with pytest.raises(ValueError, match="2 positions for 3 tokens"):
        _flat_logprob_arrays([7, 5, 1], flat)
    with pytest.raises(ValueError, match="without the generated token"):
        _flat_logprob_arrays([7, 9], flat)
    assert _flat_logprob_arrays([], flat[:0])[1].shape == (0, 0)


# ------------------------------------------------------------------------------ through vLLM's output processor
@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    from vllm.tokenizers import get_tokenizer

    return get_tokenizer(str(tiny_model))


@pytest.fixture(scope="module")
def thinking_tokenizer(tiny_model):
    """The tiny tokenizer with ``<think>`` / ``</think>`` as special tokens, as a thinking model's has them."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    tokenizer.add_special_tokens({"additional_special_tokens": list(THINK)})
    return tokenizer


def _lm_eval_kwargs(tokenizer: Any, max_tokens: int) -> dict[str, Any]:
    """SamplingParams keyword arguments of lm-eval's ``generate_until`` for ``until: []`` plus TrAC's logprobs."""
    return {
        "max_tokens": max_tokens,
        "stop": [tokenizer.decode([tokenizer.eos_token_id])],
        "skip_special_tokens": False,
        "spaces_between_special_tokens": False,
        "temperature": 0.7,
        "top_p": 0.95,
        "logprobs": TOP_K,
    }


def _finished(tokenizer: Any, prompt_ids: list[int], generated: np.ndarray, params: Any, finish: Any) -> Any:
    """The final ``RequestOutput`` vLLM's output processor makes of these engine-core steps (one token each, top-k
    rows with the text's ids); steps after the request finished are ignored, as the engine's are."""
    from vllm.sampling_params import RequestOutputKind
    from vllm.v1.engine import EngineCoreOutput
    from vllm.v1.engine.output_processor import OutputProcessor
    from vllm.v1.outputs import LogprobsLists

    rng = np.random.default_rng(len(generated))
    pool = np.unique(generated)
    rows, values, ranks = frontend_cost._top_rows(rng, generated, pool, np.full(len(pool), 1 / len(pool)), TOP_K)
    processor = OutputProcessor(tokenizer, log_stats=False)
    params.output_kind = RequestOutputKind.FINAL_ONLY
    processor.add_request(frontend_cost.engine_core_request("r", prompt_ids, params), None)
    finished = []
    for step, token in enumerate(generated.tolist()):
        output = EngineCoreOutput(
            request_id="r",
            new_token_ids=[token],
            new_logprobs=LogprobsLists(rows[step : step + 1], values[step : step + 1], ranks[step : step + 1]),
            finish_reason=finish if step == len(generated) - 1 else None,
        )
        finished += processor.process_outputs([output]).request_outputs
    (request_output,) = finished
    return request_output


def _both_paths(
    tokenizer: Any, prompt_ids: list[int], generated_ids: list[int], finish: str, think_end: str | None = None
) -> dict[str, tuple[Any, ...]]:
    """Capture of the same engine-core outputs (``generated_ids``, then the EOS token when ``finish`` is ``"eos"``)
    on lm-eval's SamplingParams and on the fast path's."""
    from lm_eval.models.utils import postprocess_generated_text
    from vllm import SamplingParams
    from vllm.v1.engine import FinishReason

    generated = np.asarray(generated_ids, dtype=np.int64)
    if finish == "eos":
        generated = np.append(generated, tokenizer.eos_token_id)
    kwargs = _lm_eval_kwargs(tokenizer, len(generated))
    eos = kwargs["stop"][0]
    reason = FinishReason.STOP if finish == "eos" else FinishReason.LENGTH
    captured = {}
    for path, engine in (("detokenizing", None), ("fast", engine_sampling_params(SamplingParams, kwargs, eos))):
        params = SamplingParams(**kwargs)
        generation = Generation(prompt_ids, params, engine or params, [eos])
        output = _finished(tokenizer, prompt_ids, generated, generation.engine_params, reason)
        one = capture_completion(output.outputs[0], generation, tokenizer)
        summary = token_summaries(one.chosen, one.top, TOP_K)
        captured[path] = (
            one.token_ids,
            one.text,
            one.finish_reason,
            postprocess_generated_text(one.text, [eos], think_end),
            {name: array.tobytes() for name, array in summary.items()},
        )
    assert engine.detokenize is False and engine.stop == [] and engine.flat_logprobs
    return captured


def _ids(tokenizer: Any, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False).input_ids


@needs_fast_path
def test_reasoning_text_with_non_ascii_symbols_is_captured_the_same(tokenizer):
    text = frontend_cost.reasoning_text(3, 60)
    assert any(symbol in text for symbol in frontend_cost.NON_ASCII)
    captured = _both_paths(tokenizer, _ids(tokenizer, "Solve: 2 + 2 × 3 ≤ x?"), _ids(tokenizer, text), "eos")
    assert captured["fast"] == captured["detokenizing"]
    assert captured["fast"][1] == text and captured["fast"][2] == "eos"


@needs_fast_path
def test_a_generation_cut_at_its_token_limit_is_captured_the_same(tokenizer):
    captured = _both_paths(tokenizer, _ids(tokenizer, "Count:"), _ids(tokenizer, "one two three four √ five"), "length")
    assert captured["fast"] == captured["detokenizing"] and captured["fast"][2] == "length"


@needs_fast_path
def test_a_thinking_text_with_special_tokens_is_captured_the_same(thinking_tokenizer):
    text = "<think>\nLet me add: 2 + 3 = 5.</think><think></think>\n\nThe answer is \\boxed{5}."
    captured = _both_paths(
        thinking_tokenizer,
        _ids(thinking_tokenizer, "<|im_start|>assistant\n<think>\n"),
        _ids(thinking_tokenizer, text),
        "eos",
        "</think>",
    )
    assert captured["fast"] == captured["detokenizing"]
    token_ids, raw, _, scored, _ = captured["fast"]
    assert raw == text and scored == "The answer is \\boxed{5}."
    assert thinking_tokenizer.convert_tokens_to_ids("</think>") in token_ids


@needs_fast_path
def test_the_eos_text_spelled_out_stops_where_the_engine_loop_stops(tokenizer):
    eos = tokenizer.decode([tokenizer.eos_token_id])
    pieces = ["The answer is 4.", eos[:1], eos[1:4], eos[4:], " and then more text"]  # "<", "|im", "_end|>"
    ids = [token for piece in pieces for token in _ids(tokenizer, piece)]
    assert tokenizer.eos_token_id not in ids and tokenizer.decode(ids) == "".join(pieces)
    captured = _both_paths(tokenizer, _ids(tokenizer, "Q:"), ids, "eos")
    assert captured["fast"] == captured["detokenizing"]
    token_ids, raw, finish, _, _ = captured["fast"]
    assert finish == f"stop:{eos}" and raw == "The answer is 4." and len(token_ids) < len(ids)


@needs_fast_path
def test_a_prompt_ending_inside_a_character_is_captured_the_same(tokenizer):
    prompt_ids = _ids(tokenizer, "Angle: 9🙂")
    assert tokenizer.decode(prompt_ids[:-1]).endswith("\ufffd")  # the last token completes the emoji
    captured = _both_paths(tokenizer, prompt_ids[:-1], _ids(tokenizer, " so the angle is right."), "eos")
    assert captured["fast"] == captured["detokenizing"]
    assert captured["fast"][1].startswith("Angle: 9")  # vLLM's own text repeats such a prompt; so does the replay


N_DOCS, K = 3, 2
TRAC = {
    "answer_kind": "math",
    "reference": "4",
    "probe_variants": ["trace", "question_only", "shuffled_trace", "teacher_forced"],
    "p_true": True,
}


class _WithoutStepApi:
    """The ``vllm.LLM`` object as a release without ``llm_engine`` would present it."""

    def __init__(self, llm):
        self._llm = llm

    def __getattr__(self, name):
        if name == "llm_engine":
            raise AttributeError(name)
        return getattr(self._llm, name)


def _requests():
    from lm_eval.api.instance import Instance

    requests = []
    for doc_id in range(N_DOCS):
        instance = Instance(
            "generate_until",
            {"q": doc_id},
            (
                f"What is {doc_id} + 4? Answer in \\boxed{{}}.\n",
                {"until": [], "do_sample": True, "temperature": 0.7, "top_p": 0.95, "max_gen_toks": 24, "trac": TRAC},
            ),
            idx=0,
            metadata=("fallback", doc_id, K),
        )
        instance.repeats = K
        requests.extend([instance] * K)
    return requests


@pytest.fixture(scope="module")
def lm(tiny_model):
    from lm_eval.models.vllm_causallms import VLLM

    import trac_tasks.harness.autoload  # noqa: F401  (installs the backend hook, as the .pth file does)

    model = VLLM(
        pretrained=str(tiny_model),
        dtype="bfloat16",
        max_model_len=1024,
        enable_prefix_caching=True,
        block_size=32,
        enforce_eager=True,
        distributed_executor_backend="uni",
        seed=1234,
    )
    yield model
    del model


def _run(lm, tmp_path, hide_step_api: bool):
    from trac_tasks.engines.vllm_backend import VllmTracRunner

    llm = lm.model
    if hide_step_api:
        lm.model = _WithoutStepApi(llm)
    try:
        runner = VllmTracRunner(lm)
        runner.sink = RecordSink(tmp_path)
        texts = runner.run(_requests(), disable_tqdm=True)
    finally:
        lm.model = llm
    (path,) = tmp_path.glob("fallback.*.jsonl")
    return texts, sorted(iter_records(path), key=lambda record: record.key)


@pytest.mark.engine
def test_the_fallback_writes_the_same_records_as_the_step_loop(lm, tmp_path):
    (tmp_path / "stream").mkdir()
    (tmp_path / "fallback").mkdir()
    _, streamed = _run(lm, tmp_path / "stream", hide_step_api=False)
    texts, fallback = _run(lm, tmp_path / "fallback", hide_step_api=True)
    cue_tokens = len(lm.tokenizer(DEFAULT_CUE, add_special_tokens=False).input_ids)
    assert [record.key for record in fallback] == [record.key for record in streamed]
    assert sorted(texts) == sorted(record.text for record in fallback)
    for record, reference in zip(fallback, streamed, strict=True):
        assert record.prompt_token_count == reference.prompt_token_count
        assert set(record.probes) == set(reference.probes)
        expected = {"trace", "question_only", "shuffled_trace", "teacher_forced"} if record.repeat == 0 else {"trace"}
        assert set(record.probes) == expected
        assert (record.p_true is not None) == (record.repeat == 0)
        # a pretrained LM answers P(True)'s letters (the end-to-end runs' tiny reasoner does not)
        assert record.repeat != 0 or 0.0 <= record.p_true <= 1.0
        trace_probe = record.probes["trace"]  # no thinking section: the reply up to its answer line (or whole)
        body = record.num_tokens - (record.finish_reason == "eos")
        assert trace_probe.context in ("cut_before_answer", "whole") and trace_probe.context_tokens <= body
        assert trace_probe.num_prompt_tokens == record.prompt_token_count + trace_probe.context_tokens + cue_tokens
        assert 0 < len(trace_probe.token_ids) <= 16 and trace_probe.seconds > 0
        assert record.timing["generation_seconds"] > 0


def test_a_decoded_probe_asks_vllm_for_the_probe_temperature_and_a_scoring_stays_greedy():
    """docs/method.md#probe-decoding-and-cutting: greedy by default; sampled at ``trac.probe_temperature`` with the
    primary's top-p; teacher-forced scoring reads given tokens at temperature 0 either way."""
    from types import SimpleNamespace

    from vllm import SamplingParams

    from trac_tasks.engines.vllm_backend import VllmTracRunner
    from trac_tasks.generation.chunk import ProbeJob

    runner = VllmTracRunner.__new__(VllmTracRunner)  # the request builder alone, without an engine
    runner.sampling_params = SamplingParams
    probe = ProbeJob(0, "trace", DEFAULT_CUE, [1, 2, 3], "reasoning", 2)
    score = ProbeJob(0, "teacher_forced", DEFAULT_CUE, [1, 2, 3], "reasoning", 2, kind="score", tokens=(4,))
    for sampling in ((0.0, 1.0), (0.7, 0.95)):
        trace = SimpleNamespace(config=SimpleNamespace(top_k=5), probe_sampling=sampling)
        _, params = runner._job_request(probe, trace)
        assert (params.temperature, params.top_p, params.max_tokens, params.logprobs) == (*sampling, 16, 5)
        assert runner._job_request(score, trace)[1].temperature == 0.0
