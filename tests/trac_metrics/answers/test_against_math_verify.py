"""Differential tests of the math answer checker against Math-Verify, the reference verifier
(docs/method.md#answers-and-labels).

Hypothesis draws (gold, prediction) pairs, equivalent and not, for each answer class below; the prediction is
wrapped in a model response. Our verdict is ``equivalent(gold, extract_answer(response, "math"), "math")``;
Math-Verify's is ``verify(parse("$" + gold + "$"), parse(response))`` with its default settings, gold first, as
lm-eval calls it. Where the two disagree, the disagreement must be one of the documented deliberate differences
(``documented_rule``, computed here from the strings by a small parser of its own, independent of the checker's
internals); any other disagreement fails with both verdicts.

Some classes give the gold as a reference writes it in structured forms (several boxes, a run of math groups,
labelled roots): then the gold goes through the same extraction, ``equivalent(extract_answer(gold, "math"),
extract_answer(response, "math"), "math")``, against ``verify(parse(gold), parse(response))``. Unreadable decorated
intervals and sets are checked against each of their numbers, where no equivalence at all is allowed.

The plain tests at the end pin, with hand-written pairs, the verdict a careful grader gives for each class.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import NamedTuple

import math_verify
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from trac_metrics.answers import equivalent, extract_answer

# ----------------------------------------------------------------------------------------------------------
# The documented differences, read from the strings by a small parser of this module
# ----------------------------------------------------------------------------------------------------------

REL_TOL = Fraction(1, 10**6)
MAX_SYMBOLIC_CHARS = 300

_SPACING_RE = re.compile(r"\\left(?![A-Za-z])|\\right(?![A-Za-z])|\\displaystyle|\\[,;:! ]|~|\s+|\$")
_LIST_COMMA_RE = re.compile(r",\s")  # "41, 207" is a list, "41,207" a number with a thousands separator
_FRAC_VARIANT_RE = re.compile(r"\\[dt]frac(?![A-Za-z])")
_OUTER_BOX_RE = re.compile(r"^\\boxed\{(.*)\}$")
_PERCENT_RE = re.compile(r"^(.*?)(?:\\?%|\\text\{percent\}|percent)$")

_INT = r"(?:[1-9]\d{0,2}(?:,\d{3})+|\d+)"  # "0,375" is a decimal comma, not a thousands separator
_PLAIN_DECIMAL_RE = re.compile(rf"^(?P<int>{_INT})?(?:\.(?P<frac>\d+))?$")
_DECIMAL_COMMA_RE = re.compile(r"^0,(?P<frac>\d+)$")
_E_NOTATION_RE = re.compile(r"^(?P<mantissa>\d+(?:\.\d+)?|\.\d+)[eE](?P<exp>[-+]?\d+)$")
_TIMES_TEN_RE = re.compile(
    r"^(?P<mantissa>\d+(?:\.\d+)?)(?:\\times|\\cdot)10\^(?:\{(?P<exp>[-+]?\d+)\}|(?P<digit>\d))$"
)
_SLASH_RE = re.compile(r"^(?P<num>\d+)/(?P<den>\d+)$")
_FRAC_RE = re.compile(r"^\\frac(?:\{(?P<num>-?\d+)\}|(?P<num1>\d))(?:\{(?P<den>\d+)\}|(?P<den1>\d))$")

_NAME = r"(?:[A-Za-z]|\\(?:alpha|beta|gamma|theta|lambda|mu|phi|omega))(?:_\{?[A-Za-z0-9]+\}?)?"
_NAME_RE = re.compile(rf"^{_NAME}$")
_NAME_TUPLE_RE = re.compile(rf"^\(?{_NAME}(?:,{_NAME})+\)?$")
_COMMAND_RE = re.compile(r"\\(?:begin|end)\{[a-z]*\}|\\[A-Za-z]+")
_WORD_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_HUGE_RE = re.compile(r"!|\\binom|\^\{?\d{4,}")
_E_NOTATION_ANYWHERE_RE = re.compile(r"\d[eE][-+]?\d")
_DECORATED_STRUCTURE_RE = re.compile(r"^(?P<before>.*?)(?:\\\{.*\\\}|[(\[][^()\[\]]*[)\]])(?P<after>.*)$")
_TRAILING_UNIT_RE = re.compile(r"^(.+?)~?\\(?:text|mathrm|textbf|textnormal|mbox)\{~?[A-Za-z]+\}$")


class Number(NamedTuple):
    """A number read from an answer: exact value when rational, a float otherwise, and the unit of its last
    written decimal place (None when no decimal point is written)."""

    exact: Fraction | None
    approx: float
    unit: Fraction | None


def compact(text: str) -> str:
    """``text`` without spacing, ``$``, ``\\left``/``\\right`` and an enclosing ``\\boxed{}``;
    ``\\dfrac`` / ``\\tfrac`` become ``\\frac``."""
    text = _FRAC_VARIANT_RE.sub(r"\\frac", _SPACING_RE.sub("", text)).replace("{,}", ",")
    boxed = _OUTER_BOX_RE.match(text)
    return boxed.group(1) if boxed else text


def _exact(value: Fraction, unit: Fraction | None = None) -> Number:
    return Number(value, float(value), unit)


def plain_number(text: str) -> Number | None:
    """An integer, decimal (also ``0,375``), ``a/b``, ``\\frac{a}{b}``, ``7.5e-3`` or ``7.5\\times10^{-3}``, with an
    optional sign; None for anything else (also for a comma list such as ``41, 207``)."""
    if _LIST_COMMA_RE.search(text):
        return None
    text = compact(text)
    sign = -1 if text.startswith("-") else 1
    text = text[1:] if text[:1] in "+-" else text
    if not text:
        return None
    if match := _PLAIN_DECIMAL_RE.match(text):
        if match.group("int") is None and match.group("frac") is None:
            return None
        digits = (match.group("int") or "0").replace(",", "")
        places = match.group("frac")
        value = Fraction(digits + ("." + places if places else ""))
        significant = (places or "").rstrip("0")
        return _exact(sign * value, Fraction(1, 10 ** len(significant)) if significant else None)
    if match := _DECIMAL_COMMA_RE.match(text):
        places = match.group("frac").rstrip("0")
        return _exact(sign * Fraction("0." + match.group("frac")), Fraction(1, 10 ** len(places)) if places else None)
    if (match := _E_NOTATION_RE.match(text)) or (match := _TIMES_TEN_RE.match(text)):
        mantissa = match.group("mantissa")
        exponent = int(match.groupdict().get("exp") or match.groupdict().get("digit") or 0)
        places = len(mantissa.partition(".")[2].rstrip("0"))
        scale = Fraction(10) ** exponent
        unit = Fraction(1, 10**places) * scale if places else None
        return _exact(sign * Fraction(mantissa) * scale, unit)
    if match := _SLASH_RE.match(text):
        if int(match.group("den")) == 0:
            return None
        return _exact(sign * Fraction(int(match.group("num")), int(match.group("den"))))
    if match := _FRAC_RE.match(text):
        numerator = int(match.group("num") or match.group("num1"))
        denominator = int(match.group("den") or match.group("den1"))
        return _exact(sign * Fraction(numerator, denominator)) if denominator else None
    return None


_EXPR_TOKEN_RE = re.compile(r"\\frac|\\sqrt|\\pi|\\cdot|\\times|\d+(?:\.\d+)?|\.\d+|[-+*/^(){}]")


class _Expression:
    """A recursive-descent reader of exact numeric LaTeX: numbers, ``+ - * / ^``, implicit products, ``\\frac``,
    ``\\sqrt`` and ``\\pi``. ``value()`` is None for anything else (letters, relations, lists)."""

    def __init__(self, text: str) -> None:
        self.tokens: list[str] = []
        position = 0
        while position < len(text):
            match = _EXPR_TOKEN_RE.match(text, position)
            if match is None:
                self.tokens = []
                return
            self.tokens.append(match.group())
            position = match.end()
        self.position = 0

    def value(self) -> Number | None:
        if not self.tokens:
            return None
        try:
            result = self._sum()
        except (ValueError, ZeroDivisionError, OverflowError, IndexError):
            return None
        return result if self.position == len(self.tokens) else None

    def _peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _take(self, expected: str | None = None) -> str:
        token = self.tokens[self.position]
        if expected is not None and token != expected:
            raise ValueError(token)
        self.position += 1
        return token

    def _sum(self) -> Number:
        result = self._product()
        while self._peek() in ("+", "-"):
            sign = 1 if self._take() == "+" else -1
            result = _combine(result, _scale(self._product(), sign), lambda a, b: a + b)
        return result

    def _product(self) -> Number:
        result = self._unary()
        while (token := self._peek()) is not None and token not in ("+", "-", ")", "}", "^"):
            if token in ("*", "\\cdot", "\\times"):
                self._take()
                result = _combine(result, self._unary(), lambda a, b: a * b)
            elif token == "/":
                self._take()
                result = _combine(result, self._unary(), lambda a, b: a / b)
            else:
                result = _combine(result, self._power(), lambda a, b: a * b)
        return result

    def _unary(self) -> Number:
        if self._peek() in ("+", "-"):
            sign = 1 if self._take() == "+" else -1
            return _scale(self._unary(), sign)
        return self._power()

    def _power(self) -> Number:
        base = self._atom()
        if self._peek() != "^":
            return base
        self._take()
        exponent = self._argument()
        if base.exact is not None and exponent.exact is not None and exponent.exact.denominator == 1:
            if abs(exponent.exact) > 64 or (base.exact == 0 and exponent.exact < 0):
                raise ValueError("power")
            return Number(base.exact**exponent.exact, base.approx**exponent.approx, base.unit)
        if base.exact is not None and exponent.exact == Fraction(1, 2):
            return _square_root(base)
        return Number(None, base.approx**exponent.approx, base.unit)

    def _argument(self) -> Number:
        """A braced group or a single digit (``\\frac12``, ``x^2``)."""
        token = self._peek()
        if token == "{":
            self._take()
            result = self._sum()
            self._take("}")
            return result
        if token is not None and token.isdigit():
            self._take()
            if len(token) > 1:  # \frac123 is \frac{1}{2}3: give the rest of the digits back
                self.tokens[self.position - 1 : self.position] = [token[0], token[1:]]
            return _exact(Fraction(int(token[0])))
        raise ValueError(token)

    def _atom(self) -> Number:
        token = self._peek()
        if token is None:
            raise ValueError("end")
        if token == "\\frac":
            self._take()
            numerator, denominator = self._argument(), self._argument()
            return _combine(numerator, denominator, lambda a, b: a / b)
        if token == "\\sqrt":
            self._take()
            return _square_root(self._argument())
        if token == "\\pi":
            self._take()
            return Number(None, math.pi, None)
        if token in ("(", "{"):
            self._take()
            result = self._sum()
            self._take(")" if token == "(" else "}")
            return result
        if token[0].isdigit() or token[0] == ".":
            self._take()
            places = len(token.partition(".")[2])
            return _exact(Fraction(token), Fraction(1, 10**places) if "." in token else None)
        raise ValueError(token)


def _scale(number: Number, sign: int) -> Number:
    return Number(None if number.exact is None else sign * number.exact, sign * number.approx, number.unit)


def _finer_unit(a: Fraction | None, b: Fraction | None) -> Fraction | None:
    return b if a is None else a if b is None else min(a, b)


def _combine(a: Number, b: Number, operation) -> Number:
    exact = operation(a.exact, b.exact) if a.exact is not None and b.exact is not None else None
    return Number(exact, operation(a.approx, b.approx), _finer_unit(a.unit, b.unit))


def _square_root(number: Number) -> Number:
    if number.approx < 0:
        raise ValueError("sqrt")
    if number.exact is not None:
        num, den = number.exact.numerator, number.exact.denominator
        if math.isqrt(num) ** 2 == num and math.isqrt(den) ** 2 == den:
            return _exact(Fraction(math.isqrt(num), math.isqrt(den)), number.unit)
    return Number(None, math.sqrt(number.approx), number.unit)


def numeric_value(text: str) -> Number | None:
    """The value of an exact numeric LaTeX expression (``2\\sqrt{5}``, ``\\frac{3\\pi}{4}``, ``5^{1/2}``)."""
    return _Expression(compact(text)).value()


def _expresses(written: Number, value: float | Fraction) -> bool:
    """The documented "expresses": an exact number only its own value; a decimal with unit u of its last nonzero
    written place the values of its sign that round or truncate to it (``|d| - u/2 <= |v| < |d| + u``) and lie
    within 1e-6 of the larger magnitude."""
    mine = written.exact if written.exact is not None else written.approx
    if written.unit is None:
        return written.exact is not None and value == written.exact
    if value and mine and (value < 0) != (mine < 0):
        return False
    unit = float(written.unit) if isinstance(value, float) else written.unit
    tolerance = (float(REL_TOL) if isinstance(value, float) else REL_TOL) * max(abs(value), abs(mine))
    excess = abs(value) - abs(mine)
    return -unit / 2 <= excess < unit and abs(value - mine) <= tolerance


def numbers_match(a: Number, b: Number) -> bool | None:
    """The documented number rule: equivalent when either number expresses the other's value (:func:`_expresses`).
    None outside the rule (two values without written decimals that are not both rational)."""
    if a.exact is not None and b.exact is not None:
        return _expresses(a, b.exact) or _expresses(b, a.exact)
    if a.unit is None and b.unit is None:
        return None
    return (a.unit is not None and _expresses(a, b.approx)) or (b.unit is not None and _expresses(b, a.approx))


def _top_level_split(text: str, separator: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def relation_sides(text: str) -> tuple[str, str] | None:
    """The two sides of a single top-level ``=`` of ``text`` (compacted), else None."""
    parts = _top_level_split(compact(text), "=")
    return (parts[0], parts[1]) if len(parts) == 2 else None


def is_name_relation(text: str) -> bool:
    """``x = 5``, ``y = mx + c``, ``(m, n) = (5, 1)``: a relation whose left side is a name or a tuple of names."""
    sides = relation_sides(text)
    return sides is not None and bool(_NAME_RE.match(sides[0]) or _NAME_TUPLE_RE.match(sides[0]))


def _is_braced_set(text: str) -> bool:
    text = compact(text)
    return text.startswith("\\{") and text.endswith("\\}")


def _is_bracketed(text: str) -> bool:
    text = compact(text)
    return text[:1] in "([" and text[-1:] in ")]" and not text.startswith("\\")


def _too_costly(text: str) -> bool:
    words = _WORD_RE.findall(_COMMAND_RE.sub(" ", text))
    return len(text) > MAX_SYMBOLIC_CHARS or len(words) >= 2 or bool(_HUGE_RE.search(compact(text)))


def _decimal_and_irrational(a: str, b: str) -> bool | None:
    """The number rule for a written decimal against an exact irrational (``2.2360679`` vs ``\\sqrt{5}``)."""
    decimal, other = plain_number(a), numeric_value(b)
    if decimal is None or decimal.unit is None or other is None or other.unit is not None or other.exact is not None:
        return None
    return numbers_match(decimal, other)


def documented_rule(gold: str, prediction: str, ours: bool, theirs: bool) -> str | None:
    """The documented difference from Math-Verify's defaults that explains ``ours != theirs`` on this pair, or None.

    A rule explains a disagreement only when the pair is in its scope and our verdict is the one the rule
    prescribes, so a checker bug inside a rule's scope is still reported.
    """
    if ours == theirs:
        return None
    if _too_costly(gold) or _too_costly(prediction):
        if not ours or compact(gold) == compact(prediction):
            return "R-too-costly"
    gold_number, prediction_number = plain_number(gold), plain_number(prediction)
    if gold_number is not None and prediction_number is not None:
        if _E_NOTATION_ANYWHERE_RE.search(compact(gold) + " " + compact(prediction)):
            return "R-e-notation" if numbers_match(gold_number, prediction_number) == ours else None
        return "R-exact-numbers" if numbers_match(gold_number, prediction_number) == ours else None
    for with_percent, other in ((gold, prediction), (prediction, gold)):
        percent = _PERCENT_RE.match(compact(with_percent))
        if percent and not _PERCENT_RE.match(compact(other)):
            value, other_value = plain_number(percent.group(1)), plain_number(other)
            if value is not None and other_value is not None and numbers_match(value, other_value) == ours:
                return "R-percent"
    for decimal, other in ((gold, prediction), (prediction, gold)):
        verdict = _decimal_and_irrational(decimal, other)
        if verdict is not None:
            return "R-exact-numbers" if verdict == ours else None
    for decorated, other in ((gold, prediction), (prediction, gold)):
        if is_decorated_structure(decorated) and plain_number(other) is not None:
            return "R-partial-parse" if not ours else None
    for relation, other in ((gold, prediction), (prediction, gold)):
        if relation_sides(relation) and not is_name_relation(relation) and relation_sides(other) is None:
            return "R-relation-vs-expression" if not ours else None
    for braced, other in ((gold, prediction), (prediction, gold)):
        if _is_braced_set(braced) and _is_bracketed(other):
            return "R-bracket-kinds" if not ours else None
    for with_unit, other in ((gold, prediction), (prediction, gold)):
        unit = _TRAILING_UNIT_RE.match(compact(with_unit))
        if unit and compact(other) == unit.group(1):
            return "R-units" if ours else None
    if _is_bracketed(gold) and _is_bracketed(prediction) and _brackets(gold) != _brackets(prediction):
        return "R-bracket-kinds" if not ours else None
    return None


def is_decorated_structure(text: str) -> bool:
    """An interval or braced set with something before or after it (``-[1,3)``, ``\\{2,5\\}^c``, ``(0,4]:``)."""
    match = _DECORATED_STRUCTURE_RE.match(compact(text))
    return match is not None and bool(match.group("before") or match.group("after"))


def _brackets(text: str) -> str:
    text = compact(text)
    return text[0] + text[-1]


# ----------------------------------------------------------------------------------------------------------
# Pairs
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One drawn pair: ``prediction`` is the answer as the model writes it, ``response`` the text around it;
    ``intended`` is the verdict a careful grader gives (shown in failures, never asserted here). With
    ``gold_is_text`` the gold is a reference in a structured form and goes through extraction as the response does;
    else it is a bare answer, given to Math-Verify in math mode."""

    label: str
    gold: str
    prediction: str
    response: str
    intended: bool
    gold_is_text: bool = False


WRAPPERS = (
    r"We simplify step by step, so the answer is $\boxed{PRED}$.",
    r"Putting the pieces together gives $\boxed{PRED}$",
    "The final answer is $PRED$. I hope it is correct.",
    "Checking the work once more.\n\n**Answer:** $PRED$",
)


UNBOXED_WRAPPERS = (
    "Putting everything together, we get $PRED$.",
    r"Thus \[ PRED \]",
    r"Hence the value we were after is \(PRED\).",
    "Final Answer: The final answer is $PRED$. I hope it is correct.",
    "$PRED$",
)
"""Responses that state the answer without a box (lm-eval's Minerva prompt among them)."""


@st.composite
def cases(draw, pairs: st.SearchStrategy[tuple[str, str, str, bool]], wrappers: tuple[str, ...] = WRAPPERS) -> Case:
    """A drawn (label, gold, prediction, intended) pair, maybe swapped, with the prediction wrapped in a response."""
    label, gold, prediction, intended = draw(pairs)
    if draw(st.booleans()):
        gold, prediction = prediction, gold
    response = draw(st.sampled_from(wrappers)).replace("PRED", prediction)
    return Case(label, gold, prediction, response, intended)


def our_verdict(gold: str, response: str, gold_is_text: bool = False) -> bool:
    reference = extract_answer(gold, "math") if gold_is_text else gold
    return equivalent(reference, extract_answer(response, "math"), "math")


def math_verify_verdict(gold: str, response: str, gold_is_text: bool = False) -> bool:
    reference = math_verify.parse(gold if gold_is_text else "$" + gold + "$")
    return bool(math_verify.verify(reference, math_verify.parse(response)))


def check_against_math_verify(case: Case) -> None:
    ours = our_verdict(case.gold, case.response, case.gold_is_text)
    theirs = math_verify_verdict(case.gold, case.response, case.gold_is_text)
    if ours == theirs:
        event("agree")
        return
    rule = documented_rule(case.gold, case.prediction, ours, theirs)
    event(f"disagree: {rule}")
    assert rule is not None, (
        f"undocumented disagreement with Math-Verify ({case.label}):\n"
        f"  gold       = {case.gold!r}\n"
        f"  prediction = {case.prediction!r}\n"
        f"  response   = {case.response!r}\n"
        f"  extracted  = {extract_answer(case.response, 'math')!r}\n"
        f"  ours = {ours}, Math-Verify = {theirs}, careful grader = {case.intended}\n"
        f"  Math-Verify parsed gold {math_verify.parse(case.gold if case.gold_is_text else '$' + case.gold + '$')!r}, "
        f"response {math_verify.parse(case.response)!r}"
    )


DIFFERENTIAL = settings(
    max_examples=40,
    deadline=None,
    database=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: the drawn values are small, failures are readable
    suppress_health_check=[HealthCheck.too_slow],
)


def _tex_rational(value: Fraction, style: str) -> str:
    """``value`` written as an integer, ``\\frac``, ``\\dfrac``, ``a/b`` or (when it terminates) a decimal."""
    if value.denominator == 1:
        return str(value.numerator)
    sign, magnitude = ("-" if value < 0 else ""), abs(value)
    num, den = magnitude.numerator, magnitude.denominator
    if style == "decimal" and _terminates(magnitude):
        return sign + format(Decimal(num) / Decimal(den), "f")
    if style == "slash":
        return f"{sign}{num}/{den}"
    if style == "frac-inside":
        return rf"\frac{{{sign}{num}}}{{{den}}}"
    command = r"\dfrac" if style == "dfrac" else r"\frac"
    return rf"{sign}{command}{{{num}}}{{{den}}}"


def _terminates(value: Fraction) -> bool:
    den = value.denominator
    for prime in (2, 5):
        while den % prime == 0:
            den //= prime
    return den == 1


RATIONAL_STYLES = ("frac", "dfrac", "slash", "decimal", "frac-inside")
rational_styles = st.sampled_from(RATIONAL_STYLES)
small_fractions = st.builds(Fraction, st.integers(-12, 12), st.sampled_from([1, 1, 2, 3, 4, 5, 6, 8]))


def _rounded(value: float, places: int) -> str:
    return f"{value:.{places}f}"


# --- fractions / decimals / radicals / pi ---------------------------------------------------------------------


@st.composite
def fraction_pairs(draw) -> tuple[str, str, str, bool]:
    value = Fraction(draw(st.integers(-20, 20).filter(bool)), draw(st.integers(2, 12)))
    gold = _tex_rational(value, draw(rational_styles))
    change = draw(st.sampled_from(["restyle", "restyle", "long-decimal", "short-decimal", "numerator", "tiny"]))
    if change == "restyle":
        return "fraction restyled", gold, _tex_rational(value, draw(rational_styles)), True
    if change == "long-decimal":  # 7 places: within one unit of the last place and 1e-6 relative
        return "fraction vs 7-place decimal", gold, _rounded(float(value), 7), True
    if change == "short-decimal":
        text = _rounded(float(value), 3)
        return "fraction vs 3-place decimal", gold, text, Fraction(text) == value
    if change == "numerator":
        return "fraction perturbed", gold, _tex_rational(value + Fraction(1, value.denominator), "frac"), False
    # off by one unit of the 7th place (two units from the rounded value when the fraction does not terminate)
    near = value if _terminates(value) else Fraction(Decimal(_rounded(float(value), 7))) + Fraction(1, 10**7)
    off = near + Fraction(1, 10**7)
    return "fraction vs decimal off by 1e-7", gold, format(Decimal(off.numerator) / off.denominator, ".7f"), False


@st.composite
def large_number_pairs(draw) -> tuple[str, str, str, bool]:
    base = draw(st.integers(10**5, 10**7))
    offset = draw(st.sampled_from(["0", "0.4", "1", "0.0000001"]))
    return f"large number plus {offset}", str(base), str(Decimal(base) + Decimal(offset)), offset == "0"


NON_SQUARES = [2, 3, 5, 6, 7, 10, 11, 13, 14, 15]


@st.composite
def radical_pairs(draw) -> tuple[str, str, str, bool]:
    n, k = draw(st.sampled_from(NON_SQUARES)), draw(st.integers(1, 4))
    coefficient = "" if k == 1 else str(k)
    writings = [rf"{coefficient}\sqrt{{{n}}}", rf"\sqrt{{{k * k * n}}}", rf"{coefficient}{n}^{{1/2}}"]
    if k == 1:  # \sqrt n without braces only for one digit: \sqrt10 is \sqrt{1}0 in TeX
        writings += [rf"{n}^{{\frac{{1}}{{2}}}}"] + ([rf"\sqrt{n}"] if n < 10 else [])
    value = k * math.sqrt(n)
    gold = draw(st.sampled_from(writings))
    change = draw(st.sampled_from(["rewrite", "rewrite", "reciprocal", "long-decimal", "short-decimal", "other"]))
    if change == "rewrite":
        return "radical rewritten", gold, draw(st.sampled_from(writings)), True
    if change == "reciprocal":
        return "1/sqrt vs sqrt/n", rf"\frac{{1}}{{\sqrt{{{n}}}}}", rf"\frac{{\sqrt{{{n}}}}}{{{n}}}", True
    if change == "long-decimal":
        return "radical vs 7-place decimal", gold, _rounded(value, 7), True
    if change == "short-decimal":
        return "radical vs 3-place decimal", gold, _rounded(value, 3), False
    return "radical perturbed", gold, rf"{coefficient}\sqrt{{{n + 1}}}", False


@st.composite
def pi_pairs(draw) -> tuple[str, str, str, bool]:
    k, m = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    value = Fraction(k, m)
    k, m = value.numerator, value.denominator
    top = "" if k == 1 else str(k)
    if m == 1:
        writings = [rf"{top}\pi"] + ([rf"{k} \pi", rf"\pi \cdot {k}"] if k > 1 else [])
    else:
        writings = [rf"\frac{{{top}\pi}}{{{m}}}", rf"\dfrac{{{k}}}{{{m}}}\pi", rf"{top}\pi/{m}"]
    gold = draw(st.sampled_from(writings))
    change = draw(st.sampled_from(["rewrite", "rewrite", "long-decimal", "other"]))
    if change == "rewrite":
        return "pi rewritten", gold, draw(st.sampled_from(writings)), True
    if change == "long-decimal":
        return "pi vs 7-place decimal", gold, _rounded(float(value) * math.pi, 7), True
    return "pi perturbed", gold, rf"\frac{{{k + 1}\pi}}{{{m}}}", False


number_cases = cases(st.one_of(fraction_pairs(), large_number_pairs(), radical_pairs(), pi_pairs()))


# --- e-notation, powers of ten, percent -----------------------------------------------------------------------


@st.composite
def notation_pairs(draw) -> tuple[str, str, str, bool]:
    if draw(st.booleans()):
        percent = draw(st.integers(1, 99))
        change = draw(st.sampled_from(["number", "fraction-of-one", "other"]))
        if change == "number":
            return "percent vs number", rf"{percent}\%", str(percent), True
        if change == "fraction-of-one":
            return (
                "percent vs fraction of one",
                rf"{percent}\%",
                _tex_rational(Fraction(percent, 100), "decimal"),
                False,
            )
        return "percent perturbed", rf"{percent}\%", str(percent + 1), False
    mantissa = Fraction(draw(st.integers(11, 99)), 10)
    exponent = draw(st.integers(-4, 4))
    value = mantissa * Fraction(10) ** exponent
    mantissa_text = format(Decimal(mantissa.numerator) / mantissa.denominator, "f")
    writings = [
        f"{mantissa_text}e{exponent}",
        rf"{mantissa_text}\times10^{{{exponent}}}",
        rf"{mantissa_text} \times 10^{{{exponent}}}",
    ]
    plain = format(Decimal(value.numerator) / value.denominator, "f")
    gold = draw(st.sampled_from([plain, *writings]))
    if draw(st.booleans()):
        return "scientific notation", gold, draw(st.sampled_from(writings)), True
    return "scientific notation perturbed", gold, f"{mantissa_text}e{exponent + 1}", False


notation_cases = cases(notation_pairs())


# --- intervals and sets ------------------------------------------------------------------------------------------


def _interval(left: str, a: str, b: str, right: str, spaced: bool, sized: bool) -> str:
    gap = ", " if spaced else ","
    if sized:
        return rf"\left{left} {a}{gap}{b} \right{right}"
    return f"{left}{a}{gap}{b}{right}"


def _braced_set(items: list[str], spaced: bool) -> str:
    return r"\{" + (", " if spaced else ",").join(items) + r"\}"


@st.composite
def interval_set_pairs(draw) -> tuple[str, str, str, bool]:
    kind = draw(st.sampled_from(["interval", "interval", "union", "set", "set"]))
    spaced, sized = draw(st.booleans()), draw(st.booleans())
    if kind == "interval":
        a, b = sorted(draw(st.lists(st.integers(-9, 9), min_size=2, max_size=2, unique=True)))
        left, right = draw(st.sampled_from("([")), draw(st.sampled_from(")]"))
        if draw(st.booleans()):
            a_text, left = r"-\infty", "("
        else:
            a_text = str(a)
        gold = _interval(left, a_text, str(b), right, spaced, sized)
        change = draw(st.sampled_from(["respace", "bracket", "endpoint", "set"]))
        if change == "respace":
            return "interval rewritten", gold, _interval(left, a_text, str(b), right, not spaced, not sized), True
        if change == "bracket":
            return (
                "interval bracket changed",
                gold,
                _interval(left, a_text, str(b), ")]"[right == ")"], spaced, sized),
                False,
            )
        if change == "endpoint":
            return "interval endpoint perturbed", gold, _interval(left, a_text, str(b + 1), right, spaced, sized), False
        return "interval vs set", gold, _braced_set([a_text, str(b)], spaced), False
    if kind == "union":
        a, b = sorted(draw(st.lists(st.integers(-9, 9), min_size=2, max_size=2, unique=True)))
        first = rf"(-\infty, {a}" + draw(st.sampled_from([")", "]"]))
        second = draw(st.sampled_from(["(", "["])) + rf"{b}, \infty)"
        gold = rf"{first} \cup {second}"
        change = draw(st.sampled_from(["reorder", "respace", "bracket"]))
        if change == "reorder":
            return "union reordered", gold, rf"{second} \cup {first}", True
        if change == "respace":
            return "union respaced", gold, gold.replace(" ", ""), True
        flipped = ("[" if second[0] == "(" else "(") + second[1:]
        return "union bracket changed", gold, rf"{first} \cup {flipped}", False
    values = draw(st.lists(small_fractions, min_size=2, max_size=4, unique=True))
    items = [_tex_rational(v, draw(rational_styles)) for v in values]
    gold = _braced_set(items, spaced)
    shuffled = draw(st.permutations([_tex_rational(v, draw(rational_styles)) for v in values]))
    change = draw(st.sampled_from(["shuffle", "shuffle", "bare-list", "element", "drop", "tuple"]))
    if change == "shuffle":
        return "set shuffled", gold, _braced_set(shuffled, not spaced), True
    if change == "bare-list":
        return "set vs bare list", gold, ", ".join(shuffled), True
    if change == "element":
        bumped = [*shuffled[:-1], _tex_rational(values[shuffled.index(shuffled[-1])] + 20, "frac")]
        return "set element perturbed", gold, _braced_set(bumped, spaced), False
    if change == "drop":
        return "set element dropped", gold, _braced_set(shuffled[:-1], spaced), False
    return "set vs tuple", gold, "(" + ", ".join(items) + ")", False


interval_set_cases = cases(interval_set_pairs())


# --- tuples ------------------------------------------------------------------------------------------------------


@st.composite
def tuple_pairs(draw) -> tuple[str, str, str, bool]:
    values = draw(st.lists(small_fractions, min_size=2, max_size=3))
    gold = "(" + ", ".join(_tex_rational(v, draw(rational_styles)) for v in values) + ")"
    rewritten = [_tex_rational(v, draw(rational_styles)) for v in values]
    change = draw(st.sampled_from(["rewrite", "rewrite", "swap", "perturb", "brackets", "set"]))
    if change == "rewrite":
        sized = draw(st.booleans())
        body = ", ".join(rewritten) if draw(st.booleans()) else ",".join(rewritten)
        return "tuple rewritten", gold, (rf"\left( {body} \right)" if sized else f"({body})"), True
    if change == "swap":
        swapped = [rewritten[1], rewritten[0], *rewritten[2:]]
        return "tuple order swapped", gold, "(" + ", ".join(swapped) + ")", values[0] == values[1]
    if change == "perturb":
        bumped = [*rewritten[:-1], _tex_rational(values[-1] + 1, "frac")]
        return "tuple entry perturbed", gold, "(" + ", ".join(bumped) + ")", False
    if change == "brackets":
        return "tuple vs brackets", gold, "[" + ", ".join(rewritten) + "]", False
    return "tuple vs set", gold, _braced_set(rewritten, True), False


tuple_cases = cases(tuple_pairs())


# --- equations and assignments -------------------------------------------------------------------------------


NAMES = ("x", "y", "k", "n", "t", "b", "c", r"m\angle B", r"m\angle C", "AB", "CD")


def _linear(terms: list[tuple[Fraction, str]]) -> str:
    """``2x - 4y + 6``: the non-zero terms of a linear form with integer or fraction coefficients."""
    pieces = []
    for coefficient, name in terms:
        if coefficient == 0:
            continue
        sign = "-" if coefficient < 0 else "+"
        magnitude = abs(coefficient)
        if name and magnitude == 1:
            body = name
        elif name and magnitude.numerator == 1:
            body = rf"\frac{{{name}}}{{{magnitude.denominator}}}"
        elif name and magnitude.denominator != 1:
            body = rf"\frac{{{magnitude.numerator}{name}}}{{{magnitude.denominator}}}"
        else:
            body = _tex_rational(magnitude, "frac") + name
        pieces.append((sign, body))
    if not pieces:
        return "0"
    text = ("-" if pieces[0][0] == "-" else "") + pieces[0][1]
    return text + "".join(f" {sign} {body}" for sign, body in pieces[1:])


@st.composite
def equation_pairs(draw) -> tuple[str, str, str, bool]:
    kind = draw(st.sampled_from(["assignment", "line", "line", "tuple-assignment", "relation"]))
    if kind == "assignment":
        name, other = draw(st.lists(st.sampled_from(NAMES), min_size=2, max_size=2, unique=True))
        value = draw(small_fractions)
        gold = f"{name} = {_tex_rational(value, draw(rational_styles))}"
        change = draw(st.sampled_from(["value", "named", "renamed", "perturbed"]))
        if change == "value":
            return "assignment vs value", gold, _tex_rational(value, draw(rational_styles)), True
        if change == "named":
            return "assignment restyled", gold, f"{name} = {_tex_rational(value, draw(rational_styles))}", True
        if change == "renamed":  # x = 4 and y = 4 are different lines
            return "assignment to another name", gold, f"{other} = {_tex_rational(value, 'frac')}", False
        return "assignment perturbed", gold, f"{name} = {_tex_rational(value + 1, 'frac')}", False
    if kind == "line":
        slope = Fraction(draw(st.integers(-4, 4).filter(bool)), draw(st.sampled_from([1, 2, 3])))
        intercept = draw(st.integers(-6, 6))
        if draw(st.booleans()):
            gold = "y = " + _linear([(slope, "x"), (Fraction(intercept), "")])
        else:
            gold = "y = " + _linear([(Fraction(intercept), ""), (slope, "x")])
        scale = draw(st.sampled_from([1, -1, 2, -2, 3])) * slope.denominator
        change = draw(st.sampled_from(["general", "general", "intercept", "slope"]))
        if change == "intercept":
            intercept += 1
        elif change == "slope":
            slope += 1
        # y = slope x + intercept  <=>  scale slope x - scale y + scale intercept = 0
        general = _linear([(scale * slope, "x"), (Fraction(-scale), "y"), (Fraction(scale * intercept), "")]) + " = 0"
        return f"line vs general form ({change})", gold, general, change == "general"
    if kind == "tuple-assignment":
        a, b = draw(st.integers(-9, 9)), draw(st.integers(-9, 9))
        names = draw(st.sampled_from(["(m, n)", "(x, y)", "(a, b)"]))
        gold = f"{names} = ({a}, {b})"
        if draw(st.booleans()):
            return "tuple assignment vs tuple", gold, f"({a}, {b})", True
        return "tuple assignment vs swapped tuple", gold, f"({b}, {a})", a == b
    a, b, c = draw(st.integers(2, 6)), draw(st.integers(1, 6)), draw(st.integers(1, 20))
    expression = f"{a}p + {b if b != 1 else ''}q"
    if draw(st.booleans()):
        return "relation vs its expression", f"{c} = {expression}", expression, False
    return "relation vs its constant", f"x + y = {c}", str(c), False


equation_cases = cases(equation_pairs())


# --- matrices ------------------------------------------------------------------------------------------------

RADICAL_ENTRIES = {  # value key -> equivalent writings
    "1/sqrt2": [r"\frac{1}{\sqrt2}", r"\frac{1}{\sqrt{2}}", r"\frac{\sqrt2}{2}", r"\frac{\sqrt{2}}{2}"],
    "-1/sqrt2": [r"-\frac{1}{\sqrt{2}}", r"-\frac{\sqrt{2}}{2}", r"\frac{-\sqrt{2}}{2}"],
    "sqrt3/2": [r"\frac{\sqrt{3}}{2}", r"\frac{\sqrt3}{2}", r"\frac{3}{2\sqrt{3}}"],
}


@st.composite
def matrix_entries(draw) -> tuple[object, list[str]]:
    if draw(st.integers(0, 3)) == 0:
        key = draw(st.sampled_from(sorted(RADICAL_ENTRIES)))
        return key, RADICAL_ENTRIES[key]
    value = draw(small_fractions)
    return value, sorted({_tex_rational(value, style) for style in RATIONAL_STYLES})


def _matrix(rows: list[list[str]], environment: str) -> str:
    body = r" \\ ".join(" & ".join(row) for row in rows)
    return rf"\begin{{{environment}}} {body} \end{{{environment}}}"


@st.composite
def matrix_pairs(draw) -> tuple[str, str, str, bool]:
    shape = draw(st.tuples(st.integers(1, 4), st.integers(1, 4)).filter(lambda s: s[0] * s[1] > 1))
    entries = [[draw(matrix_entries()) for _ in range(shape[1])] for _ in range(shape[0])]
    gold_env, pred_env = draw(st.sampled_from(["pmatrix", "bmatrix"])), draw(st.sampled_from(["pmatrix", "bmatrix"]))
    gold = _matrix([[draw(st.sampled_from(w)) for _, w in row] for row in entries], gold_env)
    written = [[draw(st.sampled_from(w)) for _, w in row] for row in entries]
    change = draw(st.sampled_from(["rewrite", "rewrite", "entry", "transpose", "drop-row"]))
    if change == "rewrite":
        return f"{shape[0]}x{shape[1]} matrix rewritten", gold, _matrix(written, pred_env), True
    if change == "entry":
        row, column = draw(st.integers(0, shape[0] - 1)), draw(st.integers(0, shape[1] - 1))
        key = entries[row][column][0]
        written[row][column] = "7" if isinstance(key, str) else _tex_rational(key + 1, "frac")
        return f"{shape[0]}x{shape[1]} matrix entry perturbed", gold, _matrix(written, pred_env), False
    if change == "transpose":
        keys = [[key for key, _ in row] for row in entries]
        symmetric = shape[0] == shape[1] and all(keys[i][j] == keys[j][i] for i in range(shape[0]) for j in range(i))
        return (
            f"{shape[0]}x{shape[1]} matrix transposed",
            gold,
            _matrix([list(c) for c in zip(*written)], pred_env),
            symmetric,
        )
    if shape[0] == 1:
        return (
            f"{shape[0]}x{shape[1]} matrix row dropped",
            gold,
            _matrix([row[:-1] for row in written], pred_env),
            False,
        )
    return f"{shape[0]}x{shape[1]} matrix row dropped", gold, _matrix(written[:-1], pred_env), False


matrix_cases = cases(matrix_pairs())


# --- units ---------------------------------------------------------------------------------------------------

UNIT_WRITINGS = (
    r"VALUE \text{ UNIT}",
    r"VALUE\text{UNIT}",
    r"VALUE\mathrm{UNIT}",
    r"VALUE \mathrm{ UNIT}",
    r"VALUE\textbf{ UNIT}",
    r"VALUE\textbf{UNIT}",
    r"VALUE\textnormal{ UNIT}",
    r"VALUE~\text{UNIT}",
    r"VALUE\ \text{UNIT}",
)


@st.composite
def unit_pairs(draw) -> tuple[str, str, str, bool]:
    value = draw(st.one_of(st.integers(1, 500).map(str), st.sampled_from(["2.5", "0.75", "12.5"])))
    unit = draw(st.sampled_from(["cm", "kg", "km", "m", "s", "mL"]))
    with_unit = draw(st.sampled_from(UNIT_WRITINGS)).replace("UNIT", unit)
    gold = draw(st.sampled_from([value, with_unit.replace("VALUE", value)]))
    if draw(st.booleans()):
        return "number with unit", gold, with_unit.replace("VALUE", value), True
    return "number with unit perturbed", gold, with_unit.replace("VALUE", str(Decimal(value) + 1)), False


unit_cases = cases(unit_pairs())


# --- several boxes -------------------------------------------------------------------------------------------


@st.composite
def several_box_cases(draw) -> Case:
    kind = draw(st.sampled_from(["roots", "roots", "final-phrase", "and-box", "repeated"]))
    if kind == "roots":
        roots = draw(st.lists(st.integers(-9, 9), min_size=2, max_size=3, unique=True))
        name = draw(st.sampled_from(["x", "t"]))
        joiner = draw(st.sampled_from([" or ", " and ", ", "]))
        dollars = draw(st.booleans())
        boxes = [f"{name} = \\boxed{{{r}}}" for r in roots]
        prediction = joiner.join(f"${b}$" if dollars else b for b in boxes)
        response = f"Solving the quadratic, {prediction}."
        listed = [str(r) for r in draw(st.permutations(roots))]
        change = draw(st.sampled_from(["list", "set", "one-root", "perturbed"]))
        if change == "list":
            return Case("boxed roots vs list", ", ".join(listed), prediction, response, True)
        if change == "set":
            return Case("boxed roots vs set", _braced_set(listed, True), prediction, response, True)
        if change == "one-root":
            return Case("boxed roots vs one root", listed[0], prediction, response, False)
        listed[-1] = str(int(listed[-1]) + 20)
        return Case("boxed roots vs perturbed list", ", ".join(listed), prediction, response, False)
    if kind == "final-phrase":
        a, b = draw(st.integers(2, 60)), draw(st.integers(2, 60))
        response = (
            rf"The first part is $\boxed{{{a}}}$ and the second part is $\boxed{{{b}}}$. The final answer is ${a + b}$."
        )
        gold = draw(st.sampled_from([str(a + b), str(b)]))
        return Case("intermediate boxes then final answer", gold, str(a + b), response, gold == str(a + b))
    if kind == "and-box":
        a, b = sorted(draw(st.lists(st.integers(1, 20), min_size=2, max_size=2, unique=True)))
        prediction = rf"{a} \text{{ and }} {b}"
        gold = draw(st.sampled_from([f"{a}, {b}", f"{b}, {a}", f"{a}, {b + 1}"]))
        return Case(
            "two values in one box",
            gold,
            prediction,
            rf"So the values are $\boxed{{{prediction}}}$.",
            gold != f"{a}, {b + 1}",
        )
    value = draw(st.one_of(st.integers(-50, 50).map(str), small_fractions.map(lambda v: _tex_rational(v, "frac"))))
    response = rf"So we get $\boxed{{{value}}}$. Double-checking, the answer is indeed $\boxed{{{value}}}$."
    return Case("same answer boxed twice", value, value, response, True)


# --- thousands separators, lists, decimal commas -------------------------------------------------------------


@st.composite
def separator_pairs(draw) -> tuple[str, str, str, bool]:
    kind = draw(st.sampled_from(["thousands", "thousands", "list", "decimal-comma"]))
    if kind == "thousands":
        number = draw(st.integers(1000, 9_999_999))
        grouped = f"{number:,}"
        written = draw(st.sampled_from([grouped, grouped.replace(",", "{,}"), grouped.replace(",", "\\,")]))
        if draw(st.booleans()):
            return "thousands separators", str(number), written, True
        return "thousands separators perturbed", str(number + 1000), written, False
    if kind == "list":
        a, b = draw(st.integers(1, 99)), draw(st.integers(100, 999))
        listed = f"{a}, {b}"
        change = draw(st.sampled_from(["joined", "reversed", "perturbed"]))
        if change == "joined":
            return "list vs joined digits", listed, f"{a}{b}", False
        if change == "reversed":
            return "list reversed", listed, f"{b}, {a}", True
        return "list perturbed", listed, f"{a}, {b + 1}", False
    digits = str(draw(st.integers(1, 999))).rjust(draw(st.integers(2, 3)), "0")
    digits = digits.rstrip("0") or "5"
    if draw(st.booleans()):
        return "decimal comma", f"0.{digits}", f"0,{digits}", True
    return "decimal comma perturbed", f"0.{digits}1", f"0,{digits}", False


separator_cases = cases(separator_pairs())


# --- plus-minus ----------------------------------------------------------------------------------------------


@st.composite
def plus_minus_pairs(draw) -> tuple[str, str, str, bool]:
    k = draw(st.integers(1, 12))
    if draw(st.booleans()):
        gold = draw(st.sampled_from([rf"\pm {k}", rf"\pm{k}", rf"x = \pm {k}"]))
        change = draw(st.sampled_from(["set", "list", "reversed", "positive-only", "perturbed"]))
        if change == "set":
            return "pm vs set", gold, _braced_set([f"-{k}", str(k)], True), True
        if change == "list":
            return "pm vs list", gold, f"-{k}, {k}", True
        if change == "reversed":
            return "pm vs reversed set", gold, _braced_set([str(k), f"-{k}"], False), True
        if change == "positive-only":
            return "pm vs one sign", gold, str(k), False
        return "pm vs perturbed set", gold, _braced_set([f"-{k}", str(k + 1)], True), False
    a, n = draw(st.integers(-5, 5)), draw(st.sampled_from(NON_SQUARES))
    centre = f"{a} " if a else ""
    gold = rf"{centre}\pm \sqrt{{{n}}}"
    roots = [rf"{a} + \sqrt{{{n}}}", rf"{a} - \sqrt{{{n}}}"] if a else [rf"\sqrt{{{n}}}", rf"-\sqrt{{{n}}}"]
    change = draw(st.sampled_from(["list", "set", "perturbed"]))
    if change == "list":
        return "a pm sqrt vs list", gold, ", ".join(draw(st.permutations(roots))), True
    if change == "set":
        return "a pm sqrt vs set", gold, _braced_set(draw(st.permutations(roots)), True), True
    return "a pm sqrt vs perturbed list", gold, f"{roots[0]}, {roots[1].replace(str(n), str(n + 1))}", False


plus_minus_cases = cases(plus_minus_pairs())


# --- thin spaces, labelled ratios and quotients, the word "percent", repeated set elements ----------------------


@st.composite
def written_form_pairs(draw) -> tuple[str, str, str, bool]:
    kind = draw(st.sampled_from(["thin-space", "ratio", "quotient", "percent", "repeated"]))
    if kind == "thin-space":
        number = draw(st.integers(1000, 999_999))
        spaced = f"{number:,}".replace(",", draw(st.sampled_from([r",\! ", r",\!", r"{,}"])))
        if draw(st.booleans()):
            return "thousands with a thin space", str(number), spaced, True
        return "thousands with a thin space perturbed", str(number + 1000), spaced, False
    if kind == "ratio":
        p, q = draw(st.integers(1, 9)), draw(st.integers(1, 9))
        names = draw(st.sampled_from(["AB:CD", "x:y", "PQ : QR"]))
        other = draw(st.sampled_from([f"{p}:{q}", f"{p}:{q + 1}"]))
        return "labelled ratio", f"{names} = {p}:{q}", other, other == f"{p}:{q}"
    if kind == "quotient":
        value = Fraction(draw(st.integers(1, 9)), draw(st.integers(2, 9)))
        names = draw(st.sampled_from([r"\frac{PQ}{QR}", r"\frac{x}{y}", "AB/BC"]))
        other = draw(st.sampled_from([value, value + 1]))
        gold = f"{names} = {_tex_rational(value, draw(rational_styles))}"
        return "labelled quotient", gold, _tex_rational(other, draw(rational_styles)), other == value
    if kind == "percent":
        percent = draw(st.integers(1, 99))
        word = draw(st.sampled_from([" percent", r"\text{ percent}", r"\%"]))
        other = draw(st.sampled_from([rf"{percent}\%", str(percent), rf"{percent + 1}\%"]))
        return "the word percent", f"{percent}{word}", other, not other.startswith(str(percent + 1))
    values = draw(st.lists(st.integers(-9, 9), min_size=2, max_size=3, unique=True))
    repeated = [*values, draw(st.sampled_from(values))]
    gold = _braced_set([str(v) for v in draw(st.permutations(repeated))], draw(st.booleans()))
    if draw(st.booleans()):
        return "set with a repeated element", gold, _braced_set([str(v) for v in values], True), True
    return "set with a repeated element vs another set", gold, _braced_set([str(v) for v in values[:-1]], True), False


written_form_cases = cases(written_form_pairs())


# --- intervals and sets the LaTeX parser cannot read, against each of their numbers -------------------------------


@st.composite
def decorated_structures(draw) -> tuple[str, list[int]]:
    """An interval or a set with a sign or a term before it, a complement or a power after it, or trailing
    punctuation (``-[1,3)``, ``7-[1,2)``, ``\\{2,5\\}^c``, ``(0,4]:``, ``\\{0,6\\}^n``), and its numbers."""
    numbers = sorted(draw(st.lists(st.integers(-9, 9), min_size=2, max_size=3, unique=True)))
    if draw(st.booleans()):
        core = draw(st.sampled_from("([")) + ",".join(map(str, numbers[:2])) + draw(st.sampled_from(")]"))
        numbers = numbers[:2]
    else:
        core = _braced_set([str(n) for n in numbers], draw(st.booleans()))
    before = draw(st.sampled_from(["", "", "-", "7-", r"\mathbb{R}\setminus"]))
    after = draw(st.sampled_from(["", "^c", r"^{\complement}", "^n", "^{2}", "^2"]))
    punctuation = draw(st.sampled_from(["", "", ":", ";", "!", ":."]))
    decorated = before + core + after + punctuation
    if decorated == core:
        decorated = core + ":"
    return decorated, [*numbers, 7] if before == "7-" else numbers


@DIFFERENTIAL
@given(decorated_structures(), st.sampled_from(WRAPPERS))
def test_differential_unreadable_structures_are_never_their_numbers(structure: tuple[str, list[int]], wrapper: str):
    decorated, numbers = structure
    for number in numbers:
        for gold, prediction in ((str(number), decorated), (decorated, str(number))):
            case = Case(
                "decorated structure vs its number", gold, prediction, wrapper.replace("PRED", prediction), False
            )
            assert not our_verdict(case.gold, case.response), case
            check_against_math_verify(case)


# --- references in structured forms: several boxes, a run of math groups, labelled roots ----------------------


@st.composite
def structured_reference_cases(draw) -> Case:
    values = draw(st.lists(small_fractions, min_size=2, max_size=3, unique=True))
    written = [_tex_rational(Fraction(v), "frac") for v in values]
    form = draw(st.sampled_from(["adjacent-boxes", "counted-boxes", "groups", "labelled-roots"]))
    if form == "adjacent-boxes":
        gold = draw(st.sampled_from(["", " "])).join(rf"\boxed{{{w}}}" for w in written)
    elif form == "counted-boxes":
        nouns = ("apples", "pears", "plums")
        gold = " and ".join(rf"\boxed{{{w}}} {noun}" for w, noun in zip(written, nouns))
    elif form == "groups":
        gold = " and ".join(f"${w}$" for w in written)
    else:
        gold = "$" + r", \quad ".join(f"x_{i + 1} = {w}" for i, w in enumerate(written)) + "$"
    shuffled = [_tex_rational(Fraction(v), draw(rational_styles)) for v in draw(st.permutations(values))]
    change = draw(st.sampled_from(["set", "set", "boxes", "dropped", "perturbed"]))
    if change == "set":
        prediction, intended = ", ".join(shuffled), True
    elif change == "boxes":
        response = " and ".join(rf"$\boxed{{{w}}}$" for w in shuffled)
        return Case(f"reference as {form} vs boxes", gold, ", ".join(shuffled), response, True, gold_is_text=True)
    elif change == "dropped":
        prediction, intended = ", ".join(shuffled[:-1]), False
    else:
        prediction, intended = ", ".join([*shuffled[:-1], _tex_rational(Fraction(values[0]) + 20, "frac")]), False
    response = rf"So the answer is $\boxed{{{prediction}}}$."
    return Case(f"reference as {form} ({change})", gold, prediction, response, intended, gold_is_text=True)


# --- answers without a box ---------------------------------------------------------------------------------------


unboxed_cases = cases(
    st.one_of(fraction_pairs(), radical_pairs(), tuple_pairs(), interval_set_pairs()), UNBOXED_WRAPPERS
)


@st.composite
def sentence_answer_cases(draw) -> Case:
    """A number stated in a sentence without "is" (after "Final Answer:" or as the last words of a response)."""
    value, other = draw(st.integers(2, 500)), draw(st.integers(2, 500))
    response = draw(
        st.sampled_from(
            [
                "Final Answer: Tom finished the race PRED minutes early.",
                "Adding the two groups, the class has PRED students in all.",
                "She needs PRED more stickers.",
            ]
        )
    ).replace("PRED", str(value))
    return Case("sentence answer", str(other), str(value), response, other == value)


@DIFFERENTIAL
@given(number_cases)
def test_differential_fractions_decimals_radicals_pi(case: Case) -> None:
    check_against_math_verify(case)


@DIFFERENTIAL
@given(notation_cases)
def test_differential_e_notation_and_percent(case: Case) -> None:
    check_against_math_verify(case)


@DIFFERENTIAL
@given(interval_set_cases)
def test_differential_intervals_and_sets(case: Case) -> None:
    check_against_math_verify(case)


@DIFFERENTIAL
@given(tuple_cases)
def test_differential_tuples(case: Case) -> None:
    check_against_math_verify(case)


@DIFFERENTIAL
@given(equation_cases)
def test_differential_equations_and_assignments(case: Case) -> None:
    check_against_math_verify(case)


@DIFFERENTIAL
@given(matrix_cases)
def test_differential_matrices(case: Case) -> None:
    check_against_math_verify(case)


@DIFFERENTIAL
@given(unit_cases)
def test_differential_units(case: Case) -> None:
    check_against_math_verify(case)


@DIFFERENTIAL
@given(several_box_cases())
def test_differential_several_boxes(case: Case) -> None:
    check_against_math_verify(case)


@DIFFERENTIAL
@given(separator_cases)
def test_differential_thousands_separators_and_lists(case: Case) -> None:
    check_against_math_verify(case)


@DIFFERENTIAL
@given(plus_minus_cases)
def test_differential_plus_minus(case: Case) -> None:
    check_against_math_verify(case)


@DIFFERENTIAL
@given(written_form_cases)
def test_differential_thin_spaces_ratios_percent_words_repeated_elements(case: Case) -> None:
    check_against_math_verify(case)


@DIFFERENTIAL
@given(structured_reference_cases())
def test_differential_references_in_structured_forms(case: Case) -> None:
    check_against_math_verify(case)


@DIFFERENTIAL
@given(st.one_of(unboxed_cases, sentence_answer_cases()))
def test_differential_answers_without_a_box(case: Case) -> None:
    check_against_math_verify(case)


# ----------------------------------------------------------------------------------------------------------
# Hand-written pairs: the verdict a careful grader gives
# ----------------------------------------------------------------------------------------------------------


def boxed(prediction: str) -> str:
    return rf"We simplify step by step, so the answer is $\boxed{{{prediction}}}$."


def assert_verdict(gold: str, response: str, expected: bool) -> None:
    extracted = extract_answer(response, "math")
    assert our_verdict(gold, response) is expected, (
        f"gold {gold!r} vs response {response!r} (extracted {extracted!r}): expected "
        f"{'equivalent' if expected else 'not equivalent'}"
    )


def pairs(*rows: tuple[str, str, str, bool]):
    """``(id, gold, response, expected)`` rows as parameters with readable ids."""
    return pytest.mark.parametrize(
        ("gold", "response", "expected"), [pytest.param(*row[1:], id=row[0]) for row in rows]
    )


@pairs(
    ("frac-vs-slash", r"\frac{3}{4}", boxed("3/4"), True),
    ("dfrac-vs-decimal", r"\dfrac{3}{4}", boxed("0.75"), True),
    ("frac-vs-other-decimal", r"\frac{3}{4}", boxed("0.76"), False),
    ("third-vs-7-places", r"\frac{1}{3}", boxed("0.3333333"), True),
    ("third-vs-3-places", r"\frac13", boxed("0.333"), False),
    ("0.1-vs-0.1000001", "0.1", boxed("0.1000001"), True),  # within 1e-6 relative: 0.1 expresses it
    ("third-vs-0.3333334", r"\frac{1}{3}", boxed("0.3333334"), False),  # neither rounds nor truncates 1/3
    ("million-vs-million-point-4", "1000000", boxed("1000000.4"), False),
    ("sqrt-vs-half-power", r"\sqrt{5}", boxed("5^{1/2}"), True),
    ("sqrt5-vs-7-places", r"\sqrt{5}", boxed("2.2360679"), True),
    ("sqrt5-vs-3-places", r"\sqrt{5}", boxed("2.236"), False),
    ("2sqrt3-vs-sqrt12", r"2\sqrt{3}", boxed(r"\sqrt{12}"), True),
    ("pi-multiple", r"\frac{3\pi}{4}", boxed(r"\dfrac{3}{4}\pi"), True),
    ("pi-vs-7-places", r"\pi", boxed("3.1415927"), True),
    ("pi-vs-other-multiple", r"2\pi", boxed(r"3\pi"), False),
)
def test_fractions_decimals_radicals_pi(gold: str, response: str, expected: bool) -> None:
    assert_verdict(gold, response, expected)


@pairs(
    ("1e3-vs-1000", "1000", boxed("1e3"), True),
    ("e-notation-vs-decimal", "0.0075", boxed("7.5e-3"), True),
    ("times-ten-vs-decimal", "0.0075", boxed(r"7.5\times10^{-3}"), True),
    ("e-notation-other-exponent", "0.0075", boxed("7.5e-2"), False),
    ("percent-vs-number", "50", boxed(r"50\%"), True),
    ("percent-vs-fraction-of-one", "0.5", boxed(r"50\%"), False),
)
def test_e_notation_and_percent(gold: str, response: str, expected: bool) -> None:
    assert_verdict(gold, response, expected)


@pairs(
    ("interval-sized-brackets", "[1, 3)", boxed(r"\left[1,3\right)"), True),
    ("interval-bracket-changed", "(1, 3]", boxed("[1, 3)"), False),
    ("interval-endpoint-changed", "[1, 3)", boxed("[1, 4)"), False),
    ("set-shuffled", r"\{1, 2, 3\}", boxed(r"\{3, 1, 2\}"), True),
    ("set-element-changed", r"\{1, 2, 3\}", boxed(r"\{3, 1, 4\}"), False),
    ("set-vs-open-interval", r"\{1, 2\}", boxed("(1, 2)"), False),
    ("union-reordered", r"(-\infty, 1) \cup (2, \infty)", boxed(r"(2, \infty) \cup (-\infty, 1)"), True),
    ("union-bracket-changed", r"(-\infty, 1) \cup (2, \infty)", boxed(r"(-\infty, 1] \cup (2, \infty)"), False),
)
def test_intervals_and_sets(gold: str, response: str, expected: bool) -> None:
    assert_verdict(gold, response, expected)


@pairs(
    ("entries-rewritten", r"(\frac{1}{2}, 3)", boxed(r"\left( 0.5, 3 \right)"), True),
    ("order-swapped", "(1, 2)", boxed("(2, 1)"), False),
    ("tuple-vs-set", "(1, 2)", boxed(r"\{1, 2\}"), False),
    ("tuple-vs-square-brackets", "(1, 2, 3)", boxed("[1, 2, 3]"), False),
)
def test_tuples(gold: str, response: str, expected: bool) -> None:
    assert_verdict(gold, response, expected)


@pairs(
    ("assignment-vs-value", "5", boxed("x = 5"), True),
    ("assignment-other-value", "5", boxed("x = 6"), False),
    ("tuple-assignment-vs-tuple", "(5, 1)", boxed("(m, n) = (5, 1)"), True),
    ("tuple-assignment-vs-swapped-tuple", "(5, 1)", boxed("(m, n) = (1, 5)"), False),
    ("line-vs-general-form", r"y = 3 - \frac{x}{2}", boxed("x + 2y - 6 = 0"), True),
    ("line-vs-scaled-general-form", "y = 2x + 1", boxed("-4x + 2y - 2 = 0"), True),
    ("line-vs-other-line", r"y = 3 - \frac{x}{2}", boxed("x + 2y - 7 = 0"), False),
    ("relation-vs-its-expression", "4p+q", boxed("9 = 4p + q"), False),
    ("relation-vs-its-constant", "5", boxed("x + y = 5"), False),
)
def test_equations_and_assignments(gold: str, response: str, expected: bool) -> None:
    assert_verdict(gold, response, expected)


ROTATION = r"\frac{1}{\sqrt2} & -\frac{1}{\sqrt2} & 0 \\ \frac{1}{\sqrt2} & \frac{1}{\sqrt2} & 0 \\ 0 & 0 & 1"
ROTATION_RATIONALIZED = (
    r"\frac{\sqrt2}{2} & -\frac{\sqrt{2}}{2} & 0 \\ \frac{\sqrt{2}}{2} & \frac{\sqrt2}{2} & 0 \\ 0 & 0 & 1"
)
ROTATION_TRANSPOSED = (
    r"\frac{\sqrt2}{2} & \frac{\sqrt{2}}{2} & 0 \\ -\frac{\sqrt{2}}{2} & \frac{\sqrt2}{2} & 0 \\ 0 & 0 & 1"
)


@pairs(
    (
        "3x3-rationalized-entries",
        rf"\begin{{pmatrix}} {ROTATION} \end{{pmatrix}}",
        boxed(rf"\begin{{bmatrix}} {ROTATION_RATIONALIZED} \end{{bmatrix}}"),
        True,
    ),
    (
        "3x3-transposed",
        rf"\begin{{pmatrix}} {ROTATION} \end{{pmatrix}}",
        boxed(rf"\begin{{pmatrix}} {ROTATION_TRANSPOSED} \end{{pmatrix}}"),
        False,
    ),
    (
        "4x4-fractions-vs-decimals",
        r"\begin{pmatrix} \frac12 & 0 & 0 & 1 \\ 0 & 2 & 0 & 0 \\ 0 & 0 & \frac34 & 0 \\ 1 & 0 & 0 & 4 \end{pmatrix}",
        boxed(r"\begin{pmatrix} 0.5 & 0 & 0 & 1 \\ 0 & 2 & 0 & 0 \\ 0 & 0 & 0.75 & 0 \\ 1 & 0 & 0 & 4 \end{pmatrix}"),
        True,
    ),
    (
        "2x2-vs-2x1",
        r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}",
        boxed(r"\begin{pmatrix} 1 \\ 3 \end{pmatrix}"),
        False,
    ),
)
def test_matrices(gold: str, response: str, expected: bool) -> None:
    assert_verdict(gold, response, expected)


@pairs(
    ("text-unit", "5", boxed(r"5 \text{ cm}"), True),
    ("mathrm-unit", "5", boxed(r"5\mathrm{kg}"), True),
    ("textbf-unit", "5", boxed(r"5\textbf{ cm}"), True),
    ("textbf-unit-in-gold", r"5\textbf{cm}", boxed("5"), True),
    ("textnormal-unit", "5", boxed(r"5\textnormal{ km}"), True),
    ("tilde-text-unit", "0.75", boxed(r"0.75~\text{m}"), True),
    ("other-number-with-unit", "5", boxed(r"6 \text{ cm}"), False),
)
def test_units(gold: str, response: str, expected: bool) -> None:
    assert_verdict(gold, response, expected)


@pairs(
    ("roots-in-two-boxes", "-5, 2", r"Solving, x = \boxed{2} or x = \boxed{-5}", True),
    ("roots-in-two-boxes-vs-one-root", "2", r"Solving, x = \boxed{2} or x = \boxed{-5}", False),
    ("final-answer-after-boxes", "52", r"First \boxed{12}, then \boxed{40}. The final answer is $52$", True),
    ("final-answer-not-last-box", "40", r"First \boxed{12}, then \boxed{40}. The final answer is $52$", False),
    ("final-answer-in-a-sentence", "34", "We check every case.\n\nFinal Answer: The largest $n$ is 34.", True),
    ("two-values-in-one-box", "3, 7", boxed(r"3 \text{ and } 7"), True),
    ("same-answer-boxed-twice", r"\frac{1}{2}", r"So $\boxed{\frac12}$; checking again, $\boxed{\frac{1}{2}}$.", True),
)
def test_several_boxes(gold: str, response: str, expected: bool) -> None:
    assert_verdict(gold, response, expected)


@pairs(
    ("thousands-separator", "1000", boxed("1,000"), True),
    ("thousands-separators-latex", "1234567", boxed("1{,}234{,}567"), True),
    ("list-is-not-a-number", "41207", boxed("41, 207"), False),
    ("list-reversed", "41, 207", boxed("207, 41"), True),
    ("decimal-comma", "0.375", boxed("0,375"), True),
    ("decimal-comma-other-value", "0.376", boxed("0,375"), False),
)
def test_thousands_separators_and_lists(gold: str, response: str, expected: bool) -> None:
    assert_verdict(gold, response, expected)


@pairs(
    ("pm-vs-set", r"\{-4, 4\}", boxed(r"\pm 4"), True),
    ("pm-vs-list", "4, -4", boxed(r"\pm 4"), True),
    ("pm-vs-positive-only", "4", boxed(r"\pm 4"), False),
    ("pm-vs-other-set", r"\{-4, 5\}", boxed(r"\pm 4"), False),
    ("centre-pm-sqrt-vs-list", r"2 + \sqrt{3}, 2 - \sqrt{3}", boxed(r"2 \pm \sqrt{3}"), True),
)
def test_plus_minus(gold: str, response: str, expected: bool) -> None:
    assert_verdict(gold, response, expected)


# ----------------------------------------------------------------------------------------------------------
# The rule reader itself (it must not excuse a disagreement outside its rules)
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gold", "prediction", "ours", "theirs", "rule"),
    [
        pytest.param(r"\frac{1}{3}", "0.3333334", False, True, "R-exact-numbers", id="float-rounding"),
        pytest.param(r"\frac{1}{3}", "0.3333334", True, False, None, id="float-rounding-wrong-side"),
        pytest.param(r"\sqrt{5}", "2.2360679", True, False, "R-exact-numbers", id="decimal-vs-irrational"),
        pytest.param("1000", "1e3", True, False, "R-e-notation", id="e-notation"),
        pytest.param("4p+q", "9 = 4p+q", False, True, "R-relation-vs-expression", id="relation"),
        pytest.param("5", "x = 5", False, True, None, id="assignment-is-not-a-relation"),
        pytest.param(r"\{1,2\}", "(1,2)", False, True, "R-bracket-kinds", id="set-vs-interval"),
        pytest.param("0.5", r"50\%", False, True, "R-percent", id="percent"),
        pytest.param("41207", "41, 207", True, False, None, id="list-is-not-a-number"),
        pytest.param("0.375", "0,375", False, True, None, id="decimal-comma"),
        pytest.param("5", r"5 \text{ is the number of such triangles}", False, True, "R-too-costly", id="words"),
        pytest.param("7", r"\{-9, -7, 7\}^n", False, True, "R-partial-parse", id="partial-parse"),
        pytest.param("7", r"\{-9, -7, 7\}^n", True, False, None, id="partial-parse-wrong-side"),
        pytest.param("7", r"\{-9, -7, 7\}", False, True, None, id="set-is-not-decorated"),
        pytest.param("0.15", "15 percent", False, True, "R-percent", id="percent-word"),
        pytest.param("1", "1" * 301, False, True, "R-too-costly", id="long"),
    ],
)
def test_documented_rule_reader(gold: str, prediction: str, ours: bool, theirs: bool, rule: str | None) -> None:
    assert documented_rule(gold, prediction, ours, theirs) == rule
