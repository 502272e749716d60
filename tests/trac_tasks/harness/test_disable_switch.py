"""``TRAC_EVAL_DISABLE`` (docs/guide/reliability.md#turning-trac-eval-off): the usual truthy spellings turn trac-eval
off, an unknown value leaves it on with a warning, and a TrAC task of a run with trac-eval off is refused when lm-eval
loads its YAML, before any generation (no engine needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest

from trac_tasks.harness import autoload
from trac_tasks.harness.lm_eval_hooks import task_config_dir

TASK_FUNCTIONS = "trac_tasks.harness.task_functions"


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "Yes", "on", " 1", "yes\n", "\tOn "])
def test_the_usual_truthy_spellings_turn_trac_eval_off(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAC_EVAL_DISABLE", value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert autoload.disabled()


@pytest.mark.parametrize("value", [None, "", "0", "false", "No", " off "])
def test_the_usual_falsy_spellings_leave_it_on_without_a_word(
    value: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if value is None:
        monkeypatch.delenv("TRAC_EVAL_DISABLE", raising=False)
    else:
        monkeypatch.setenv("TRAC_EVAL_DISABLE", value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not autoload.disabled()


@pytest.mark.parametrize("value", ["2", "disable", "y", "1 1"])
def test_an_unknown_value_leaves_it_on_with_a_warning(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAC_EVAL_DISABLE", value)
    with pytest.warns(RuntimeWarning, match=f"TRAC_EVAL_DISABLE={value!r} is not a value it knows.*stays on"):
        assert not autoload.disabled()


@pytest.mark.subprocess
def test_the_start_up_hook_reads_the_same_spellings() -> None:
    code = "import json, sys; print(json.dumps(any(type(f).__name__ == '_PostImportFinder' for f in sys.meta_path)))"
    hooked = {}
    for value in (" Yes ", "maybe"):
        result = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
            env={**os.environ, "TRAC_EVAL_DISABLE": value},
        )
        hooked[value] = (json.loads(result.stdout.strip().splitlines()[-1]), "stays on" in result.stderr)
    assert hooked == {" Yes ": (False, False), "maybe": (True, True)}


def test_a_trac_task_is_refused_when_lm_eval_loads_it_with_trac_eval_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the task loaded, generated every sample and failed in process_results."""
    from lm_eval.tasks import TaskManager

    monkeypatch.setenv("TRAC_EVAL_DISABLE", "true")
    monkeypatch.delitem(
        sys.modules, TASK_FUNCTIONS, raising=False
    )  # imported afresh, as in a new run; restored afterwards
    manager = TaskManager(include_path=str(task_config_dir()), include_defaults=False)
    with pytest.raises(ImportError) as error:
        manager.load(["trac_demo"])
    cause = error.value.__cause__
    assert isinstance(cause, ImportError)
    assert str(cause).startswith("TRAC_EVAL_DISABLE='true' turns trac-eval off, so no backend records what a TrAC task")
    assert "Unset TRAC_EVAL_DISABLE to run it" in str(cause)
    assert TASK_FUNCTIONS not in sys.modules
