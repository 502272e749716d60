"""Answer extraction, normalization and deterministic answer equivalence (docs/method.md#answers-and-labels).

Three answer kinds cover the benchmarks (docs/method.md#answer-kinds; formats in docs/method.md#dataset-sources):

- ``"math"``: GSM8K, MATH500, Minerva OCW, OlympiadBench, AIME. The answer is the content of the last
  ``\\boxed{...}`` (the prompt asks for it), else a "final answer is" / "Answer:" / ``####`` phrase, else the
  last number of the response. A response whose last box never closes was cut off while stating its answer: it
  has none (every kind).
- ``"mc"``: GPQA-Diamond and the option-letter BBH subtasks. The answer is an option letter A–R.
- ``"text"``: the free-form BBH subtasks (True/False, Yes/No, valid/invalid, word lists, numbers, dyck
  sequences).

The same normalizer serves the primary answer a, the probe answer ã (docs/method.md#probe-decoding-and-cutting) and the
reference a*. ``equivalent`` is the deterministic relation behind e = 1[ã ≡ a] (docs/method.md#pce-features), the
labels z (docs/method.md#labels) and the answer classes b of the vote shares π_b
(docs/method.md#answer-classes-and-vote-shares). It needs no reference answer and is symmetric.

Math equivalence, in order: normalized-string equality; for two plain numbers (decimals, e- and scientific
notation, fractions), exact rational arithmetic with a tolerance only where a decimal is written (the smaller of
1e-6 relative and half a unit of its last decimal place: integers and fractions compare exactly), which then
decides; for two matrices / vectors / tuples / intervals / sets, entry by entry with these same rules (matrices of
the same shape, sets in any order), which then decides; otherwise Math-Verify (``math_verify.parse`` +
``math_verify.verify`` in both directions, sympy underneath), with the decimals it parses made exact rationals, so
it compares numbers exactly too (its own float rounding to 6 places is never used). Math-Verify's own
signal-based timeouts only work on the main thread, so they are switched off and the work is bounded here
instead: pairs that could hang inside one C call (huge powers, factorials or binomials of large numbers,
logarithms next to long numbers), inputs longer than ``_MAX_SYMBOLIC_CHARS`` and word-like answers never reach
sympy, and every comparison gets a wall-time budget of ``_SYMBOLIC_BUDGET_S`` seconds (SIGALRM timer on the main
thread, a thread-local trace function on other threads); a comparison that runs out counts as not equivalent.
Only that budget can make a result depend on machine load, and no ordinary answer comes near it.

Override: ``with use_equivalence(fn): ...`` replaces the relation by a user function
``fn(answer, other, kind) -> bool`` inside the block (``trac rescore --equivalence MODULE:FUNCTION``). It takes
effect in :func:`equivalent` itself, before any cache, so it reaches every label, agreement e and answer class
computed through this module, and the caches (which only hold the built-in relation's results on normalized
strings) never carry a result from one override into another.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import NamedTuple

from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
from sympy import Basic, Float, MatrixBase, Rational

ANSWER_KINDS = ("math", "mc", "text")

_REL_TOL = Fraction(1, 10**6)
_MAX_NUMBER_CHARS = 1000  # longer numbers compare as strings (Python parses at most 4300 digits into an int)
_MAX_SYMBOLIC_CHARS = 300
_MAX_EXPONENT_DIGITS = 4
_MAX_LITERAL_DIGITS = 30
_MAX_LOGARITHM_PAIR_DIGITS = 6
_MAX_SYMBOLIC_ELEMENTS = 8
_SYMBOLIC_BUDGET_S = 1.5
_CACHE_SIZE = 1 << 16


class _DisabledTimeoutNotice(logging.Filter):
    """Drops Math-Verify's one-time warning that its timeouts are off: this module bounds the work itself
    (``_too_costly_for_sympy``, ``_time_limit``), so the warning would only mislead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Timeout is disabled")


for _logger_name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_logger_name).addFilter(_DisabledTimeoutNotice())


def _check_kind(kind: str) -> None:
    if kind not in ANSWER_KINDS:
        raise ValueError(f"answer kind must be one of {ANSWER_KINDS}, got {kind!r}")


def _check_str(value: object, name: str) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a str, got {type(value).__name__}")


# ----------------------------------------------------------------------------------------------------------
# Brace-balanced groups
# ----------------------------------------------------------------------------------------------------------

_UNESCAPED_BRACE_RE = re.compile(r"(?<!\\)[{}]")


def _matching_braces(text: str) -> dict[int, int]:
    """Map the index of every closed, unescaped ``{`` of ``text`` to the index of its ``}`` (one linear pass)."""
    closing: dict[int, int] = {}
    stack: list[int] = []
    for match in _UNESCAPED_BRACE_RE.finditer(text):
        if match.group() == "{":
            stack.append(match.start())
        elif stack:
            closing[stack.pop()] = match.start()
    return closing


def _unwrap_commands(text: str, command_re: re.Pattern[str]) -> str:
    """Replace every ``\\cmd{content}`` matched by ``command_re`` (which ends at the ``{``) by ``content``, nested
    ones included, in one pass; an unbalanced ``\\cmd{`` loses only its command name and brace."""
    dropped: list[tuple[int, int]] = []
    closing: dict[int, int] | None = None
    for match in command_re.finditer(text):
        closing = _matching_braces(text) if closing is None else closing
        dropped.append((match.start(), match.end()))
        close = closing.get(match.end() - 1)
        if close is not None:
            dropped.append((close, close + 1))
    kept, position = [], 0
    for start, end in sorted(dropped):
        kept.append(text[position:start])
        position = end
    kept.append(text[position:])
    return "".join(kept)


# ----------------------------------------------------------------------------------------------------------
# Extraction
# ----------------------------------------------------------------------------------------------------------

_BOX_RE = re.compile(r"\\(?:boxed|fbox)(?:\s*(\{)|\s+([^\s{}$]+))")
_BOX_COMMAND_RE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
_FINAL_ANSWER_RE = re.compile(r"final answer is\b\s*:?", re.IGNORECASE)
_ANSWER_PHRASE_RE = re.compile(r"\banswer(?:\s+is\b\s*:?|\s*(?:\*\*)?\s*:)|####", re.IGNORECASE)
_SENTENCE_END_RE = re.compile(r"\.(?=\s|$)")
_MATH_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
_NUMBER_RE = re.compile(r"(?:(?<![\w)\]}])-)?(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?")

_LETTERS = "ABCDEFGHIJKLMNOPQR"  # BBH reasoning_about_colored_objects goes up to (R)
_MC_PATTERNS = (
    re.compile(r"(?<!\w)\(([A-R])\)"),  # (B)
    re.compile(r"(?<![\w(\\])([A-R])\)"),  # B)
    re.compile(r"\*\*\(?([A-R])\)?[.:]?\*\*"),  # **B**
    re.compile(r"(?m)^[ \t]*\(?([A-R])\)?\.?[ \t]*$"),  # a line holding only the letter
)
_MC_ANSWER_PHRASE_RE = re.compile(  # "answer is B", "Answer: (B)", "answer is option B", "Answer: $\text{B}$"
    r"(?i:\banswer(?:\s+is\b\s*:?|\s*(?:\*\*)?\s*:))[\s*$]*"
    r"(?:(?i:option|choice)\s+)?(?:\\text(?:bf)?\{)?\(?([A-R])(?!\w)"
)
_ARTICLE_CONTINUES_RE = re.compile(r"\s+[a-z]")


def _answer_region(text: str, marker: str | None) -> str:
    """The part of a response that holds its final answer: after the last end-of-thinking marker
    (docs/method.md#answer-extraction)."""
    if marker and marker in text:
        return text[text.rindex(marker) + len(marker) :]
    return text


def _boxed_contents(text: str) -> list[tuple[int, str]]:
    """(position, stripped content) of every non-empty, brace-balanced ``\\boxed``/``\\fbox`` of ``text``."""
    closing = _matching_braces(text)
    found = []
    for match in _BOX_RE.finditer(text):
        if match.group(1) is None:  # "\\boxed 5." form: a single token, sentence period excluded
            content = match.group(2).rstrip(".")
        elif match.start(1) in closing:
            content = text[match.end(1) : closing[match.start(1)]]
        else:
            continue
        if content.strip():
            found.append((match.start(), content.strip()))
    return found


def _last_box_is_open(text: str) -> bool:
    """Whether the last ``\\boxed`` / ``\\fbox`` of ``text`` has no finished argument: ``\\boxed{`` that never
    closes, or a bare ``\\boxed`` at the end (a response cut off while it was stating its answer)."""
    last = max(_BOX_COMMAND_RE.finditer(text), key=lambda match: match.start(), default=None)
    if last is None:
        return False
    box = _BOX_RE.match(text, last.start())
    return box is None or (box.group(1) is not None and box.start(1) not in _matching_braces(text))


def _clip_answer_span(rest: str) -> str | None:
    """The answer that follows an answer phrase: one math-delimited group, else the rest of the sentence."""
    rest = rest.lstrip()
    if rest.startswith("**") and rest[2:3].isspace():
        rest = rest[2:].lstrip()
    for opening, closing in _MATH_DELIMITERS:
        if rest.startswith(opening):
            end = rest.find(closing, len(opening))
            if end != -1:
                return rest[: end + len(closing)].strip() or None
    line = rest.split("\n", 1)[0]
    sentence_end = _SENTENCE_END_RE.search(line)
    clipped = line[: sentence_end.start()] if sentence_end else line
    return clipped.strip() or None


def _phrase_answer(text: str, phrase_re: re.Pattern[str]) -> str | None:
    """The span after the last occurrence of ``phrase_re`` (e.g. "The final answer is ...")."""
    last = max(phrase_re.finditer(text), key=lambda match: match.start(), default=None)
    return None if last is None else _clip_answer_span(text[last.end() :])


def _extract_boxed_or_phrase(region: str) -> str | None:
    """Last boxed answer, else the last "final answer is ...", else the last "Answer: ..." (text kind)."""
    boxed = _boxed_contents(region)
    if boxed:
        return boxed[-1][1]
    return _phrase_answer(region, _FINAL_ANSWER_RE) or _phrase_answer(region, _ANSWER_PHRASE_RE)


def _extract_math(region: str) -> str | None:
    """As the text kind, with the last number of the response as the final fallback (GSM8K style)."""
    answer = _extract_boxed_or_phrase(region)
    if answer is not None:
        return answer
    numbers = _NUMBER_RE.findall(region)
    return numbers[-1] if numbers else None


def _option_letter(answer: str) -> str | None:
    """The option letter an mc answer names, or None when it names none."""
    normalized = _normalize_mc(answer)
    return normalized if normalized is not None and len(normalized) == 1 and normalized in _LETTERS else None


def _extract_mc(region: str) -> str | None:
    """Last option letter among the explicit forms; a bare "A" or "I" must not start a word sequence (prose)."""
    candidates = [(pos, letter) for pos, content in _boxed_contents(region) if (letter := _option_letter(content))]
    for pattern in _MC_PATTERNS:
        candidates.extend((m.start(), m.group(1)) for m in pattern.finditer(region))
    for match in _MC_ANSWER_PHRASE_RE.finditer(region):
        letter = match.group(1)
        if letter in "AI" and _ARTICLE_CONTINUES_RE.match(region, match.end()):
            continue
        candidates.append((match.start(), letter))
    return max(candidates)[1] if candidates else None


_EXTRACTORS = {"math": _extract_math, "mc": _extract_mc, "text": _extract_boxed_or_phrase}


def extract_answer(text: str, kind: str = "math", marker: str | None = None) -> str | None:
    """Final answer of a response, raw (not normalized) but stripped; None when there is none
    (docs/method.md#answer-extraction).

    When ``marker`` (the model's end-of-thinking marker, e.g. ``</think>``) occurs in ``text``, only the text
    after its last occurrence is searched; otherwise the whole text. Forms, by kind:

    - math: last brace-balanced ``\\boxed{...}`` / ``\\fbox{...}`` / ``\\boxed 5``; else the last
      "The final answer is ..."; else the last "Answer: ..." / "answer is ..." / "#### ..."; else the last
      number (thousands separators allowed).
    - mc: last option letter A–R written as ``(B)``, ``B)``, "answer is B", "Answer: B", ``\\boxed{B}``,
      ``\\boxed{(B)}``, ``**B**`` or alone on a line.
    - text: last ``\\boxed{...}``, else the last "final answer is ..." / "the answer is ..." sentence.

    The final answer is the last box: when the last ``\\boxed``/``\\fbox`` of the searched text is unfinished (a
    ``\\boxed{`` that never closes, or a bare ``\\boxed`` at the end: the response was cut off while stating its
    answer) there is no answer (None, every kind). Neither an earlier box, nor a phrase, nor a number stands in for
    it: an earlier box may be the answer the cut-off one was correcting.
    """
    _check_str(text, "text")
    _check_kind(kind)
    if marker is not None:
        _check_str(marker, "marker")
    region = _answer_region(text, marker)
    if _last_box_is_open(region):
        return None
    answer = _EXTRACTORS[kind](region)
    return answer.strip() if answer is not None and answer.strip() else None


# ----------------------------------------------------------------------------------------------------------
# Normalization
# ----------------------------------------------------------------------------------------------------------

_TEXT_COMMAND_RE = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mathit|mbox|boldsymbol)\s*\{")
_UNIT_COMMAND_RE = re.compile(r"\\(?:text|textrm|mathrm|mbox)\s*\{")
_UNIT_CONTENT_RE = re.compile(r"[\s~]*[A-Za-z][A-Za-z\s~./\-]*")
_UNIT_POWER_RE = re.compile(r"\s*(?:\^\{?\d\}?)?\s*$")
_WHOLE_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")
_UNICODE_MATH = {"−": "-", "π": "\\pi ", "∞": "\\infty ", "×": "\\times ", "·": "\\cdot ", "√": "\\sqrt"}
_LEFT_RIGHT_RE = re.compile(r"\\(?:left|right)(?:\.|(?![A-Za-z]))")
_SPACING_RE = re.compile(r"(\\\\)|\\[,;:! ]|\\q?quad(?![A-Za-z])|~|\\displaystyle(?![A-Za-z])")  # 1: row break
_DEGREE_RE = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|\\degree(?![A-Za-z])|°")
_ASSIGNMENT_RE = re.compile(
    r"([A-Za-z]|\\[A-Za-z]+)(?:_\{?[A-Za-z0-9]+\}?)?\s*(?:=|\\in(?![A-Za-z]))\s*([^=]+)", re.DOTALL
)
_ARITHMETIC_SIDE_RE = re.compile(r"[\d\s.,+\-*/()^]*\d[\d\s.,+\-*/()^]*")
_NUMBER_WITH_UNIT_RE = re.compile(r"([-+]?[\d.,]+)\s+[A-Za-z]{2,}(?:\s+[A-Za-z]{2,})*")
_SPACES_RE = re.compile(r"(\\[A-Za-z]+)?\s+")
_THOUSANDS_RE = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_FRAC_SHORTHAND_RE = re.compile(r"\\frac(\d)(\d)")
_FRAC_HALF_SHORTHAND_RE = re.compile(r"\\frac(\{[^{}]*\})(\d)")
_SQRT_SHORTHAND_RE = re.compile(r"\\sqrt(\d+|[A-Za-z])")
_PLAIN_DECIMAL_RE = re.compile(r"(-?)(\d*)(?:\.(\d*))?")
_MC_BARE_LETTER_RE = re.compile(r"\(?([A-Ra-r])\)?[.:]?")
_MC_LETTER_WITH_TEXT_RE = re.compile(r"\(([A-Ra-r])\)\s|([A-R])[).:]\s")
_QUOTES = "\"'`“”‘’"


def _strip_markup(answer: str) -> str:
    """Drop what all kinds ignore: a whole ``\\boxed{}`` / ``\\(...\\)`` / ``\\[...\\]``, ``$``, bold ``**``."""
    text = answer.strip()
    box = _WHOLE_BOX_RE.match(text)
    if box is not None and _matching_braces(text).get(box.end() - 1) == len(text) - 1:
        text = text[box.end() : -1]
    for opening, closing in (("\\(", "\\)"), ("\\[", "\\]")):
        if text.startswith(opening) and text.endswith(closing):
            text = text[len(opening) : -len(closing)]
    text = text.replace("\\$", "").replace("$", "").replace("**", "")
    return text.strip()


def _drop_trailing_unit(text: str) -> str:
    """``5 \\text{ cm}`` → ``5``: a final text/mathrm group that reads as a unit, after some other content."""
    matches = list(_UNIT_COMMAND_RE.finditer(text))
    if not matches:
        return text
    last = matches[-1]
    close = _matching_braces(text).get(last.end() - 1)
    if close is None or not _UNIT_POWER_RE.fullmatch(text, close + 1):
        return text
    content = text[last.end() : close]
    spaced = content[:1] in (" ", "~")
    letters = sum(ch.isalpha() for ch in content)
    if _UNIT_CONTENT_RE.fullmatch(content) and (spaced or letters >= 2) and text[: last.start()].strip():
        return text[: last.start()]
    return text


def _drop_spaces(text: str) -> str:
    """Remove whitespace, except the one space that separates a command from a following letter (``\\pi r``)."""

    def keep_command_boundary(match: re.Match[str]) -> str:
        command = match.group(1) or ""
        following = match.string[match.end() : match.end() + 1]
        return command + " " if command and following.isalpha() else command

    return _SPACES_RE.sub(keep_command_boundary, text)


def _canonical_decimal(text: str) -> str:
    """``007.50`` → ``7.5``, ``5.0`` → ``5``, ``.5`` → ``0.5``, ``-0`` → ``0`` (string work: no digit limit)."""
    match = _PLAIN_DECIMAL_RE.fullmatch(text)
    if match is None or not (match.group(2) or match.group(3)):
        return text
    sign, whole, fraction = match.group(1), match.group(2).lstrip("0") or "0", (match.group(3) or "").rstrip("0")
    number = f"{whole}.{fraction}" if fraction else whole
    return "0" if number == "0" else sign + number


def _result_of_arithmetic_chain(text: str) -> str:
    """``8 + 9 = 17`` → ``17``: a worked computation whose left sides are numbers and operators states its result
    last. Sides with letters (``x + 1 = 2``) are left alone."""
    sides = text.split("=")
    if len(sides) < 2 or not sides[-1].strip():
        return text
    arithmetic = [side.replace("\\times", "*").replace("\\cdot", "*") for side in sides[:-1]]
    return sides[-1].strip() if all(_ARITHMETIC_SIDE_RE.fullmatch(side) for side in arithmetic) else text


def _normalize_math(answer: str) -> str | None:
    text = _strip_markup(answer)
    for symbol, latex in _UNICODE_MATH.items():
        text = text.replace(symbol, latex)
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    text = _LEFT_RIGHT_RE.sub("", text)
    text = _SPACING_RE.sub(lambda match: match.group(1) or " ", text)
    text = _DEGREE_RE.sub("", text)
    text = text.replace("\\%", "").replace("%", "").replace("{,}", ",")
    text = _unwrap_commands(_drop_trailing_unit(text), _TEXT_COMMAND_RE)
    text = text.strip().rstrip(".").strip()
    assignment = _ASSIGNMENT_RE.fullmatch(text)
    if assignment is not None:
        text = assignment.group(2).strip()
    text = _result_of_arithmetic_chain(text)
    text = text.removeprefix("+").strip()
    unit = _NUMBER_WITH_UNIT_RE.fullmatch(text)
    if unit is not None:
        text = unit.group(1)
    text = _drop_spaces(text)
    if _THOUSANDS_RE.fullmatch(text):
        text = text.replace(",", "")
    text = _FRAC_SHORTHAND_RE.sub(r"\\frac{\1}{\2}", text)
    text = _FRAC_HALF_SHORTHAND_RE.sub(r"\\frac\1{\2}", text)
    text = _SQRT_SHORTHAND_RE.sub(r"\\sqrt{\1}", text)
    return _canonical_decimal(text) or None


def _plain_text(answer: str) -> str:
    """The answer without markup and with ``\\text{...}``-style wrappers replaced by their content."""
    return _unwrap_commands(_strip_markup(answer), _TEXT_COMMAND_RE).strip()


def _normalize_text(answer: str) -> str | None:
    text = _plain_text(answer).rstrip(".").strip().strip(_QUOTES).strip()
    text = " ".join(text.casefold().split())
    return text or None


def _normalize_mc(answer: str) -> str | None:
    """Uppercase option letter; an answer that names no letter is normalized as text (docs/method.md#bbh-target-formats:
    a few BBH targets of letter-style subtasks are not letters)."""
    text = _plain_text(answer)
    bare = _MC_BARE_LETTER_RE.fullmatch(text)
    if bare is not None:
        return bare.group(1).upper()
    with_text = _MC_LETTER_WITH_TEXT_RE.match(text)
    if with_text is not None:
        return (with_text.group(1) or with_text.group(2)).upper()
    return _normalize_text(text)


_NORMALIZERS = {"math": _normalize_math, "mc": _normalize_mc, "text": _normalize_text}


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _normalize_cached(answer: str, kind: str) -> str | None:
    return _NORMALIZERS[kind](answer)


def normalize_answer(answer: str | None, kind: str = "math") -> str | None:
    """Canonical display / hash string of an answer (docs/method.md#answer-normalization: shared by a, ã and a*).

    math: strips ``$``, ``\\text{}``-style wrappers and trailing unit groups, ``\\left``/``\\right``, spacing
    commands, degree and percent signs, a trailing period, markdown ``**``, a leading ``+``, thousands
    separators of plain numbers, a single-variable assignment (``x = 5`` → ``5``) and all insignificant
    whitespace (a matrix row break ``\\\\`` stays); ``\\dfrac``/``\\tfrac`` → ``\\frac``; plain decimals in
    canonical form (``5.0`` → ``5``).
    mc: the uppercase option letter. text: casefolded, whitespace-collapsed, surrounding quotes and final
    period stripped. None (no answer) for None or for an answer that normalizes to the empty string.
    """
    _check_kind(kind)
    if answer is None:
        return None
    _check_str(answer, "answer")
    return _normalize_cached(answer, kind)


# ----------------------------------------------------------------------------------------------------------
# Equivalence
# ----------------------------------------------------------------------------------------------------------

_NUMBER_TOKEN = r"-?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?"
_TEN_POWER = r"10\^(?:\{([-+]?\d{1,3})\}|(\d))"
_DECIMAL_RE = re.compile(  # mantissa, then its power of ten: 7.5e-3, 7.5\times10^{-3}, 7.5\cdot10^{-3}
    rf"(-?(?:\d{{1,3}}(?:,\d{{3}})+|\d+)?(?:\.\d*)?)(?:[eE]([-+]?\d{{1,3}})|(?:\\times|\\cdot){_TEN_POWER})?"
)
_POWER_OF_TEN_RE = re.compile(rf"(-?){_TEN_POWER}")
_SLASH_FRACTION_RE = re.compile(rf"({_NUMBER_TOKEN})/({_NUMBER_TOKEN})")
_LATEX_FRACTION_RE = re.compile(rf"(-?)\\frac\{{({_NUMBER_TOKEN})\}}\{{({_NUMBER_TOKEN})\}}")
_MATRIX_RE = re.compile(r"\\begin\{([pb]?matrix)\}((?:(?!\\(?:begin|end)\{).)*)\\end\{\1\}", re.DOTALL)
_OPENING, _CLOSING = "([{", ")]}"
_TEXT_WORD_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_BIG_EXPONENT_RE = re.compile(rf"\^\s*\{{?\s*[-+]?\d{{{_MAX_EXPONENT_DIGITS + 1},}}")
_NESTED_EXPONENT_RE = re.compile(r"\^\s*\{[^{}]*\^|\^\s*\{[^{}]*\{[^{}]*\^|\^[^{\s]\^")
_LARGE_EXPONENT_RE = re.compile(r"\^\s*\{?\s*[-+]?\d{3,}")
_LONG_LITERAL_RE = re.compile(rf"\d{{{_MAX_LITERAL_DIGITS + 1},}}")
_COMBINATORIAL_RE = re.compile(r"!|\\binom|\\choose|\\dbinom|\\tbinom")
_COMBINATORIAL_RISK_RE = re.compile(rf"\d{{{_MAX_EXPONENT_DIGITS + 1},}}|\^|!\s*!")
_LOGARITHM_RE = re.compile(r"\\(?:log|ln|lg)(?![A-Za-z])")
_DIGIT_RE = re.compile(r"\d")


class _Number(NamedTuple):
    """A plain number: its exact value, and half a unit of its last written decimal place (0 when it is exact)."""

    value: Fraction
    half_unit: Fraction


def _exact(token: str) -> Fraction | None:
    """Exact value of a decimal token (thousands separators allowed); None when it has no digit."""
    digits = token.replace(",", "")
    return Fraction(digits) if digits.strip("-.") else None


def _written_decimal(text: str) -> _Number | None:
    """A decimal (``-1,234.5``), e-notation (``7.5e-3``) or scientific notation (``7.5\\times10^{-3}``,
    ``10^{-3}``): exact value, and half a unit of the last nonzero decimal place of the mantissa (0 for an integer
    mantissa: ``2\\times10^{3}`` is exactly 2000; trailing zeros add no precision, as normalization drops them)."""
    power = _POWER_OF_TEN_RE.fullmatch(text)
    match = power or _DECIMAL_RE.fullmatch(text)
    if match is None:
        return None
    mantissa = power.group(1) + "1" if power else match.group(1)
    value = _exact(mantissa)
    if value is None:
        return None
    scale = Fraction(10) ** int(next((group for group in match.groups()[1:] if group), 0))
    places = len(mantissa.partition(".")[2].rstrip("0"))
    return _Number(value * scale, scale / 10**places / 2 if places else Fraction(0))


def _as_number(text: str) -> _Number | None:
    """A plain number: see :func:`_written_decimal`, or an exact fraction ``a/b`` / ``\\frac{a}{b}``; else None."""
    if len(text) > _MAX_NUMBER_CHARS:
        return None
    decimal = _written_decimal(text)
    if decimal is not None:
        return decimal
    fraction = _SLASH_FRACTION_RE.fullmatch(text)
    sign = ""
    if fraction is None:
        fraction = _LATEX_FRACTION_RE.fullmatch(text)
        if fraction is None:
            return None
        sign, numerator, denominator = fraction.groups()
    else:
        numerator, denominator = fraction.groups()
    top, bottom = _exact(numerator), _exact(denominator)
    if top is None or not bottom:
        return None
    return _Number(-top / bottom if sign else top / bottom, Fraction(0))


def _number_verdict(first: str, second: str) -> bool | None:
    """For two plain numbers (else None): equal when they differ by at most the smaller of 1e-6 of the larger
    magnitude and half a unit of the last decimal place either one writes. So integers and fractions are exact
    (``1000000`` ≢ ``1000001``); written digits always tell numbers apart (``1000000`` ≢ ``1000000.5``); a decimal
    matches another value only where it agrees to about six significant digits and rounds to it (``0.3333333`` ≡
    1/3, ``0.1`` ≡ ``0.10000001``), so a short decimal is not a rounding of anything (``0.333`` ≢ 1/3, ``0.5`` ≢
    8/15, and ``3.14`` ≢ ``3.14159``, as ``3.14`` ≢ π). Exact rational arithmetic: nothing overflows (``1e400`` ≢
    ``1e401``)."""
    x, y = _as_number(first), _as_number(second)
    if x is None or y is None:
        return None
    tolerance = min(_REL_TOL * max(abs(x.value), abs(y.value)), max(x.half_unit, y.half_unit))
    return abs(x.value - y.value) <= tolerance


def _top_level_split(text: str, separator: str = ",") -> list[str] | None:
    """Split on ``separator`` outside any bracket; None when the brackets close more than they open."""
    parts, depth, start = [], 0, 0
    for match in re.finditer(rf"[{re.escape(_OPENING + _CLOSING)}]|{re.escape(separator)}", text):
        if match.group() in _OPENING:
            depth += 1
        elif match.group() in _CLOSING:
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0:
            parts.append(text[start : match.start()])
            start = match.end()
    parts.append(text[start:])
    return parts if depth == 0 else None


def _matrix(body: str) -> tuple[str, list[str]] | None:
    """(kind "RxC matrix", entries row by row) of a matrix body ``a&b\\\\c&d`` (a final ``\\\\`` is allowed);
    None when it is ragged or has an empty entry."""
    rows = _top_level_split(body, "\\\\") or []
    if len(rows) > 1 and not rows[-1].strip():
        rows.pop()
    cells = [_top_level_split(row, "&") or [] for row in rows]
    width = len(cells[0]) if cells else 0
    entries = [entry for row in cells for entry in row]
    if not width or any(len(row) != width for row in cells) or not all(entry.strip() for entry in entries):
        return None
    return f"{len(cells)}x{width} matrix", entries


def _structure(text: str) -> tuple[str, list[str]] | None:
    """(kind, elements) of a matrix or vector (``pmatrix``, ``bmatrix`` and ``matrix`` alike: the delimiters only
    typeset it; the kind holds the shape), a tuple / interval ``(a,b)``, ``[a,b)``, ..., a set ``\\{a,b\\}`` or a
    bare list ``a,b`` (read as unordered, kind "set"); None for anything else. Tuples and intervals need two
    elements."""
    matrix = _MATRIX_RE.fullmatch(text)
    if matrix is not None:
        return _matrix(matrix.group(2))
    kind, minimum, parts = "set", 2, None
    if text.startswith("\\{") and text.endswith("\\}"):
        kind, minimum, parts = "set", 1, _top_level_split(text[2:-2])
    elif len(text) >= 2 and text[0] == "{" and text[-1] == "}":
        parts = _top_level_split(text[1:-1])
    elif len(text) >= 2 and text[0] in "([" and text[-1] in ")]":
        kind, parts = text[0] + text[-1], _top_level_split(text[1:-1])
    if parts is None:  # no outer delimiters, or "(a,b),(c,d)" whose first and last brackets do not pair up
        kind, minimum, parts = "set", 2, _top_level_split(text)
    if parts is None or len(parts) < minimum or not all(part.strip() for part in parts):
        return None
    return kind, parts


def _structures_equivalent(first: tuple[str, list[str]], second: tuple[str, list[str]]) -> bool:
    """Same kind and size; elements pairwise equivalent (in order), or matched one-to-one for sets."""
    (kind, elements), (other_kind, other_elements) = first, second
    if kind != other_kind or len(elements) != len(other_elements):
        return False
    symbolic = len(elements) <= _MAX_SYMBOLIC_ELEMENTS
    left = [_canonical_decimal(element) for element in elements]
    right = [_canonical_decimal(element) for element in other_elements]
    if kind != "set":
        return all(_elements_equivalent(x, y, symbolic) for x, y in zip(left, right))
    unmatched = list(right)
    for x in left:
        index = next((i for i, y in enumerate(unmatched) if _elements_equivalent(x, y, symbolic)), None)
        if index is None:
            return False
        del unmatched[index]
    return True


def _elements_equivalent(x: str, y: str, symbolic: bool) -> bool:
    return x == y or _math_equivalent_normalized(min(x, y), max(x, y), symbolic)


def _too_costly_for_sympy(first: str, second: str) -> bool:
    """Pairs whose sympy work can hang inside one uninterruptible C call (huge integer powers, factorials and
    binomials of large numbers, sympy's ``logcombine`` turning ``n·log(b)`` into ``b**n`` for a large n) or is
    meaningless (words read as products of symbols). They are compared by string and number only."""
    pair = first + second
    if _LOGARITHM_RE.search(pair) and len(_DIGIT_RE.findall(pair)) > _MAX_LOGARITHM_PAIR_DIGITS:
        return True
    return any(
        len(text) > _MAX_SYMBOLIC_CHARS
        or _TEXT_WORD_RE.search(text)
        or _LONG_LITERAL_RE.search(text)
        or _BIG_EXPONENT_RE.search(text)
        or _NESTED_EXPONENT_RE.search(text)
        or len(_LARGE_EXPONENT_RE.findall(text)) > 1
        or (_COMBINATORIAL_RE.search(text) and _COMBINATORIAL_RISK_RE.search(text))
        for text in (first, second)
    )


def _exact_floats(parsed: object) -> object:
    """A parsed expression with every float replaced by the rational its decimal digits write (0.1 → 1/10)."""
    if not isinstance(parsed, (Basic, MatrixBase)):
        return parsed
    return parsed.xreplace({number: Rational(str(number)) for number in parsed.atoms(Float)})


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _parsed(text: str) -> tuple[object, ...]:
    """Math-Verify parse of a normalized answer (its timeouts off: bounded by ``_too_costly_for_sympy`` and
    ``_time_limit``), decimals made exact: Math-Verify compares a float by rounding both sides to 6 decimal
    places, which would make ``\\frac{1}{10^8}`` and ``0.00000002`` equal."""
    extraction = [LatexExtractionConfig(), ExprExtractionConfig()]
    parsed = parse(f"${text}$", extraction_config=extraction, parsing_timeout=None)
    return tuple(_exact_floats(item) for item in parsed)


def _symbolically_equal(first: str, second: str) -> bool:
    """Math-Verify in both directions (its ``verify`` is not symmetric), AND-ed."""
    if _too_costly_for_sympy(first, second):
        return False
    parsed_first, parsed_second = list(_parsed(first)), list(_parsed(second))
    if not parsed_first or not parsed_second:
        return False
    return verify(parsed_first, parsed_second, timeout_seconds=None) and verify(
        parsed_second, parsed_first, timeout_seconds=None
    )


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _math_equivalent_normalized(first: str, second: str, symbolic: bool = True) -> bool:
    """Equivalence of two distinct normalized math answers given in sorted order (so the cache is symmetric)."""
    verdict = _number_verdict(first, second)
    if verdict is not None:
        return verdict
    if len(first) > _MAX_SYMBOLIC_CHARS or len(second) > _MAX_SYMBOLIC_CHARS:
        return False
    first_structure, second_structure = _structure(first), _structure(second)
    if first_structure is not None or second_structure is not None:
        if first_structure is None or second_structure is None:
            return False
        return _structures_equivalent(first_structure, second_structure)
    return symbolic and _symbolically_equal(first, second)


class _SymbolicBudgetExceeded(BaseException):
    """Raised when a comparison runs out of time; a BaseException so no ``except Exception`` in a library
    swallows it."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise _SymbolicBudgetExceeded once ``seconds`` of wall time have passed inside the block.

    On the main thread an ITIMER_REAL / SIGALRM timer does it at no cost. Signals reach the main thread only,
    so on any other thread (or when the timer is already in use) a thread-local trace function checks the
    clock at every Python call instead (roughly 2x slower sympy, no effect on other threads). Neither can stop
    a single long C call: ``_too_costly_for_sympy`` keeps those out.
    """
    on_main_thread = threading.current_thread() is threading.main_thread()
    if on_main_thread and hasattr(signal, "setitimer") and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0):
        with _signal_time_limit(seconds):
            yield
    else:
        with _trace_time_limit(seconds):
            yield


@contextlib.contextmanager
def _signal_time_limit(seconds: float) -> Iterator[None]:
    armed = True

    def on_alarm(signum: int, frame: object) -> None:
        if armed:
            raise _SymbolicBudgetExceeded

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)


@contextlib.contextmanager
def _trace_time_limit(seconds: float) -> Iterator[None]:
    deadline = time.monotonic() + seconds

    def check_deadline(frame: object, event: str, arg: object) -> None:
        if time.monotonic() > deadline:
            raise _SymbolicBudgetExceeded

    previous = sys.gettrace()
    sys.settrace(check_deadline)
    try:
        yield
    finally:
        sys.settrace(previous)


@functools.cache
def _warm_up_math_verify() -> None:
    """Run Math-Verify once outside any time budget: its first use pays sympy's and the LaTeX parser's lazy
    set-up (about half a second), which must not count against the first real comparison."""
    expanded, factored = _parsed("x^2+2x+1"), _parsed("(x+1)^2")
    verify(list(expanded), list(factored), timeout_seconds=None)


def _math_equivalent(first: str, second: str) -> bool:
    if first == second:
        return True
    verdict = _number_verdict(first, second)
    if verdict is not None:  # no symbolic work: no time budget needed
        return verdict
    _warm_up_math_verify()
    try:
        with _time_limit(_SYMBOLIC_BUDGET_S):
            return _math_equivalent_normalized(min(first, second), max(first, second))
    except _SymbolicBudgetExceeded:
        return False


def _text_equivalent(first: str, second: str) -> bool:
    return first == second or bool(_number_verdict(first, second))


Equivalence = Callable[[str | None, str | None, str], bool]
"""A user answer relation: ``fn(answer, other, kind) -> bool`` on raw (un-normalized) answers, None included."""

_EQUIVALENCE_OVERRIDE: contextvars.ContextVar[Equivalence | None] = contextvars.ContextVar(
    "trac_equivalence_override", default=None
)


@contextlib.contextmanager
def use_equivalence(relation: Equivalence | None) -> Iterator[None]:
    """Inside the block, :func:`equivalent` returns ``bool(relation(a, b, kind))`` instead of the built-in relation.

    ``None`` keeps the built-in relation. The override is a context variable (per thread / task), restored on
    exit, also when the block raises; overrides nest. The relation gets the raw answers (None for "no answer")
    and the answer kind; it replaces the whole relation, so it decides about None too.
    """
    if relation is not None and not callable(relation):
        raise TypeError(f"use_equivalence needs a callable (answer, other, kind) -> bool, got {relation!r}")
    token = _EQUIVALENCE_OVERRIDE.set(relation)
    try:
        yield
    finally:
        _EQUIVALENCE_OVERRIDE.reset(token)


def equivalent(a: str | None, b: str | None, kind: str = "math") -> bool:
    """Deterministic, symmetric answer equivalence a ≡ b (docs/method.md#answer-equivalence: e = 1[ã ≡ a], labels,
    answer classes).

    None (no answer) is equivalent to nothing, not even None. math: normalized-string equality; two plain numbers
    exactly, except that a written decimal matches within the smaller of 1e-6 relative and half a unit of its
    last decimal place (``1000000`` ≢ ``1000001``, ``1.5`` ≡ ``1.50``, ``0.333`` ≢ 1/3, ``1e400`` ≢ ``1e401``);
    matrices and vectors (``pmatrix``, ``bmatrix``, ``matrix``: same shape), tuples, intervals and sets element by
    element by these rules (sets in any order, bracket types must agree); otherwise Math-Verify both ways, on exact
    rationals. mc: same option letter. text: normalized-string equality, or equal numbers (the math number rule).
    Inside :func:`use_equivalence` the user relation decides instead.
    """
    override = _EQUIVALENCE_OVERRIDE.get()
    if override is not None:
        _check_kind(kind)
        return bool(override(a, b, kind))
    first, second = normalize_answer(a, kind), normalize_answer(b, kind)
    if first is None or second is None:
        return False
    if kind == "math":
        return _math_equivalent(first, second)
    if kind == "text":
        return _text_equivalent(first, second)
    return first == second


def answer_classes(answers: Sequence[str | None], kind: str = "math") -> list[int]:
    """Equivalence-class id of each of K answers, ids 0, 1, 2, ... in order of first appearance
    (docs/method.md#answer-classes-and-vote-shares: the classes b of the vote shares π_b and of h_K). Answer i joins the
    class of the first earlier class representative it is equivalent to; every None (and every answer that normalizes to
    nothing) is a singleton.
    """
    _check_kind(kind)
    if isinstance(answers, str):
        raise ValueError("answers must be a sequence of answers, got a single str")
    representatives: list[str | None] = []
    classes = []
    for answer in answers:
        match = next((cid for cid, rep in enumerate(representatives) if equivalent(rep, answer, kind)), None)
        if match is None:
            match = len(representatives)
            representatives.append(answer)
        classes.append(match)
    return classes
