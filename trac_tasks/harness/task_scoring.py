"""TrAC on any lm-eval ``generate_until`` task, switched on from the command line with ``--metadata '{"trac": {...}}'``
(docs/architecture.md#trac-on-lm-eval-tasks, docs/method.md#task-scored-labels).

lm-eval merges ``--metadata`` into every task's ``metadata``. Before the evaluation builds its requests,
:func:`enable_trac_on_tasks` turns each ``generate_until`` task whose metadata holds a ``trac`` switch into a TrAC run
of itself, touching only what TrAC adds:

- its requests carry a ``trac`` block (per document: the answer kind and the reference), so the backend hooks
  capture and probe them like a ``trac_*`` task's; ``repeats`` / ``temperature`` / ``top_p`` / ``max_gen_toks`` of
  the switch override the task's; a greedy task asked for K > 1 samples with TrAC's defaults, with a warning;
- a :class:`TaskScorer` registered under the task's name gives each response, at record time, the task's own
  filtered answer and label: the task's label filter pipeline, then its own ``process_results``, on that response
  alone;
- one more filter, ``trac``, keeps the K responses of each document; on it ``process_results`` returns ``acc``,
  ``maj_acc`` and ``trac`` (the question's evidence), aggregated as a ``trac_*`` task's are. The task's own filters,
  metrics and their values are untouched.

Tasks that are not ``generate_until`` run unchanged with one log line; tasks that already carry a ``trac`` block
(the ``trac_*`` tasks) keep their own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from lm_eval.api.metrics import mean

from trac_metrics.answers import ANSWER_KINDS, extract_answer, reference_aliases
from trac_metrics.answers.kind_inference import infer_answer_kind, task_reference
from trac_metrics.records import LABELLERS, MATH_VERIFY_LABELLER
from trac_tasks.generation.config import (
    TRAC_KEY,
    TracConfig,
    decodes_greedily,
    is_finite_number,
    reference_of_aliases,
    refuse_alike_samples,
)
from trac_tasks.harness.compat import LOGGER
from trac_tasks.harness.task_functions import AllSamples, aggregate_trac, keep_all_samples
from trac_tasks.harness.task_functions import process_results as trac_process_results

TRAC_FILTER = "trac"
"""The filter key under which the TrAC metrics of an lm-eval task are reported (``trac_auroc,trac``, ``acc,trac``)."""

SAMPLING_DEFAULTS = {"temperature": 0.7, "top_p": 0.95}
"""The decoding a greedy task's K > 1 samples use when the switch names none (the ``trac_*`` tasks' defaults)."""

_SCORERS: dict[str, TaskScorer] = {}


@dataclass(frozen=True)
class TaskSwitch:
    """The ``trac`` switch of ``--metadata`` (docs/method.md#task-scored-labels): every key optional.

    ``repeats`` (K), ``temperature``, ``top_p``, ``max_gen_toks`` override the task's decoding; ``label_filter``
    (default: the task's first filter) and ``label_metric`` (default: its first metric) name the task's per-sample
    score that labels each response, for every task or per task (``{"gsm8k_cot_zeroshot": "flexible-extract"}``);
    ``answer_kind`` (default: inferred from each document's reference) is the kind TrAC compares answers under;
    ``cue``, ``marker``, ``top_k``, ``probe_variants``, ``p_true``, ``labels`` (``trac`` or ``math-verify``: the
    relation that compares the answers, docs/method.md#labels), ``prefix_probes`` (fractions of the reasoning
    after which the answer probe also runs, docs/method.md#prefix-probes; their range is checked as the ``trac``
    block's) and ``probe_temperature`` (docs/method.md#probe-decoding-and-cutting) are the ``trac`` block's switches
    (docs/architecture.md#task-configuration).
    """

    repeats: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_gen_toks: int | None = None
    label_filter: str | Mapping[str, str] | None = None
    label_metric: str | Mapping[str, str] | None = None
    answer_kind: str | None = None
    cue: str | None = None
    marker: str | None = None
    top_k: int | None = None
    probe_variants: tuple[str, ...] | None = None
    p_true: bool | None = None
    labels: str | None = None
    prefix_probes: tuple[float, ...] | None = None
    probe_temperature: float | None = None

    @classmethod
    def parse(cls, value: Any, task_name: str) -> TaskSwitch:
        """The switch from its JSON value, every key checked for its type, each error naming the task and key."""
        if value is True or value == {}:
            return cls()
        if not isinstance(value, Mapping):
            raise ValueError(f"task {task_name}: --metadata trac must be a JSON object (or true), got {value!r}")
        allowed = [item.name for item in fields(cls)]
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise ValueError(f"task {task_name}: unknown --metadata trac keys {unknown}; allowed: {allowed}")
        values = dict(value)
        checks = {
            "repeats": (_is_int, "an integer ≥ 1", lambda v: v >= 1),
            "max_gen_toks": (_is_int, "an integer ≥ 1", lambda v: v >= 1),
            "top_k": (_is_int, "an integer ≥ 1", lambda v: v >= 1),
            "temperature": (is_finite_number, "a finite number ≥ 0", lambda v: v >= 0),
            "top_p": (is_finite_number, "a number in (0, 1]", lambda v: 0 < v <= 1),
            "probe_temperature": (is_finite_number, "a finite number ≥ 0", lambda v: v >= 0),
            "p_true": (lambda v: isinstance(v, bool), "true or false", lambda v: True),
            "answer_kind": (lambda v: v in ANSWER_KINDS, f"one of {ANSWER_KINDS}", lambda v: True),
            "labels": (lambda v: v in LABELLERS, f"one of {LABELLERS}", lambda v: True),
        }
        for name in ("cue", "marker"):
            checks[name] = (lambda v: isinstance(v, str), "a string", lambda v: True)
        for name in ("label_filter", "label_metric"):
            checks[name] = (_is_name_or_names, "a string or an object of task name -> string", lambda v: True)
        for name, given in values.items():
            if name == "probe_variants":
                if not (isinstance(given, list) and all(isinstance(item, str) for item in given)):
                    raise ValueError(f"task {task_name}: --metadata trac.probe_variants must be a list of strings")
                values[name] = tuple(given)
                continue
            if name == "prefix_probes":
                if not (isinstance(given, list) and all(map(is_finite_number, given))):
                    raise ValueError(f"task {task_name}: --metadata trac.prefix_probes must be a list of numbers")
                values[name] = tuple(given)
                continue
            is_type, expected, in_range = checks[name]
            if not (is_type(given) and in_range(given)):
                raise ValueError(f"task {task_name}: --metadata trac.{name} must be {expected}, got {given!r}")
        return cls(**values)

    def block_switches(self) -> dict[str, Any]:
        """The switches that go into each request's ``trac`` block as they are."""
        names = ("cue", "marker", "top_k", "p_true", "labels", "probe_temperature")
        block = {name: getattr(self, name) for name in names if getattr(self, name) is not None}
        for name in ("probe_variants", "prefix_probes"):
            if getattr(self, name) is not None:
                block[name] = list(getattr(self, name))
        return block


def _is_name_or_names(value: Any) -> bool:
    names = value.values() if isinstance(value, Mapping) else [value]
    return all(isinstance(name, str) for name in names)


def _for_task(value: str | Mapping[str, str] | None, task_name: str) -> str | None:
    """A switch given for every task (a string) or per task (a mapping; a task it does not name gets None)."""
    return value.get(task_name) if isinstance(value, Mapping) else value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class TaskScorer:
    """An lm-eval task's own scoring of one response (docs/method.md#task-scored-labels): its label filter pipeline,
    then its ``process_results`` on that response alone, read at the label metric."""

    task: Any
    label_filter: str
    label_metric: str
    answer_kind: str | None

    @property
    def label_source(self) -> str:
        """``<metric>,<filter>``: the task's results key whose per-sample value labels each response."""
        return f"{self.label_metric},{self.label_filter}"

    def _filtered(self, doc: Mapping[str, Any], text: str) -> Any:
        ensemble = next(ensemble for ensemble in self.task._filters if ensemble.name == self.label_filter)
        responses: Any = [[text]]
        fallbacks = set()
        for make_filter in ensemble.filters:
            step = make_filter()
            fallbacks.add(getattr(step, "fallback", None))
            responses = step.apply(responses, [doc])
        (filtered,) = list(responses)
        return None if isinstance(filtered, str) and filtered in fallbacks else filtered

    def reference(self, doc: Mapping[str, Any]) -> str | tuple[str, ...]:
        """The task's target of ``doc`` as TrAC stores it (:func:`trac_metrics.answers.kind_inference.task_reference`;
        an option index becomes the option's text; a list of acceptable answers, as triviaqa's and nq_open's
        aliases, stays a list of aliases)."""
        target = self.task.doc_to_target(doc)
        if isinstance(target, (list, tuple)):
            return reference_of_aliases(task_reference(str(alias)) for alias in target)
        if _is_int(target) and not isinstance(target, bool):
            choices = self.task.doc_to_choice(doc) if self.task.config.doc_to_choice is not None else None
            if choices is not None and 0 <= target < len(choices):
                target = choices[target]
        return task_reference(str(target))

    def kind(self, doc: Mapping[str, Any]) -> str:
        """The switch's answer kind, else the one inferred from ``doc``'s reference (of a list reference: the kind
        all its aliases share, else ``text``)."""
        if self.answer_kind:
            return self.answer_kind
        kinds = {infer_answer_kind(alias) for alias in reference_aliases(self.reference(doc))}
        return kinds.pop() if len(kinds) == 1 else "text"

    def answer(self, doc: Mapping[str, Any], text: str, kind: str) -> str | None:
        """The answer TrAC compares: the task filter's output when the filter extracts one (it changed the text),
        None when the filter gave its fallback (``[invalid]``), else trac-eval's extraction of the text."""
        filtered = self._filtered(doc, text)
        if filtered is None:
            return None
        if isinstance(filtered, str) and filtered.strip() and filtered != text:
            return filtered.strip()
        return extract_answer(text, kind=kind)

    def label(self, doc: Mapping[str, Any], text: str) -> bool:
        """The task's own per-sample score of ``text``, which must be 0 / 1 (or a boolean)."""
        filtered = self._filtered(doc, text)
        results = self.task.process_results(doc, [filtered if filtered is not None else ""])
        if self.label_metric not in results:
            raise ValueError(
                f"task {self.task.config.task}: its process_results gives {sorted(results)}, not the label metric "
                f"{self.label_metric!r}: name one of them in --metadata trac.label_metric"
            )
        value = results[self.label_metric]
        if value not in (0, 1):
            raise ValueError(
                f"task {self.task.config.task}: the label metric {self.label_metric!r} gave {value!r} for a single "
                "response; TrAC needs a 0/1 score per response: name a binary metric in --metadata trac.label_metric"
            )
        return bool(value)


def scorer_of(task_name: str) -> TaskScorer:
    """The registered scorer of an lm-eval task switched on with ``--metadata trac`` in this process."""
    if task_name not in _SCORERS:
        raise RuntimeError(
            f"trac-eval: task {task_name} is labelled by its own scoring, but no scorer is registered in this "
            "process (TrAC on lm-eval tasks runs in the process that runs lm-eval's evaluation; data-parallel "
            "replicas do not have it)"
        )
    return _SCORERS[task_name]


def enable_trac_on_tasks(tasks: Sequence[Any]) -> None:
    """Switch TrAC on for every task of ``tasks`` whose metadata holds a ``trac`` switch (module docstring)."""
    _refuse_mappings_naming_no_task(tasks)
    _refuse_a_switch_for_trac_tasks_only(tasks)
    for task in tasks:
        metadata = getattr(task.config, "metadata", None) or {}
        if not isinstance(metadata, Mapping) or TRAC_KEY not in metadata:
            continue
        name = task.config.task
        if task.config.output_type != "generate_until":
            LOGGER.info(
                "trac-eval: task %s is %s, not generate_until: TrAC does not apply to it; it runs unchanged",
                name,
                task.config.output_type,
            )
            continue
        if TRAC_KEY in (task.config.generation_kwargs or {}):
            LOGGER.warning(
                "trac-eval: task %s has its own trac block: --metadata trac does not change it (its YAML's switches "
                "hold; --gen_kwargs or a task of your own changes them)",
                name,
            )
            continue
        switch = TaskSwitch.parse(metadata[TRAC_KEY], name)
        scorer = _scorer(task, switch)
        _apply_decoding(task, switch)
        _wrap_task(task, scorer, switch)
        _SCORERS[name] = scorer
        LOGGER.info(
            "trac-eval: TrAC on task %s: K = %d, labels from %s, answers compared as %s",
            name,
            task.config.repeats,
            "Math-Verify's verdict" if switch.labels == MATH_VERIFY_LABELLER else scorer.label_source,
            switch.answer_kind or "inferred per document",
        )


def _refuse_a_switch_for_trac_tasks_only(tasks: Sequence[Any]) -> None:
    """Refuse, before any generation, a ``--metadata trac`` switch when every generative task it reaches has its own
    ``trac`` block: it would change nothing, and the run would keep the YAMLs' switches without a word."""
    reached = [
        task
        for task in tasks
        if isinstance(getattr(task.config, "metadata", None), Mapping)
        and TRAC_KEY in task.config.metadata
        and task.config.output_type == "generate_until"
    ]
    if reached and all(TRAC_KEY in (task.config.generation_kwargs or {}) for task in reached):
        names = ", ".join(sorted(task.config.task for task in reached))
        raise ValueError(
            f"--metadata trac switches TrAC on for lm-eval's own tasks, but {names} already have their own trac block "
            "and keep it; --gen_kwargs sets their K and decoding (repeats=4,temperature=0.6), a task YAML of your "
            "own that includes theirs changes their trac switches (docs/guide/extending.md)"
        )


def _refuse_mappings_naming_no_task(tasks: Sequence[Any]) -> None:
    """Refuse a per-task ``label_filter`` / ``label_metric`` mapping with a key that names no task of the run (a
    group's name, ``gsm8k`` for ``gsm8k_cot_zeroshot``): the task it meant would silently be labelled by its first
    filter or metric."""
    names = sorted(task.config.task for task in tasks)
    for task in tasks:
        switch = (getattr(task.config, "metadata", None) or {}).get(TRAC_KEY)
        for key in ("label_filter", "label_metric"):
            given = switch.get(key) if isinstance(switch, Mapping) else None
            unknown = sorted(set(given) - set(names)) if isinstance(given, Mapping) else []
            if unknown:
                raise ValueError(f"--metadata trac.{key} names {unknown}, which are not tasks of this run: {names}")


def _scorer(task: Any, switch: TaskSwitch) -> TaskScorer:
    """The task's scorer, its label filter and metric checked against what the task has."""
    name = task.config.task
    filter_names = [ensemble.name for ensemble in getattr(task, "_filters", [])]
    metric_names = [entry["metric"] for entry in task.config.metric_list or [] if isinstance(entry, Mapping)]
    metric_names = metric_names or list(task.aggregation())
    label_filter = _for_task(switch.label_filter, name) or (filter_names[0] if filter_names else None)
    label_metric = _for_task(switch.label_metric, name) or (metric_names[0] if metric_names else None)
    if label_filter not in filter_names:
        raise ValueError(f"task {name}: label filter {label_filter!r} is not one of its filters {filter_names}")
    if label_metric not in metric_names:
        raise ValueError(f"task {name}: label metric {label_metric!r} is not one of its metrics {metric_names}")
    return TaskScorer(task, label_filter, label_metric, switch.answer_kind)


def _apply_decoding(task: Any, switch: TaskSwitch) -> None:
    """K and the decoding overrides of the switch; a greedy task asked for K > 1 samples with stated defaults."""
    config = task.config
    kwargs = dict(config.generation_kwargs or {})
    if switch.repeats is not None:
        config.repeats = switch.repeats
    for name in ("temperature", "top_p", "max_gen_toks"):
        if getattr(switch, name) is not None:
            kwargs[name] = getattr(switch, name)
    if int(config.repeats or 1) > 1 and decodes_greedily(kwargs) and switch.temperature != 0:
        for name, value in SAMPLING_DEFAULTS.items():
            kwargs[name] = value if getattr(switch, name) is None else getattr(switch, name)
        LOGGER.warning(
            "trac-eval: task %s decodes greedily, but K = %d samples need sampling: all K samples, the primary "
            "included, use temperature %s and top_p %s (give --metadata trac.temperature / top_p to choose); its "
            "own metrics are then those of a sampled primary",
            config.task,
            config.repeats,
            kwargs["temperature"],
            kwargs["top_p"],
        )
    refuse_alike_samples(
        config.task, int(config.repeats or 1), kwargs, "--metadata trac.temperature 0.7 (and no top_k), or repeats 1"
    )
    if "temperature" in kwargs and float(kwargs["temperature"]) > 0:
        kwargs["do_sample"] = True
    config.generation_kwargs = kwargs


def _wrap_task(task: Any, scorer: TaskScorer, switch: TaskSwitch) -> None:
    """Per-document ``trac`` blocks on the task's requests, the ``trac`` filter, and its metrics (instance
    attributes wrapping the task's public methods; the class is untouched)."""
    construct_requests, apply_filters = task.construct_requests, task.apply_filters
    process_results, aggregation, higher_is_better = task.process_results, task.aggregation, task.higher_is_better
    block_switches = switch.block_switches()
    # labels: math-verify labels the answers with Math-Verify's verdict, not the task's scoring (docs/method.md#labels)
    label_source = "" if switch.labels == MATH_VERIFY_LABELLER else scorer.label_source

    def construct_with_trac(doc: Any, ctx: Any, **kwargs: Any) -> Any:
        made = construct_requests(doc=doc, ctx=ctx, **kwargs)
        block = {
            **block_switches,
            "answer_kind": scorer.kind(doc),
            "reference": _block_reference(scorer.reference(doc)),
            "label_source": label_source,
        }
        TracConfig.from_gen_kwargs({TRAC_KEY: block}, task.config.task)
        for instance in made if isinstance(made, list) else [made]:
            instance.arguments[1][TRAC_KEY] = dict(block)
        return made

    def apply_filters_with_trac() -> Any:
        result = apply_filters()
        for instance in task.instances:
            instance.filtered_resps[TRAC_FILTER] = keep_all_samples([instance.resps], [instance.doc])[0]
        return result

    def process_results_with_trac(doc: Any, results: Sequence[Any]) -> dict[str, Any]:
        if results and isinstance(results[0], AllSamples):
            return trac_process_results(doc, results)
        return process_results(doc, results)

    task.construct_requests = construct_with_trac
    task.apply_filters = apply_filters_with_trac
    task.process_results = process_results_with_trac
    task.aggregation = lambda: {"acc": mean, "maj_acc": mean, **aggregation(), TRAC_KEY: aggregate_trac}
    task.higher_is_better = lambda: {"acc": True, "maj_acc": True, **higher_is_better(), TRAC_KEY: True}


def _block_reference(reference: str | tuple[str, ...]) -> str | list[str]:
    """The ``trac`` block's ``reference`` for a task's reference: a template rendering to it, or its literal
    aliases (:class:`trac_tasks.generation.config.TracConfig`)."""
    return _literal_template(reference) if isinstance(reference, str) else list(reference)


def _literal_template(text: str) -> str:
    """``text`` as a Jinja template that renders to itself (the ``trac`` block's reference is a template)."""
    if re.search(r"{%-?\s*endraw", text):
        raise ValueError(f"a reference containing a Jinja endraw tag cannot be stored: {text!r}")
    return "{% raw %}" + text + "{% endraw %}"
