"""Atomic file writes: a file trac writes holds either its old content or its complete new content, never a part.

Every writer (saved heads, report tables and figures, ``trac score --out`` lines) goes through
:func:`atomic_write`: the content goes to a temporary file in the target's folder, is flushed to the disk (fsync)
and then renamed over the target (``os.replace``, atomic on POSIX and Windows). When anything fails on the way (a
full disk, a file-size limit, an interrupt), the temporary file is removed and the old file is left as it was.

Before a command does any work, :func:`check_output` refuses an output path that could not be written (a file where
a folder is expected or the other way round, a path under a file, a missing folder, a folder where no file can be
created), so a slow report or fit never fails only at its end (docs/architecture.md#command-line).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Literal


class OutputPathError(ValueError):
    """An output path that cannot be written; the message names the option, the path and the problem."""


def atomic_write(path: str | os.PathLike[str], data: str | bytes, encoding: str = "utf-8") -> None:
    """Replace ``path`` by ``data`` (text is encoded with ``encoding``) atomically, as the module docstring says.

    A failure is an OSError naming ``path`` (not the temporary file) with the operating system's reason.
    """
    target = Path(path)
    try:
        _write_then_rename(target, data.encode(encoding) if isinstance(data, str) else data)
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(target)) from error


def _write_then_rename(target: Path, payload: bytes) -> None:
    """Write ``payload`` to a new temporary file next to ``target``, fsync it and rename it over ``target``; on any
    failure remove the temporary file."""
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    # O_EXCL: never reuse a file that someone else created; mode 0o666 lets the umask decide, as open(path, "w") does
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with open(descriptor, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def check_output(path: str | os.PathLike[str], option: str, expect: Literal["file", "folder"], parents: bool) -> None:
    """Refuse, with an :class:`OutputPathError` "OPTION PATH: problem", an output path that cannot be written
    (:func:`output_problem`). Writes nothing that stays."""
    problem = output_problem(path, expect, parents)
    if problem is not None:
        raise OutputPathError(f"{option} {Path(path)}: {problem}")


def output_problem(path: str | os.PathLike[str], expect: Literal["file", "folder"], parents: bool) -> str | None:
    """Why ``path`` cannot be written as ``expect`` says, or None: an existing path of the other kind, a path under
    a file, a missing folder above it (unless the writer creates ``parents``), or a folder in which creating a file
    fails (read-only, no permission: tried with a probe file, removed at once, as a permission check alone is wrong
    for root). Writes nothing that stays."""
    target = Path(path)
    if target.exists() and target.is_dir() != (expect == "folder"):
        other = "folder" if target.is_dir() else "file"
        return f"is a {other}, not a {expect}"
    folder = target if target.is_dir() else target.parent
    while not folder.exists() and parents and folder != folder.parent:
        folder = folder.parent
    if not folder.exists():
        return f"the folder {folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    probe = folder / f".trac-write-probe.{secrets.token_hex(6)}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as error:
        return f"cannot create files in {folder} ({error.strerror})"
    probe.unlink(missing_ok=True)
    return None
