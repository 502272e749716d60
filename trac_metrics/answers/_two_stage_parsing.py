"""Two-stage parsing of LaTeX for the symbolic step (docs/method.md#the-symbolic-work-budget): Math-Verify's LaTeX
parser (latex2sympy2's ANTLR grammar) first in ANTLR's SLL prediction mode, then, only when that reports a syntax
error, in its default LL mode.

Most of the time of a first parse of a short answer is ANTLR's full-context (LL) prediction, which its runtime never
caches: ``\\sin(2^{100})`` takes about 30 ms to parse however many answers were parsed before, and about 5 ms in SLL
mode. ANTLR guarantees that an SLL parse either gives the tree the LL parse gives or reports a syntax error (the
two-stage strategy of its documentation, ``PredictionMode.SLL``), so the parsed answers are the same; an answer the
grammar needs full context for pays both stages.

The switch is scoped: latex2sympy2 keeps its own behaviour outside :func:`two_stage_parsing` (a user's Math-Verify
calls in the same process are untouched). Where latex2sympy2 or the ANTLR runtime lacks what the switch needs (another
release), it warns once and steps aside: parsing stays in one stage.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from trac_metrics._warnings import TracWarning

_SLL: contextvars.ContextVar[bool] = contextvars.ContextVar("trac_sll_parsing", default=False)


class _SllSyntaxError(Exception):
    """A syntax error in the SLL stage: parse again in LL mode."""


def _install() -> bool:
    """Wrap latex2sympy2's ``create_parser`` and ``parse`` (once); False, with a warning, where they cannot be."""
    try:
        from antlr4.atn.PredictionMode import PredictionMode
        from antlr4.error.ErrorListener import ErrorListener
        from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy

        create_parser: Callable[..., Any] = _Latex2Sympy.create_parser
        parse: Callable[..., Any] = _Latex2Sympy.parse
    except (ImportError, AttributeError) as error:  # another release of latex2sympy2 or the ANTLR runtime
        warnings.warn(f"two-stage LaTeX parsing is off ({error}): parsing in one stage", TracWarning, stacklevel=3)
        return False

    class SllBail(ErrorListener):  # type: ignore[misc]
        def syntaxError(self, recognizer: Any, offendingSymbol: Any, line: int, column: int, msg: str, e: Any) -> None:  # noqa: N802, N803
            raise _SllSyntaxError(msg)

    def create_sll_parser(self: Any, latex_str: str) -> Any:
        parser = create_parser(self, latex_str)
        if _SLL.get() and hasattr(parser, "_interp"):
            parser.removeErrorListeners()
            parser.addErrorListener(SllBail())
            parser._interp.predictionMode = PredictionMode.SLL
        return parser

    def parse_in_two_stages(self: Any, latex_str: str) -> Any:
        if not _SLL.get():
            return parse(self, latex_str)
        try:
            return parse(self, latex_str)
        except _SllSyntaxError:
            token = _SLL.set(False)
            try:
                return parse(self, latex_str)
            finally:
                _SLL.reset(token)

    _Latex2Sympy.create_parser = create_sll_parser
    _Latex2Sympy.parse = parse_in_two_stages
    return True


_INSTALLED = _install()


@contextlib.contextmanager
def two_stage_parsing() -> Iterator[None]:
    """Inside the block (this thread / task), latex2sympy2 parses in two stages (module docstring)."""
    token = _SLL.set(_INSTALLED)
    try:
        yield
    finally:
        _SLL.reset(token)
