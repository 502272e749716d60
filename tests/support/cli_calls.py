"""Calls of the ``trac`` command line in-process (``cli.main``), shared by its tests: a command that must fail
cleanly, and a guard that fails the test when a command starts work before its output check."""

from __future__ import annotations

import pytest

from trac_metrics import cli


def cli_error(capsys: pytest.CaptureFixture[str], *argv: object) -> str:
    """Run a command that must fail cleanly; return its one-line message."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main([str(arg) for arg in argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = [line for line in err.splitlines() if line.startswith("trac ")]
    return line


def refuse_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make reading records or a head fail the test: an unusable output path must be refused before."""
    for name in ("load_pairs", "load_head"):
        monkeypatch.setattr(cli, name, lambda *args, **kwargs: pytest.fail("work started before the output check"))
