"""What the host side of generation costs per generated token, without a GPU: vLLM's own output processing in the
front-end process and trac-eval's capture of each finished response (docs/architecture.md#vllm-backend); and, for the
served path, the parse and checks of each JSON response (docs/architecture.md#served-backend).

No model runs. Deterministic engine-core outputs, as a GPU engine sends them to its front end, drive vLLM's own
classes: ``--sequences`` requests run at once (a GPU-like batch), each generating a seeded length between
``--tokens`` / 2 and 3 ``--tokens`` / 2; every step carries one token per running request and, for the TrAC
variants, its top-k logprobs (``--top-k``). The tokens are real token ids of the tiny model's tokenizer, read from a
seeded reasoning-style text (sentences, numbers, LaTeX, a non-ASCII symbol in one sentence of six); the top-k
alternatives are drawn with the text's token frequencies, the sampled token first with probability 0.7, lower in the
top k with 0.25, outside it with 0.05. Seven sequences of eight end with the EOS token, the eighth at its token
limit.

vLLM variants (the SamplingParams each request is sent with), stages timed separately per step:

- ``plain``: lm-eval's ``generate_until`` for ``until: []`` (the EOS text as stop string,
  ``skip_special_tokens=False``, no logprobs); lm-eval's post-processing of the text is its ``capture``;
- ``before``: TrAC before the fast output path: ``logprobs=k``, detokenized, per-position dicts walked in Python,
  token summaries one position at a time (:func:`loop_token_summaries`, the code the fast path replaced);
- ``flat``: the ``flat_logprobs`` lever alone (still detokenized, vectorized summaries);
- ``no_detokenize``: the ``detokenize=False`` lever alone (per-position dicts, the text made once at the end,
  vectorized summaries);
- ``fast``: both levers and vectorized summaries: what the runner sends (``engine_sampling_params``);
- ``fast_step_arrays``: ``fast`` on a changed vLLM (:class:`StepArrayLogprobs`): what vLLM's own logprob
  bookkeeping would cost if its output processor kept each step's numpy rows instead of Python lists;
- ``plain_no_detokenize``: a reference, vLLM's output path with neither text nor logprobs.

Stages: ``ipc``, vLLM's ``MsgpackDecoder`` turning a step's bytes into ``EngineCoreOutputs`` (the front end of vLLM's
multiprocess engine, the GPU default, does it for every step; the in-process engine does not); ``vllm``, its
``OutputProcessor.process_outputs`` (detokenization, stop checks, logprobs bookkeeping, the final ``RequestOutput``);
``capture``, what trac-eval takes from a finished ``RequestOutput`` (``capture_completion``: token ids, text, finish
reason, logprob arrays; lm-eval's post-processing of the text); ``summaries``, ``token_summaries``
(docs/method.md#token-summaries); ``record``, ``build_record`` and the record's JSONL write (``RecordSink``, which
reads every line back first). Also timed, outside the totals: the part of ``fast``'s capture that makes the text with
vLLM's detokenizer from the finished ids (``fast_text_replay``; ``plain`` does that work inside ``vllm``).

Served variants, on the JSON bodies vLLM's OpenAI-compatible server sends for the same sequences (top-k logprobs
with ``return_tokens_as_token_ids`` for TrAC): ``served_plain`` (a body without logprobs), ``served_before`` (the
position-by-position checks, summaries one position at a time) and ``served_fast`` (column checks, vectorized
summaries); stages ``parse`` (the client's JSON decoding), ``checks`` (the field checks and arrays of
``served_backend._positions``), ``summaries`` and ``record``.

Rounds: one warm-up round (every variant once, not counted), then ``--rounds`` rounds, the variant order rotated by
one per round. Reported per variant and stage: microseconds per generated token (min and median over the rounds),
the variant's total (vLLM variants: ``vllm + capture + summaries + record``, and with ``ipc``) and the token rate one
front-end core sustains at that cost (1e6 / total); ratios are taken within each round (median, min, max). The last
line printed is one JSON object.

    python benchmarks/frontend_cost.py [--sequences 128] [--tokens 768] [--top-k 5] [--rounds 3] [--seed 0]
        [--variants plain,fast,...] [--model DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

TASK = "frontend_cost"
VLLM_STAGES = ("ipc", "vllm", "capture", "summaries", "record")
SERVED_STAGES = ("parse", "checks", "summaries", "record")
TRAC_STAGES = ("capture", "summaries", "record")
"""What trac-eval itself does once vLLM has returned a response."""
DECODING = {"temperature": 0.7, "top_p": 0.95}
LENGTH_EVERY = 8
"""Every eighth sequence ends at its token limit, the others with the EOS token."""
NON_ASCII = ("≤", "≥", "π", "√", "×", "→", "°", "½")
RATIOS = {
    "fast_vs_plain": ("fast", "plain", "total"),
    "fast_vs_plain_with_ipc": ("fast", "plain", "total_with_ipc"),
    "before_vs_plain": ("before", "plain", "total"),
    "before_vs_plain_with_ipc": ("before", "plain", "total_with_ipc"),
    "fast_vllm_vs_plain": ("fast", "plain", ("vllm",)),
    "fast_trac_added_vs_plain": ("fast", "plain", TRAC_STAGES),
    "fast_step_arrays_vs_plain": ("fast_step_arrays", "plain", "total"),
    "served_fast_vs_served_before": ("served_fast", "served_before", "total"),
}
"""Each ratio: (numerator variant, denominator variant, what of the numerator: its total, its total with ``ipc``, or
these stages); the denominator is the denominator variant's total (with ``ipc`` for the ``_with_ipc`` ratios)."""


# ------------------------------------------------------------------------------------------ the workload
def reasoning_text(seed: int, sentences: int) -> str:
    """A seeded reasoning-style text: steps with numbers and LaTeX, non-ASCII symbols in one sentence kind of six,
    final answers."""
    rng = np.random.default_rng(seed)
    templates = (
        "Step {i}: we have {a} \\times {b} = {ab}, so the total is {ab} plus {c}, which is {abc}.",
        "Let $x = \\frac{{{a}}}{{{b}}}$. Then $2x + {c} = \\frac{{{two_a}}}{{{b}}} + {c}$.",
        "Wait, let me check this again: {a} + {b} = {a_b}, and {a_b} - {c} = {a_b_c}.",
        "Since {a} {sym} {b}, the smaller value is {small}, and the difference is {diff}.",
        "Therefore the answer is $\\boxed{{{abc}}}$.",
        "Hmm, maybe I should consider the case where $n = {c}$ first; then the sum of the first $n$ terms is {tri}.",
    )
    lines = []
    for index in range(sentences):
        a, b, c = (int(value) for value in rng.integers(2, 99, size=3))
        symbol = NON_ASCII[index % len(NON_ASCII)]
        lines.append(
            templates[int(rng.integers(len(templates)))].format(
                i=index + 1,
                a=a,
                b=b,
                c=c,
                ab=a * b,
                abc=a * b + c,
                two_a=2 * a,
                a_b=a + b,
                a_b_c=a + b - c,
                sym=symbol,
                small=min(a, b),
                diff=abs(a - b),
                tri=c * (c + 1) // 2,
            )
        )
    return "\n".join(lines)


@dataclass
class SyntheticRequest:
    """One synthetic request: its prompt ids, generated ids, their top-k rows and how it ends."""

    prompt_ids: list[int]
    token_ids: np.ndarray
    top_ids: np.ndarray
    """[T, k + 1]: the sampled id, then the top-k ids."""
    top_logprobs: np.ndarray
    ranks: np.ndarray
    finish: Any
    """vLLM's ``FinishReason`` of the last step."""


@dataclass
class Workload:
    """The requests; per engine step, the encoded ``EngineCoreOutputs`` with and without logprobs; per request, the
    served JSON bodies with and without logprobs."""

    tokenizer: Any
    eos_text: str
    top_k: int
    sequences: list[SyntheticRequest]
    steps_plain: list[list[bytes]] = field(default_factory=list)
    steps_logprobs: list[list[bytes]] = field(default_factory=list)
    bodies_plain: list[bytes] = field(default_factory=list)
    bodies_logprobs: list[bytes] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(len(sequence.token_ids) for sequence in self.sequences)


def _top_rows(
    rng: np.random.Generator, sampled: np.ndarray, pool: np.ndarray, weights: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per position: [sampled, top-k ids] (k distinct ids drawn with the text's token frequencies; the sampled id
    first with probability 0.7, at rank 2..k with 0.25, outside the top k with 0.05), their logprobs (decreasing over
    the top k; a sampled token outside them below the k-th) and the sampled token's rank."""
    positions = len(sampled)
    alternatives = pool[rng.choice(len(pool), size=(positions, k), p=weights)]
    draw = rng.random(positions)
    rank = np.where(draw < 0.7, 1, np.where(draw < 0.95, rng.integers(2, k + 1, size=positions), 0))
    inside = rank > 0
    alternatives[inside, rank[inside] - 1] = sampled[inside]
    for column in range(k):  # distinct ids in a row, the sampled id only at its rank
        while True:
            clash = (alternatives[:, column, None] == alternatives[:, :column]).any(axis=1)
            clash |= (alternatives[:, column] == sampled) & (rank - 1 != column)
            if not clash.any():
                break
            alternatives[clash, column] = pool[(np.searchsorted(pool, alternatives[clash, column]) + 1) % len(pool)]
    gaps = rng.exponential(0.6, size=(positions, k))
    gaps[:, 0] = rng.exponential(0.3, size=positions)  # the most likely token: logprob near 0
    top = -np.cumsum(gaps, axis=1)
    chosen = np.where(inside, top[np.arange(positions), np.maximum(rank, 1) - 1], top[:, -1] - 1.0)
    rows = np.concatenate([sampled[:, None], alternatives], axis=1)
    logprobs = np.concatenate([chosen[:, None], top], axis=1).astype(np.float32)
    ranks = np.where(inside, rank, k + 1 + rng.integers(0, 50, size=positions))
    return rows, logprobs, ranks


def build_workload(tokenizer: Any, sequences: int, tokens: int, top_k: int, seed: int) -> Workload:
    """``sequences`` requests generating seeded lengths in [tokens / 2, 3 tokens / 2], their encoded steps and
    served bodies."""
    from vllm.v1.engine import FinishReason

    rng = np.random.default_rng(seed)
    text_ids = np.asarray(tokenizer(reasoning_text(seed, 3000), add_special_tokens=False).input_ids, dtype=np.int64)
    pool, counts = np.unique(text_ids, return_counts=True)
    weights = counts / counts.sum()
    eos = int(tokenizer.eos_token_id)
    workload = Workload(tokenizer, tokenizer.decode([eos]), top_k, [])
    for index in range(sequences):
        length = int(rng.integers(tokens // 2, tokens * 3 // 2 + 1))
        start = int(rng.integers(0, len(text_ids) - length - 64))
        generated = text_ids[start + 64 : start + 64 + length].copy()
        by_length = index % LENGTH_EVERY == LENGTH_EVERY - 1
        if not by_length:
            generated[-1] = eos
        rows, logprobs, ranks = _top_rows(rng, generated, pool, weights, top_k)
        workload.sequences.append(
            SyntheticRequest(
                prompt_ids=text_ids[start : start + 64].tolist(),
                token_ids=generated,
                top_ids=rows,
                top_logprobs=logprobs,
                ranks=ranks,
                finish=FinishReason.LENGTH if by_length else FinishReason.STOP,
            )
        )
    workload.steps_plain = _encoded_steps(workload, logprobs=False)
    workload.steps_logprobs = _encoded_steps(workload, logprobs=True)
    workload.bodies_plain = [served_body(tokenizer, one, logprobs=False) for one in workload.sequences]
    workload.bodies_logprobs = [served_body(tokenizer, one, logprobs=True) for one in workload.sequences]
    return workload


def _encoded_steps(workload: Workload, logprobs: bool) -> list[list[bytes]]:
    """Each engine step's ``EngineCoreOutputs`` as the engine core sends them (vLLM's ``MsgpackEncoder``): one output
    per running request; with ``logprobs``, its slice of the step's ``LogprobsLists``, as vLLM's scheduler cuts it."""
    from vllm.v1.engine import EngineCoreOutput, EngineCoreOutputs
    from vllm.v1.outputs import LogprobsLists
    from vllm.v1.serial_utils import MsgpackEncoder

    encoder = MsgpackEncoder()
    steps = []
    for step in range(max(len(sequence.token_ids) for sequence in workload.sequences)):
        running = [(index, one) for index, one in enumerate(workload.sequences) if step < len(one.token_ids)]
        batch = None
        if logprobs:
            batch = LogprobsLists(
                np.stack([one.top_ids[step] for _, one in running]),
                np.stack([one.top_logprobs[step] for _, one in running]),
                np.asarray([one.ranks[step] for _, one in running]),
            )
        outputs = [
            EngineCoreOutput(
                request_id=f"r{index}",
                new_token_ids=[int(one.token_ids[step])],
                new_logprobs=batch.slice_request(row, 1) if batch is not None else None,
                finish_reason=one.finish if step == len(one.token_ids) - 1 else None,
            )
            for row, (index, one) in enumerate(running)
        ]
        steps.append(
            [bytes(buffer) for buffer in encoder.encode(EngineCoreOutputs(outputs=outputs, timestamp=float(step + 1)))]
        )
    return steps


def served_body(tokenizer: Any, sequence: SyntheticRequest, logprobs: bool) -> bytes:
    """The body vLLM's OpenAI-compatible server answers a completions request of ``sequence`` with: text, finish
    reason, usage; with ``logprobs``, the token ids spelled ``token_id:<id>`` (``return_tokens_as_token_ids``), their
    logprobs and each position's top logprobs (the sampled token's own entry when it is outside the top k)."""
    ends_by_eos = sequence.finish.name == "STOP"
    text_ids = sequence.token_ids[:-1] if ends_by_eos else sequence.token_ids
    choice: dict[str, Any] = {"index": 0, "text": tokenizer.decode(text_ids.tolist()), "logprobs": None}
    if logprobs:
        values = sequence.top_logprobs.astype(np.float64).tolist()
        choice["logprobs"] = {
            "text_offset": list(range(len(sequence.token_ids))),
            "token_logprobs": [row[0] for row in values],
            "tokens": [f"token_id:{token}" for token in sequence.token_ids.tolist()],
            "top_logprobs": [
                {f"token_id:{token}": value for token, value in zip(ids, row, strict=True)}
                for ids, row in zip(sequence.top_ids.tolist(), values, strict=True)
            ],
        }
    choice.update(finish_reason="stop" if ends_by_eos else "length", stop_reason=None, prompt_logprobs=None)
    usage = {"prompt_tokens": len(sequence.prompt_ids), "completion_tokens": len(sequence.token_ids)}
    body = {"id": "cmpl-0", "object": "text_completion", "model": "tiny", "choices": [choice], "usage": usage}
    return json.dumps(body).encode()


# ------------------------------------------------------------------------------------------ the variants
def engine_core_request(request_id: str, prompt_ids: list[int], params: Any) -> Any:
    """The ``EngineCoreRequest`` vLLM's front end registers with its output processor for a token-id prompt."""
    from vllm.v1.engine import EngineCoreRequest

    return EngineCoreRequest(
        request_id=request_id,
        prompt_token_ids=prompt_ids,
        mm_features=None,
        sampling_params=params,
        pooling_params=None,
        arrival_time=0.0,
        lora_request=None,
        cache_salt=None,
        data_parallel_rank=None,
        external_req_id=request_id,
    )


def loop_token_summaries(chosen: Sequence[float], top: Sequence[Sequence[float]], k: int) -> dict[str, np.ndarray]:
    """Token summaries as trac-eval computed them before the fast output path: one position at a time, the k
    largest finite logprobs sorted in Python (``before``'s summaries; also the reference of the unit tests)."""
    import math

    from trac_metrics.features import topk_entropy

    top_k = np.full((len(top), k), np.nan)
    for position, values in enumerate(top):
        best = sorted((value for value in values if math.isfinite(value)), reverse=True)[:k]
        top_k[position, : len(best)] = best
    with np.errstate(invalid="ignore"):
        mean_top = np.nanmean(top_k, axis=1) if len(top) else np.zeros(0)
    return {
        "token_logprobs": np.asarray(chosen, dtype=np.float64),
        "topk_entropy": topk_entropy(top_k, k=k) if len(top) else np.zeros(0),
        "topk_mean_logprob": mean_top,
    }


class StepArrayLogprobs:
    """What vLLM's output processor could keep of a response's logprobs instead of ``FlatLogprobs``' per-entry Python
    lists (a vLLM change, not a setting; the ``fast_step_arrays`` variant): each step's rows as the numpy arrays the
    engine core sent, joined once when the response finishes. It offers what trac-eval's capture reads of
    ``FlatLogprobs``."""

    def __init__(self) -> None:
        self.steps: list[tuple[np.ndarray, np.ndarray]] = []
        self._joined: tuple[np.ndarray, np.ndarray] | None = None

    def append_step(self, token_ids: np.ndarray, logprobs: np.ndarray) -> None:
        self.steps.append((token_ids, logprobs))
        self._joined = None

    def __len__(self) -> int:
        return len(self.steps)

    def joined(self) -> tuple[np.ndarray, np.ndarray]:
        """All rows, flattened: ids and logprobs (k + 1 per position), joined once."""
        if self._joined is None:
            ids, values = zip(*self.steps, strict=True) if self.steps else ((), ())
            self._joined = (
                np.concatenate(ids or [np.zeros(0)]).ravel(),
                np.concatenate(values or [np.zeros(0)]).ravel(),
            )
        return self._joined

    @property
    def token_ids(self) -> np.ndarray:
        return self.joined()[0]

    @property
    def logprobs(self) -> np.ndarray:
        return self.joined()[1]

    @property
    def start_indices(self) -> np.ndarray:
        return np.arange(len(self)) * (self.steps[0][0].shape[1] if self.steps else 0)

    @property
    def end_indices(self) -> np.ndarray:
        return self.start_indices + (self.steps[0][0].shape[1] if self.steps else 0)


@contextlib.contextmanager
def step_array_logprobs() -> Iterator[None]:
    """vLLM's ``LogprobsProcessor`` keeping flat sample logprobs as :class:`StepArrayLogprobs` while in force."""
    from vllm.logprobs import create_sample_logprobs
    from vllm.v1.engine import logprobs as engine_logprobs

    def create(flat_logprobs: bool) -> Any:
        return StepArrayLogprobs() if flat_logprobs else create_sample_logprobs(flat_logprobs)

    def update(self: Any, logprobs_lists: Any) -> None:
        token_ids, logprobs, _, _ = logprobs_lists
        if not isinstance(self.logprobs, StepArrayLogprobs):
            original(self, logprobs_lists)
            return
        self.logprobs.append_step(token_ids, logprobs)
        self.cumulative_logprob += sum(logprobs[:, 0].tolist())

    original = engine_logprobs.LogprobsProcessor._update_sample_logprobs
    engine_logprobs.create_sample_logprobs = create
    engine_logprobs.LogprobsProcessor._update_sample_logprobs = update
    try:
        yield
    finally:
        engine_logprobs.create_sample_logprobs = create_sample_logprobs
        engine_logprobs.LogprobsProcessor._update_sample_logprobs = original


def _only(**changes: Any) -> Callable[[type, dict[str, Any], str], Any]:
    """Engine SamplingParams with ``changes`` (the stop strings dropped when detokenization is off, as vLLM refuses
    stop strings without it)."""

    def build(sampling_params: type, kwargs: dict[str, Any], eos: str) -> Any:
        dropped = {"stop": []} if changes.get("detokenize") is False else {}
        return sampling_params(**{**kwargs, **changes, **dropped})

    return build


@dataclass(frozen=True)
class VllmVariant:
    """A vLLM variant: whether lm-eval's SamplingParams carry TrAC's top-k logprobs, what the engine gets instead
    (``engine(SamplingParams, kwargs, eos text)``; ``None``: the same), the token summaries trac-eval's capture uses
    (``None``: no TrAC capture, lm-eval's own handling of the text), and a change to vLLM's output processor in force
    during the run (``vllm_change``; ``None``: vLLM as installed)."""

    name: str
    logprobs: bool
    engine: Callable[[type, dict[str, Any], str], Any] | None
    summaries: Callable[..., dict[str, np.ndarray]] | None
    vllm_change: Callable[[], AbstractContextManager[None]] | None = None
    stages = VLLM_STAGES


@dataclass(frozen=True)
class ServedVariant:
    """A served variant: the body it parses (with logprobs or not), the field checks (``None``: lm-eval's own reading
    of the text) and the token summaries."""

    name: str
    positions: Callable[..., Any] | None
    summaries: Callable[..., dict[str, np.ndarray]] | None
    stages = SERVED_STAGES


def variants() -> list[VllmVariant | ServedVariant]:
    """The variants, in the order of the first round."""
    from trac_tasks.engines.served_backend import _positions, _walked_positions
    from trac_tasks.engines.vllm_backend import engine_sampling_params
    from trac_tasks.generation.capture import token_summaries

    def walked(choice: dict[str, Any], asked: int, vocabulary: int) -> Any:
        columns = choice["logprobs"]
        return _walked_positions(
            columns["tokens"], columns["token_logprobs"], columns["top_logprobs"], asked, vocabulary
        )

    return [
        VllmVariant("plain", False, None, None),
        VllmVariant("before", True, None, loop_token_summaries),
        VllmVariant("flat", True, _only(flat_logprobs=True), token_summaries),
        VllmVariant("no_detokenize", True, _only(detokenize=False), token_summaries),
        VllmVariant("fast", True, engine_sampling_params, token_summaries),
        VllmVariant("fast_step_arrays", True, engine_sampling_params, token_summaries, step_array_logprobs),
        VllmVariant("plain_no_detokenize", False, _only(detokenize=False), None),
        ServedVariant("served_plain", None, None),
        ServedVariant("served_before", walked, loop_token_summaries),
        ServedVariant("served_fast", _positions, token_summaries),
    ]


# ------------------------------------------------------------------------------------------ one run
@dataclass
class Run:
    """One variant's run: seconds per stage, generated tokens, and the text replay seconds (``fast`` only)."""

    seconds: dict[str, float]
    tokens: int
    text_replay: float = 0.0

    def us(self, stages: Sequence[str]) -> float:
        """Microseconds per generated token in ``stages``."""
        return 1e6 * sum(self.seconds[stage] for stage in stages) / self.tokens

    @property
    def total(self) -> float:
        """Microseconds per generated token of the variant: every stage but ``ipc``."""
        return self.us([stage for stage in self.seconds if stage != "ipc"])

    @property
    def total_with_ipc(self) -> float:
        return self.us(list(self.seconds))


class FrontEnd:
    """Runs the variants on the workload: vLLM's front-end classes, the served client's parse and checks, and
    trac-eval's capture, records written under ``records_dir``."""

    def __init__(self, workload: Workload, records_dir: Path) -> None:
        from lm_eval.api.instance import Instance
        from vllm import SamplingParams
        from vllm.v1.engine import EngineCoreOutputs
        from vllm.v1.serial_utils import MsgpackDecoder

        from trac_tasks.generation.config import TracConfig

        self.workload = workload
        self.records_dir = records_dir
        self.sampling_params = SamplingParams
        self.decoder = MsgpackDecoder(EngineCoreOutputs)
        gen_kwargs = {"until": [], "trac": {"answer_kind": "math", "reference": "{{answer}}", "top_k": workload.top_k}}
        self.config = TracConfig.from_gen_kwargs(gen_kwargs, TASK)
        self.requests = [
            Instance("generate_until", {"answer": "1"}, ("prompt", gen_kwargs), 0, (TASK, index, 1))
            for index in range(len(workload.sequences))
        ]

    def run(self, variant: VllmVariant | ServedVariant, round_name: str) -> Run:
        """One run of ``variant``; the garbage of earlier runs is collected first, so no run pays for another's."""
        from trac_tasks.generation.capture import RecordSink

        gc.collect()
        sink = RecordSink(self.records_dir / round_name / variant.name)
        if isinstance(variant, ServedVariant):
            return self._served(variant, sink)
        with variant.vllm_change() if variant.vllm_change else contextlib.nullcontext():
            return self._vllm(variant, sink)

    def lm_eval_kwargs(self, sequence: SyntheticRequest, logprobs: bool) -> dict[str, Any]:
        """SamplingParams keyword arguments of lm-eval's ``generate_until`` for ``until: []`` (its defaults:
        ``skip_special_tokens`` and ``spaces_between_special_tokens`` off; the EOS text as the stop string), with
        TrAC's top-k logprobs when ``logprobs``."""
        kwargs = {
            "max_tokens": len(sequence.token_ids),
            "stop": [self.workload.eos_text],
            "skip_special_tokens": False,
            "spaces_between_special_tokens": False,
            **DECODING,
        }
        return {**kwargs, "logprobs": self.workload.top_k} if logprobs else kwargs

    def _vllm(self, variant: VllmVariant, sink: Any) -> Run:
        from lm_eval.models.utils import postprocess_generated_text
        from vllm.sampling_params import RequestOutputKind
        from vllm.v1.engine.output_processor import OutputProcessor

        from trac_tasks.engines.vllm_backend import Generation, capture_completion

        workload = self.workload
        processor = OutputProcessor(workload.tokenizer, log_stats=False)
        generations = []
        for index, sequence in enumerate(workload.sequences):
            kwargs = self.lm_eval_kwargs(sequence, variant.logprobs)
            params = self.sampling_params(**kwargs)
            engine = (
                params if variant.engine is None else variant.engine(self.sampling_params, kwargs, workload.eos_text)
            )
            engine.output_kind = RequestOutputKind.FINAL_ONLY  # as trac-eval's engine loop and LLM.generate send it
            generations.append(Generation(sequence.prompt_ids, params, engine, [workload.eos_text]))
            processor.add_request(engine_core_request(f"r{index}", sequence.prompt_ids, engine), None)
        seconds = dict.fromkeys(VLLM_STAGES, 0.0)
        finished = []
        for step in workload.steps_logprobs if variant.logprobs else workload.steps_plain:
            started = time.perf_counter()
            outputs = self.decoder.decode(step)
            decoded = time.perf_counter()
            processed = processor.process_outputs(outputs.outputs)
            seconds["ipc"] += decoded - started
            seconds["vllm"] += time.perf_counter() - decoded
            for output in processed.request_outputs:
                index = int(output.request_id[1:])
                generation = generations[index]
                started = time.perf_counter()
                if variant.summaries is None:  # lm-eval's own handling of a plain response
                    postprocess_generated_text(output.outputs[0].text, generation.until, None)
                    seconds["capture"] += time.perf_counter() - started
                    continue
                captured = capture_completion(output.outputs[0], generation, workload.tokenizer)
                text = postprocess_generated_text(captured.text, generation.until, None)
                seconds["capture"] += time.perf_counter() - started
                self._record(variant, index, captured, text, sink, seconds)
                finished.append((generation, output.outputs[0]))
        run = Run(seconds, workload.tokens)
        if variant.name == "fast":
            run.text_replay = self._text_replay(finished)
        return run

    def _served(self, variant: ServedVariant, sink: Any) -> Run:
        from types import SimpleNamespace

        from trac_tasks.engines.completions_client import _json_body
        from trac_tasks.engines.served_backend import _finish_reason, _only_choice, _stop_reason, _text
        from trac_tasks.generation.runner import finish_reason_of

        workload = self.workload
        vocabulary = len(workload.tokenizer)
        seconds = dict.fromkeys(SERVED_STAGES, 0.0)
        bodies = workload.bodies_plain if variant.positions is None else workload.bodies_logprobs
        for index, raw in enumerate(bodies):
            started = time.perf_counter()
            body = _json_body(raw, "http://server/v1/completions", "generation")
            parsed = time.perf_counter()
            seconds["parse"] += parsed - started
            choice = _only_choice(body)
            if variant.positions is None:  # lm-eval's own reading of a plain response
                _text(choice)
                seconds["checks"] += time.perf_counter() - parsed
                continue
            positions = variant.positions(choice, workload.top_k, vocabulary)
            finish_reason = finish_reason_of(_finish_reason(choice), _stop_reason(choice))
            captured = SimpleNamespace(
                token_ids=positions.token_ids,
                chosen=positions.chosen,
                top=positions.top,
                finish_reason=finish_reason,
                text=_text(choice),
            )
            seconds["checks"] += time.perf_counter() - parsed
            self._record(variant, index, captured, captured.text, sink, seconds)
        return Run(seconds, workload.tokens)

    def _record(self, variant: Any, index: int, captured: Any, text: str, sink: Any, seconds: dict[str, float]) -> None:
        """Token summaries, then the record built and written, as the runner does for a response."""
        from trac_tasks.generation.capture import build_record

        started = time.perf_counter()
        summaries = variant.summaries(captured.chosen, captured.top, self.workload.top_k)
        summarized = time.perf_counter()
        record = build_record(
            self.requests[index],
            0,
            self.config,
            model="tiny",
            prompt_token_count=len(self.workload.sequences[index].prompt_ids),
            generated_ids=captured.token_ids,
            text=text,
            generated_text=captured.text,
            answer=None,
            marker="",
            finish_reason=captured.finish_reason,
            summaries=summaries,
            probes={},
            p_true=None,
            label=None,
            num_samples=1,
            decoding={**DECODING, "probe_temperature": 0.0},
            timing={"generation_seconds": 0.0},
        )
        sink.write([record])
        seconds["summaries"] += summarized - started
        seconds["record"] += time.perf_counter() - summarized

    def _text_replay(self, finished: Sequence[tuple[Any, Any]]) -> float:
        """Seconds vLLM's detokenizer takes to make the texts of ``finished`` (generation, completion) from their
        ids, as ``capture_completion`` does (part of ``fast``'s capture)."""
        from trac_tasks.engines.vllm_backend import detokenize_once

        started = time.perf_counter()
        for generation, completion in finished:
            detokenize_once(
                self.workload.tokenizer, generation, list(completion.token_ids), completion.finish_reason == "stop"
            )
        return time.perf_counter() - started


# ------------------------------------------------------------------------------------------ rounds and figures
def rotated(names: Sequence[str], by: int) -> list[str]:
    """The variant order of a round: ``names`` rotated left by ``by``."""
    shift = by % len(names)
    return [*names[shift:], *names[:shift]]


def measure(
    run: Callable[[str, str], Run], names: Sequence[str], rounds: int
) -> tuple[dict[str, Run], list[dict[str, Run]]]:
    """A warm-up round, then ``rounds`` counted rounds with the order rotated by one variant per round."""
    print("warm-up round", flush=True)
    warmup = _round(run, names, "warmup")
    counted = []
    for index in range(rounds):
        print(f"round {index + 1} of {rounds}", flush=True)
        counted.append(_round(run, rotated(names, index), f"round{index + 1}"))
    return warmup, counted


def _round(run: Callable[[str, str], Run], order: Sequence[str], round_name: str) -> dict[str, Run]:
    runs = {}
    for name in order:
        runs[name] = run(name, round_name)
        print(f"  {name:<22}{runs[name].total_with_ipc:>9.2f} us/token", flush=True)
    return runs


def spread(values: Sequence[float]) -> dict[str, Any]:
    """Min, median and max of per-round values, and the values."""
    return {"min": min(values), "median": statistics.median(values), "max": max(values), "per_round": list(values)}


def _part(run: Run, part: str | Sequence[str]) -> float:
    """A run's microseconds per token in ``part``: ``"total"``, ``"total_with_ipc"`` or a tuple of stages."""
    return getattr(run, part) if isinstance(part, str) else run.us(part)


def figures(rounds: Sequence[Mapping[str, Run]]) -> dict[str, Any]:
    """Per variant: microseconds per token per stage (min and median over rounds) and in total, the tokens per
    second one front-end core sustains at the median total; the ratios (within each round); ``fast``'s text
    replay."""
    names = list(rounds[0])
    per_variant: dict[str, Any] = {}
    for name in names:
        stages = list(rounds[0][name].seconds)
        values = {stage: spread([one[name].us((stage,)) for one in rounds]) for stage in stages}
        total = spread([one[name].total for one in rounds])
        per_variant[name] = {
            "us_per_token": {
                stage: {"min": values[stage]["min"], "median": values[stage]["median"]} for stage in stages
            },
            "total_us_per_token": total,
            "tokens_per_second_per_core": 1e6 / total["median"],
        }
        if "ipc" in stages:
            with_ipc = spread([one[name].total_with_ipc for one in rounds])
            per_variant[name]["total_with_ipc_us_per_token"] = with_ipc
            per_variant[name]["tokens_per_second_per_core_with_ipc"] = 1e6 / with_ipc["median"]
    ratios = {}
    for ratio, (numerator, denominator, part) in RATIOS.items():
        if {numerator, denominator} <= set(names):
            whole = "total_with_ipc" if part == "total_with_ipc" else "total"
            ratios[ratio] = spread([_part(one[numerator], part) / _part(one[denominator], whole) for one in rounds])
    result: dict[str, Any] = {"variants": per_variant, "ratios": ratios}
    if "fast" in names:
        replay = [1e6 * one["fast"].text_replay / one["fast"].tokens for one in rounds]
        result["fast_text_replay_us_per_token"] = spread(replay)
        if "plain" in names:
            ratios["fast_trac_added_without_text_vs_plain"] = spread(
                [
                    (one["fast"].us(TRAC_STAGES) - value) / one["plain"].total
                    for one, value in zip(rounds, replay, strict=True)
                ]
            )
    return result


def _print_table(result: Mapping[str, Any]) -> None:
    for stages in (VLLM_STAGES, SERVED_STAGES):
        rows = {name: one for name, one in result["variants"].items() if list(one["us_per_token"]) == list(stages)}
        if not rows:
            continue
        print(
            f"\n{'us / generated token (median)':<30}" + "".join(f"{stage:>10}" for stage in stages) + f"{'total':>10}"
        )
        for name, values in rows.items():
            cells = "".join(f"{values['us_per_token'][stage]['median']:>10.2f}" for stage in stages)
            print(f"{name:<30}{cells}{values['total_us_per_token']['median']:>10.2f}")
    print("(total: every stage but ipc; ipc only in vLLM's multiprocess engine)")
    print(f"\n{'ratio':<42}{'median':>9}{'min':>9}{'max':>9}")
    for name, values in result["ratios"].items():
        print(f"{name:<42}{values['median']:>9.3f}{values['min']:>9.3f}{values['max']:>9.3f}")


def _cpu() -> str:
    model = ""
    if Path("/proc/cpuinfo").is_file():
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model or platform.processor() or platform.machine()} ({os.cpu_count()} cores)"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequences", type=int, default=128, help="requests running at once")
    parser.add_argument("--tokens", type=int, default=768, help="mean generated tokens per request")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", default=None, help="comma-separated subset of the variants (default: all)")
    parser.add_argument("--model", default=None, help="tokenizer folder (default: the tiny model)")
    args = parser.parse_args(argv)
    if args.sequences < 1 or args.tokens < 2 or args.top_k < 1 or args.rounds < 1:
        parser.error("--sequences, --rounds and --top-k must be >= 1 and --tokens >= 2")
    by_name = {variant.name: variant for variant in variants()}
    if args.variants:
        chosen = args.variants.split(",")
        unknown = sorted(set(chosen) - set(by_name))
        if unknown:
            parser.error(f"unknown variants {unknown}; known: {', '.join(by_name)}")
        by_name = {name: variant for name, variant in by_name.items() if name in chosen}

    import vllm
    from vllm.tokenizers import get_tokenizer

    from trac_tasks.data.tiny_model import ensure_tiny_model

    model = args.model or str(ensure_tiny_model())
    tokenizer = get_tokenizer(model)
    started = time.perf_counter()
    workload = build_workload(tokenizer, args.sequences, args.tokens, args.top_k, args.seed)
    bytes_per_token = {
        "served_plain": sum(map(len, workload.bodies_plain)) / workload.tokens,
        "served_logprobs": sum(map(len, workload.bodies_logprobs)) / workload.tokens,
    }
    print(
        f"{len(workload.sequences)} sequences, {workload.tokens} generated tokens, top-{args.top_k} logprobs "
        f"(workload built in {time.perf_counter() - started:.1f} s)",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="frontend_cost_") as records:
        front_end = FrontEnd(workload, Path(records))
        _, rounds = measure(
            lambda name, round_name: front_end.run(by_name[name], round_name), list(by_name), args.rounds
        )
    result = {
        "benchmark": "frontend_cost",
        "vllm": vllm.__version__,
        "cpu": _cpu(),
        "python": platform.python_version(),
        "tokenizer": Path(model).name,
        "sequences": len(workload.sequences),
        "generated_tokens": workload.tokens,
        "mean_tokens_per_sequence": workload.tokens / len(workload.sequences),
        "top_k": args.top_k,
        "rounds": args.rounds,
        "seed": args.seed,
        "served_body_bytes_per_token": bytes_per_token,
        **figures(rounds),
        "orders": [list(one) for one in rounds],
    }
    _print_table(result)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
