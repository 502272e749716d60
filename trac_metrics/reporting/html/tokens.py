"""Token ids → the text pieces the HTML report shades one by one (docs/architecture.md#per-token-arrays: records keep
token ids, not token strings).

Turning ids into text needs the model's tokenizer. :func:`load_tokenizer` loads one with ``transformers``, imported
here only (never when ``trac_metrics`` is imported), only from a place the user chose (:func:`tokenizer_spec`): what
``trac report --tokenizer`` names, or the model's own name from this machine's files when ``--tokenizer-from-records``
confirms it; a record never chooses what is loaded. It is always loaded with ``trust_remote_code=False``, so
transformers never asks on the terminal whether to run a folder's code, and a tokenizer whose config asks for its own
code (``auto_map``) is refused with a one-line reason: the page shows that model's traces as plain text
(docs/guide/reliability.md#files-are-data). :class:`TokenPieces` decodes every distinct id once, after an anchor
token (so a SentencePiece word keeps its leading space), and decodes runs of tokens that each hold part of one
character (byte-level BPE splits an emoji over several tokens) together; the pieces of a trace joined are its decoded
text. :func:`trace_pieces` refuses a tokenizer whose pieces do not reproduce the stored text of every trace it would
shade: a wrong tokenizer would shade a made-up text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

REPLACEMENT = "\ufffd"
"""What a decoder writes for the bytes of an incomplete character."""
NO_TOKENIZER = "none"
"""``--tokenizer none``: show every trace as plain text, unshaded."""


NOT_CHOSEN = (
    "no tokenizer chosen (--tokenizer PATH_OR_ID names one; --tokenizer-from-records loads each model's own by the "
    "name its records give)"
)
"""Why a model's traces are unshaded when the user named no tokenizer for it."""


def load_tokenizer(name: str, local_only: bool) -> tuple[Any | None, str]:
    """``(tokenizer, "")``, or ``(None, why)`` when ``transformers`` is missing, ``name``'s tokenizer config asks to
    run its own code (``auto_map``: refused, nothing of it imported) or ``name`` does not load (``local_only``: from
    this machine's files and cache only, no download). Never runs a tokenizer's code, never prompts."""
    try:
        from transformers import AutoTokenizer
        from transformers.models.auto.tokenization_auto import get_tokenizer_config
    except ImportError:
        return None, "the transformers package is not installed"
    try:
        if "auto_map" in get_tokenizer_config(name, local_files_only=local_only):
            return None, (
                f"the tokenizer of {name!r} asks to run its own code (auto_map in its tokenizer_config.json), which "
                "trac never runs"
            )
        return AutoTokenizer.from_pretrained(name, local_files_only=local_only, trust_remote_code=False), ""
    except Exception as error:  # noqa: BLE001 - any failure to load means: show the text unshaded, and say why
        if local_only:
            return None, f"no tokenizer of {name!r} on this machine (trac report --tokenizer MODEL=PATH names one)"
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return None, f"no tokenizer loads from {name!r} ({reason[:160]})"


def spec_for(model: str, specs: Mapping[str, str]) -> str | None:
    """The ``--tokenizer`` given for ``model``: its own (the model's name as the records spell it, or in another
    case, as hub ids are matched: ``qwen/qwen3-8b`` names ``Qwen/Qwen3-8B``), else the one given for every model."""
    if model in specs:
        return specs[model]
    same = [name for key, name in specs.items() if key and key.casefold() == model.casefold()]
    return same[0] if len(same) == 1 else specs.get("")


def unmatched_specs(models: Sequence[str], specs: Mapping[str, str]) -> list[str]:
    """The models ``--tokenizer MODEL=...`` names that no run has, in any case."""
    known = {model.casefold() for model in models}
    return [key for key in specs if key and key.casefold() not in known]


def tokenizer_spec(model: str, specs: Mapping[str, str], from_records: bool = False) -> tuple[str | None, bool, str]:
    """The tokenizer to load for ``model``, whether only local files may be read, and why there is none:
    :func:`spec_for`, else, when ``from_records`` (``--tokenizer-from-records``), the model's own name, locally only;
    None for :data:`NO_TOKENIZER` or when the user chose none (:data:`NOT_CHOSEN`)."""
    chosen = spec_for(model, specs)
    if chosen == NO_TOKENIZER:
        return None, True, "--tokenizer none"
    if chosen is None:
        return (model, True, "") if from_records else (None, True, NOT_CHOSEN)
    return chosen, False, ""


def parse_tokenizer_specs(values: Sequence[str]) -> dict[str, str]:
    """``--tokenizer [MODEL=]PATH_OR_ID`` values → ``{model or "": tokenizer}``; ValueError for an empty part or a
    model named twice."""
    specs: dict[str, str] = {}
    for value in values:
        model, equals, name = value.partition("=")
        if not equals:
            model, name = "", value
        if equals and not model or not name:
            raise ValueError(f"--tokenizer {value!r}: expected PATH_OR_ID or MODEL=PATH_OR_ID")
        if model in specs:
            raise ValueError(f"--tokenizer given twice for {model or 'every model'}")
        specs[model] = name
    return specs


def _squashed(text: str) -> str:
    return "".join(text.split())


def _special_ids(tokenizer: Any) -> set[int]:
    """The ids a decoding with ``skip_special_tokens`` leaves out: the named special tokens and every added token
    marked special (SmolLM2's ``<file_sep>``, ...)."""
    added = getattr(tokenizer, "added_tokens_decoder", {})
    return set(tokenizer.all_special_ids) | {int(token) for token, added_token in added.items() if added_token.special}


def _compared_text(shown: np.ndarray, index: np.ndarray, special: np.ndarray, stored: str) -> str:
    """A trace's pieces (``shown[index]``) joined as the engine detokenized it
    (docs/guide/reports.md#the-html-report-trac-report---html): without its special tokens (``special``: per token),
    except a special token whose text the stored text holds (an engine that keeps ``<think>`` / ``</think>`` in the
    text it stores, as vLLM does for the tiny reasoner)."""
    held = [piece for piece in np.unique(index[special]) if shown[piece] and shown[piece] in stored]
    kept = ~special | np.isin(index, held)
    return "".join(shown[index[kept]].tolist())


class TokenizerMismatch(ValueError):
    """Why a tokenizer is not the one that wrote a pair's traces: the page shows them as text instead."""


def trace_pieces(
    token_texts: TokenTexts, traces: Sequence[np.ndarray], texts: Sequence[str], names: Sequence[str] = ()
) -> tuple[list[str], list[np.ndarray]]:
    """The text pieces of ``traces`` under the tokenizer of ``token_texts`` (:class:`TokenTexts`, shared by the pairs
    of that tokenizer): a new piece list and each trace's piece indices (:class:`TokenPieces`).
    :class:`TokenizerMismatch` when the tokenizer is not the one that wrote them: an id beyond its vocabulary (or
    negative), or a trace whose pieces, joined without the special tokens (:func:`_compared_text`: those whose text
    the stored text holds, a reasoning model's ``<think>`` / ``</think>``, kept), do not hold its stored text
    ``texts[i]`` (whitespace aside). Each trace is checked, on the very pieces the page would shade, so a tokenizer
    shades only text it reproduces. ``names`` name the traces (document ids) in the reason."""
    size = token_texts.partial.size
    largest = max((int(ids.max()) for ids in traces if ids.size), default=-1)
    if largest >= size:
        raise TokenizerMismatch(f"token id {largest} is beyond its {size} tokens")
    smallest = min((int(ids.min()) for ids in traces if ids.size), default=0)
    if smallest < 0:
        raise TokenizerMismatch(f"token id {smallest} is negative")
    pieces = TokenPieces(token_texts)
    indices = pieces.encode_all(traces)
    shown = np.asarray(pieces.pieces, dtype=object)
    wrong = [
        number
        for number, (ids, index, stored) in enumerate(zip(traces, indices, texts, strict=True))
        if _squashed(stored) not in _squashed(_compared_text(shown, index, token_texts.special[ids], stored))
    ]
    if wrong:
        first = names[wrong[0]] if names else str(wrong[0])
        others = f" and {len(wrong) - 1} other(s)" if len(wrong) > 1 else ""
        raise TokenizerMismatch(
            f"its decoding of the token ids differs from the stored text on question {first}{others} of {len(traces)}"
        )
    return pieces.pieces, indices


class TokenTexts:
    """The decoded text of token ids under one tokenizer, shared by every pair it shades: each distinct id, and each
    distinct run of split-character ids, is decoded once, in batches, whatever the number of pairs and traces."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.anchor = list(tokenizer.encode("a", add_special_tokens=False))
        self.anchor_text = self._batch_decode([self.anchor])[0]
        self.text: dict[int, str] = {}
        """Each id's text, decoded after the anchor."""
        self.partial = np.zeros(len(tokenizer), dtype=bool)
        """Whether an id decodes to part of a character."""
        self.run_text: dict[tuple[int, ...], str] = {}
        """The decoded text of each run of split-character ids met so far."""
        self.special = np.zeros(len(tokenizer), dtype=bool)
        """Whether an id is one a decoding with ``skip_special_tokens`` leaves out."""
        self.special[sorted(_special_ids(tokenizer))] = True
        self._decoded = np.zeros(len(tokenizer), dtype=bool)

    def _batch_decode(self, runs: Sequence[Sequence[int]]) -> list[str]:
        if not runs:  # transformers reads an empty batch as one empty sequence
            return []
        return self.tokenizer.batch_decode(
            [list(run) for run in runs], skip_special_tokens=False, clean_up_tokenization_spaces=False
        )

    def _decode(self, runs: Sequence[Sequence[int]]) -> list[str]:
        """Each run of ids decoded after the anchor, the anchor's own text removed (decoded alone when the anchor
        merged with it)."""
        if not runs:
            return []
        texts = self._batch_decode([self.anchor + list(run) for run in runs])
        return [
            text[len(self.anchor_text) :] if text.startswith(self.anchor_text) else self._batch_decode([run])[0]
            for run, text in zip(runs, texts, strict=True)
        ]

    def runs(self, traces: Sequence[np.ndarray]) -> list[list[tuple[int, int, tuple[int, ...]]]]:
        """Each trace's runs of split-character tokens (start, end, ids), after decoding the ids and the runs never
        met before (one batch each)."""
        undecoded = np.unique(np.concatenate([ids[~self._decoded[ids]] for ids in traces] or [[]]).astype(np.int64))
        self.text.update(zip(undecoded.tolist(), self._decode([[token] for token in undecoded.tolist()]), strict=True))
        self._decoded[undecoded] = True
        self.partial[undecoded] = [REPLACEMENT in self.text[token] for token in undecoded.tolist()]
        runs = [self._runs(ids) for ids in traces]
        unseen = list(dict.fromkeys(run for trace in runs for _, _, run in trace if run not in self.run_text))
        self.run_text.update(zip(unseen, self._decode(unseen), strict=True))
        return runs

    def _runs(self, ids: np.ndarray) -> list[tuple[int, int, tuple[int, ...]]]:
        partial = self.partial[ids]
        if not partial.any():
            return []
        bounds = np.flatnonzero(np.diff(np.concatenate(([False], partial, [False])).astype(np.int8)))
        return [(int(start), int(end), tuple(ids[start:end].tolist())) for start, end in bounds.reshape(-1, 2)]


class TokenPieces:
    """The text pieces of one pair's traces, as indices into the pair's own list (:attr:`pieces`), numbered in order of
    appearance; the texts come from ``texts`` (:class:`TokenTexts`, shared by the pairs of one tokenizer)."""

    def __init__(self, texts: TokenTexts) -> None:
        self.texts = texts
        self.pieces: list[str] = []
        self._index: dict[str, int] = {}
        self._of_id = np.full(texts.partial.size, -1, dtype=np.int64)
        """Piece index of each id met so far (-1: not yet)."""

    def _piece(self, text: str) -> int:
        if text not in self._index:
            self._index[text] = len(self.pieces)
            self.pieces.append(text)
        return self._index[text]

    def encode(self, token_ids: np.ndarray) -> np.ndarray:
        """The piece index of every token of one trace (:meth:`encode_all`)."""
        return self.encode_all([token_ids])[0]

    def encode_all(self, traces: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The piece index of every token of each trace (uint32; ids within the tokenizer's vocabulary). A run of
        tokens each holding part of a character is decoded as one: its first token gets the run's text, the others
        the empty piece. Pieces are numbered trace by trace in order of appearance."""
        traces = [np.asarray(ids, dtype=np.int64) for ids in traces]
        runs = self.texts.runs(traces)
        return [self._indices(ids, trace_runs) for ids, trace_runs in zip(traces, runs, strict=True)]

    def _indices(self, ids: np.ndarray, runs: Sequence[tuple[int, int, tuple[int, ...]]]) -> np.ndarray:
        """The piece indices of one trace, numbering the pieces it meets first."""
        for token in np.unique(ids[self._of_id[ids] < 0]).tolist():
            self._of_id[token] = 0 if self.texts.partial[token] else self._piece(self.texts.text[token])
        indices = self._of_id[ids].astype(np.uint32)
        for start, end, run in runs:
            indices[start] = self._piece(self.texts.run_text[run])
            indices[start + 1 : end] = self._piece("")
        return indices


def marker_position(
    tokenizer: Any, token_ids: np.ndarray, indices: np.ndarray, pieces: Sequence[str], marker: str
) -> int | None:
    """The index of the first token of the last end-of-thinking ``marker`` in a trace: where its ids occur (the way
    the runner reads the thinking state, docs/method.md#end-of-thinking-marker), else where its text occurs in the
    trace's pieces (``pieces[indices[t]]`` for token t); None when it does not occur."""
    if not marker:
        return None
    found = _last_run(token_ids, list(tokenizer.encode(marker, add_special_tokens=False)))
    if found is not None:
        return found
    shown = [pieces[index] for index in indices]
    start = "".join(shown).rfind(marker)
    if start < 0:
        return None
    return int(np.searchsorted(np.cumsum([len(piece) for piece in shown]), start, side="right"))


def _last_run(values: np.ndarray, run: Sequence[int]) -> int | None:
    """Start of the last occurrence of ``run`` in ``values``, or None."""
    width = len(run)
    if not width or values.size < width:
        return None
    windows = np.lib.stride_tricks.sliding_window_view(values, width)
    hits = np.flatnonzero((windows == np.asarray(run, dtype=values.dtype)).all(axis=1))
    return int(hits[-1]) if hits.size else None
