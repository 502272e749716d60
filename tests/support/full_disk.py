"""A disk that fills up mid-write, for the tests of atomic writes (docs/architecture.md#command-line)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from trac_metrics._util import files


class _FullDisk:
    """A file handle whose first write puts ``n_bytes`` on the disk and then fails with ENOSPC."""

    def __init__(self, handle: Any, n_bytes: int) -> None:
        self.handle, self.n_bytes = handle, n_bytes

    def write(self, data: bytes) -> int:
        self.handle.write(data[: self.n_bytes])
        self.handle.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.handle.close()


def fill_disk_after(monkeypatch: pytest.MonkeyPatch, n_bytes: int = 10, complete_files: int = 0) -> None:
    """Make the writes of :mod:`trac_metrics._util.files` run out of disk space after ``n_bytes``, from the file after
    the first ``complete_files`` on."""
    opened = iter(range(10**9))

    def full_disk_open(*args: Any, **kwargs: Any) -> Any:
        handle = open(*args, **kwargs)  # noqa: SIM115 (closed by the caller's with block)
        return handle if next(opened) < complete_files else _FullDisk(handle, n_bytes)

    monkeypatch.setattr(files, "open", full_disk_open, raising=False)


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file of ``folder`` (temporary files included) with its content."""
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}
