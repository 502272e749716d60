"""Atomic file writes: a file trac writes holds either its old content or its complete new content, never a part.

Every writer (saved heads, report tables and figures, ``trac score --out`` lines) goes through
:func:`atomic_write`: the content goes to a temporary file in the target's folder, is flushed to the disk (fsync)
and then renamed over the target (``os.replace``, atomic on POSIX and Windows). When anything fails on the way (a
full disk, a file-size limit, an interrupt), the temporary file is removed and the old file is left as it was.

Only regular files are replaced: a target that exists and is not a regular file or a folder (a named pipe, a device,
a socket) is refused, never renamed over: ``--html /dev/null`` must not turn the machine's ``/dev/null`` into a
regular file (docs/guide/reliability.md#writes-are-atomic).

Before a command does any work, :func:`check_output` refuses an output path that could not be written (a file where
a folder is expected or the other way round, a path under a file, a missing folder, a folder where no file can be
created, a special file) or that is one of the command's inputs (a record, samples or head file it reads, or another
of its outputs: links resolved), so a slow report or fit never fails only at its end and never destroys what it
reads (docs/architecture.md#command-line). It is the one output check of every command that writes.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Literal


class OutputPathError(ValueError):
    """An output path that cannot be written; the message names the option, the path and the problem."""


def atomic_write(path: str | os.PathLike[str], data: str | bytes, encoding: str = "utf-8") -> None:
    """Replace ``path`` by ``data`` (text is encoded with ``encoding``) atomically, as the module docstring says.

    A failure is an OSError naming ``path`` (not the temporary file) with the operating system's reason; a target
    that is a special file (:func:`special_kind`) is an :class:`OutputPathError`, and nothing is written.
    """
    target = Path(path)
    kind = special_kind(target)
    if kind is not None:
        raise OutputPathError(f"{target}: is {kind}, not a regular file; trac writes only regular files")
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


def special_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a folder (links followed): ``"a named pipe"``,
    ``"a character device"``, ``"a block device"``, ``"a socket"`` or ``"a special file"``; None otherwise."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, a dangling link, a path the system cannot hold
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kinds = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    kinds += ((stat.S_ISSOCK, "a socket"),)
    return next((name for test, name in kinds if test(mode)), "a special file")


def check_output(
    path: str | os.PathLike[str],
    option: str,
    expect: Literal["file", "folder"],
    parents: bool,
    inputs: Mapping[Path, str] | None = None,
) -> None:
    """Refuse, with an :class:`OutputPathError` "OPTION PATH: problem", an output path that cannot be written or
    would replace one of ``inputs`` (:func:`output_problem`). Writes nothing that stays."""
    problem = output_problem(path, expect, parents, inputs)
    if problem is not None:
        raise OutputPathError(f"{option} {Path(path)}: {problem}")


def output_problem(
    path: str | os.PathLike[str],
    expect: Literal["file", "folder"],
    parents: bool,
    inputs: Mapping[Path, str] | None = None,
) -> str | None:
    """Why ``path`` cannot be written as ``expect`` says, or None: a special file (:func:`special_kind`), an
    existing path of the other kind, one of ``inputs`` (path → what it is, e.g. "a record file this report reads";
    the same file through any link), a path under a file, a missing folder above it (unless the writer creates
    ``parents``), or a folder in which creating a file fails (read-only, no permission: tried with a probe file,
    removed at once, as a permission check alone is wrong for root). Writes nothing that stays."""
    target = Path(path)
    kind = special_kind(target)
    if kind is not None:
        return f"is {kind}, not a {'regular file' if expect == 'file' else expect}; trac writes only regular files"
    if target.exists() and target.is_dir() != (expect == "folder"):
        other = "folder" if target.is_dir() else "file"
        return f"is a {other}, not a {expect}"
    for source, what in (inputs or {}).items():
        if same_path(target, source):
            return f"is {source}, {what}; choose another path"
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


def same_path(first: str | os.PathLike[str], second: str | os.PathLike[str]) -> bool:
    """Whether two paths name the same file or folder: the same inode when both exist (links, hard links and
    ``..`` resolved), else the same absolute path with links resolved."""
    try:
        return os.path.samefile(first, second)
    except (OSError, ValueError):  # one does not exist (yet)
        return Path(first).resolve() == Path(second).resolve()
