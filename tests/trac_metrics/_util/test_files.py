"""Atomic writes (trac_metrics._util.files): a write that fails half-way leaves the old file byte-identical and no
temporary file behind."""

from __future__ import annotations

import errno
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
