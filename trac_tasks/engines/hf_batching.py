"""Batched transformers calls of the HF backend: left-padded rows, per-row stopping and per-row logprobs
(docs/architecture.md#hf-backend).

Rows of different lengths are padded on the left with an attention mask, as lm-eval's own ``HFLM.generate_until``
does, so every row's last prompt token sits at the same position and ``generate`` appends to all rows at once.
Position ids follow the mask (``generate`` derives them from it; the probes of :mod:`trac_tasks.engines.hf_probes`
pass them), so a row's tokens see the positions they would see alone. Padding never reaches a result: each row's
generated tokens are cut where that row finished (:class:`RowStops`), and its logprobs are read only at its own
positions.

A prompt that does not fit beside ``max_gen_toks`` in the model's ``max_length`` keeps its last tokens, as lm-eval's
own HF path keeps them, and says so, as lm-eval and the vLLM path do (:func:`fitted_prompt`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trac_tasks.generation.progress import LOGGER


def resolve_batch_size(lm: Any) -> int:
    """``--batch_size`` of an lm-eval ``HFLM``: the number, or for ``auto`` the size lm-eval's own
    ``_detect_batch_size`` finds for the model's full context (found once per model object, as lm-eval does once
    per ``generate_until`` call)."""
    size = getattr(lm, "batch_size", 1)
    if isinstance(size, str) and size.startswith("auto"):
        if getattr(lm, "_trac_auto_batch_size", None) is None:
            lm._trac_auto_batch_size = int(lm._detect_batch_size())
        return max(1, lm._trac_auto_batch_size)
    return max(1, int(size))


def fitted_prompt(prompt_ids: Sequence[int], room: int, name: str) -> list[int]:
    """The last ``room`` tokens of ``prompt_ids`` (``max_length - max_gen_toks``; lm-eval's ``left_truncate_len``),
    with a warning naming the request ``name`` when that cuts the prompt: its start is lost, and the model answers
    another question than the one asked (docs/guide/reliability.md#lm-eval-flags)."""
    if len(prompt_ids) <= room:
        return list(prompt_ids)
    LOGGER.warning(
        "trac-eval: --model hf: the prompt of %s has %d tokens, more than the %d that fit beside max_gen_toks in the "
        "model's max_length: left-truncated to its last %d tokens, as lm-eval does (its start is lost); raise "
        "max_length in --model_args or lower max_gen_toks",
        name,
        len(prompt_ids),
        room,
        room,
    )
    return list(prompt_ids[len(prompt_ids) - room :])


def left_padded(rows: Sequence[Sequence[int]], pad_id: int, device: Any) -> tuple[Any, Any]:
    """``input_ids`` and ``attention_mask`` [rows, longest] of token-id rows padded on the left with ``pad_id``."""
    import torch

    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for index, row in enumerate(rows):
        if row:
            ids[index, width - len(row) :] = torch.tensor(list(row), dtype=torch.long)
            mask[index, width - len(row) :] = 1
    return ids.to(device), mask.to(device)


def read_logprobs(logits: Any, tokens: Any, k: int) -> tuple[Any, Any]:
    """From logits [rows, steps, vocab]: the logprob of ``tokens`` [rows, steps] and the top-``k`` logprobs at each
    step, for all rows at once (tensors; nothing is copied to the host here)."""
    import torch

    logprobs = torch.log_softmax(logits.float(), dim=-1)
    return logprobs.gather(2, tokens[..., None])[..., 0], torch.topk(logprobs, k, dim=-1).values


class StepLogprobs:
    """Each generation step's logprobs read as ``generate`` goes: a forward hook keeps the model's last-position logits
    of the step (the raw logits, before any logits processor, as ``output_logits`` returns them), and
    :meth:`record` reads the chosen token's logprob and the top-k of each running row once the token is chosen. Only
    one step's logits [rows, vocab] are alive at a time, instead of every step's, and the host reads the logprobs
    once, after generation."""

    def __init__(self, top_ks: Sequence[int]) -> None:
        self.top_ks = list(top_ks)
        self.latest: Any = None
        self.steps: list[tuple[Any, Any, list[bool]]] = []

    def hook(self, module: Any, args: Any, output: Any) -> None:
        logits = output.logits if hasattr(output, "logits") else output[0]
        self.latest = logits[:, -1, :]

    def record(self, input_ids: Any, running: Sequence[bool]) -> None:
        """The logprob of each row's newest token, its top-k and the mean logprob over the whole vocabulary at that
        step (the full-vocabulary self-certainty's input, docs/method.md#self-certainty), kept on the device with
        the rows still running (read on the host once, by :meth:`rows`)."""
        import torch

        chosen, top = read_logprobs(self.latest[:, None], input_ids[:, -1:], max(self.top_ks))
        vocabulary_mean = torch.log_softmax(self.latest.float(), dim=-1).mean(-1)
        self.steps.append((chosen[:, 0], top[:, 0], vocabulary_mean, list(running)))
        self.latest = None

    def rows(self) -> list[tuple[list[float], list[list[float]], list[float]]]:
        """Per row: the logprob of each token it generated, the top-k (``top_ks[row]`` of them) and the mean logprob
        over the vocabulary at each step it was running."""
        import torch

        if not self.steps:
            return [([], [], []) for _ in self.top_ks]
        chosen, top, means = (torch.stack([step[i] for step in self.steps], dim=1).tolist() for i in range(3))
        running = [step[3] for step in self.steps]
        return [
            (
                [value for value, on in zip(chosen[row], running, strict=True) if on[row]],
                [values[:k] for values, on in zip(top[row], running, strict=True) if on[row]],
                [value for value, on in zip(means[row], running, strict=True) if on[row]],
            )
            for row, k in enumerate(self.top_ks)
        ]


class RowStops:
    """A ``generate`` stopping criterion that stops each row on its own: a row is done once lm-eval's stop-sequence
    criteria (``until``) hold for it or its last token is an end id; HF then pads it while the others go on.
    ``lengths[i]`` is the number of tokens row ``i`` generated up to and including the one that finished it (None
    while it runs: it ran to the token limit). With ``logprobs``, each running row's token logprobs are recorded
    step by step."""

    def __init__(
        self,
        stop_criteria: Sequence[Any],
        end_ids: set[int],
        prompt_width: int,
        rows: int,
        logprobs: StepLogprobs | None = None,
    ) -> None:
        self.stop_criteria = list(stop_criteria)
        self.end_ids = sorted(end_ids)
        self.prompt_width = prompt_width
        self.lengths: list[int | None] = [None] * rows
        self.logprobs = logprobs

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        if self.logprobs is not None:
            self.logprobs.record(input_ids, [length is None for length in self.lengths])
        for criterion in self.stop_criteria:
            criterion(input_ids, scores)  # updates its per-row done_tracker
        generated = input_ids.shape[1] - self.prompt_width
        ended = torch.isin(input_ids[:, -1], torch.tensor(self.end_ids, device=input_ids.device)).tolist()
        for row in range(len(self.lengths)):
            stopped = any(criterion.done_tracker[row] for criterion in self.stop_criteria)
            if self.lengths[row] is None and (stopped or ended[row]):
                self.lengths[row] = generated
        done = [length is not None for length in self.lengths]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def cut_rows(sequences: Any, prompt_width: int, lengths: Sequence[int | None]) -> list[list[int]]:
    """Each row's generated tokens up to where it finished (all of them when it ran to the limit)."""
    generated = sequences[:, prompt_width:].tolist()
    return [row if length is None else row[:length] for row, length in zip(generated, lengths, strict=True)]
