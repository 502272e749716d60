"""Generate ``task_configs/trac_math.yaml``, the ``trac_math`` group, from the method registry
(docs/architecture.md#method-registry): its ``aggregate_metric_list`` averages ``acc``, ``maj_acc`` and every
``<method>_<metric>`` of the methods every TrAC task reports (:func:`trac_metrics.methods.group_methods`).

``python -m trac_metrics.methods.group_yaml`` rewrites the file of a source checkout (or ``PATH``); ``--check``
only compares and exits with status 1 when the file differs from the registry. The YAML is a derived file: rerun
this after adding a method.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from trac_metrics._util.derived_files import generate_or_check
from trac_metrics.methods.registry import ACCURACY_KEYS, group_methods
from trac_metrics.selective import METRIC_NAMES

GROUP_FILE = Path(__file__).resolve().parents[2] / "task_configs" / "trac_math.yaml"
"""The group's YAML in a source checkout."""

HEADER = """\
# The math benchmarks (docs/method.md#dataset-sources) as one group: GSM8K, MATH500, Minerva OCW, OlympiadBench, AIME
# 2024+2025. `lm_eval --tasks trac_math` runs the five tasks; each is cross-fitted and scored on its own
# (docs/method.md#cross-fitting-protocol), and the group row reports the unweighted mean over the tasks (weight_by_size:
# false: the paper's macro average, so GSM8K's 1319 questions do not outweigh AIME's 60). A metric a task does not
# report (maj_acc with K = 1) is averaged over the tasks that report it; a task whose metric is NaN (too few questions)
# makes the mean NaN.
"""
TASKS = ("trac_gsm8k", "trac_math500", "trac_minerva", "trac_olympiadbench", "trac_aime")


def _averaged(metric: str) -> str:
    return f"  - {{metric: {metric}, filter_list: none, weight_by_size: false}}"


def group_yaml() -> str:
    """The text of ``trac_math.yaml`` for the methods registered now."""
    lines = [
        "group: trac_math",
        "task:",
        *(f"  - {task}" for task in TASKS),
        "aggregate_metric_list:",
        *map(_averaged, ACCURACY_KEYS),
    ]
    for method in group_methods():
        lines += [f"  # {method.name}", *(_averaged(f"{method.name}_{metric}") for metric in METRIC_NAMES)]
    lines += ["metadata:", "  version: 1.0"]
    return HEADER + "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    """Rewrite the group's YAML, or ``--check`` it (:func:`~trac_metrics._util.derived_files.generate_or_check`)."""
    generate_or_check(
        argv,
        "python -m trac_metrics.methods.group_yaml",
        __doc__,
        GROUP_FILE,
        lambda path: {path: group_yaml()},
        lambda path: {path: path.read_text(encoding="utf-8")} if path.is_file() else {},
    )


if __name__ == "__main__":
    main()
