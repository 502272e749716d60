"""Batched transformers calls of the HF backend: left-padded rows, per-row stopping and per-row logprobs
(docs/architecture.md#hf-backend).

Rows of different lengths are padded on the left with an attention mask, as lm-eval's own ``HFLM.generate_until``
does, so every row's last prompt token sits at the same position and ``generate`` appends to all rows at once.
Position ids follow the mask (``generate`` derives them from it; :func:`padded_forward` passes them), so a row's
tokens see the positions they would see alone. Padding never reaches a result: each row's generated tokens are cut
where that row finished (:class:`RowStops`), and its logprobs are read only at its own positions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


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


def padded_forward(model: Any, rows: Sequence[Sequence[int]], pad_id: int, keep_last: int) -> Any:
    """Logits [rows, keep_last, vocab] of the last ``keep_last`` positions of each left-padded row, in one forward
    pass (only those positions go through the output layer)."""
    import torch

    ids, mask = left_padded(rows, pad_id, model.device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        return model(
            input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=keep_last, use_cache=False
        ).logits


class StepLogprobs:
    """Each generation step's logprobs read as ``generate`` goes: a forward hook keeps the model's last-position logits
    of the step (the raw logits, before any logits processor, as ``output_logits`` returns them), and
    :meth:`record` reads the chosen token's logprob and the top-k of each running row once the token is chosen. Only
    one step's logits [rows, vocab] are alive at a time, instead of every step's."""

    def __init__(self, top_ks: Sequence[int]) -> None:
        self.top_ks = list(top_ks)
        self.latest: Any = None
        self.chosen: list[list[float]] = [[] for _ in top_ks]
        self.top: list[list[list[float]]] = [[] for _ in top_ks]

    def hook(self, module: Any, args: Any, output: Any) -> None:
        logits = output.logits if hasattr(output, "logits") else output[0]
        self.latest = logits[:, -1, :]

    def record(self, input_ids: Any, running: Sequence[bool]) -> None:
        """The logprob of each running row's newest token and its top-k at that step."""
        import torch

        logprobs = torch.log_softmax(self.latest.float(), dim=-1)
        picked = logprobs.gather(1, input_ids[:, -1:])[:, 0].tolist()
        best = torch.topk(logprobs, max(self.top_ks), dim=-1).values.tolist()
        for row, live in enumerate(running):
            if live:
                self.chosen[row].append(picked[row])
                self.top[row].append(best[row][: self.top_ks[row]])
        self.latest = None


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


def row_logprobs(
    step_logits: Sequence[Any], rows: Sequence[Sequence[int]], top_ks: Sequence[int]
) -> list[tuple[list[float], list[list[float]]]]:
    """Per row: the chosen token's logprob and the top-k logprobs (``top_ks[row]`` of them) at each of its own
    positions, from per-step logits [rows, vocab] (one log-softmax and top-k per step for the batch; steps after a
    row finished are never read). For the ≤ 16 steps of a probe; a generation uses :class:`StepLogprobs`."""
    import torch

    k = max(top_ks)
    chosen: list[list[float]] = [[] for _ in rows]
    top: list[list[list[float]]] = [[] for _ in rows]
    for step, logits in enumerate(step_logits):
        live = [row for row, tokens in enumerate(rows) if step < len(tokens)]
        if not live:
            break
        logprobs = torch.log_softmax(logits[live].float(), dim=-1)
        tokens = torch.tensor([rows[row][step] for row in live], device=logprobs.device)
        picked = logprobs.gather(1, tokens[:, None])[:, 0].tolist()
        best = torch.topk(logprobs, k, dim=-1).values.tolist()
        for position, row in enumerate(live):
            chosen[row].append(picked[position])
            top[row].append(best[position][: top_ks[row]])
    return list(zip(chosen, top, strict=True))


def cut_rows(sequences: Any, prompt_width: int, lengths: Sequence[int | None]) -> list[list[int]]:
    """Each row's generated tokens up to where it finished (all of them when it ran to the limit)."""
    generated = sequences[:, prompt_width:].tolist()
    return [row if length is None else row[:length] for row, length in zip(generated, lengths, strict=True)]
