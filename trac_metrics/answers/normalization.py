"""The canonical string of an answer (docs/method.md#answer-normalization), shared by the primary answer a, the probe
answer ã, the reference a* and the K sampled answers.

Every step is a linear scan or a regular expression without nested repetition, except the few structural steps
(assignments, arithmetic chains, numbers with units) that only run on answers of at most ``_MAX_STRUCTURED_CHARS``
characters: a runaway generation (16k tokens of digits) is normalized in linear time and compared as a string.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from trac_metrics.answers._latex import (
    CACHE_SIZE,
    NAME,
    check_kind,
    check_str,
    matching_braces,
    names_a_quantity,
    relation_sides,
    top_level_split,
    unwrap_commands,
)
from trac_metrics.answers.translation import (
    MAGNITUDE_WORDS,
    magnitude,
    mixed_number,
    python_powers,
    repeating_decimal,
    thousands_groups,
    unicode_roots,
    upright_constants,
)

_MAX_STRUCTURED_CHARS = 1000

_TEXT_COMMAND_RE = re.compile(
    r"\\(?:text|textbf|textit|textrm|textnormal|textsf|texttt|mathrm|mathbf|mathit|mathsf|mbox|boldsymbol)\s*\{"
)
_UNIT_COMMAND_RE = re.compile(r"\\(?:text|textrm|textnormal|textbf|textit|mathrm|mathit|mbox)\s*\{")
_UNIT_CONTENT_RE = re.compile(r"[\s~]*[A-Za-z][A-Za-z\s~./\-^{}0-9,\\]*")
_UNIT_POWER_RE = re.compile(r"\s*(?:\^\s*\{?-?\d\}?)?\s*$")
_UNIT_JOINER_RE = re.compile(r"(?:/|\\cdot|\\times|\s)*$")
_MAX_UNIT_GROUPS = 4
_CHANGING_WORDS = (
    "squared cubed pi or and more less times approximately about than twice thrice double triple plus minus below "
    "above under over most least factorial to power powers lakh lakhs crore crores score half halves third thirds "
    "quarter quarters fourth fourths fifth fifths sixth sixths seventh sevenths eighth eighths ninth ninths tenth "
    "tenths hundredth hundredths thousandth thousandths"
)
_NOT_UNITS = MAGNITUDE_WORDS | frozenset(_CHANGING_WORDS.split())
"""Words after a number that change its value, bound it or hedge it: never dropped as a unit, so that the answer is
kept as written and equals no plain number (``7 twice``, ``7 plus two``, ``7 below zero``, ``7 at most``, ``12 lakh``,
``3 tenths``, ``12 halves``, ``4 factorial``, ``2 to the fifth``: refused rather than guessed); a magnitude word is
translated (``5 million`` is 5000000, :mod:`trac_metrics.answers.translation`). The word "percent" is a percent sign,
dropped like ``\\%`` (``15 percent`` → ``15``)."""
_WHOLE_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")
_UNICODE_MATH = {"−": "-", "π": "\\pi ", "∞": "\\infty ", "×": "\\times ", "·": "\\cdot ", "±": "\\pm "}
_LEFT_RIGHT_RE = re.compile(r"\\(?:left|right)(?:\.|(?![A-Za-z]))")
_LT_GT_RE = re.compile(r"(?<!\\)\\([lg])t(?![A-Za-z])")
"""``\\lt`` and ``\\gt`` (MathJax's names for ``<`` and ``>``): the signs themselves."""
_SPACING_RE = re.compile(
    r"(\\\\)|\\[,;: ]|\\q?quad(?![A-Za-z]{2})|~|\\displaystyle(?![A-Za-z])"  # 1: row break
)
"""Spacing commands; ``\\quad`` also when one letter follows it unspaced (``\\quadx_{2}``: no command is named so)."""
_DEGREE_RE = re.compile(
    r"(?:\^\s*\{?\s*\\circ\s*\}?|\\degree(?![A-Za-z])|°)"
    r"(?:\s*(?:\\(?:text|mathrm)\s*\{\s*[CF]\s*\}|[CF](?![A-Za-z])))?"
)
"""A degree sign, with the Celsius or Fahrenheit letter after it (``25^{\\circ}\\text{C}`` → ``25``)."""
_TIGHT_COMMA_RE = re.compile(r",\s*\\!\s*")
"""A thousands comma with TeX's negative thin space after it, spaced or not (``12,\\!345``, ``12,\\! 345``)."""
_LIST_WORD_RE = re.compile(r"\s*,?\s*(?<![A-Za-z\\])(?:and|or)(?![A-Za-z])\s*")
_MEMBERSHIP_RE = re.compile(rf"\s*({NAME})\s*\\in(?![A-Za-z])(.+)", re.DOTALL)
_LESS = r"(?:<=|\\leq?(?![A-Za-z])|\\leqslant|≤|<)"
_GREATER = r"(?:>=|\\geq?(?![A-Za-z])|\\geqslant|≥|>)"
_BOUND = r"((?:[^<>=≤≥\\]|\\(?!(?:le|ge)(?:q|qslant)?(?![A-Za-z]))[A-Za-z]++|\\[^A-Za-z])*+)"
"""A side of an inequality: anything but a comparison (each command read whole, so matching stays linear)."""
_BOUNDED_QUANTITY = rf"{NAME}(?:\([^()<>=≤≥]*\))?"
"""What an inequality bounds: a variable, or a function's value (``0 < f(x) < 1``)."""
_INEQUALITY_RE = re.compile(rf"\s*({_BOUNDED_QUANTITY})\s*({_LESS}|{_GREATER})\s*{_BOUND}\s*")
_REVERSED_INEQUALITY_RE = re.compile(rf"\s*{_BOUND}\s*({_LESS}|{_GREATER})\s*({_BOUNDED_QUANTITY})\s*")
_NEGATED_INEQUALITY_RE = re.compile(rf"\s*-\s*({NAME})\s*({_LESS}|{_GREATER})\s*{_BOUND}\s*")
_NEGATED_REVERSED_INEQUALITY_RE = re.compile(rf"\s*{_BOUND}\s*({_LESS}|{_GREATER})\s*-\s*({NAME})\s*")
"""A negated variable (``-x > -1``): the same inequality as ``x < 1``."""
_ONE_TERM_RE = re.compile(r"[^-+]+")
"""A bound before its variable (``3 \\leq x``): the same inequality as ``x \\geq 3``."""
_SET_BUILDER_RE = re.compile(
    rf"\\\{{\s*({NAME})\s*(?:\\in\s*(\\mathbb\s*\{{\s*[A-Z]\s*\}}|\\mathbb\s*[A-Z]))?\s*(?:\\mid|\||:)(.+)\\\}}",
    re.DOTALL,
)
"""``\\{x \\mid x > 3\\}``, ``\\{x : x \\geq 2\\}``, ``\\{n \\in \\mathbb{Z} \\mid n^2 < 5\\}``: a set-builder form,
its variable, its domain (optional) and its condition."""
_REAL_DOMAIN_RE = re.compile(r"\\mathbb\s*\{?\s*R\s*\}?")
_BOUNDED_RE = re.compile(rf"\s*{_BOUND}\s*({_LESS})\s*({_BOUNDED_QUANTITY})\s*({_LESS})\s*{_BOUND}\s*")
_ANGLE_MEASURE_RE = re.compile(r"(?<![A-Za-z])m(?=\\angle)")
_ONE_TOKEN_SUBSCRIPT_RE = re.compile(r"_\{([A-Za-z0-9])\}")
_COMMAND_RE = re.compile(r"\\[A-Za-z]+")
_FREE_LETTER_RE = re.compile(r"[A-Za-z]")
_ARITHMETIC_SIDE_RE = re.compile(r"[\d\s.,+\-*/()^]*\d[\d\s.,+\-*/()^]*")
_NUMBER_WITH_UNIT_RE = re.compile(r"([-+]?[\d.,]+)\s+[A-Za-z]{2,}(?:\s+[A-Za-z]{2,})*")
_SPACES_RE = re.compile(r"(\\[A-Za-z]+)?\s+")
_THOUSANDS_RE = re.compile(r"-?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?")
_DECIMAL_COMMA_RE = re.compile(r"-?0,\d+")
_FRAC_SHORTHAND_RE = re.compile(r"\\frac(\d)(\d)")
_FRAC_HALF_SHORTHAND_RE = re.compile(r"\\frac(\{[^{}]*\})(\d)")
_SQRT_SHORTHAND_RE = re.compile(r"\\sqrt(\d|[A-Za-z])")
_EULER_E_RE = re.compile(r"(?<=\d)e(?=\s+[-+])")
"""``2e - 1``: Euler's number times 2, not the e-notation ``2e-1`` it would read as once spaces are dropped."""
_PLAIN_DECIMAL_RE = re.compile(r"(-?)(\d*)(?:\.(\d*))?")
_MC_BARE_LETTER_RE = re.compile(r"\(?([A-Ra-r])\)?[.:]?")
_MC_LETTER_WITH_TEXT_RE = re.compile(r"\(([A-Ra-r])\)\s|([A-R])[).:]\s")
_MC_HEDGE_RE = re.compile(r"\s*\(?[A-R]\)?(?:\s*(?:,|/|&|\band/or\b|\band\b|\bor\b)?\s*(?:or\s+)?\(?[A-R]\)?)+\s*\.?")
_LETTERS = "ABCDEFGHIJKLMNOPQR"
_QUOTES = "\"'`“”‘’"


def _strip_markup(answer: str) -> str:
    """Drop what all kinds ignore: a whole ``\\boxed{}`` / ``\\(...\\)`` / ``\\[...\\]``, ``$``, bold ``**``."""
    text = answer.strip()
    box = _WHOLE_BOX_RE.match(text)
    if box is not None and matching_braces(text).get(box.end() - 1) == len(text) - 1:
        text = text[box.end() : -1]
    for opening, closing in (("\\(", "\\)"), ("\\[", "\\]")):
        if text.startswith(opening) and text.endswith(closing):
            text = text[len(opening) : -len(closing)]
    text = text.replace("\\$", "").replace("$", "").replace("**", "")
    return text.strip()


def _is_unit(content: str) -> bool:
    """Whether the content of a text-style group reads as a unit: letters (with powers, ``/``, ``\\,``), none of
    them a word that changes the number (:data:`_NOT_UNITS`)."""
    words = re.findall(r"[A-Za-z]+", content.replace("\\,", " "))
    return bool(_UNIT_CONTENT_RE.fullmatch(content)) and not _NOT_UNITS.intersection(word.lower() for word in words)


def _drop_trailing_unit(text: str) -> str:
    """``5 \\text{ cm}``, ``5\\mathrm{kg}``, ``5 \\textbf{cm}``, ``9.8 \\mathrm{~m}/\\mathrm{s}^{2}`` → ``5`` / ``9.8``:
    the final text-style groups that read as units, after some other content (up to :data:`_MAX_UNIT_GROUPS`)."""
    for _ in range(_MAX_UNIT_GROUPS):
        matches = list(_UNIT_COMMAND_RE.finditer(text))
        if not matches:
            return text
        last = matches[-1]
        close = matching_braces(text).get(last.end() - 1)
        if close is None or not _UNIT_POWER_RE.fullmatch(text, close + 1):
            return text
        content = text[last.end() : close]
        before = _UNIT_JOINER_RE.sub("", text[: last.start()])
        joiner = text[len(before) : last.start()]
        spaced = content[:1] in (" ", "~") or joiner[-1:].isspace() or bool(joiner.strip())  # "m/\text{s}"
        letters = sum(ch.isalpha() for ch in content)
        if not (_is_unit(content) and (spaced or letters >= 2) and before.strip()):
            return text
        text = before
    return text


def _drop_spaces(text: str) -> str:
    """Remove whitespace, except the one space that separates a command from a following letter (``\\pi r``) and the
    one between two numbers side by side (``2 4`` stays two numbers; the groups of a thousands separator, ``1 000``,
    are joined first)."""

    def keep_boundary(match: re.Match[str]) -> str:
        command = match.group(1) or ""
        following = match.string[match.end() : match.end() + 1]
        if command:
            return command + " " if following.isalpha() else command
        preceding = match.string[match.start() - 1 : match.start()]
        return " " if preceding.isdigit() and following.isdigit() else ""

    return _SPACES_RE.sub(keep_boundary, thousands_groups(text))


def canonical_decimal(text: str) -> str:
    """``007.50`` → ``7.5``, ``5.0`` → ``5``, ``.5`` → ``0.5``, ``-0`` → ``0`` (string work: no digit limit)."""
    match = _PLAIN_DECIMAL_RE.fullmatch(text)
    if match is None or not (match.group(2) or match.group(3)):
        return text
    sign, whole, fraction = match.group(1), match.group(2).lstrip("0") or "0", (match.group(3) or "").rstrip("0")
    number = f"{whole}.{fraction}" if fraction else whole
    return "0" if number == "0" else sign + number


def has_free_letters(text: str) -> bool:
    """Whether ``text`` names a variable: a letter outside LaTeX command names (``2x``, not ``\\frac{\\pi}{3}``)."""
    return bool(_FREE_LETTER_RE.search(_COMMAND_RE.sub("", text)))


_MAJOR_CURRENCY_RE = re.compile(
    r"(?:\\\$|[€£])\s*\d|\d\s*(?:\\text\s*\{\s*)?(?:dollars?|euros?|USD|EUR)(?![A-Za-z])", re.IGNORECASE
)
_MINOR_CURRENCY_RE = re.compile(r"¢|\d\s*(?:\\text\s*\{\s*)?(?:cents?|pennies|penny|pence)(?![A-Za-z])", re.IGNORECASE)


def denomination(answer: str) -> str | None:
    """The denomination an amount of money is written in (docs/method.md#answer-normalization): ``"major"`` for a
    currency sign before the number or a currency's name after it (``\\$18``, ``€5``, ``18 dollars``), ``"minor"``
    for a hundredth's name after it (``18 cents``, ``18¢``, ``5 pence``); None for neither or both. The unit itself is
    dropped as any unit is (``18 cents`` ≡ ``18``), but two amounts in different denominations differ (``\\$18`` ≢
    ``18 cents``)."""
    major, minor = bool(_MAJOR_CURRENCY_RE.search(answer)), bool(_MINOR_CURRENCY_RE.search(answer))
    return None if major == minor else "major" if major else "minor"


class MathForm(NamedTuple):
    """A normalized math answer: its canonical string, and the canonical name an assignment of a value gives that
    value to (``y = 4`` → ``4`` named ``y``; ``x \\in [0, 1)`` → ``[0,1)`` named ``x``; a list of assignments
    ``y = 3, x = 2`` → ``2,3`` named ``x,y``, its values in the order of their sorted names, ``by_name`` set; None for
    anything else)."""

    value: str | None
    name: str | None = None
    by_name: bool = False
    denomination: str | None = None
    """``"major"`` for an amount of money in a currency's main unit (``\\$18``, ``18 dollars``), ``"minor"`` in its
    hundredth (``18 cents``, ``18¢``), None when the answer names neither or both (:func:`denomination`)."""


def canonical_name(left: str) -> str:
    """The name of an assigned quantity as two assignments compare it: no insignificant whitespace, ``m\\angle B``
    as ``\\angle B``, ``a_{1}`` as ``a_1``."""
    name = _ONE_TOKEN_SUBSCRIPT_RE.sub(r"_\1", _ANGLE_MEASURE_RE.sub("", left.strip()))
    return _drop_spaces(name)


def _value_of_assignment(text: str) -> tuple[str | None, str]:
    """(name, value) of an assignment of a value (a named quantity on the left, no variable on the right): ``x = 5``
    → (``x``, ``5``), ``(m, n) = (5, 1)`` → (``(m,n)``, ``(5, 1)``), ``AB:CD = 2:5`` → (``AB:CD``, ``2:5``); a
    membership states its set and keeps its name: ``x \\in [0, 1)`` → (``x``, ``[0, 1)``). ``y = 2x + 1`` stays a
    relation: equivalence compares it as one (docs/method.md#answer-equivalence)."""
    membership = _MEMBERSHIP_RE.fullmatch(text)
    if membership is not None and "=" not in membership.group(2):
        return canonical_name(membership.group(1)), membership.group(2).strip()
    sides = relation_sides(text)
    if sides is None or not names_a_quantity(sides[0]) or has_free_letters(sides[1]):
        return None, text
    return canonical_name(sides[0]), sides[1]


def _one_bound(text: str) -> tuple[str, str, str, bool] | None:
    """(name, operator, bound, reversed) of one variable against a constant, the variable first (``x \\geq 3``) or
    last (``3 \\leq x``, reversed), negated or not (``-x > -1`` as ``1 > x``); None for anything else."""
    single = _INEQUALITY_RE.fullmatch(text)
    if single is not None and single.group(3).strip() and not has_free_letters(single.group(3)):
        return single.group(1), single.group(2), single.group(3).strip(), False
    reversed_ = _REVERSED_INEQUALITY_RE.fullmatch(text)
    if reversed_ is not None and reversed_.group(1).strip() and not has_free_letters(reversed_.group(1)):
        return reversed_.group(3), reversed_.group(2), reversed_.group(1).strip(), True
    negated = _NEGATED_INEQUALITY_RE.fullmatch(text)  # -x > -1 is 1 > x
    if negated is not None and negated.group(3).strip() and not has_free_letters(negated.group(3)):
        return negated.group(1), negated.group(2), _negated(negated.group(3).strip()), True
    negated = _NEGATED_REVERSED_INEQUALITY_RE.fullmatch(text)  # -1 < -x is x < 1
    if negated is not None and negated.group(1).strip() and not has_free_letters(negated.group(1)):
        return negated.group(3), negated.group(2), _negated(negated.group(1).strip()), False
    return None


def _negated(bound: str) -> str:
    """``-1`` → ``1``, ``\\frac{1}{2}`` → ``-\\frac{1}{2}``, ``1+\\sqrt{2}`` → ``-(1+\\sqrt{2})``."""
    if bound.startswith("-") and _ONE_TERM_RE.fullmatch(bound[1:]):
        return bound[1:]
    return f"-{bound}" if _ONE_TERM_RE.fullmatch(bound) else f"-({bound})"


def _interval_of_inequality(text: str) -> tuple[str, str] | None:
    """(name, interval) of one variable bounded by constants: ``x \\geq 3`` and ``3 \\leq x`` → (``x``,
    ``[3,\\infty)``), ``1 < x \\leq 2`` → (``x``, ``(1,2]``); the interval of its solutions, as Math-Verify reads an
    inequality (on its gold side)."""
    single, double = _one_bound(text), _BOUNDED_RE.fullmatch(text)
    if single is not None:
        name, operator, bound, reversed_ = single
        closed = "=" in operator or "q" in operator or operator in "≤≥" or operator in ("\\le", "\\ge")
        if bool(re.fullmatch(_LESS, operator)) != reversed_:
            return canonical_name(name), f"(-\\infty,{bound}" + ("]" if closed else ")")
        return canonical_name(name), ("[" if closed else "(") + f"{bound},\\infty)"
    if double is not None and all(b.strip() and not has_free_letters(b) for b in (double.group(1), double.group(5))):
        low, high = double.group(1).strip(), double.group(5).strip()
        left = "(" if double.group(2) in ("<",) else "["
        right = ")" if double.group(4) in ("<",) else "]"
        return canonical_name(double.group(3)), f"{left}{low},{high}{right}"
    return None


def _set_builder(text: str) -> tuple[str, str] | None:
    """(name, value) of a set-builder form (``\\{x \\mid x > 3\\}``, ``\\{x : x \\geq 2\\}``): the set keeps the
    name of its variable, so ``\\{x \\mid x > 3\\}`` ≢ ``\\{y \\mid y > 3\\}``
    (docs/method.md#where-the-checker-differs-from-math-verify). Over the reals (no domain, or ``\\mathbb{R}``), a
    condition that bounds the variable by constants is the interval of :func:`_interval_of_inequality`
    (``\\{x \\mid x > 3\\}`` is ``x > 3``, ``(3,\\infty)`` named x); any other form is the set as written, ``\\mid``
    for its separator (``:``, ``|``), named by its variable. None for anything else."""
    found = _SET_BUILDER_RE.fullmatch(text.strip())
    if found is None:
        return None
    variable, domain, condition = canonical_name(found.group(1)), found.group(2), found.group(3).strip()
    if domain is None or _REAL_DOMAIN_RE.fullmatch(domain):
        interval = _interval_of_inequality(condition)
        if interval is not None and interval[0] == variable:
            return interval
    member = f"{found.group(1)}\\in {domain}" if domain else found.group(1)
    return variable, f"\\{{{member}\\mid {condition}\\}}"


def _assignment_list(text: str) -> tuple[str, str] | None:
    """(names, values) of a list of at least two assignments of values to distinct names (``x_1 = \\sqrt{2}, x_2 =
    -\\sqrt{2}``, ``y = 3, x = 2``): the names sorted and joined by commas, the values in the same order, so two
    such lists are compared name by name (``a_1 = 2, a_2 = 1`` ≢ ``a_1 = 1, a_2 = 2``; ``x_1 = 1`` … ≢ ``y_1 = 1``
    …); None for anything else."""
    parts = top_level_split(text) or []
    if len(parts) < 2:
        return None
    assigned = {}
    for part in parts:
        name, value = _value_of_assignment(part.strip())
        if name is None or name in assigned or "," in name:
            return None
        assigned[name] = value.strip()
    names = sorted(assigned)
    return ",".join(names), ", ".join(assigned[name] for name in names)


_LATEX_ARITHMETIC = (
    ("\\times", "*"),
    ("\\cdot", "*"),
    ("\\div", "/"),
    ("\\frac", ""),
    ("\\sqrt", ""),
    ("{", "("),
    ("}", ")"),
)
"""LaTeX a worked computation of numbers may be written in (``\\frac{56}{2}=28``), as the operators it stands for."""


def _result_of_arithmetic_chain(text: str) -> str:
    """``8 + 9 = 17`` → ``17``, ``\\frac{56}{2}=28`` → ``28``: a worked computation of numbers and operators (in
    LaTeX too, ``_LATEX_ARITHMETIC``) states its result last. A chain with a letter on any side (``x + 1 = 2``,
    ``9 = 4p + q``) is a relation and is left alone."""
    sides = text.split("=")
    if len(sides) < 2:
        return text
    arithmetic = sides
    for command, operator in _LATEX_ARITHMETIC:
        arithmetic = [side.replace(command, operator) for side in arithmetic]
    return sides[-1].strip() if all(_ARITHMETIC_SIDE_RE.fullmatch(side) for side in arithmetic) else text


def plain_number_separators(text: str) -> str:
    """``1,000`` → ``1000`` (thousands: groups of three, no space after the comma, no leading zero); ``0,375`` →
    ``0.375`` (a decimal comma after a leading zero). ``41, 207`` and ``1,5`` stay lists."""
    if _THOUSANDS_RE.fullmatch(text):
        return text.replace(",", "")
    if _DECIMAL_COMMA_RE.fullmatch(text):
        return text.replace(",", ".")
    return text


def _normalize_long(answer: str) -> str | None:
    """Linear-time normalization of an answer too long to be a formula: markup, text wrappers and whitespace."""
    return canonical_decimal(_drop_spaces(unwrap_commands(_strip_markup(answer), _TEXT_COMMAND_RE))) or None


@functools.lru_cache(maxsize=CACHE_SIZE)
def math_form(answer: str) -> MathForm:
    """The normalized math answer and the name it is assigned to (docs/method.md#answer-normalization)."""
    if len(answer) > _MAX_STRUCTURED_CHARS:
        return MathForm(_normalize_long(answer))
    text = unicode_roots(unwrap_commands(_strip_markup(python_powers(answer)), _WHOLE_BOX_RE))  # \\boxed{49}+1: 49+1
    text = repeating_decimal(text) or text  # before a trailing period is dropped: 0.4444... is 4/9, not 0.4444
    for symbol, latex in _UNICODE_MATH.items():
        text = text.replace(symbol, latex)
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    text = _LT_GT_RE.sub(lambda match: "<" if match.group(1) == "l" else ">", text)
    text = _LEFT_RIGHT_RE.sub("", _TIGHT_COMMA_RE.sub(",", text)).replace("\\!", "")
    text = _SPACING_RE.sub(lambda match: match.group(1) or " ", text)
    text = _DEGREE_RE.sub("", upright_constants(text))
    text = text.replace("\\%", "").replace("%", "").replace("{,}", ",").strip().rstrip(".")
    text = unwrap_commands(_drop_trailing_unit(text), _TEXT_COMMAND_RE)
    text = text.strip().rstrip(".").strip()
    text = magnitude(text, _is_unit) or text
    assignments = None
    if "," in text or " " in text:
        text = _LIST_WORD_RE.sub(", ", text).strip(", ")
        assignments = _assignment_list(text)
    name, text = assignments or _set_builder(text) or _interval_of_inequality(text) or _value_of_assignment(text)
    text = _result_of_arithmetic_chain(text)
    text = text.removeprefix("+").strip()
    text = mixed_number(text) or text
    unit = _NUMBER_WITH_UNIT_RE.fullmatch(text)
    if unit is not None and _is_unit(text[unit.end(1) :]):
        text = unit.group(1)
    text = _EULER_E_RE.sub(r"\\cdot e", plain_number_separators(text))
    text = _drop_spaces(_SQRT_SHORTHAND_RE.sub(r"\\sqrt{\1}", text))  # \sqrt2 3 is 3√2, as in TeX
    text = _FRAC_SHORTHAND_RE.sub(r"\\frac{\1}{\2}", text)
    text = _FRAC_HALF_SHORTHAND_RE.sub(r"\\frac\1{\2}", text)
    text = _SQRT_SHORTHAND_RE.sub(r"\\sqrt{\1}", text)
    value = canonical_decimal(text) or None
    if value is None:
        return MathForm(None)
    return MathForm(value, name, assignments is not None, denomination(answer))


def _plain_text(answer: str) -> str:
    """The answer without markup and with ``\\text{...}``-style wrappers replaced by their content."""
    return unwrap_commands(_strip_markup(answer), _TEXT_COMMAND_RE).strip()


def _normalize_text(answer: str) -> str | None:
    text = _plain_text(answer).rstrip(".").strip().strip(_QUOTES).strip()
    text = " ".join(plain_number_separators(text).casefold().split())
    return text or None


def _normalize_mc(answer: str) -> str | None:
    """Uppercase option letter; an answer that names no letter is normalized as text (docs/method.md#bbh-target-formats:
    a few BBH targets of letter-style subtasks are not letters)."""
    text = _plain_text(answer)
    if is_hedge(text):
        return _normalize_text(text)
    bare = _MC_BARE_LETTER_RE.fullmatch(text)
    if bare is not None:
        return bare.group(1).upper()
    with_text = _MC_LETTER_WITH_TEXT_RE.match(text)
    if with_text is not None:
        return (with_text.group(1) or with_text.group(2)).upper()
    return _normalize_text(text)


def is_hedge(answer: str) -> bool:
    """Whether an mc answer names several options joined by commas, "and", "or" or slashes (``(A) or (B)``,
    ``A and B``): a hedge, which names no single option."""
    return _MC_HEDGE_RE.fullmatch(_plain_text(answer)) is not None


def option_letter(answer: str) -> str | None:
    """The option letter an mc answer names, or None when it names none."""
    normalized = _normalize_mc(answer)
    return normalized if normalized is not None and len(normalized) == 1 and normalized in _LETTERS else None


_NORMALIZERS = {"mc": _normalize_mc, "text": _normalize_text}


@functools.lru_cache(maxsize=CACHE_SIZE)
def _normalize_cached(answer: str, kind: str) -> str | None:
    return _NORMALIZERS[kind](answer)


def normalize_answer(answer: str | None, kind: str = "math") -> str | None:
    """Canonical display / hash string of an answer (docs/method.md#answer-normalization: shared by a, ã and a*).

    math: strips ``$``, ``\\text{}``-style wrappers and trailing unit groups, ``\\left``/``\\right``, spacing
    commands, degree and percent signs (the word "percent" too), a trailing period, markdown ``**``, a leading
    ``+``, thousands separators of plain numbers (``12,\\! 345`` too), the name of an assignment of a value
    (``x = 5`` → ``5``, ``(m, n) = (5, 1)`` → ``(5,1)``, ``AB:CD = 2:5`` → ``2:5``; :func:`math_form` keeps the name
    for equivalence), the labels of labelled roots (``x_1 = 2, x_2 = 3`` → ``2,3``) and all insignificant
    whitespace (a matrix row break ``\\\\`` stays); "and" / "or" between list items become commas;
    ``\\dfrac``/``\\tfrac`` → ``\\frac``; plain decimals in canonical form (``5.0`` → ``5``).
    mc: the uppercase option letter. text: casefolded, whitespace-collapsed, surrounding quotes and final
    period stripped. None (no answer) for None or for an answer that normalizes to the empty string.
    """
    check_kind(kind)
    if answer is None:
        return None
    check_str(answer, "answer")
    return math_form(answer).value if kind == "math" else _normalize_cached(answer, kind)
