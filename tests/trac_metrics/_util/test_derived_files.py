"""The generators of derived files (trac_metrics._util.derived_files: ``task_configs/trac_math.yaml`` and
``task_configs/trac_bbh_subtasks/``) write their files, and ``--check`` passes on what they wrote and fails, with
status 1, on a missing, changed or extra file."""

from __future__ import annotations

from pathlib import Path

import pytest

from trac_metrics.methods import group_yaml
from trac_tasks.data import bbh_subtask_tasks


def _check_fails(main, target: Path) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([str(target), "--check"])
    assert stopped.value.code != 0 and f"{target} differs from its generator: run python -m" in str(stopped.value.code)


def test_the_group_yaml_is_written_then_checked(tmp_path: Path, capsys) -> None:
    target = tmp_path / "trac_math.yaml"
    _check_fails(group_yaml.main, target)  # missing
    group_yaml.main([str(target)])
    assert target.read_text(encoding="utf-8") == group_yaml.group_yaml()
    assert f"wrote 1 file to {target}" in capsys.readouterr().out
    group_yaml.main([str(target), "--check"])
    target.write_text(group_yaml.group_yaml() + "# edited\n", encoding="utf-8")
    _check_fails(group_yaml.main, target)


def test_the_bbh_subtask_folder_is_written_then_checked(tmp_path: Path) -> None:
    folder = tmp_path / "trac_bbh_subtasks"
    _check_fails(bbh_subtask_tasks.main, folder)
    bbh_subtask_tasks.main([str(folder)])
    written = {path.name: path.read_text(encoding="utf-8") for path in folder.glob("*.yaml")}
    assert written == {path.name: text for path, text in bbh_subtask_tasks.generated(folder).items()}
    assert len(written) == 28
    bbh_subtask_tasks.main([str(folder), "--check"])
    (folder / "trac_bbh_extra.yaml").write_text("task: extra\n", encoding="utf-8")
    _check_fails(bbh_subtask_tasks.main, folder)
