"""Small, targeted patches of lm-eval 0.4.13 internals, applied right after lm-eval imports the patched module.

Each patch wraps one function and leaves lm-eval's behaviour unchanged for everything that is not trac-eval's.
"""

from __future__ import annotations

import functools
from pathlib import Path
from types import ModuleType
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent


def task_config_dir() -> Path:
    """The folder of trac-eval's task YAMLs: inside the installed package, or beside it in a source checkout."""
    for candidate in (PACKAGE_DIR / "task_configs", PACKAGE_DIR.parent / "task_configs"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"trac-eval's task_configs folder is missing next to {PACKAGE_DIR}; reinstall trac-eval")


def index_package_tasks(manager_module: ModuleType) -> None:
    """Make every ``TaskManager`` index ``task_configs`` too, so ``--tasks trac_math500`` works with no flag."""
    task_manager = manager_module.TaskManager
    original_init = task_manager.__init__

    @functools.wraps(original_init)
    def __init__(self, *args: Any, include_path: Any = None, **kwargs: Any) -> None:  # noqa: N807
        paths = [] if include_path is None else list(include_path) if isinstance(include_path, (list, tuple)) \
            else [include_path]
        ours = task_config_dir()
        if not any(Path(path).resolve() == ours for path in paths):
            paths.append(ours)
        original_init(self, *args, include_path=paths, **kwargs)

    task_manager.__init__ = __init__


class MultiMetricResult(dict):
    """An aggregation result holding several named numbers; expanded into one results key per number."""


def expand_multi_metric_aggregations(evaluator_utils: ModuleType) -> None:
    """Expand :class:`MultiMetricResult` values into ``"<name>,<filter>"`` keys of the task's results.

    lm-eval stores one number per (metric, filter); TrAC's cross-fitted aggregation computes dozens of numbers from
    one pass over the documents (SPEC §6), so it returns them together and this patch spreads them out. Their
    standard errors are reported as ``"N/A"`` like any custom aggregation's.
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


def _tasks_of(task_dict: Any) -> list[Any]:
    """All task objects of a (possibly nested, grouped) lm-eval task dict."""
    found = []
    for value in task_dict.values():
        if isinstance(value, dict):
            found.extend(_tasks_of(value))
        elif hasattr(value, "config"):
            found.append(value)
    return found


def require_hooked_backend(evaluator: ModuleType) -> None:
    """Refuse, before any generation, a TrAC task on a backend trac-eval does not hook or behind ``--use_cache``.

    Without this check such a run would fail late and obscurely (an unknown ``trac`` generation argument deep in
    the backend, or K identical cached responses).
    """
    from trac_tasks.config import TRAC_KEY

    original = evaluator.evaluate

    @functools.wraps(original)
    def evaluate(lm: Any, task_dict: Any, *args: Any, **kwargs: Any) -> Any:
        trac_tasks = sorted(task.config.task for task in _tasks_of(task_dict)
                            if TRAC_KEY in (getattr(task.config, "generation_kwargs", None) or {}))
        if trac_tasks:
            if type(lm).__name__ == "CachingLM":
                raise ValueError(f"TrAC tasks {trac_tasks} cannot run with --use_cache: the cache returns one stored "
                                 "response for all K samples and keeps no token logprobs; drop --use_cache")
            if not getattr(type(lm).generate_until, HOOKED, False):
                raise ValueError(f"TrAC tasks {trac_tasks} need token logprobs and an answer probe, which trac-eval "
                                 f"provides for --model vllm and --model hf; the {type(lm).__name__} backend has "
                                 "neither")
        return original(lm, task_dict, *args, **kwargs)

    evaluator.evaluate = evaluate
