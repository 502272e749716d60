"""The hooks trac-eval installs on lm-eval 0.4.13 (task indexing, multi-metric expansion, evaluation guard, output
path): small, targeted patches applied right after lm-eval imports the patched module.

Each patch wraps lm-eval functions and leaves lm-eval's behaviour unchanged for everything that is not trac-eval's.
A wrapper accepts every calling form its function accepts: it finds the arguments it needs by binding the call to
the function's own signature. :func:`trac_tasks.compat.install_hook` runs a patch only after checking what it relies
on, and each patch assigns only once all its wrappers are built, so a module is never left half patched.
"""

from __future__ import annotations

import functools
import inspect
from contextvars import ContextVar
from pathlib import Path
from types import ModuleType
from typing import Any

from trac_tasks import compat

PACKAGE_DIR = Path(__file__).resolve().parent


def task_config_dir() -> Path:
    """The folder of trac-eval's task YAMLs: inside the installed package, or beside it in a source checkout."""
    for candidate in (PACKAGE_DIR / "task_configs", PACKAGE_DIR.parent / "task_configs"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"trac-eval's task_configs folder is missing next to {PACKAGE_DIR}; reinstall trac-eval")


def index_package_tasks(manager_module: ModuleType) -> None:
    """Make every ``TaskManager`` index ``task_configs`` too, so ``--tasks trac_math500`` works with no flag.

    The folder goes first: a task of the caller's ``include_path`` with the same name takes precedence."""
    task_manager = manager_module.TaskManager
    original_init = task_manager.__init__
    signature = inspect.signature(original_init)

    @functools.wraps(original_init)
    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N807
        call = signature.bind(*args, **kwargs)
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
        original_init(*call.args, **call.kwargs)

    task_manager.__init__ = __init__


class MultiMetricResult(dict):
    """An aggregation result holding several named numbers; expanded into one results key per number."""


def expand_multi_metric_aggregations(evaluator_utils: ModuleType) -> None:
    """Expand :class:`MultiMetricResult` values into ``"<name>,<filter>"`` keys of the task's results.

    lm-eval stores one number per (metric, filter); TrAC's cross-fitted aggregation computes dozens of numbers from
    one pass over the documents (docs/method.md#metric-names), so it returns them together and this patch spreads
    them out. Their standard errors are reported as ``"N/A"`` like any custom aggregation's.
    """
    original = evaluator_utils._compute_task_aggregations

    @functools.wraps(original)
    def _compute_task_aggregations(*args: Any, **kwargs: Any) -> tuple[dict[str, Any], int]:
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


HOOKED = "__trac_hooked__"
"""Attribute set on the backend methods trac-eval wraps; the evaluation guard below looks for it."""

_OUTPUT_PATH: ContextVar[str | None] = ContextVar("trac_output_path", default=None)


def current_output_path() -> str | None:
    """The output path of the lm-eval evaluation running now (``--output_path``, or the ``output_path`` of the
    ``EvaluationTracker`` handed to ``simple_evaluate``), or None."""
    return _OUTPUT_PATH.get()


def _tasks_of(task_dict: Any) -> list[Any]:
    """All task objects of a (possibly nested, grouped) lm-eval task dict."""
    found = []
    for value in task_dict.values():
        if isinstance(value, dict):
            found.extend(_tasks_of(value))
        elif hasattr(value, "config"):
            found.append(value)
    return found


def refuse_unready_trac_tasks(lm: Any, task_dict: Any) -> None:
    """Refuse, before any generation, TrAC tasks whose hooks are not installed (an lm-eval or vLLM release they do
    not fit), on a backend trac-eval does not hook, or behind ``--use_cache``.

    Without this check such a run would fail late and obscurely (an unknown ``trac`` generation argument deep in
    the backend, or K identical cached responses) or report unexpanded metrics.
    """
    from trac_tasks.config import TRAC_KEY

    trac_tasks = sorted(
        task.config.task
        for task in _tasks_of(task_dict)
        if TRAC_KEY in (getattr(task.config, "generation_kwargs", None) or {})
    )
    if not trac_tasks:
        return
    compat.require_trac_hooks()
    if type(lm).__name__ == "CachingLM":
        raise ValueError(
            f"TrAC tasks {trac_tasks} cannot run with --use_cache: the cache returns one stored "
            "response for all K samples and keeps no token logprobs; drop --use_cache"
        )
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
    """Guard ``evaluate`` with :func:`refuse_unready_trac_tasks`, and make ``simple_evaluate`` publish its
    tracker's output path (:func:`current_output_path`) for the duration of the call."""
    evaluate, simple_evaluate = evaluator.evaluate, evaluator.simple_evaluate
    evaluate_signature, simple_signature = inspect.signature(evaluate), inspect.signature(simple_evaluate)

    @functools.wraps(evaluate)
    def guarded_evaluate(*args: Any, **kwargs: Any) -> Any:
        call = evaluate_signature.bind(*args, **kwargs)
        refuse_unready_trac_tasks(call.arguments["lm"], call.arguments["task_dict"])
        return evaluate(*args, **kwargs)

    @functools.wraps(simple_evaluate)
    def tracked_simple_evaluate(*args: Any, **kwargs: Any) -> Any:
        tracker = simple_signature.bind(*args, **kwargs).arguments.get("evaluation_tracker")
        token = _OUTPUT_PATH.set(getattr(tracker, "output_path", None))
        try:
            return simple_evaluate(*args, **kwargs)
        finally:
            _OUTPUT_PATH.reset(token)

    evaluator.evaluate, evaluator.simple_evaluate = guarded_evaluate, tracked_simple_evaluate
