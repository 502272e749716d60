"""The hooks trac-eval installs on lm-eval 0.4.13 (task indexing, multi-metric expansion, evaluation guard, output
path, the console table): small, targeted patches applied right after lm-eval imports the patched module.

Each patch wraps lm-eval functions and leaves lm-eval's behaviour unchanged for everything that is not trac-eval's.
A wrapper accepts every calling form its function accepts: it finds the arguments it needs by binding the call to
the function's own signature. :func:`trac_tasks.harness.compat.install_hook` runs a patch only after checking what
it relies on, and each patch assigns only once all its wrappers are built, so a module is never left half patched.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import warnings
from contextvars import ContextVar
from pathlib import Path
from types import ModuleType
from typing import Any

from trac_metrics._util.files import output_problem
from trac_tasks.harness import compat

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def task_config_dir() -> Path:
    """The folder of trac-eval's task YAMLs: inside the installed package, or beside it in a source checkout."""
    for candidate in (PACKAGE_DIR / "task_configs", PACKAGE_DIR.parent / "task_configs"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"trac-eval's task_configs folder is missing next to {PACKAGE_DIR}; reinstall trac-eval")


def index_package_tasks(manager_module: ModuleType) -> None:
    """Make every ``TaskManager`` that indexes lm-eval's own tasks index ``task_configs`` too, so ``--tasks
    trac_math500`` works with no flag (docs/architecture.md#lm-eval-patches).

    The folder goes first: a task of the caller's ``include_path`` with the same name takes precedence. With
    ``include_defaults=False`` only the caller's ``include_path`` is indexed, as in lm-eval: our tasks join where
    lm-eval's defaults do (name the folder in ``include_path`` to have them anyway).

    Steps aside, patching nothing, where lm-eval itself indexes the folder through trac-eval's ``lm_eval.tasks``
    entry point (:data:`trac_tasks.harness.compat.ENTRY_POINTS`; lm-eval PR #4015: after its own tasks, before
    ``include_path``, whatever ``include_defaults`` says). An editable install's entry point names a package folder
    without the task YAMLs (they sit beside it), so there the hook stays."""
    if compat.reads_entry_points("lm_eval.tasks") and tasks_indexed_by_entry_point(manager_module):
        compat.LOGGER.debug("trac-eval: lm-eval indexes %s through the lm_eval.tasks entry point", task_config_dir())
        return
    task_manager = manager_module.TaskManager
    original_init = task_manager.__init__
    signature = inspect.signature(original_init)

    @functools.wraps(original_init)
    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N807
        call = signature.bind(*args, **kwargs)
        if not call.arguments.get("include_defaults", True):
            original_init(*args, **kwargs)
            return
        include_path = call.arguments.get("include_path")
        paths = (
            []
            if include_path is None
            else list(include_path)
            if isinstance(include_path, (list, tuple))
            else [include_path]
        )
        ours = task_config_dir()
        if not any(Path(path).resolve() == ours for path in paths):
            paths.insert(0, ours)
        call.arguments["include_path"] = paths
        call_keeping_warnings(original_init, *call.args, **call.kwargs)

    task_manager.__init__ = __init__


def call_keeping_warnings(function: Any, /, *args: Any, **kwargs: Any) -> Any:
    """Call lm-eval's ``function`` from one of our wrappers so that a warning it attributes to its caller
    (``stacklevel=2``, as lm-eval's deprecation warnings do) names the wrapper's caller, as it would without the
    wrapper: a user's script still sees them. Every other warning keeps the place it names. For quick calls only (the
    warnings are re-issued when the call returns or raises)."""
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            return function(*args, **kwargs)
    finally:  # outside the catching context: the user's warning filters decide
        _reissue(caught)


def _reissue(caught: list[warnings.WarningMessage]) -> None:
    for warning in caught:
        if warning.filename == __file__:  # lm-eval pointed at our wrapper: name its caller instead
            warnings.warn(warning.message, warning.category, stacklevel=4)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)


def tasks_indexed_by_entry_point(manager_module: ModuleType) -> bool:
    """Whether a task folder lm-eval finds through ``lm_eval.tasks`` entry points holds trac-eval's task YAMLs."""
    ours = task_config_dir()
    return any(ours.is_relative_to(Path(found).resolve()) for found in manager_module.discover_plugin_task_paths())


def expand_multi_metric_aggregations(evaluator_utils: ModuleType) -> None:
    """Expand :class:`MultiMetricResult` values into ``"<name>,<filter>"`` keys of the task's results.

    lm-eval stores one number per (metric, filter); TrAC's cross-fitted aggregation computes dozens of numbers from
    one pass over the documents (docs/method.md#metric-names), so it returns them together and this patch spreads
    them out. Their standard errors are reported as ``"N/A"`` like any custom aggregation's.
    """
    original = evaluator_utils._compute_task_aggregations

    @functools.wraps(original)
    def _compute_task_aggregations(*args: Any, **kwargs: Any) -> tuple[dict[str, Any], int]:
        from trac_tasks.harness.task_functions import MultiMetricResult

        agg_metrics, sample_len = original(*args, **kwargs)
        multi = {key: value for key, value in agg_metrics.items() if isinstance(value, MultiMetricResult)}
        replaced_stderr = {"{}_stderr,{}".format(*key.split(",", 1)) for key in multi}
        expanded: dict[str, Any] = {}
        for key, value in agg_metrics.items():
            if key in replaced_stderr:
                continue
            if key not in multi:
                expanded[key] = value
                continue
            filter_key = key.split(",", 1)[1]
            for name, number in value.items():
                expanded[f"{name},{filter_key}"] = number
                expanded[f"{name}_stderr,{filter_key}"] = "N/A"
        return expanded, sample_len

    evaluator_utils._compute_task_aggregations = _compute_task_aggregations


TABLE_SWITCH = "trac_table"
"""Task metadata key choosing what lm-eval's console table shows of a TrAC task: ``headline`` (the default) or
``all`` (``--metadata '{"trac_table": "all"}'``, or ``metadata: {trac_table: all}`` in a task YAML)."""
TABLE_CHOICES = ("headline", "all")


def shorten_console_table(utils: ModuleType) -> None:
    """Make the table lm-eval prints (``make_table``) show a TrAC task's headline rows only.

    A TrAC task reports every metric of every method (docs/method.md#metric-names): about 200 rows. The printed table
    keeps ``acc``, ``maj_acc``, a task's own metrics and the AUROC / AURC / ECE of TrAC and the strongest baselines
    (:func:`trac_metrics.reporting.summary_table.headline_keys`), and says under the table how many more the results
    file holds. Only the printed copy is shortened: the results file, ``trac summary --all`` and ``trac report`` keep
    every key. A task (or group of tasks) whose metadata says ``trac_table: all`` keeps every row.
    """
    original = utils.make_table
    signature = inspect.signature(original)

    @functools.wraps(original)
    def make_table(*args: Any, **kwargs: Any) -> str:
        call = signature.bind(*args, **kwargs)
        call.apply_defaults()
        shortened = headline_view(call.arguments["result_dict"], call.arguments["column"])
        if shortened is None:
            return original(*args, **kwargs)
        call.arguments["result_dict"], hidden = shortened
        return original(*call.args, **call.kwargs) + (
            f"\nTrAC: {hidden} more metric rows are in the results file (`trac summary OUT_DIR --all`, "
            f'`trac report`); --metadata \'{{"{TABLE_SWITCH}": "all"}}\' prints them here.\n'
        )

    utils.make_table = make_table


def headline_view(result_dict: Any, column: str) -> tuple[dict[str, Any], int] | None:
    """A copy of lm-eval's ``result_dict`` whose ``column`` entries (tasks or groups) keep only their headline TrAC
    keys, and how many rows it hides; None when it hides nothing (no TrAC metrics, or ``trac_table: all``)."""
    entries = result_dict.get(column) if isinstance(result_dict, dict) else None
    if not isinstance(entries, dict):
        return None
    from trac_metrics.reporting.summary_table import headline_keys, method_keys

    hidden_names = method_keys() - headline_keys()
    every_row = _tables_with_every_row(result_dict)
    trimmed, hidden = {}, 0
    for name, metrics in entries.items():
        if not isinstance(metrics, dict) or name in every_row:
            trimmed[name] = metrics
            continue
        dropped = {key for key in metrics if key.split(",")[0].removesuffix("_stderr") in hidden_names}
        hidden += sum(not key.split(",")[0].endswith("_stderr") for key in dropped)
        trimmed[name] = {key: value for key, value in metrics.items() if key not in dropped}
    return ({**result_dict, column: trimmed}, hidden) if hidden else None


def _tables_with_every_row(result_dict: dict[str, Any]) -> set[str]:
    """The tasks whose metadata says ``trac_table: all``, and the groups holding one of them."""
    configs = result_dict.get("configs") or {}
    chosen = {
        name
        for name, config in configs.items()
        if isinstance(config, dict) and (config.get("metadata") or {}).get(TABLE_SWITCH) == "all"
    }
    subtasks = result_dict.get("group_subtasks") or {}

    def holds(group: str, seen: frozenset[str]) -> bool:
        children = [child for child in subtasks.get(group, ()) if child not in seen]
        return any(child in chosen or holds(child, seen | {group}) for child in children)

    return chosen | {group for group in subtasks if holds(group, frozenset())}


def refuse_unknown_table_switch(task_dict: Any) -> None:
    """Refuse, before any generation, a ``trac_table`` metadata value other than ``headline`` or ``all``."""
    for task in _tasks_of(task_dict):
        metadata = getattr(task.config, "metadata", None)
        if isinstance(metadata, dict) and metadata.get(TABLE_SWITCH, TABLE_CHOICES[0]) not in TABLE_CHOICES:
            raise ValueError(
                f"task {task.config.task}: metadata {TABLE_SWITCH}={metadata[TABLE_SWITCH]!r} must be one of "
                f"{', '.join(TABLE_CHOICES)}"
            )


HOOKED = "__trac_hooked__"
"""Attribute set on the backend methods trac-eval wraps; the evaluation guard below looks for it."""

_OUTPUT_PATH: ContextVar[str | None] = ContextVar("trac_output_path", default=None)


def current_output_path() -> str | None:
    """The output path of the lm-eval evaluation running now (``--output_path``, or the ``output_path`` of the
    ``EvaluationTracker`` handed to ``simple_evaluate``), or None."""
    return _OUTPUT_PATH.get()


def records_dir() -> Path:
    """Where records go: ``<output path>/trac_records`` of the lm-eval evaluation running now (``--output_path``, or
    the Python API's ``EvaluationTracker(output_path=...)``; the folder of a ``.json`` output path), else
    ``$TRAC_RECORDS_DIR``, else ``./trac_records`` (logged)."""
    output_path = current_output_path()
    if output_path:
        base = Path(output_path)
        return (base.parent if base.suffix == ".json" else base) / "trac_records"
    if os.environ.get("TRAC_RECORDS_DIR"):
        return Path(os.environ["TRAC_RECORDS_DIR"])
    compat.LOGGER.info("trac-eval: no lm-eval output path and no $TRAC_RECORDS_DIR: writing records to ./trac_records")
    return Path("trac_records")


def record_file_task(task: str) -> str:
    """The task part of a record file's name (``<task>.<run stamp>.jsonl`` in :func:`records_dir`): the task name,
    characters other than letters, digits, ``_``, ``.`` and ``-`` replaced by ``_``."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", task)


def _tasks_of(task_dict: Any) -> list[Any]:
    """All task objects of a (possibly nested, grouped) lm-eval task dict."""
    found = []
    for value in task_dict.values():
        if isinstance(value, dict):
            found.extend(_tasks_of(value))
        elif hasattr(value, "config"):
            found.append(value)
    return found


def _trac_tasks_of(task_dict: Any) -> list[Any]:
    """The TrAC tasks of an lm-eval task dict: a ``trac`` block in their ``generation_kwargs``, or a ``generate_until``
    task with a ``trac`` switch in its metadata (``--metadata``, :mod:`trac_tasks.harness.task_scoring`)."""
    from trac_tasks.generation.config import TRAC_KEY

    def is_trac(task: Any) -> bool:
        switched = _has_trac_switch(task) and task.config.output_type == "generate_until"
        return switched or TRAC_KEY in (getattr(task.config, "generation_kwargs", None) or {})

    return [task for task in _tasks_of(task_dict) if is_trac(task)]


def _has_trac_switch(task: Any) -> bool:
    """Whether ``--metadata`` gave the task a ``trac`` switch (lm-eval merges it into every task's metadata)."""
    from trac_tasks.generation.config import TRAC_KEY

    metadata = getattr(task.config, "metadata", None)
    return isinstance(metadata, dict) and TRAC_KEY in metadata


def apply_repeats_override(task_dict: Any) -> None:
    """Honour ``repeats`` given among a TrAC task's generation kwargs (``--gen_kwargs repeats=N``,
    docs/guide/running.md#every-knob): it becomes the task's ``repeats`` (K) before lm-eval builds the requests, and
    leaves the generation kwargs. lm-eval itself reads ``repeats`` only from the task YAML; plain tasks keep that
    behaviour."""
    for task in _trac_tasks_of(task_dict):
        generation_kwargs = task.config.generation_kwargs
        if "repeats" not in generation_kwargs:
            continue
        repeats = generation_kwargs["repeats"]
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
            raise ValueError(f"task {task.config.task}: repeats (K) must be an integer ≥ 1, got {repeats!r}")
        del generation_kwargs["repeats"]
        task.config.repeats = repeats


def refuse_greedy_samples(task_dict: Any) -> None:
    """Refuse a task with a ``trac`` block asked for K > 1 greedy samples (``--gen_kwargs temperature=0``): they
    would be K identical responses, and every sampling@K method would be reported on one; and nearly greedy ones
    (``top_k=1``, a temperature below 0.05: :func:`~trac_tasks.generation.config.near_greedy_reason`). The
    ``--metadata`` switch follows the same rule (:func:`trac_tasks.harness.task_scoring.enable_trac_on_tasks`;
    docs/guide/reliability.md#lm-eval-flags)."""
    from trac_tasks.generation.config import TRAC_KEY, refuse_alike_samples

    for task in _trac_tasks_of(task_dict):
        kwargs = task.config.generation_kwargs or {}
        if TRAC_KEY in kwargs:
            refuse_alike_samples(
                task.config.task,
                int(task.config.repeats or 1),
                kwargs,
                "--gen_kwargs temperature=0.7 (no top_k), or one sample (--gen_kwargs repeats=1)",
            )


DATASET_DOC_ID = "trac_dataset_doc_id"
"""Attribute trac-eval sets on the requests of a ``--samples`` selection: the document's index in the dataset."""


def dataset_doc_id(request: Any) -> Any:
    """The dataset index of a request's document, the ``doc_id`` lm-eval's samples file gives it: lm-eval numbers
    the documents of a ``--samples`` selection by their position in it (:func:`number_selected_documents`)."""
    return getattr(request, DATASET_DOC_ID, request.doc_id)


def number_selected_documents(task_dict: Any, samples: Any) -> None:
    """Give the requests of a TrAC task run on a ``--samples`` selection their documents' dataset indices
    (:func:`dataset_doc_id`), so a record names its question as lm-eval's samples file does: lm-eval builds the
    selection in dataset order and numbers it 0, 1, 2, ...; position ``i`` is the ``i``-th smallest selected index."""
    for task in _trac_tasks_of(task_dict) if isinstance(samples, dict) else []:
        selection = samples.get(task.config.task)
        if not selection:
            continue
        if list(selection) != sorted(set(selection)):
            compat.LOGGER.warning(
                "trac-eval: --samples for task %s is not in ascending order without repeats: lm-eval's samples "
                "file then names documents by their place in the list, not their dataset index; TrAC records "
                "carry the dataset index. Give the indices in ascending order to have both agree",
                task.config.task,
            )
        _number_requests_after_build(task, sorted(set(selection)))


def _number_requests_after_build(task: Any, dataset_indices: list[int]) -> None:
    build_all_requests = task.build_all_requests

    @functools.wraps(build_all_requests)
    def build_and_number(*args: Any, **kwargs: Any) -> Any:
        built = build_all_requests(*args, **kwargs)
        for instance in task.instances:
            setattr(instance, DATASET_DOC_ID, dataset_indices[instance.doc_id])
        return built

    task.build_all_requests = build_and_number


def refuse_unwritable_records_dir(trac_tasks: list[str]) -> None:
    """Refuse, before any generation, a records folder that cannot be created or written (an ``--output_path`` naming
    a file, a read-only or virtual filesystem, no permission; :func:`trac_metrics._util.files.output_problem`), then
    create it, so the first write after the generation cannot fail (docs/guide/reliability.md#lm-eval-flags)."""
    directory = records_dir()
    problem = output_problem(directory, "folder", parents=True)
    if problem is not None:
        raise ValueError(
            f"TrAC tasks {trac_tasks} write their records to {directory}, which cannot be written: {problem}: give "
            "--output_path a folder (or a results .json path inside one) that can be written, or set $TRAC_RECORDS_DIR"
        )
    directory.mkdir(parents=True, exist_ok=True)


def refuse_unwritable_records_dir_early(tasks: Any, metadata: Any) -> None:
    """:func:`refuse_unwritable_records_dir` before ``simple_evaluate`` loads the model, when the run names one of
    trac-eval's own tasks or groups or switches TrAC on with ``--metadata``; other TrAC tasks (a user's YAML with a
    ``trac`` block) are checked by :func:`refuse_unready_trac_tasks`, before their generation."""
    from trac_tasks.generation.config import TRAC_KEY

    names = [task for task in (tasks if isinstance(tasks, (list, tuple)) else [tasks]) if isinstance(task, str)]
    ours = {path.stem for path in task_config_dir().glob("*.yaml")}
    named = sorted(name for name in names if name in ours)
    switched = isinstance(metadata, dict) and TRAC_KEY in metadata
    if named or switched:
        refuse_unwritable_records_dir(named or names)


def warn_about_earlier_records(trac_tasks: list[str]) -> None:
    """Warn, before any generation, when the records folder already holds records of a task of this run: a rerun
    into the same folder (after an interrupted run, or beside another run) writes a new file, and ``trac report``
    refuses a question found in two files of one (model, task, decoding) (docs/guide/reliability.md#lm-eval-flags)."""
    directory = records_dir()
    for task in trac_tasks:
        earlier = sorted(path.name for path in directory.glob(f"{record_file_task(task)}.*.jsonl"))
        if earlier:
            compat.LOGGER.warning(
                "trac-eval: %s already holds records of task %s (%s); this run writes a new file beside them. "
                "`trac report` refuses a question found in two runs of one model, task and decoding: to replace "
                "the earlier run, delete its file; to complete a run that was cut short, run only its missing "
                "questions (--samples); to keep both, give this run another --output_path",
                directory,
                task,
                ", ".join(earlier),
            )


def refuse_unready_trac_tasks(lm: Any, task_dict: Any, cache_requests: bool = False) -> None:
    """Refuse, before any generation, TrAC tasks whose hooks are not installed (an lm-eval or vLLM release they do
    not fit), on a backend trac-eval does not hook, behind ``--use_cache`` or ``--cache_requests``, or whose records
    folder cannot be created.

    Without this check such a run would fail late and obscurely (an unknown ``trac`` generation argument deep in
    the backend, K identical cached responses, requests carrying another run's ``trac`` block, a
    ``NotADirectoryError`` after the generation) or report unexpanded metrics.
    """
    trac_tasks = sorted(task.config.task for task in _trac_tasks_of(task_dict))
    if not trac_tasks:
        return
    compat.require_trac_hooks()
    if type(lm).__name__ == "CachingLM":
        raise ValueError(
            f"TrAC tasks {trac_tasks} cannot run with --use_cache: the cache returns one stored "
            "response for all K samples and keeps no token logprobs; drop --use_cache"
        )
    if cache_requests:
        raise ValueError(
            f"TrAC tasks {trac_tasks} cannot run with --cache_requests: the cached requests carry the trac block "
            "(K, labels, answer kind, cue, probes) of the run that cached them, not this run's; drop --cache_requests"
        )
    refuse_unwritable_records_dir(trac_tasks)
    warn_about_earlier_records(trac_tasks)
    if not getattr(type(lm).generate_until, HOOKED, False):
        reason = compat.failed.get(type(lm).__module__)
        why = (
            f"trac-eval's hook on {type(lm).__module__} is not installed: {reason}"
            if reason
            else f"the {type(lm).__name__} backend has neither"
        )
        raise ValueError(
            f"TrAC tasks {trac_tasks} need token logprobs and an answer probe, which trac-eval provides "
            f"for --model vllm, hf and local-completions; {why}"
        )


def hook_evaluator(evaluator: ModuleType) -> None:
    """Guard ``evaluate`` with :func:`refuse_unready_trac_tasks`, :func:`refuse_unknown_table_switch`,
    :func:`apply_repeats_override` and :func:`refuse_greedy_samples`, switch TrAC on for the lm-eval tasks
    ``--metadata`` gives a ``trac`` switch (:mod:`trac_tasks.harness.task_scoring`), number a ``--samples``
    selection's requests by dataset index (:func:`number_selected_documents`), and make ``simple_evaluate`` check
    the records folder before it loads the model (:func:`refuse_unwritable_records_dir_early`) and publish its
    tracker's output path (:func:`current_output_path`) for the duration of the call."""
    evaluate, simple_evaluate = evaluator.evaluate, evaluator.simple_evaluate
    evaluate_signature, simple_signature = inspect.signature(evaluate), inspect.signature(simple_evaluate)

    @functools.wraps(evaluate)
    def guarded_evaluate(*args: Any, **kwargs: Any) -> Any:
        call = evaluate_signature.bind(*args, **kwargs)
        task_dict = call.arguments["task_dict"]
        refuse_unready_trac_tasks(call.arguments["lm"], task_dict, bool(call.arguments.get("cache_requests")))
        refuse_unknown_table_switch(task_dict)
        apply_repeats_override(task_dict)
        refuse_greedy_samples(task_dict)
        if any(map(_has_trac_switch, _tasks_of(task_dict))):
            from trac_tasks.harness.task_scoring import enable_trac_on_tasks

            enable_trac_on_tasks(_tasks_of(task_dict))
        number_selected_documents(task_dict, call.arguments.get("samples"))
        return evaluate(*args, **kwargs)

    @functools.wraps(simple_evaluate)
    def tracked_simple_evaluate(*args: Any, **kwargs: Any) -> Any:
        arguments = simple_signature.bind(*args, **kwargs).arguments
        token = _OUTPUT_PATH.set(getattr(arguments.get("evaluation_tracker"), "output_path", None))
        try:
            refuse_unwritable_records_dir_early(arguments.get("tasks"), arguments.get("metadata"))
            return simple_evaluate(*args, **kwargs)
        finally:
            _OUTPUT_PATH.reset(token)

    evaluator.evaluate, evaluator.simple_evaluate = guarded_evaluate, tracked_simple_evaluate
