"""Probes of the HF backend on the KV cache its batch's generation left behind (docs/architecture.md#hf-backend).

After one ``generate`` call the cache holds, for every row, its left padding, its prompt and its generated tokens
(all but the batch's last one, whose KV was never computed). A job of a row's trace (a greedy probe, teacher-forced
scoring, P(True)) reuses the longest prefix its prompt shares with what the row holds, at least the prompt's last
token left to compute: the rest of its prompt is appended to every row at once, left-padded, with an attention mask
that keeps each row's reused positions and hides the others (left padding, the tokens past the shared prefix, the
padding after a row that finished early), and position ids counted on that mask, so every token sits where it sits
when the row runs alone. A round holds at most one job per row; afterwards the cache is cropped back to what
generation left, for the next round. Jobs without a usable cache (another batch's trace, or a cache that cannot be
cropped: sliding-window or linear-attention layers, a static cache) run the same way on an empty cache, computed in
full.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trac_tasks.engines.hf_batching import left_padded, read_logprobs


def reusable(cache: Any) -> bool:
    """Whether ``cache`` can be extended by a round and cropped back exactly: a dynamic cache whose layers all keep
    every position (False on a transformers without per-layer caches: the probes are then computed in full)."""
    try:
        from transformers.cache_utils import DynamicCache, DynamicLayer
    except ImportError:
        return False
    layers = getattr(cache, "layers", None)
    return isinstance(cache, DynamicCache) and bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


class HeldCache:
    """A ``generate`` call's KV cache with the token ids it holds for each row, after the row's left padding."""

    def __init__(
        self, cache: Any, prompts: Sequence[Sequence[int]], generated: Sequence[Sequence[int]], width: int
    ) -> None:
        """``generated``: each row's tokens, cut where the row finished; ``width``: the padded prompts' width."""
        self.cache = cache
        self.length = cache.get_seq_length()
        self.pads = [width - len(prompt) for prompt in prompts]
        self.held = [
            [*prompt, *tokens][: self.length - pad]
            for prompt, tokens, pad in zip(prompts, generated, self.pads, strict=True)
        ]

    def shared(self, row: int, prompt_ids: Sequence[int]) -> int:
        """How many leading ids of ``prompt_ids`` the row's cache holds (the prompt's last id is always left out)."""
        held = self.held[row]
        limit = min(len(held), len(prompt_ids) - 1)
        shared = 0
        while shared < limit and held[shared] == prompt_ids[shared]:
            shared += 1
        return shared

    def prefix_mask(self, shared: Sequence[int]) -> Any:
        """The attention mask [rows, cached positions] keeping each row's first ``shared[row]`` held ids only."""
        import torch

        mask = torch.zeros((len(self.held), self.length), dtype=torch.long)
        for row, (pad, count) in enumerate(zip(self.pads, shared, strict=True)):
            mask[row, pad : pad + count] = 1
        return mask

    def restore(self) -> None:
        """Crop the cache back to what generation left in it."""
        surplus = self.cache.get_seq_length() - self.length
        if surplus > 0:
            self.cache.crop(-surplus)


def extend_rows(
    model: Any, cache: Any, prefix_mask: Any, new_rows: Sequence[Sequence[int]], pad_id: int, keep_last: int
) -> tuple[Any, Any, Any]:
    """One forward pass of each row's ``new_rows`` ids, left-padded, after the cache positions ``prefix_mask``
    [rows, cached] keeps (no cache: ``cache`` and ``prefix_mask`` None, computed in full on a fresh cache). Returns
    the logits [rows, keep_last, vocab] of the last positions, the attention mask over cache and new ids, and the
    cache holding them."""
    import torch

    ids, mask = left_padded(new_rows, pad_id, model.device)
    if prefix_mask is not None:
        mask = torch.cat([prefix_mask.to(mask.device), mask], dim=1)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, -ids.shape[1] :]
    with torch.no_grad():
        output = model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=keep_last,
        )
    return output.logits, mask, output.past_key_values


def probe_rows(
    model: Any,
    cache: Any,
    prefix_mask: Any,
    new_rows: Sequence[Sequence[int]],
    live: Sequence[bool],
    pad_id: int,
    end_ids: set[int],
    max_tokens: int,
    k: int,
    sampling: Sequence[tuple[float, float]] | None = None,
) -> list[tuple[list[int], list[float], list[list[float]]]]:
    """Decoding of up to ``max_tokens`` tokens after each row's ``new_rows`` ids (see :func:`extend_rows`), until
    every ``live`` row wrote an end id: greedy (the argmax of the raw logits: no logits processor, as plain greedy
    ``generate`` with no generation config), or, for a row whose ``sampling`` (temperature, top-p) has a temperature
    above 0, sampled from its logits at that temperature within the top-p nucleus (torch's random generator: lm-eval
    seeds it). Per row: its tokens up to and including its first end id, each one's logprob under the raw logits
    and the top-``k`` logprobs there (rows not ``live`` are computed alongside and left empty)."""
    import torch

    logits, mask, cache = extend_rows(model, cache, prefix_mask, new_rows, pad_id, 1)
    positions = mask.sum(-1)
    ends = torch.tensor(sorted(end_ids), device=mask.device)
    done = ~torch.tensor(list(live), dtype=torch.bool, device=mask.device)
    rows = sampling or [(0.0, 1.0)] * len(new_rows)
    temperatures = torch.tensor([temperature for temperature, _ in rows], device=mask.device)
    top_ps = torch.tensor([top_p for _, top_p in rows], device=mask.device)
    tokens, chosen, top = [], [], []
    for step in range(max_tokens):
        token = next_tokens(logits[:, -1].float(), temperatures, top_ps)
        step_chosen, step_top = read_logprobs(logits[:, -1:], token[:, None], k)
        tokens.append(token)
        chosen.append(step_chosen[:, 0])
        top.append(step_top[:, 0])
        done = done | torch.isin(token, ends)
        if step + 1 == max_tokens or bool(done.all()):
            break
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
        with torch.no_grad():
            output = model(
                input_ids=token[:, None],
                attention_mask=mask,
                position_ids=positions[:, None],
                past_key_values=cache,
                use_cache=True,
            )
        logits, cache, positions = output.logits, output.past_key_values, positions + 1
    token_rows = torch.stack(tokens, dim=1).tolist()
    chosen_rows = torch.stack(chosen, dim=1).tolist()
    top_rows = torch.stack(top, dim=1).tolist()
    results = []
    for row, is_live in enumerate(live):
        row_tokens = token_rows[row] if is_live else []
        length = next((at + 1 for at, token in enumerate(row_tokens) if token in end_ids), len(row_tokens))
        results.append((row_tokens[:length], chosen_rows[row][:length], top_rows[row][:length]))
    return results


def next_tokens(logits: Any, temperatures: Any, top_ps: Any) -> Any:
    """Each row's next token from its [rows, vocabulary] ``logits``: the argmax where its temperature is 0, else a
    draw from the softmax of logits / temperature restricted to the smallest set of most likely tokens whose
    probability reaches its top-p (the most likely token always kept)."""
    import torch

    greedy = logits.argmax(-1)
    sampled = temperatures > 0
    if not bool(sampled.any()):
        return greedy
    probabilities = torch.softmax(logits / torch.where(sampled, temperatures, 1.0)[:, None], dim=-1)
    ordered, order = probabilities.sort(dim=-1, descending=True)
    kept = (ordered.cumsum(-1) - ordered) < top_ps[:, None]
    draw = torch.multinomial(ordered * kept, 1)
    return torch.where(sampled, order.gather(-1, draw)[:, 0], greedy)
