"""The math answer checker on every real reference answer of MATH-500, Minerva, OlympiadBench (single-answer rows),
AIME 2024 + 2025 and GSM8K (the public copies in ``../shared/real-data``, a sibling of the checkout).

Each reference gets up to ``MAX_REWRITES`` equivalent rewrites made by deterministic string transforms (``TRANSFORMS``:
``\\dfrac`` ↔ ``\\frac`` ↔ ``a/b``, spacing, ``$…$``, ``\\left( \\right)``, a trailing period, a trailing unit,
thousands separators, and for irrational constants a 7-significant-digit decimal, rounded and truncated). Every rewrite
must be judged equivalent to its reference, also after extraction from a boxed response; the allow-list
``NOT_EQUIVALENT_REWRITES`` names the rewrites a transform genuinely broke. Each reference must be judged not equivalent
to the next different reference of its dataset, except for the genuine coincidences of ``COINCIDENCES``.

The module is skipped when the real-data folder is missing (a checkout without its ``shared`` sibling), except under CI
(``CI`` set), where that folder is always laid beside the clone and its absence is an error.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from testenv import REPO

from trac_metrics.answers import equivalent, extract_answer, normalize_answer

REAL_DATA = REPO.parent / "shared" / "real-data"

DATASETS = ("math500", "minerva", "olympiadbench", "aime", "gsm8k")
MAX_REWRITES = 6
DECIMAL_DIGITS = 7  # significant digits of the decimal rewrites of irrational constants
SHOWN_FAILURES = 30
RESPONSE = "... so the answer is $\\boxed{{{}}}$."


# ----------------------------------------------------------------------------------------------------------
# References
# ----------------------------------------------------------------------------------------------------------


def _rows(folder: Path, name: str) -> list[dict]:
    with open(folder / name, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_references(dataset: str, folder: Path = REAL_DATA) -> list[str]:
    """The distinct reference answers of one dataset, as the rows write them, in row order."""
    if dataset == "math500":
        references = [row["answer"] for row in _rows(folder, "math500.jsonl")]
    elif dataset == "minerva":
        references = [row["answer"] for row in _rows(folder, "minerva_math.jsonl")]
    elif dataset == "olympiadbench":
        rows = _rows(folder, "olympiadbench.jsonl")
        references = [
            row["final_answer"][0] for row in rows if len(row["final_answer"]) == 1 and not row["is_multiple_answer"]
        ]
    elif dataset == "aime":
        references = [str(row["answer"]) for name in ("aime24.jsonl", "aime25.jsonl") for row in _rows(folder, name)]
    elif dataset == "gsm8k":
        references = [row["answer"].split("#### ")[-1] for row in _rows(folder, "gsm8k.jsonl")]
    else:
        raise ValueError(f"unknown dataset {dataset!r}")
    return list(dict.fromkeys(ref.strip() for ref in references if ref.strip()))


# ----------------------------------------------------------------------------------------------------------
# Rewrites: deterministic string transforms that keep the value
# ----------------------------------------------------------------------------------------------------------

# Spans no transform touches: text-like groups, command names and escaped characters (``\ ``, ``\,``, ``\{``).
_PROTECTED_RE = re.compile(
    r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mathit|operatorname|mbox)\s*\{[^{}]*\}|\\[A-Za-z]+|\\[^A-Za-z]"
)
_PLAIN_NUMBER_RE = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_INTEGER_RE = re.compile(r"-?\d+")
_GROUPED_INTEGER_RE = re.compile(r"-?\d{1,3}(?:,\d{3})+")
_NUMBER_LIKE_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?:/\d+)?")
_LATEX_FRACTION_RE = re.compile(r"(-?)\\[dt]?frac\{(\d+)\}\{(\d+)\}")
_SLASH_FRACTION_RE = re.compile(r"(-?)(\d+)/(\d+)")
_SPACE_AT_OPERATOR_RE = re.compile(r"\s*([-+=*/,()\[\]{}^_<>&|])\s*")
_BINARY_OPERATOR_RE = re.compile(r"(?<=[\w})\]])(?<!\d[eE])\s*([-+=<>])\s*(?=[\w\\({\[])")
_COMMA_RE = re.compile(r",(?=\S)")
_PARENTHESIS_RE = re.compile(r"[()]")
_COMMAND_RE = re.compile(r"\\[A-Za-z]+")
_DOLLAR_RE = re.compile(r"(?<!\\)\$")  # an escaped \$ is a currency sign


def _core(reference: str) -> str:
    """The reference without surrounding ``$`` (OlympiadBench writes its answers in math mode)."""
    return reference.strip().strip("$").strip()


def _protected_spans(text: str) -> list[tuple[int, int]]:
    return [match.span() for match in _PROTECTED_RE.finditer(text)]


def _sub_outside(pattern: re.Pattern[str], repl: Callable[[re.Match[str]], str], text: str) -> str:
    """``pattern.sub(repl, text)`` for the matches that touch no protected span."""
    spans = _protected_spans(text)

    def replace(match: re.Match[str]) -> str:
        if any(start < match.end() and match.start() < end for start, end in spans):
            return match.group()
        return repl(match)

    return pattern.sub(replace, text)


def _bracket_depths(text: str) -> list[int]:
    """Bracket depth before each character of ``text``."""
    depths, depth = [], 0
    for char in text:
        depths.append(depth)
        depth += 1 if char in "([{" else -1 if char in ")]}" else 0
    return depths


def rewrite_frac_style(reference: str) -> str | None:
    """``\\dfrac`` / ``\\tfrac`` → ``\\frac``, else ``\\frac`` → ``\\dfrac``."""
    if re.search(r"\\[dt]frac(?![A-Za-z])", reference):
        return re.sub(r"\\[dt]frac(?![A-Za-z])", r"\\frac", reference)
    if re.search(r"\\frac(?![A-Za-z])", reference):
        return re.sub(r"\\frac(?![A-Za-z])", r"\\dfrac", reference)
    return None


def rewrite_slash_fraction(reference: str) -> str | None:
    """A simple numeric fraction ``\\frac{a}{b}`` ↔ ``a/b``."""
    core = _core(reference)
    latex = _LATEX_FRACTION_RE.fullmatch(core)
    if latex is not None:
        return "{}{}/{}".format(*latex.groups())
    slash = _SLASH_FRACTION_RE.fullmatch(core)
    if slash is not None:
        return "{}\\frac{{{}}}{{{}}}".format(*slash.groups())
    return None


def rewrite_spacing(reference: str) -> str | None:
    """Spaces around operators and brackets removed; where there are none, spaces put around binary operators and
    after the commas inside brackets."""
    removed = _sub_outside(_SPACE_AT_OPERATOR_RE, lambda match: match.group(1), reference)
    if removed != reference:
        return removed
    spaced = _sub_outside(_BINARY_OPERATOR_RE, lambda match: f" {match.group(1)} ", reference)
    depths = _bracket_depths(spaced)
    spaced = _sub_outside(_COMMA_RE, lambda match: ", " if depths[match.start()] > 0 else ",", spaced)
    return spaced if spaced != reference else None


def rewrite_dollars(reference: str) -> str | None:
    """``$…$`` around the answer, or the ``$`` removed where the reference has them."""
    stripped = _DOLLAR_RE.sub("", reference).strip()
    return stripped if stripped != reference else f"${reference}$"


def rewrite_left_right(reference: str) -> str | None:
    """Every pair of parentheses as ``\\left( … \\right)`` (references without balanced pairs, or with ``\\left``
    already, are left alone)."""
    if "\\left" in reference or "\\right" in reference:
        return None
    spans = _protected_spans(reference)
    parentheses = [
        match.group()
        for match in _PARENTHESIS_RE.finditer(reference)
        if not any(start <= match.start() < end for start, end in spans)
    ]
    depth = 0
    for char in parentheses:
        depth += 1 if char == "(" else -1
        if depth < 0:
            return None
    if depth or not parentheses:
        return None
    return _sub_outside(_PARENTHESIS_RE, lambda match: "\\left(" if match.group() == "(" else "\\right)", reference)


def rewrite_period(reference: str) -> str | None:
    """A sentence's final period."""
    return reference + "."


def rewrite_unit(reference: str) -> str | None:
    """A trailing unit group after a plain number: ``12\\text{ cm}``."""
    core = _core(reference)
    return core + "\\text{ cm}" if _PLAIN_NUMBER_RE.fullmatch(core) else None


def rewrite_thousands(reference: str) -> str | None:
    """Thousands separators on an integer ≥ 1000 (``12,345``), or removed where the reference writes them."""
    core = _core(reference)
    if _GROUPED_INTEGER_RE.fullmatch(core):
        return core.replace(",", "")
    if _INTEGER_RE.fullmatch(core) and abs(int(core)) >= 1000 and not core.lstrip("-").startswith("0"):
        return f"{int(core):,}"
    return None


@functools.cache
def irrational_value(reference: str) -> Decimal | None:
    """The value of a reference that is an irrational constant expression (Math-Verify's parse, sympy ``evalf(20)``),
    for values between 1e-3 and 1e5 in magnitude; None for anything else (free symbols, rationals, structures)."""
    from math_verify import parse
    from sympy import Expr, Float

    core = _core(reference)
    if _NUMBER_LIKE_RE.fullmatch(core) or re.search(r"[A-Za-z%$]", _COMMAND_RE.sub("", core)):
        return None  # a plain number, or letters (symbols, units, text), a percent or a currency sign
    try:
        parsed = parse(f"${core}$")
    except Exception:  # Math-Verify parses best-effort; anything odd is simply not a constant
        return None
    expression = parsed[0] if parsed else None
    if not isinstance(expression, Expr) or expression.free_symbols or expression.atoms(Float) or expression.is_rational:
        return None
    try:
        value = expression.evalf(20)
    except Exception:
        return None
    if not isinstance(value, Float) or not value.is_finite or not 1e-3 <= abs(value) < 1e5:
        return None
    exact = Decimal(str(value))
    if abs(Fraction(exact).limit_denominator(10**4) - Fraction(exact)) < abs(Fraction(exact)) / 10**12:
        return None  # a rational sympy could not tell (is_rational None)
    return exact


def _significant(value: Decimal, rounding: str) -> str:
    quantum = Decimal(1).scaleb(value.adjusted() - (DECIMAL_DIGITS - 1))
    return format(value.quantize(quantum, rounding=rounding), "f")


def rewrite_decimal_rounded(reference: str) -> str | None:
    """An irrational constant as a decimal rounded to ``DECIMAL_DIGITS`` significant digits."""
    value = irrational_value(reference)
    return None if value is None else _significant(value, ROUND_HALF_EVEN)


def rewrite_decimal_truncated(reference: str) -> str | None:
    """An irrational constant as a decimal truncated to ``DECIMAL_DIGITS`` significant digits."""
    value = irrational_value(reference)
    return None if value is None else _significant(value, ROUND_DOWN)


TRANSFORMS: dict[str, Callable[[str], str | None]] = {  # in priority order: the first MAX_REWRITES that apply
    "decimal_rounded": rewrite_decimal_rounded,
    "decimal_truncated": rewrite_decimal_truncated,
    "slash_fraction": rewrite_slash_fraction,
    "frac_style": rewrite_frac_style,
    "thousands": rewrite_thousands,
    "unit": rewrite_unit,
    "left_right": rewrite_left_right,
    "spacing": rewrite_spacing,
    "dollars": rewrite_dollars,
    "period": rewrite_period,
}


def rewrites(reference: str) -> list[tuple[str, str]]:
    """(transform, rewrite) pairs of one reference: distinct, each different from the reference, at most
    ``MAX_REWRITES``."""
    found: dict[str, str] = {}
    for name, transform in TRANSFORMS.items():
        rewrite = transform(reference)
        if rewrite and rewrite != reference and rewrite not in found:
            found[rewrite] = name
        if len(found) == MAX_REWRITES:
            break
    return [(name, rewrite) for rewrite, name in found.items()]


@functools.cache
def dataset_rewrites(dataset: str, folder: Path = REAL_DATA) -> list[tuple[str, str, str]]:
    """(transform, reference, rewrite) of every reference of one dataset."""
    references = load_references(dataset, folder)
    return [(name, reference, rewrite) for reference in references for name, rewrite in rewrites(reference)]


def other_references(references: list[str]) -> list[tuple[str, str]]:
    """(reference, the next reference of the dataset, cyclically, whose normalized form differs)."""
    normalized = [normalize_answer(reference, "math") for reference in references]
    pairs = []
    for index, reference in enumerate(references):
        for step in range(1, len(references)):
            other = (index + step) % len(references)
            if normalized[other] != normalized[index]:
                pairs.append((reference, references[other]))
                break
    return pairs


# ----------------------------------------------------------------------------------------------------------
# Expected exceptions, as data
# ----------------------------------------------------------------------------------------------------------

# (dataset, reference, rewrite) that a transform made genuinely not equivalent (it broke the LaTeX or the value).
# None today: the transforms leave text groups, command names and escaped characters alone, and skip what they cannot
# rewrite safely (unbalanced parentheses, an existing \left, letters or units next to a constant). A rewrite the
# checker rejects is a checker miss (e.g. a final period after a unit group: "864 \mbox{ inches}^2.").
NOT_EQUIVALENT_REWRITES: set[tuple[str, str, str]] = set()

# (dataset, reference, other reference): two questions whose references are truly the same value, so the pair must be
# judged equivalent. None today: no (reference, next different reference) pair of the data has equal values, checked by
# sympy evalf(30) of both and by Math-Verify's own verify (which rounds to 6 places).
COINCIDENCES: set[tuple[str, str, str]] = set()


# ----------------------------------------------------------------------------------------------------------
# Tests
# ----------------------------------------------------------------------------------------------------------

# CI always lays shared/ beside the clone: there a missing copy is an error, not a skip
if not REAL_DATA.is_dir() and os.environ.get("CI"):
    raise FileNotFoundError(f"real benchmark copies not found at {REAL_DATA}")
pytestmark = pytest.mark.skipif(not REAL_DATA.is_dir(), reason=f"real benchmark copies not found at {REAL_DATA}")


def _failure_report(title: str, failures: list[tuple[str, ...]], total: int) -> str:
    lines = [f"{title}: {len(failures)} of {total} ({1 - len(failures) / max(total, 1):.4f} judged as expected)"]
    lines += [f"  {failure!r}" for failure in failures[:SHOWN_FAILURES]]
    return "\n".join(lines)


@pytest.mark.parametrize("dataset", DATASETS)
def test_rewrites_are_equivalent(dataset: str) -> None:
    cases = dataset_rewrites(dataset)
    assert cases
    failures = [
        (name, reference, rewrite)
        for name, reference, rewrite in cases
        if (dataset, reference, rewrite) not in NOT_EQUIVALENT_REWRITES and not equivalent(reference, rewrite, "math")
    ]
    if failures:
        pytest.fail(_failure_report(f"{dataset}: rewrites judged not equivalent", failures, len(cases)), pytrace=False)


@pytest.mark.parametrize("dataset", DATASETS)
def test_boxed_rewrites_extract_to_equivalent_answers(dataset: str) -> None:
    cases = dataset_rewrites(dataset)
    failures = []
    for name, reference, rewrite in cases:
        if (dataset, reference, rewrite) in NOT_EQUIVALENT_REWRITES:
            continue
        extracted = extract_answer(RESPONSE.format(rewrite), "math")
        if extracted is None or not equivalent(reference, extracted, "math"):
            failures.append((name, reference, rewrite, extracted))
    if failures:
        report = _failure_report(f"{dataset}: boxed rewrites extracted as not equivalent", failures, len(cases))
        pytest.fail(report, pytrace=False)


@pytest.mark.parametrize("dataset", DATASETS)
def test_other_references_are_not_equivalent(dataset: str) -> None:
    pairs = other_references(load_references(dataset))
    judged_equal = [(reference, other) for reference, other in pairs if equivalent(reference, other, "math")]
    false_equal = [pair for pair in judged_equal if (dataset, *pair) not in COINCIDENCES]
    rate = len(judged_equal) / len(pairs)
    if false_equal:
        report = _failure_report(
            f"{dataset}: different references judged equivalent (rate {rate:.4f})", false_equal, len(pairs)
        )
        pytest.fail(report, pytrace=False)


def test_listed_coincidences_are_equivalent() -> None:
    """A listed coincidence is two truly equal values: the checker must accept it, and it must still be in the data."""
    for dataset, reference, other in sorted(COINCIDENCES):
        assert (reference, other) in other_references(load_references(dataset))
        assert equivalent(reference, other, "math"), (dataset, reference, other)
