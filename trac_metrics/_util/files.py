"""Atomic file writes: a file trac writes holds either its old content or its complete new content, never a part.

Every writer (saved heads, report tables and figures, ``trac score --out`` lines) goes through
:func:`atomic_write`: the content goes to a temporary file in the target's folder, is flushed to the disk (fsync)
and then renamed over the target (``os.replace``, atomic on POSIX and Windows). When anything fails on the way (a
full disk, a file-size limit, an interrupt), the temporary file is removed and the old file is left as it was.

Only regular files are replaced: a target that exists and is not a regular file or a folder (a named pipe, a device,
a socket) is refused, never renamed over: ``--html /dev/null`` must not turn the machine's ``/dev/null`` into a
regular file (docs/guide/reliability.md#writes-are-atomic).

Before a command does any work, :func:`check_output` checks every output of the command together, by one rule
(docs/guide/reliability.md#one-output-rule): it refuses an output path that could not be written (a file where a
folder is expected or the other way round, a path under a file, a missing folder, a folder where no file can be
created, a special file, a name longer than the file system takes), that is one of the command's inputs (a record,
lm-eval samples or results file next to the records, a head it reads: links resolved), that another output of the same
command writes (the page named as one of the report folder's tables), that is a symbolic link the write would
replace, or that lies inside a records folder (every later command would read it as records); so a slow report or
fit never fails only at its end and never destroys what it reads (docs/architecture.md#command-line). It is the one
output check of every command that writes; :func:`atomic_write` refuses a link or a special file again at write time.
"""

from __future__ import annotations

import fnmatch
import os
import secrets
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal


class OutputPathError(ValueError):
    """An output path that cannot be written; the message names the option, the path and the problem."""


def atomic_write(path: str | os.PathLike[str], data: str | bytes, encoding: str = "utf-8") -> None:
    """Replace ``path`` by ``data`` (text is encoded with ``encoding``) atomically, as the module docstring says.

    A failure is an OSError naming ``path`` (not the temporary file) with the operating system's reason; a target
    that is a special file (:func:`special_kind`) or a symbolic link (:func:`link_problem`) is an
    :class:`OutputPathError`, and nothing is written.
    """
    target = Path(path)
    kind = special_kind(target)
    if kind is not None:
        raise OutputPathError(f"{target}: is {kind}, not a regular file; trac writes only regular files")
    if target.is_symlink():
        raise OutputPathError(f"{target}: {link_problem(target)}")
    try:
        _write_then_rename(target, data.encode(encoding) if isinstance(data, str) else data)
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(target)) from error


def _write_then_rename(target: Path, payload: bytes) -> None:
    """Write ``payload`` to a new temporary file next to ``target``, fsync it and rename it over ``target``; on any
    failure remove the temporary file."""
    temporary = target.with_name(_temporary_name(target.name))
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


def _temporary_name(name: str) -> str:
    """The name of the temporary file an atomic write of ``name`` writes first, in the same folder."""
    return f".{name}.{secrets.token_hex(6)}.tmp"


def link_problem(path: Path) -> str:
    """Why a symbolic link is never an output: the rename of an atomic write would replace the link by a regular file
    and leave its target unwritten."""
    return (
        f"is a symbolic link (to {os.readlink(path)}), which the write would replace by a regular file, never writing "
        "its target; name the target itself or another path"
    )


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


@dataclass(frozen=True)
class Output:
    """One path a command writes: ``option`` names it in messages (``--out``), ``expect`` says whether it is a file or
    a folder, ``parents`` whether the writer creates missing folders above it, ``takes`` the names (shell patterns,
    ``*.csv``) of the files a folder output writes inside itself, and ``noun`` what the other outputs' messages call
    it (default: file or folder)."""

    option: str
    path: Path
    expect: Literal["file", "folder"]
    parents: bool = False
    takes: tuple[str, ...] = ()
    noun: str = ""

    def what(self) -> str:
        """How the messages about another output name this one: ``the --html page``."""
        return f"the {self.option} {self.noun or self.expect}"


def check_output(outputs: Sequence[Output], inputs: Mapping[Path, str], records_folder: str) -> None:
    """Refuse, with an :class:`OutputPathError` "OPTION PATH: problem", the first of a command's ``outputs`` that
    breaks the one output rule (the module docstring): :func:`output_problem` against ``inputs`` and the other
    outputs, a file another output folder writes (its ``takes``), or a path inside a folder named ``records_folder``.
    Writes nothing that stays."""
    for output in outputs:
        others = [other for other in outputs if other is not output]
        problem = output_problem(
            output.path,
            output.expect,
            output.parents,
            {**inputs, **{other.path: other.what() for other in others}},
            output.takes,
        )
        problem = problem or _taken_problem(output, others) or _records_folder_problem(output, records_folder)
        if problem is not None:
            raise OutputPathError(f"{output.option} {output.path}: {problem}")


def _taken_problem(output: Output, others: Sequence[Output]) -> str | None:
    """Whether ``output`` has the name of a file that another output folder writes (``--html R/leaderboard.csv``
    beside ``--out R``)."""
    for other in others:
        taken = next((pattern for pattern in other.takes if fnmatch.fnmatchcase(output.path.name, pattern)), None)
        if taken is not None and same_path(output.path.parent, other.path):
            return f"is in {other.what()}, which writes its {taken} files there; choose another path"
    return None


def _records_folder_problem(output: Output, records_folder: str) -> str | None:
    """Whether ``output`` lies inside (or, as a folder, is) a folder named ``records_folder``, as written or with
    links resolved."""
    for path in (Path(os.path.abspath(output.path)), output.path.resolve()):
        folders = path.parts if output.expect == "folder" else path.parts[:-1]
        if records_folder in folders:
            return (
                f"is inside a {records_folder}/ folder, where every later trac command would read what it writes "
                "as records; choose another path"
            )
    return None


def output_problem(
    path: str | os.PathLike[str],
    expect: Literal["file", "folder"],
    parents: bool,
    inputs: Mapping[Path, str] | None = None,
    takes: Sequence[str] = (),
) -> str | None:
    """Why ``path`` cannot be written as ``expect`` says, or None: a special file (:func:`special_kind`), an
    existing path of the other kind, one of ``inputs`` (path → what it is, e.g. "a record file this report reads";
    the same file through any link), a file that is a symbolic link (:func:`link_problem`), an existing entry of a
    folder that the writer would replace (one named by ``takes``) that is not a regular file, a name longer than the
    file system takes (:func:`name_problem`), a path under a file, a missing folder above it (unless the writer
    creates ``parents``), or a folder in which creating a file fails (read-only, no permission: tried with a probe
    file, removed at once, as a permission check alone is wrong for root). Writes nothing that stays."""
    target = Path(path)
    problem = name_problem(target, expect)
    if problem is not None:
        return problem
    kind = special_kind(target)
    if kind is not None:
        return f"is {kind}, not a {'regular file' if expect == 'file' else expect}; trac writes only regular files"
    if target.exists() and target.is_dir() != (expect == "folder"):
        other = "folder" if target.is_dir() else "file"
        return f"is a {other}, not a {expect}"
    for source, what in (inputs or {}).items():
        if same_path(target, source):
            return f"is {source}, {what}; choose another path"
    if expect == "file" and target.is_symlink():
        return link_problem(target)
    if expect == "folder" and target.is_dir():
        problem = _entries_problem(target, takes)
        if problem is not None:
            return problem
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


def _entries_problem(folder: Path, takes: Sequence[str]) -> str | None:
    """The first entry of ``folder`` the writer would replace (its name matches one of ``takes``) that is not a
    regular file: a symbolic link, a folder or a special file."""
    for pattern in takes:
        for entry in sorted(folder.glob(pattern)):
            if entry.is_symlink():
                return f"{entry.name} in it {link_problem(entry)}"
            if not entry.is_file():
                kind = special_kind(entry) or "a folder"
                return f"{entry.name} in it is {kind}, which the write of a {pattern} file would replace"
    return None


def name_problem(target: Path, expect: Literal["file", "folder"]) -> str | None:
    """Whether a name of ``target`` below its nearest existing folder is longer than that file system takes (its
    ``NAME_MAX``, 255 bytes on most): each folder to create, and a file's name with the temporary name an atomic
    write gives it first (:func:`atomic_write`). Checked first: a longer name fails every other look at the path."""
    folder = target if expect == "folder" and os.path.isdir(target) else target.parent
    while not os.path.isdir(folder) and folder != folder.parent:  # False, not an error, for a name too long
        folder = folder.parent
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # no pathconf (Windows), or no limit known
        limit = 255
    created = target.relative_to(folder).parts if target != folder else ()
    for position, name in enumerate(created):
        written = _temporary_name(name) if expect == "file" and position == len(created) - 1 else name
        size = len(os.fsencode(written))
        if size > limit:
            extra = f" with the {size - len(os.fsencode(name))} bytes of its temporary name" if written != name else ""
            return f"the name {name[:40]}… is {size} bytes{extra}; {folder} takes names of at most {limit} bytes"
    return None


def same_path(first: str | os.PathLike[str], second: str | os.PathLike[str]) -> bool:
    """Whether two paths name the same file or folder: the same inode when both exist (links, hard links and
    ``..`` resolved), else the same absolute path with links resolved."""
    try:
        return os.path.samefile(first, second)
    except (OSError, ValueError):  # one does not exist (yet)
        return Path(first).resolve() == Path(second).resolve()
