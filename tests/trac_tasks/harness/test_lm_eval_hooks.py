"""The table lm-eval prints for a TrAC task fits on one screen (docs/architecture.md#lm-eval-patches): its headline
rows by default, every row with ``trac_table: all`` in the task's metadata; the results themselves keep every key."""

from __future__ import annotations

import copy
import warnings
from types import SimpleNamespace

import lm_eval.utils
import numpy as np
import pytest
from record_factory import synthetic_question, with_every_input

from trac_metrics._warnings import TracWarning
from trac_metrics.answers import UNDECIDED_KEY
from trac_metrics.features.probe_agreement import AGREE_CORRECT_KEY, AGREE_WRONG_KEY
from trac_metrics.methods import ACCURACY_KEYS
from trac_metrics.reporting.summary_table import HEADLINE_METRICS, headline_keys, method_keys
from trac_tasks.harness.lm_eval_hooks import TABLE_SWITCH, headline_view, refuse_unknown_table_switch
from trac_tasks.harness.task_functions import CACHED_SHARE_METRIC, aggregate_trac, process_results

K, TASK = 4, "trac_demo"


def task_results(p_true: bool = False) -> dict[str, float]:
    """``acc``, ``maj_acc`` and every ``<method>_<metric>`` of a task, as the ``trac`` aggregation returns them."""
    rng = np.random.default_rng(5)
    documents = []
    for doc_id in range(30):
        records = synthetic_question(rng, doc_id, rng.random() < 0.5, k=K, signal=0.5, task=TASK)
        records = with_every_input(records, rng) if p_true else records
        documents.append(process_results({}, [[SimpleNamespace(record=record) for record in records]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        metrics = dict(aggregate_trac([document["trac"] for document in documents]))
    return {"acc": float(np.mean([d["acc"] for d in documents])), "maj_acc": 0.5, **metrics}


def lm_eval_results(metrics: dict[str, float], filter_name: str = "none", **metadata: str) -> dict:
    """lm-eval's results dict for one task, each number with its ``N/A`` standard error."""
    keys = {"alias": TASK}
    for name, value in metrics.items():
        keys[f"{name},{filter_name}"] = value
        keys[f"{name}_stderr,{filter_name}"] = "N/A"
    return {
        "results": {TASK: keys},
        "configs": {TASK: {"task": TASK, "metadata": {"version": 1.0, **metadata}}},
        "versions": {TASK: 1.0},
        "n-shot": {TASK: 0},
        "higher_is_better": {TASK: {"acc": True, "maj_acc": True}},
        "group_subtasks": {TASK: []},
    }


def printed_metrics(table: str) -> list[str]:
    """The metric of every row of a table lm-eval printed."""
    rows = [line for line in table.splitlines() if line.startswith("|")][2:]
    return [row.split("|")[5].strip() for row in rows]


@pytest.fixture(scope="module")
def metrics() -> dict[str, float]:
    return task_results()


def test_the_printed_table_of_a_trac_task_fits_on_one_screen(metrics: dict[str, float]) -> None:
    results = lm_eval_results(metrics)
    before = copy.deepcopy(results)
    table = lm_eval.utils.make_table(results)
    shown = printed_metrics(table)
    expected = set(headline_keys()) - {"p_true_" + m for m in HEADLINE_METRICS}
    expected |= {CACHED_SHARE_METRIC, UNDECIDED_KEY, AGREE_CORRECT_KEY, AGREE_WRONG_KEY}
    assert len(shown) <= 27 and set(shown) == expected, (
        "the cache share, undecided count, agreement beside the headline"
    )
    assert {"acc", "maj_acc", "trac_auroc", "trac_aurc", "trac_ece", "sc_modal_auroc"} <= set(shown)
    assert f"TrAC: {len(metrics) - len(shown)} more metric rows are in the results file" in table
    assert f'--metadata \'{{"{TABLE_SWITCH}": "all"}}\'' in table
    assert results == before, "only the printed copy is shortened"


def test_with_p_true_on_the_table_still_fits() -> None:
    shown = printed_metrics(lm_eval.utils.make_table(lm_eval_results(task_results(p_true=True))))
    assert "p_true_auroc" in shown and len(shown) <= 27


def test_trac_table_all_prints_every_row(metrics: dict[str, float]) -> None:
    shown = printed_metrics(lm_eval.utils.make_table(lm_eval_results(metrics, **{TABLE_SWITCH: "all"})))
    assert sorted(shown) == sorted(metrics) and len(shown) > 150


def test_a_task_switched_to_trac_keeps_its_own_metrics(metrics: dict[str, float]) -> None:
    results = lm_eval_results(metrics, filter_name="trac")
    results["results"][TASK].update({"exact_match,strict-match": 0.4, "exact_match_stderr,strict-match": 0.1})
    table = lm_eval.utils.make_table(results)
    assert "exact_match" in printed_metrics(table) and len(printed_metrics(table)) <= 27


def test_a_group_keeps_every_row_when_one_of_its_tasks_asks(metrics: dict[str, float]) -> None:
    results = lm_eval_results(metrics, **{TABLE_SWITCH: "all"})
    results["groups"] = {"trac_math": {"alias": "trac_math", **results["results"][TASK]}}
    results["group_subtasks"] = {"trac_math": ["trac_aime"], "trac_aime": [TASK], TASK: []}
    assert headline_view(results, "groups") is None
    results["configs"][TASK]["metadata"].pop(TABLE_SWITCH)
    _, hidden = headline_view(results, "groups")
    assert hidden == len(metrics) - len(headline_keys() & set(metrics)) - 4  # cache share, undecided, agreement


def test_tables_without_trac_metrics_are_left_alone() -> None:
    results = lm_eval_results({"acc": 0.5, "exact_match": 0.25})
    assert headline_view(results, "results") is None
    assert headline_view({"unrelated": 1}, "results") is None
    assert lm_eval.utils.make_table(results) == lm_eval.utils.make_table.__wrapped__(results)


def test_the_headline_keys_are_accuracy_and_registered_method_keys() -> None:
    keys = headline_keys()
    assert set(ACCURACY_KEYS) <= keys and keys - set(ACCURACY_KEYS) <= method_keys()
    assert len(keys) <= 25


def test_an_unknown_table_switch_is_refused_before_generation() -> None:
    def task(**metadata: str) -> SimpleNamespace:
        return SimpleNamespace(config=SimpleNamespace(task="t", metadata=metadata))

    refuse_unknown_table_switch({"a": task(), "b": task(**{TABLE_SWITCH: "all"}), "c": task(trac_table="headline")})
    with pytest.raises(ValueError, match="task t: metadata trac_table='every' must be one of headline, all"):
        refuse_unknown_table_switch({"group": {"a": task(trac_table="every")}})


def test_lm_evals_own_warnings_still_name_the_callers_line() -> None:
    """docs/architecture.md#lm-eval-patches: a warning lm-eval attributes to its caller (``stacklevel=2``, its
    deprecation warnings) names the line of the user's code that called it, not our wrapper around ``TaskManager``
    (a DeprecationWarning shows by default only when it names ``__main__``)."""
    import lm_eval.tasks

    from trac_tasks.harness import lm_eval_hooks

    wrapper = lm_eval.tasks.TaskManager.__init__
    assert wrapper.__code__.co_filename == lm_eval_hooks.__file__, "the start-up hook wraps it"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lm_eval.tasks.TaskManager(verbosity="INFO")  # deprecated argument: lm-eval warns with stacklevel=2
    (deprecation,) = [warning for warning in caught if "verbosity" in str(warning.message)]
    assert deprecation.category is DeprecationWarning
    assert (deprecation.filename, deprecation.lineno) == (__file__, _line_of("TaskManager(verbosity="))


def _line_of(text: str) -> int:
    lines = open(__file__, encoding="utf-8").read().splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line and "_line_of" not in line)
