"""The answer kind of an lm-eval task's reference, for TrAC on tasks that do not name one
(docs/method.md#task-scored-labels).

- ``mc``: an option letter, bare or in parentheses (``B``, ``(B)``, ``B.``);
- ``math``: a number or an expression: once LaTeX commands are removed, no word of three or more letters is left
  (``72``, ``-3.5``, ``\\frac{1}{2}``, ``x^2 + 1``, ``(1, 2)``);
- ``text``: anything else (``Yes``, ``valid``, ``\\text{Tuesday}``).

A GSM8K-style target (a worked solution ending ``#### <answer>``) is read after its last ``####``
(:func:`task_reference`).
"""

from __future__ import annotations

import re

_OPTION_LETTER = re.compile(r"\(?([A-Z])\)?\.?")
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+")
_WORD = re.compile(r"[A-Za-z]{3,}")
_TEXT_COMMAND = re.compile(r"\\(?:text|textbf|textit|mathrm|mbox)\s*\{")
_FINAL_MARK = "####"


def task_reference(target: str) -> str:
    """The reference TrAC stores for a task's target: stripped, and after the last ``####`` when it has one."""
    if _FINAL_MARK in target:
        target = target.rsplit(_FINAL_MARK, 1)[1]
    return target.strip()


def infer_answer_kind(reference: str) -> str:
    """``mc``, ``math`` or ``text`` for ``reference`` (module docstring)."""
    text = reference.strip().strip("$").strip()
    if _OPTION_LETTER.fullmatch(text):
        return "mc"
    if not text or _TEXT_COMMAND.search(text):
        return "text"
    return "text" if _WORD.search(_LATEX_COMMAND.sub(" ", text)) else "math"
