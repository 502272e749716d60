"""A task's TrAC switches: the ``trac:`` block of its ``generation_kwargs`` (task YAML or ``--gen_kwargs``).

The block travels with every request of the task, so the backend hook knows which requests to capture and probe
and how; lm-eval itself never sees it (the hook removes it before building sampling parameters). Example::

    generation_kwargs:
      trac:
        answer_kind: math                      # math | mc | text (trac_metrics.answers), or a Jinja
                                               # template giving one per doc, e.g. "{{answer_kind}}"
        reference: "{{answer}}"                # Jinja template rendered on the doc: the reference answer a*
        cue: "\\n\\nThe final answer is \\\\boxed{"   # default (docs/method.md#probe-prompt)
        marker: auto                           # end-of-thinking marker: auto (generation.thinking), a string,
                                               # or "" for none
        top_k: 5                               # top-k logprobs kept per token (docs/method.md#token-summaries, k = 5)
        probe_variants: [trace]                # + question_only, shuffled_trace, teacher_forced, after_answer
                                               # (the controls, docs/method.md#probe-variants), cue_answer,
                                               # cue_therefore (docs/method.md#cue-variants)
        prefix_probes: [0.25, 0.5, 0.75]       # the answer probe also after each sample's trace cut at these
                                               # fractions of its reasoning (docs/method.md#prefix-probes); off: []
        probe_temperature: 0                   # the probe's decoding: 0 greedy (the paper's default); > 0 sampled
                                               # at that temperature with the primary's top-p
                                               # (docs/method.md#probe-decoding-and-cutting)
        p_true: false                          # one extra forward for the P(True) baseline
        metadata_fields: [subject, level]      # doc fields copied into every record (reports split by them)
        label_source: ""                       # "<metric>,<filter>": labels from an lm-eval task's own scoring,
                                               # set by --metadata trac (trac_tasks.harness.task_scoring)
        labels: trac                           # trac (trac-eval's checker) | math-verify (Math-Verify's verdict,
                                               # as lm-eval's Math-Verify-labelled tasks); records name it

Every switch is checked for its type (a string, an integer, a boolean, a list of strings or of numbers:
``p_true: "false"`` or ``top_k: 5.5`` is an error, not a guess), and so are the ``temperature`` and ``top_p`` beside
the block (finite numbers); each error names the task and the switch.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

import jinja2

from trac_metrics.answers import ANSWER_KINDS
from trac_metrics.records import BUILT_IN_LABELLER, CUE_VARIANTS, LABELLERS, PROBE_VARIANTS
from trac_tasks.generation.thinking import AUTO

TRAC_KEY = "trac"
DEFAULT_CUE = "\n\nThe final answer is \\boxed{"
CUE_LEAD_IN = "The final answer is"
"""The wording of the cue a cue variant rewrites (docs/method.md#cue-variants)."""
CUE_WORDINGS = dict(zip(CUE_VARIANTS, ("The answer is", "Therefore, the final answer is"), strict=True))
"""Each cue variant's equivalent of :data:`CUE_LEAD_IN`."""
PROBE_MAX_TOKENS = 16

NEXT_TOKEN_LOGPROBS = 20
"""P(True) reads its letters among the 20 most likely next tokens (a letter outside them has probability ≈ 0)."""

_JINJA = jinja2.Environment(
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    finalize=lambda value: "" if value is None else value,
)
"""Renders the templates of the ``trac`` block; a null field renders as ``""`` (not ``"None"``), so a null reference
is caught as an empty one (:meth:`TracConfig.render_reference`)."""

_STRINGS = ("answer_kind", "cue", "marker", "label_source", "labels")
_SINGLE_EXPRESSION = re.compile(r"\{\{(?P<expression>[^{}]*)\}\}")
"""A template that is one ``{{ expression }}`` (``{{answer}}``, ``{{answer.aliases}}``): its value may be a list."""
_STRING_LISTS = ("probe_variants", "metadata_fields")


@dataclass(frozen=True)
class TracConfig:
    """Validated TrAC switches of one task (see the module docstring for the YAML form)."""

    answer_kind: str
    reference: str | tuple[str, ...]
    """A Jinja template giving the reference a* of a document, or a list of literal aliases (any matches); a
    template that is one expression whose value is a list (``{{answer.aliases}}``) gives the list's aliases."""
    cue: str = DEFAULT_CUE
    marker: str = AUTO
    top_k: int = 5
    probe_variants: tuple[str, ...] = ("trace",)
    p_true: bool = False
    metadata_fields: tuple[str, ...] = ()
    label_source: str = ""
    """Empty: labels from trac-eval's checker (answer vs reference); else the lm-eval task's results key whose
    per-sample score labels each response (docs/method.md#task-scored-labels)."""
    labels: str = BUILT_IN_LABELLER
    """The labeller of the run's answers (docs/method.md#labels): ``trac`` (trac-eval's checker) or ``math-verify``
    (Math-Verify's default verdict); every record of a ``math-verify`` run names it (``labeller``)."""
    prefix_probes: tuple[float, ...] = ()
    """Fractions f of each sample's reasoning tokens after which the answer probe also runs, strictly increasing, each
    in (0, 1); empty (the default): none (docs/method.md#prefix-probes)."""
    probe_temperature: float = 0.0
    """The temperature of every decoded probe (the trace, prefix and control probes): 0 greedy, the paper's default;
    above 0 sampled at it with the primary generation's top-p (docs/method.md#probe-decoding-and-cutting)."""

    def __post_init__(self) -> None:
        self._check_types()
        if self.answer_kind not in ANSWER_KINDS and "{{" not in self.answer_kind:
            raise ValueError(f"trac.answer_kind must be one of {ANSWER_KINDS} or a template, got {self.answer_kind!r}")
        if not 1 <= self.top_k <= 20:
            raise ValueError(f"trac.top_k must be between 1 and 20, got {self.top_k!r}")
        unknown = set(self.probe_variants) - set(PROBE_VARIANTS)
        if unknown or "trace" not in self.probe_variants:
            raise ValueError(
                f"trac.probe_variants must include 'trace' and only use {PROBE_VARIANTS}; got {self.probe_variants}"
            )
        if not self.cue:
            raise ValueError("trac.cue must not be empty")
        if set(self.probe_variants) & set(CUE_VARIANTS) and CUE_LEAD_IN not in self.cue:
            raise ValueError(
                f"trac.probe_variants {[v for v in self.probe_variants if v in CUE_VARIANTS]} rewrite the lead-in "
                f"{CUE_LEAD_IN!r} of the cue (docs/method.md#cue-variants), which this task's cue {self.cue!r} lacks"
            )
        if self.labels not in LABELLERS:
            raise ValueError(f"trac.labels must be one of {LABELLERS}, got {self.labels!r}")
        if self.label_source and self.labels != BUILT_IN_LABELLER:
            raise ValueError(
                f"trac.labels {self.labels!r} labels the answers with {self.labels}'s verdict, but this task's labels "
                f"come from its own scoring ({self.label_source}, set by --metadata trac): a record would name one "
                "labeller and hold the other's label; drop labels, or label_source (docs/method.md#labels)"
            )
        outside = [fraction for fraction in self.prefix_probes if not 0 < fraction < 1]
        if outside:
            raise ValueError(f"trac.prefix_probes must be fractions strictly between 0 and 1, got {outside}")
        if list(self.prefix_probes) != sorted(set(self.prefix_probes)):
            raise ValueError(
                f"trac.prefix_probes must be strictly increasing (sorted, no repeats), got {list(self.prefix_probes)}"
            )

    def _check_types(self) -> None:
        """Refuse a switch of the wrong type, naming it (YAML and ``--gen_kwargs`` give what they parse, so a quoted
        ``"false"`` would otherwise switch P(True) on)."""
        for name in _STRINGS:
            _require(name, getattr(self, name), isinstance(getattr(self, name), str), "a string")
        reference = self.reference
        aliases = isinstance(reference, tuple) and bool(reference) and all(isinstance(item, str) for item in reference)
        _require(
            "reference", reference, isinstance(reference, str) or aliases, "a string or a non-empty list of strings"
        )
        _require("top_k", self.top_k, isinstance(self.top_k, int) and not isinstance(self.top_k, bool), "an integer")
        _require("p_true", self.p_true, isinstance(self.p_true, bool), "true or false")
        for name in _STRING_LISTS:
            value = getattr(self, name)
            is_list = isinstance(value, tuple) and all(isinstance(item, str) for item in value)
            _require(name, value, is_list, "a list of strings")
        fractions = self.prefix_probes
        numbers = isinstance(fractions, tuple) and all(map(is_finite_number, fractions))
        _require("prefix_probes", fractions, numbers, "a list of numbers")
        temperature = self.probe_temperature
        _require(
            "probe_temperature",
            temperature,
            is_finite_number(temperature) and temperature >= 0,
            "a finite number >= 0",
        )

    @classmethod
    def from_gen_kwargs(cls, gen_kwargs: Mapping[str, Any], task_name: str) -> TracConfig:
        """Parse the ``trac`` block of a request's generation kwargs, naming the task in every error."""
        block = gen_kwargs.get(TRAC_KEY)
        if not isinstance(block, Mapping):
            raise ValueError(f"task {task_name}: generation_kwargs.trac must be a mapping, got {block!r}")
        allowed = {item.name for item in fields(cls)}
        unknown = set(block) - allowed
        if unknown:
            raise ValueError(f"task {task_name}: unknown trac switches {sorted(unknown)}; allowed: {sorted(allowed)}")
        missing = {"answer_kind", "reference"} - set(block)
        if missing:
            raise ValueError(f"task {task_name}: generation_kwargs.trac needs {sorted(missing)}")
        values = dict(block)
        for name in (*_STRING_LISTS, "reference", "prefix_probes"):
            if isinstance(values.get(name), list):
                values[name] = tuple(values[name])
        try:
            _check_sampling(gen_kwargs)
            return cls(**values)
        except ValueError as error:
            raise ValueError(f"task {task_name}: {error}") from error

    def render_reference(self, doc: Mapping[str, Any]) -> str | tuple[str, ...]:
        """The reference answer a* of ``doc``: the ``reference`` template rendered on the doc's fields, or its
        aliases (a list of literal aliases, or a one-expression template whose value is a list), each stripped, the
        empty ones dropped; one alias is the reference itself. An empty reference (a null or empty field) is an
        error: every answer would be labelled wrong (docs/architecture.md#the-generation-runner: the document check
        before generation refuses it)."""
        aliases = self.reference if isinstance(self.reference, tuple) else _list_value(self.reference, doc)
        if aliases is not None:
            reference = reference_of_aliases(str(item) for item in aliases)
        else:
            reference = _render("reference", self.reference, doc)
        if not reference:
            raise ValueError(
                f"trac.reference template {self.reference!r} renders to an empty reference on this document (a null "
                "or empty field): every answer would be labelled wrong; fix the template or drop such documents "
                "(process_docs)"
            )
        return reference

    def metadata_of(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """The ``metadata_fields`` of ``doc``, copied into each of its records; a missing field is an error naming
        it and the fields the document has."""
        missing = [name for name in self.metadata_fields if name not in doc]
        if missing:
            raise ValueError(f"trac.metadata_fields {missing} are not fields of the document (it has {sorted(doc)})")
        return {name: doc[name] for name in self.metadata_fields}

    def kind_for(self, doc: Mapping[str, Any]) -> str:
        """The answer kind of ``doc``: the fixed kind, or the ``answer_kind`` template rendered on the doc (tasks
        that mix option-letter and free-form questions, such as BBH)."""
        if self.answer_kind in ANSWER_KINDS:
            return self.answer_kind
        kind = _render("answer_kind", self.answer_kind, doc)
        if kind not in ANSWER_KINDS:
            raise ValueError(
                f"trac.answer_kind template {self.answer_kind!r} gave {kind!r} for a document; expected "
                f"one of {ANSWER_KINDS}"
            )
        return kind

    def variant_cue(self, variant: str) -> str:
        """The cue of probe ``variant``: the task's own, or for a cue variant the task's with its lead-in "The final
        answer is" replaced by the variant's equivalent wording (docs/method.md#cue-variants)."""
        if variant not in CUE_WORDINGS:
            return self.cue
        return self.cue.replace(CUE_LEAD_IN, CUE_WORDINGS[variant], 1)

    def closing_delimiter(self) -> str | None:
        """The character that closes the answer the cue opens (``}`` for ``\\boxed{``), None when it opens none."""
        return {"{": "}", "(": ")", "[": "]"}.get(self.cue[-1])


def _require(name: str, value: Any, ok: bool, expected: str) -> None:
    if not ok:
        raise ValueError(f"trac.{name} must be {expected}, got {value!r}")


def reference_of_aliases(aliases: Iterable[str]) -> str | tuple[str, ...]:
    """A reference from a list of acceptable answers: each alias stripped, empty and repeated ones dropped; one
    alias left is the reference itself, none is ``()``."""
    kept = tuple(dict.fromkeys(alias for alias in (item.strip() for item in aliases) if alias))
    return kept if len(kept) != 1 else kept[0]


def is_finite_number(value: Any) -> bool:
    """A finite int or float, not a boolean (a NaN equals nothing, not even itself)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_sampling(gen_kwargs: Mapping[str, Any]) -> None:
    """The sampling of the primary generations, which every record stores and the K samples of a question must share:
    ``temperature`` ≥ 0 and ``top_p`` in (0, 1], finite numbers (a NaN equals nothing, not even itself)."""
    checks = {
        "temperature": (lambda value: value >= 0, "a finite number ≥ 0"),
        "top_p": (lambda value: 0 < value <= 1, "a number in (0, 1]"),
    }
    for name, (in_range, expected) in checks.items():
        value = gen_kwargs.get(name)
        if value is None:
            continue
        if not (is_finite_number(value) and in_range(value)):
            raise ValueError(f"generation_kwargs.{name} must be {expected}, got {value!r}")


def decodes_greedily(gen_kwargs: Mapping[str, Any]) -> bool:
    """Whether lm-eval's backends decode these generation kwargs greedily: a ``temperature`` decides (0: greedy);
    without one, ``do_sample`` does (absent: greedy)."""
    if "temperature" in gen_kwargs:
        return float(gen_kwargs["temperature"]) == 0.0
    return not gen_kwargs.get("do_sample", False)


NEAR_GREEDY_TEMPERATURE = 0.05
"""Below this temperature K samples are nearly identical (docs/guide/reliability.md#lm-eval-flags)."""


def sampling_top_k(gen_kwargs: Mapping[str, Any]) -> int | None:
    """The number of candidate tokens generation kwargs limit sampling to (``top_k``, a whole number ≥ 1, stored as
    the record's ``decoding.top_k``, docs/architecture.md#response-fields); None without a limit: no ``top_k``, or
    the engines' "every token" (0, -1)."""
    top_k = gen_kwargs.get("top_k")
    if not is_finite_number(top_k) or top_k < 1 or top_k != int(top_k):
        return None
    return int(top_k)


def near_greedy_reason(gen_kwargs: Mapping[str, Any]) -> str | None:
    """Why sampled generation kwargs would still give K (nearly) identical samples: ``top_k`` 1 (one candidate token
    a step) or a temperature above 0 but below :data:`NEAR_GREEDY_TEMPERATURE`; None when they sample."""
    if sampling_top_k(gen_kwargs) == 1:
        return "top_k = 1 keeps one candidate token a step"
    if "temperature" in gen_kwargs and 0 < float(gen_kwargs["temperature"]) < NEAR_GREEDY_TEMPERATURE:
        return f"temperature {gen_kwargs['temperature']} is below {NEAR_GREEDY_TEMPERATURE}"
    return None


def refuse_alike_samples(task_name: str, repeats: int, gen_kwargs: Mapping[str, Any], remedy: str) -> None:
    """Refuse K > 1 samples that would be identical (greedy decoding, :func:`decodes_greedily`) or nearly so
    (:func:`near_greedy_reason`): every sampling@K method would be reported on one response. The ValueError names the
    task, K, the reason and ``remedy``, how to ask for distinct samples on the path that set them
    (docs/guide/reliability.md#lm-eval-flags)."""
    if repeats <= 1:
        return
    if decodes_greedily(gen_kwargs):
        raise ValueError(f"task {task_name}: K = {repeats} greedy samples would be identical: give {remedy}")
    if (reason := near_greedy_reason(gen_kwargs)) is not None:
        raise ValueError(f"task {task_name}: K = {repeats} samples would be nearly identical ({reason}): give {remedy}")


@functools.lru_cache(maxsize=256)
def _compiled(template: str) -> jinja2.Template:
    """``template`` compiled once per process: a record renders its templates per response, and compiling one costs
    as much as a thousand-token capture (docs/architecture.md#vllm-backend)."""
    return _JINJA.from_string(template)


def _render(name: str, template: str, doc: Mapping[str, Any]) -> str:
    """``template`` rendered on ``doc``; any failure (a syntax error, an unknown field, an exception the template
    raises such as a division by zero, a recursion) is one ``ValueError`` naming the template and what went wrong."""
    try:
        return _compiled(template).render(**doc).strip()
    except Exception as error:  # noqa: BLE001 - a template can raise anything; each becomes one clear error
        raise ValueError(
            f"trac.{name} template {template!r} cannot be rendered on a document with fields {sorted(doc)}: "
            f"{type(error).__name__}: {error}"
        ) from error


def _list_value(template: str, doc: Mapping[str, Any]) -> list[Any] | tuple[Any, ...] | None:
    """The value of a one-expression ``template`` on ``doc`` when it is a list (a task's list of acceptable
    answers), else None (the template is rendered as text)."""
    single = _SINGLE_EXPRESSION.fullmatch(template.strip())
    if single is None:
        return None
    try:
        value = _JINJA.compile_expression(single["expression"])(**doc)
    except Exception:  # noqa: BLE001 - rendering the template as text reports the error with the template's name
        return None
    return value if isinstance(value, (list, tuple)) else None


def strip_trac(gen_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The generation kwargs without the ``trac`` block, as lm-eval's own code expects them."""
    return {key: value for key, value in gen_kwargs.items() if key != TRAC_KEY}
