"""The probe's cache share (docs/method.md#probe-cache-share): the share of the trace probes' prompt tokens the
engine served from its prefix cache, from the records' ``num_cached_tokens``.

The answer probe is nearly free only when the prefix cache serves the prompt and trace it continues; otherwise it
costs a second prefill of every trace. :func:`probe_cache_counts` sums the counts of a set of records,
:attr:`ProbeCacheCounts.share` is the share every place shows (results key ``probe_cached_share``, the end-of-task
log line, ``trac summary``, the HTML report), and :func:`low_share_warning` is the one warning text for a share below
:data:`LOW_SHARE`. Pure: no engine and no lm-eval.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from trac_metrics.records import ProbeRecord, ResponseRecord

LOW_SHARE = 0.5
"""A task whose trace probes had less than this share of their prompt tokens served from the cache gets a warning."""


@dataclass(frozen=True)
class ProbeCacheCounts:
    """Token counts of trace probes (the ``trace`` probe of every sample, docs/method.md#probe-prompt).

    ``cached_tokens`` / ``prompt_tokens`` sum over the ``reported`` probes, those whose engine gave a cached count;
    ``unreported`` probes had none (a server without prompt-token details) and enter neither sum."""

    cached_tokens: int = 0
    prompt_tokens: int = 0
    reported: int = 0
    unreported: int = 0

    def __add__(self, other: ProbeCacheCounts) -> ProbeCacheCounts:
        return ProbeCacheCounts(*(getattr(self, name) + getattr(other, name) for name in _FIELDS))

    @property
    def share(self) -> float:
        """Σ cached / Σ prompt tokens of the reported probes; NaN when no probe reported a count."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else math.nan

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> ProbeCacheCounts:
        """The counts :meth:`to_dict` wrote; a missing, extra or non-count field is refused, naming it."""
        if not isinstance(payload, Mapping) or set(payload) != set(_FIELDS):
            raise ValueError(f"probe cache counts must have exactly the fields {list(_FIELDS)}, got {payload!r}")
        for name in _FIELDS:
            value = payload[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"probe cache counts: field {name!r} must be a non-negative integer, got {value!r}")
        return cls(**payload)


_FIELDS = tuple(field.name for field in fields(ProbeCacheCounts))


def probe_cache_counts(records: Iterable[ResponseRecord]) -> ProbeCacheCounts:
    """The summed trace-probe token counts of ``records`` (a record without a trace probe, one skipped because its
    prompt exceeded the context, adds nothing)."""
    return _counts(record.probes["trace"] for record in records if "trace" in record.probes)


def prefix_probe_cache_counts(records: Iterable[ResponseRecord]) -> ProbeCacheCounts:
    """The same counts over the records' prefix probes (docs/method.md#prefix-probes)."""
    return _counts(probe for record in records for probe in record.prefix_probes)


def _counts(probes: Iterable[ProbeRecord]) -> ProbeCacheCounts:
    cached = prompt = reported = unreported = 0
    for probe in probes:
        if probe.num_cached_tokens is None:
            unreported += 1
            continue
        reported += 1
        cached += probe.num_cached_tokens
        prompt += probe.num_prompt_tokens
    return ProbeCacheCounts(cached, prompt, reported, unreported)


def format_share(counts: ProbeCacheCounts) -> str:
    """The share as every place prints it: ``"91.3 %"``, or ``"not reported"``."""
    return "not reported" if math.isnan(counts.share) else f"{100 * counts.share:.1f} %"


def low_share_warning(where: str, counts: ProbeCacheCounts) -> str | None:
    """The warning for ``where`` (``"task trac_demo"``) when its share is below :data:`LOW_SHARE`, naming the likely
    causes; None when the share is at least that, or unknown (no probe reported a count)."""
    if math.isnan(counts.share) or counts.share >= LOW_SHARE:
        return None
    return (
        f"trac-eval: {where}: only {format_share(counts)} of the trace probes' prompt tokens were served from the "
        f"prefix cache ({counts.cached_tokens} of {counts.prompt_tokens} over {counts.reported} probes), so each "
        "probe cost about a second prefill of its trace. Likely causes: prefix caching off "
        "(enable_prefix_caching=False), a KV block size larger than the tail a probe adds (only whole blocks are "
        "served), a hybrid-attention model (vLLM raises its block size to hundreds of tokens), or an engine that "
        "evicted the trace before its probe ran. The teacher_forced probe variant never reads the cache at all "
        "(requests with prompt logprobs skip it). See docs/method.md#probe-cache-share"
    )
