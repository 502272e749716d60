"""The final answer of a response, raw but stripped (docs/method.md#answer-extraction)."""

from __future__ import annotations

import re
from typing import NamedTuple

from trac_metrics.answers._latex import NAME, check_kind, check_str, matching_braces
from trac_metrics.answers.normalization import is_hedge, option_letter

_BOX_RE = re.compile(r"\\(?:boxed|fbox)(?:\s*(\{)|\s+([^\s{}$]+))")
_BOX_COMMAND_RE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
_FINAL_ANSWER_RE = re.compile(r"final answer(?:\s+is\b\s*:?|\s*(?:\*\*)?\s*:)", re.IGNORECASE)
_ANSWER_PHRASE_RE = re.compile(r"\banswers?(?:\s+(?:is|are)\b\s*:?|\s*(?:\*\*)?\s*:)|####", re.IGNORECASE)
_SENTENCE_END_RE = re.compile(r"\.(?=\s|$)")
_MATH_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
_NUMBER_RE = re.compile(r"(?:(?<![\w)\]}])-)?(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?")

_GAP = r"(?:\s|\$|\\[()\[\]]|\\q?quad(?![A-Za-z])|\\[,;:! ])*"
_LIST_JOINER = r"(?:,|;|\band\b|\bor\b|\\text\s*\{\s*(?:and|or)\s*\})"
_COUNTED_WORD = r"(?:[A-Za-z]+|\\text\s*\{[^{}]*\})"
_BOX_JOINER_RE = re.compile(rf"{_GAP}(?:(?:{_COUNTED_WORD}{_GAP})?{_LIST_JOINER}{_GAP}(?:{NAME}\s*=)?{_GAP})?")
"""What may stand between two boxes of one answer set: nothing but math delimiters and spacing (``\\boxed{3}
\\boxed{5}``), or a comma, semicolon, "and" or "or", after one word naming what the first box counts
(``\\boxed{4} apples and \\boxed{7} pears``) and before the name the next box's value is given to
(``x = \\boxed{2} or x = \\boxed{-5}``)."""
_MAX_JOINER_CHARS = 200
"""Boxes further apart than this are never one answer set (and the joiner check stays linear)."""
_GROUP_JOINER_RE = re.compile(rf"\s*(?:,\s*(?:and|or)\b|{_LIST_JOINER})\s*")
_QUOTED_RE = re.compile(r"""(?:\\?"|“|``)([^"\n“”]+?)(?:\\?"|”|'')(?=[ \t]*(?:[.!;,]|$))""", re.MULTILINE)
"""An answer in quotes that ends its statement (``The final answer is \\"$12$ and $13$\\".``, “…”, ````…''``):
the quoted text is the answer."""
_SENTENCE_VERB_RE = re.compile(r"\s(?:is|are|equals|=)\s+|:\s+")
_REASON_RE = re.compile(r",?\s+(?:because|since|as|given|due to|which|so that)\b", re.IGNORECASE)
_REASON_IN_WORDS_RE = re.compile(rf"{_REASON_RE.pattern}|,\s+(?!(?:and|or)\b)(?=[a-z]{{3,}})", re.IGNORECASE)
"""Where the answer of a sentence ends and its justification begins: "12 because 3*4=12", "No, because Sam lies";
in the math kind also a comma before a word ("2, since …")."""
_NEGATION_RE = re.compile(
    r"(?:\b(?:not|cannot|can't|isn't|aren't|never|neither|nor|(?:less|fewer|more|greater|larger|smaller|bigger|higher"
    r"|lower|other|different)\s+than|different\s+from|at\s+(?:least|most)|exceeds?|except|between\s+\S+\s+and)\b"
    r"|\\(?:neq?|[lg]eq?|[lg]eqslant|[lg]t)(?![A-Za-z])|[<>≠≤≥])[\s$]*(?:be\s+|equal\s+to\s+|equals?\s+)?[\s$]*$",
    re.IGNORECASE,
)
_NEGATED_START_RE = re.compile(
    r"(?:not|cannot|never|(?:less|fewer|more|greater|larger|smaller|other)\s+than|at\s+(?:least|most)|between)\b"
    r"|\$?\s*(?:\\(?:neq?|[lg]eq?|[lg]t)(?![A-Za-z])|[<>≠≤≥])",
    re.IGNORECASE,
)
"""A statement that does not state the value after it: a negation or a bound just before it ("is not 7", "cannot be
7", "is less than 7", "at least 7", "between 1 and 7", ``\\neq 7``)."""
_WORD_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_ENGLISH_WORD_RE = re.compile(r"(?<![\\A-Za-z])(?=[A-Z]?[a-z])[A-Za-z]{2,}")
"""A word of prose, not a product of symbols or a segment name: two letters or more, lowercase after the first,
outside a LaTeX command ("So", "cm"; not ``AB``, ``\\sqrt``)."""
_LEADING_WORD_RE = re.compile(r"[A-Za-z]{2,}(?![A-Za-z\\{_^(])")
_DOLLAR_GROUP_RE = re.compile(r"\$[^$]+\$")
_DELIMITER_RE = re.compile(r"(?<!\\)\$\$|(?<!\\)\$|\\[()\[\]]")

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
_OPTION = r"(?:\*\*)?(?<![A-Za-z])\(?[A-R]\)?(?![A-Za-z])(?:\*\*)?"
_HEDGE_RE = re.compile(rf"{_OPTION}(?:[ \t]*(?:,|/|\band/or\b|\band\b|\bor\b)[ \t]*(?:or[ \t]+)?{_OPTION})+")
"""Option letters (bare, parenthesized or bold) joined by commas, "and", "or" or slashes in prose: "(A) or (B)",
"A, B, or C", "**A** or **B**"."""


class _Span(NamedTuple):
    start: int
    end: int
    content: str


class _Box(NamedTuple):
    start: int
    end: int
    content: str


class _Found(NamedTuple):
    """An extracted answer and where the statement it was read from starts in the searched region."""

    answer: str
    start: int


def _answer_region(text: str, marker: str | None) -> str:
    """The part of a response that holds its final answer: after the last end-of-thinking marker
    (docs/method.md#answer-extraction)."""
    if marker and marker in text:
        return text[text.rindex(marker) + len(marker) :]
    return text


def _boxes(text: str) -> list[_Box]:
    """Every non-empty, brace-balanced ``\\boxed``/``\\fbox`` of ``text`` that is not inside another one (the outer
    box of ``\\boxed{\\boxed{49}+1}`` is the answer, docs/method.md#answer-extraction): span and stripped content."""
    closing = matching_braces(text)
    found: list[_Box] = []
    for match in _BOX_RE.finditer(text):
        if found and match.start() < found[-1].end:  # inside the previous box
            continue
        if match.group(1) is None:  # "\\boxed 5." form: a single token, sentence period excluded
            content, end = match.group(2).rstrip("."), match.end()
        elif match.start(1) in closing:
            content, end = text[match.end(1) : closing[match.start(1)]], closing[match.start(1)] + 1
        else:
            continue
        if content.strip():
            found.append(_Box(match.start(), end, content.strip()))
    return found


def last_box(text: str) -> str | None:
    """The content of the last finished ``\\boxed`` / ``\\fbox`` of ``text`` (what Math-Verify's LaTeX extraction
    reads first), or None."""
    boxes = _boxes(text)
    return boxes[-1].content if boxes else None


def _last_box_is_open(text: str) -> bool:
    """Whether the last ``\\boxed`` / ``\\fbox`` of ``text`` has no finished argument: ``\\boxed{`` that never
    closes, or a bare ``\\boxed`` at the end (a response cut off while it was stating its answer)."""
    last = max(_BOX_COMMAND_RE.finditer(text), key=lambda match: match.start(), default=None)
    if last is None:
        return False
    box = _BOX_RE.match(text, last.start())
    return box is None or (box.group(1) is not None and box.start(1) not in matching_braces(text))


def _last_box_run(text: str, boxes: list[_Box]) -> _Found:
    """The content of the last box, or of the final run of boxes joined as one answer set (``\\boxed{2}`` or
    ``\\boxed{-5}``, ``\\boxed{1}, \\boxed{2}``) as a comma list (repeated contents count once), and where the run
    starts."""
    run = [boxes[-1]]
    for box in reversed(boxes[:-1]):
        gap = run[0].start - box.end
        if gap > _MAX_JOINER_CHARS or not _BOX_JOINER_RE.fullmatch(text, box.end, run[0].start):
            break
        run.insert(0, box)
    return _Found(", ".join(dict.fromkeys(box.content for box in run)), run[0].start)


def _math_group_at(text: str, position: int) -> tuple[str, int] | None:
    """(content, end) of the math-delimited group (``$…$``, ``\\(…\\)``, …) that starts at ``position``."""
    for opening, closing in _MATH_DELIMITERS:
        if text.startswith(opening, position):
            end = text.find(closing, position + len(opening))
            if end != -1 and text[position + len(opening) : end].strip():
                return text[position + len(opening) : end].strip(), end + len(closing)
    return None


def _math_group_run(text: str) -> str | None:
    """The math group that opens ``text``, or the comma list of a run of them joined by commas, "and" or "or"
    (``$3$ and $7$`` → ``3, 7``); None when ``text`` does not open with one."""
    first = _math_group_at(text, 0)
    if first is None:
        return None
    contents, end = [first[0]], first[1]
    while (joiner := _GROUP_JOINER_RE.match(text, end)) and (group := _math_group_at(text, joiner.end())):
        contents.append(group[0])
        end = group[1]
    return ", ".join(contents) if len(contents) > 1 else text[:end].strip()


def _negated(text: str, position: int) -> bool:
    """Whether the statement before ``position`` (from the start of its sentence) negates or bounds the value that
    follows: "is not 7", "cannot be 7", "is less than 7", "at least 7", ``\\neq 7`` state no value."""
    start = max(text.rfind(stop, 0, position) for stop in (". ", "\n", "! ", "? ", ", ", "; "))
    return _NEGATION_RE.search(text, max(start, 0), position) is not None


def _answer_in_sentence(sentence: str) -> str | None:
    """The answer expression of a sentence that states it in words ("The largest $n$ is 34" → ``34``): what
    follows its last "is" / "are" / "equals" / "=" / colon, else its last math group, else, when it opens with a
    word, its last number ("Tom finished the race 5 minutes early" → ``5``); otherwise the sentence is the answer
    itself ("18 dollars", "1, 2, and 3"). None when the sentence negates or bounds the value ("is not 7", "is less
    than 7": :func:`_negated`)."""
    if not _is_prose(sentence):
        return sentence
    verb = max(_SENTENCE_VERB_RE.finditer(sentence), key=lambda match: match.start(), default=None)
    if verb is not None and sentence[verb.end() :].strip():
        rest = sentence[verb.end() :].strip()
        if _NEGATED_START_RE.match(rest):
            return None
        return _math_group_run(rest) or rest
    groups = list(_DOLLAR_GROUP_RE.finditer(sentence))
    numbers = list(_NUMBER_RE.finditer(sentence)) if _LEADING_WORD_RE.match(sentence) else []
    value = groups[-1] if groups else numbers[-1] if numbers else None
    if value is None:
        return sentence
    return None if _negated(sentence, value.start()) else value.group()


def _math_groups(text: str) -> list[_Span]:
    """Every non-empty math-delimited group of ``text`` (``$…$``, ``$$…$$``, ``\\(…\\)``, ``\\[…\\]``; an escaped
    ``\\$`` is a currency sign), in order, found in one pass: each opening delimiter is closed by the next closing
    one of its kind."""
    closing = dict(_MATH_DELIMITERS)
    groups, opening = [], None
    for match in _DELIMITER_RE.finditer(text):
        if opening is None:
            opening = match if match.group() in closing else None
        elif match.group() == closing[opening.group()]:
            content = text[opening.end() : match.start()].strip()
            if content:
                groups.append(_Span(opening.start(), match.end(), content))
            opening = None
    return groups


def _final_statement(region: str) -> _Found | None:
    """The answer of a response that neither boxes nor announces it, read as Math-Verify's LaTeX and expression
    extraction read it: the response itself when it is one line of math without words or math delimiters (``3, 5``,
    ``\\frac{1}{2}``, ``x = 2``, ``AB:CD = 2:5``); else the last math group of the response, or the final run of them
    joined by commas, "and" or "or" (``$2$ and $4$ and $6$`` → ``2, 4, 6``), unless a number follows it (numbers with
    units: "the total is 15 apples" → ``15``). None when the statement negates or bounds that value ("x cannot be
    7", :func:`_negated`). Found with where the value starts (the response's start for a one-line response)."""
    text = region.strip()
    if text and "\n" not in text and not _ENGLISH_WORD_RE.search(text) and not _DELIMITER_RE.search(text):
        return _Found(text, 0)
    groups = _math_groups(region)
    after = groups[-1].end if groups else 0
    numbers = list(_NUMBER_RE.finditer(region, after))
    if numbers:
        last = numbers[-1]
        return None if _negated(region, last.start()) else _Found(last.group(), last.start())
    if not groups:
        return None
    run = [groups[-1]]
    for group in reversed(groups[:-1]):
        if not _GROUP_JOINER_RE.fullmatch(region, group.end, run[0].start):
            break
        run.insert(0, group)
    if _negated(region, run[0].start):
        return None
    return _Found(", ".join(group.content for group in run), run[0].start)


def _is_prose(text: str) -> bool:
    """Whether ``text`` holds a word of three or more letters outside ``$…$`` groups and LaTeX commands."""
    return bool(_WORD_RE.search(_DOLLAR_GROUP_RE.sub("", text)))


def _clip_answer_span(rest: str, in_words: bool) -> str | None:
    """The answer that follows an answer phrase: one math-delimited group or a run of them, else the rest of the
    sentence up to its justification ("because …", "since …"; with ``in_words`` also ", <word>"), and with
    ``in_words`` the answer expression inside it (:func:`_answer_in_sentence`)."""
    rest = rest.lstrip()
    if rest.startswith("**") and rest[2:3].isspace():
        rest = rest[2:].lstrip()
    quoted = _QUOTED_RE.match(rest)
    if quoted is not None:
        rest = quoted.group(1)
    group = _math_group_run(rest)
    if group is not None:
        return group
    line = rest.split("\n", 1)[0]
    sentence_end = _SENTENCE_END_RE.search(line)
    clipped = (line[: sentence_end.start()] if sentence_end else line).strip()
    reason = (_REASON_IN_WORDS_RE if in_words else _REASON_RE).search(clipped)
    clipped = clipped[: reason.start()].strip() if reason else clipped
    if in_words and clipped:
        clipped = _answer_in_sentence(clipped)
    return clipped or None


def _last_phrase(text: str, phrase_re: re.Pattern[str], after: int = 0) -> re.Match[str] | None:
    """The last match of ``phrase_re`` in ``text`` that starts at or after ``after``."""
    return max(
        (match for match in phrase_re.finditer(text) if match.start() >= after),
        key=lambda match: match.start(),
        default=None,
    )


def _extract_stated(region: str, in_words: bool) -> _Found | None:
    """The final answer a response states: a "final answer is …" / "Final Answer: …" written after every box,
    else the last box (or final run of boxes, math kind), else the last "final answer" / "answer is" / "Answer:"
    / ``####`` phrase; found with where that statement starts."""
    boxes = _boxes(region)
    if boxes:
        final = _last_phrase(region, _FINAL_ANSWER_RE, after=boxes[-1].end)
        stated = final and _clip_answer_span(region[final.end() :], in_words)
        if stated and not (in_words and _is_prose(stated)):  # "Final answer: as above." keeps the box
            return _Found(stated, final.start())
        return _last_box_run(region, boxes) if in_words else _Found(boxes[-1].content, boxes[-1].start)
    for phrase_re in (_FINAL_ANSWER_RE, _ANSWER_PHRASE_RE):
        phrase = _last_phrase(region, phrase_re)
        stated = phrase and _clip_answer_span(region[phrase.end() :], in_words)
        if stated:
            return _Found(stated, phrase.start())
    return None


def _extract_text(region: str) -> _Found | None:
    return _extract_stated(region, in_words=False)


def _extract_math(region: str) -> _Found | None:
    """As the text kind, reading answer sets and answers stated in words; without a box or an answer phrase, the
    answer of the final statement (:func:`_final_statement`: its last math group or number, GSM8K style)."""
    answer = _extract_stated(region, in_words=True)
    return answer if answer is not None else _final_statement(region)


def _hedged_box_runs(region: str, boxes: list[_Box]) -> list[tuple[int, int]]:
    """Spans of runs of boxes naming different options side by side or joined as a list (``\\boxed{A} or
    \\boxed{B}``, ``\\boxed{A}, \\boxed{B}``)."""
    runs, run = [], [boxes[0]] if boxes else []
    for box in boxes[1:]:
        gap = region[run[-1].end : box.start]
        if len(gap) <= _MAX_JOINER_CHARS and (not gap.strip() or _BOX_JOINER_RE.fullmatch(gap)):
            run.append(box)
            continue
        runs.append(run)
        run = [box]
    runs.append(run)
    return [
        (run[0].start, run[-1].end) for run in runs if len({option_letter(box.content) for box in run} - {None}) > 1
    ]


def _extract_mc(region: str) -> _Found | None:
    """The option letter the response states, ranked as the math kind ranks its answers: a final-answer statement
    after the last box, else the last box, else the last answer statement ("answer is B", "Answer: (B)"), else the
    last mention in another explicit form (``(B)``, ``B)``, ``**B**``, a line holding only the letter); a later
    mention never outranks a box or a statement ("the answer is \\boxed{B}, not (C)" → B). A bare "A" or "I"
    must not start a word sequence (prose). A hedge (``\\boxed{(A) or (B)}``, "the answer is (A) and (B)") names
    no single option: when the chosen letter stands in one, the answer is the hedge as written, which never equals
    a letter."""
    boxes = _boxes(region)
    hedges = [(box.start, box.end) for box in boxes if is_hedge(box.content)]
    hedges += [match.span() for match in _HEDGE_RE.finditer(region)]
    hedges += _hedged_box_runs(region, boxes)
    boxed = [(box.start, letter) for box in boxes if (letter := option_letter(box.content))]
    stated = [
        (match.start(1), match.group(1))
        for match in _MC_ANSWER_PHRASE_RE.finditer(region)
        if not (match.group(1) in "AI" and _ARTICLE_CONTINUES_RE.match(region, match.end()))
    ]
    mentioned = [(m.start(), m.group(1)) for pattern in _MC_PATTERNS for m in pattern.finditer(region)]
    final = _last_phrase(region, _FINAL_ANSWER_RE, after=boxes[-1].end) if boxes else None
    stated_after_boxes = [candidate for candidate in stated if final is not None and candidate[0] >= final.start()]
    ranked = next((tier for tier in (stated_after_boxes, boxed, stated, mentioned) if tier), None)
    if ranked is None:
        return None
    last, letter = max(ranked)
    hedge = max(((start, end) for start, end in hedges if start <= last < end), default=None)
    return _Found(letter, last) if hedge is None else _Found(region[hedge[0] : hedge[1]], hedge[0])


_EXTRACTORS = {"math": _extract_math, "mc": _extract_mc, "text": _extract_text}


def extract_answer(text: str, kind: str = "math", marker: str | None = None) -> str | None:
    """Final answer of a response, raw (not normalized) but stripped; None when there is none
    (docs/method.md#answer-extraction).

    When ``marker`` (the model's end-of-thinking marker, e.g. ``</think>``) occurs in ``text``, only the text
    after its last occurrence is searched; otherwise the whole text. Forms, by kind:

    - math: a "The final answer is …" / "Final Answer: …" written after the last box; else the last
      brace-balanced ``\\boxed{...}`` / ``\\fbox{...}`` / ``\\boxed 5``, or the final run of boxes joined by
      commas, "and", "or" (``x = \\boxed{2}`` or ``x = \\boxed{-5}`` → ``2, -5``); else the last "final answer
      is …" / "Answer: …" / "answer is …" / "#### …" phrase. A phrase's answer is a math group or a run of them
      (``$1$ and $2$`` → ``1, 2``), else the answer expression of its sentence ("The largest $n$ is 34." →
      ``34``). Else the last number (thousands separators allowed).
    - mc: last option letter A–R written as ``(B)``, ``B)``, "answer is B", "Answer: B", ``\\boxed{B}``,
      ``\\boxed{(B)}``, ``**B**`` or alone on a line.
    - text: a "final answer is …" after the last box, else the last ``\\boxed{...}``, else the last "final
      answer is …" / "the answer is …" sentence.

    When the last ``\\boxed``/``\\fbox`` of the searched text is unfinished (a ``\\boxed{`` that never closes, or a
    bare ``\\boxed`` at the end: the response was cut off while stating its answer) there is no answer (None,
    every kind). Neither an earlier box, nor a phrase, nor a number stands in for it: an earlier box may be the
    answer the cut-off one was correcting.
    """
    found = _found_answer(text, kind, marker)
    return None if found is None else found.answer


def _found_answer(text: str, kind: str, marker: str | None) -> _Found | None:
    """:func:`extract_answer`'s answer, stripped, with where its statement starts in ``text``; None when it has none."""
    check_str(text, "text")
    check_kind(kind)
    if marker is not None:
        check_str(marker, "marker")
    region = _answer_region(text, marker)
    if _last_box_is_open(region):
        return None
    found = _EXTRACTORS[kind](region)
    if found is None or not found.answer.strip():
        return None
    return _Found(found.answer.strip(), len(text) - len(region) + found.start)


def answer_statement_start(text: str, kind: str = "math", marker: str | None = None) -> int | None:
    """Where the line of ``text`` that states its final answer begins (docs/method.md#probe-prompt): the index just
    after the last newline before the statement :func:`extract_answer` reads (a box, a "final answer is" / "answer
    is" phrase, the final number), so its lead-in on that line ("So the answer is") is part of it; None when
    :func:`extract_answer` finds no answer."""
    found = _found_answer(text, kind, marker)
    return None if found is None else text.rfind("\n", 0, found.start) + 1
