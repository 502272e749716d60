"""Atomic file writes: a file trac writes holds either its old content or its complete new content, never a part.

Every writer (saved heads, report tables and figures, ``trac score --out`` lines) goes through
:func:`atomic_write`: the content goes to a temporary file in the target's folder, is flushed to the disk (fsync)
and then renamed over the target (``os.replace``, atomic on POSIX and Windows). When anything fails on the way (a
full disk, a file-size limit, an interrupt), the temporary file is removed and the old file is left as it was.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


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
