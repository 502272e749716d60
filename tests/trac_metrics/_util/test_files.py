"""Atomic writes (trac_metrics._util.files): a write that fails half-way leaves the old file byte-identical and no
temporary file behind."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest
from full_disk import fill_disk_after, folder_bytes

from trac_metrics._util import files


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "table.csv"
    files.atomic_write(target, "old,content\n")
    fill_disk_after(monkeypatch)
    for data in ("new,content that is longer\n", b"\x89PNG new"):
        with pytest.raises(OSError, match="No space left on device") as error:
            files.atomic_write(target, data)
        assert error.value.errno == errno.ENOSPC and error.value.filename == str(target)
        assert folder_bytes(tmp_path) == {"table.csv": b"old,content\n"}
    with pytest.raises(OSError):
        files.atomic_write(tmp_path / "new.csv", "x" * 100)
    assert folder_bytes(tmp_path) == {"table.csv": b"old,content\n"}
    monkeypatch.undo()
    files.atomic_write(target, b"complete")
    assert folder_bytes(tmp_path) == {"table.csv": b"complete"}


def test_a_named_pipe_is_never_replaced_by_an_atomic_write(tmp_path: Path) -> None:
    """The rename of an atomic write would turn a pipe (or a device) into a regular file: it is refused, the pipe
    kept, and no temporary file is left."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    with pytest.raises(files.OutputPathError, match=f"{pipe}: is a named pipe, not a regular file"):
        files.atomic_write(pipe, "page")
    assert stat.S_ISFIFO(os.stat(pipe).st_mode) and [path.name for path in tmp_path.iterdir()] == ["pipe"]
    assert files.special_kind(pipe) == "a named pipe" and files.special_kind(tmp_path) is None
    assert files.special_kind(tmp_path / "missing") is None


def test_the_output_check_resolves_links_to_an_input(tmp_path: Path) -> None:
    source = tmp_path / "records.jsonl"
    source.write_text("{}\n")
    (tmp_path / "link").symlink_to(source)
    inputs = {source: "a record file this command reads"}
    for path in (source, tmp_path / "link", tmp_path / "sub" / ".." / "records.jsonl"):
        assert files.output_problem(path, "file", parents=True, inputs=inputs) == (
            f"is {source}, a record file this command reads; choose another path"
        )
    assert files.output_problem(tmp_path / "page.html", "file", parents=False, inputs=inputs) is None
