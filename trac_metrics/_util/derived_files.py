"""Files a source checkout derives from code (docs/architecture.md#method-registry: ``task_configs/trac_math.yaml``;
``task_configs/trac_bbh_subtasks/``): one command line for each generator, which rewrites its files or, with
``--check``, only compares them and exits with status 1 when any differs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from trac_metrics._util.files import atomic_write

Files = Mapping[Path, str]
"""Path → text of the files a generator owns under its target (a file or a folder)."""


def generate_or_check(
    argv: Sequence[str] | None,
    prog: str,
    description: str | None,
    default: Path,
    generated: Callable[[Path], Files],
    present: Callable[[Path], Files],
) -> None:
    """Parse ``[PATH] [--check]`` (PATH defaults to ``default``): write every file of ``generated(PATH)``
    atomically, or with ``--check`` exit with status 1, naming ``prog``, when ``present(PATH)`` (what is there now of
    the files the generator owns) differs from it."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("path", type=Path, nargs="?", default=default, help=f"default: {default}")
    parser.add_argument("--check", action="store_true", help="only compare; exit status 1 when a file differs")
    args = parser.parse_args(argv)
    files = generated(args.path)
    if args.check:
        if dict(present(args.path)) != dict(files):
            sys.exit(f"{args.path} differs from its generator: run {prog}")
        return
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text)
    print(f"wrote {len(files)} file{'s' if len(files) != 1 else ''} to {args.path}")
