"""The repository documents itself: code cites ``docs/*.md`` sections, never the external specification, the paper's
LaTeX source or issue numbers, and every cited section exists (GitHub-style heading anchors). The README and every
page under ``docs/`` stay valid: each relative link and image resolves (the file, and the heading an anchor names),
each repository path they name exists, and each command of their ``bash`` blocks parses with the parser of the
program it runs (``trac``, ``lm_eval`` with task names lm-eval knows, the repository's Python scripts), without
running it."""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import io
import re
import runpy
import shlex
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
from testenv import REPO as ROOT

DOCS = ROOT / "docs"
CODE_PACKAGES = ("trac_tasks", "trac_metrics")
CITING = (*CODE_PACKAGES, "benchmarks", "tests", "task_configs", "scripts", "docs", "README.md")
"""Where ``docs/<page>.md#<anchor>`` (and ``docs/guide/<page>.md#<anchor>``) citations are looked for."""
MARKDOWN_PAGES = (ROOT / "README.md", *sorted(DOCS.rglob("*.md")))
"""The pages whose links, paths and commands must stay valid: the README and every page under docs/."""
GUIDE_PAGES = ("running", "scaling-out", "reports", "labels", "reliability", "performance", "extending")
"""The user guide, docs/guide/<page>.md, each linked from the README."""

EXTERNAL_CITATIONS = {
    "SPEC §": re.compile(r"SPEC §"),
    "SPEC.md": re.compile(r"\bSPEC\.md\b"),
    "DATASETS.md": re.compile(r"\bDATASETS\.md\b"),
    "the paper's .tex": re.compile(r"trac_paper\.tex"),
    "an issue number": re.compile(r"\bissue #\d+"),
}
"""Citations of documents outside the repository; each must be replaced by a docs section."""

DOC_REFERENCE = re.compile(r"docs/((?:guide/)?[A-Za-z0-9_-]+)\.md#([A-Za-z0-9_-]+)")
LINK = re.compile(r"(!?)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
"""An inline Markdown link or image (``!``): its target, without an optional title."""
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
REPO_PATH = re.compile(r"(?:tests|benchmarks|scripts|trac_metrics|trac_tasks|task_configs|docs)/[A-Za-z0-9_./*-]*")
"""An inline code span that is a path inside the repository (``tests/e2e/test_hf.py``, ``task_configs/``)."""
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lowercase, punctuation dropped (letters, digits, ``_``, ``-`` and spaces
    kept), each space turned into a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a Markdown page, outside fenced code blocks; repeated headings get ``-1``, ``-2``..."""
    found: set[str] = set()
    seen: Counter[str] = Counter()
    in_fence = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else HEADING.match(line)
        if match:
            base = github_anchor(match.group(2))
            found.add(base if not seen[base] else f"{base}-{seen[base]}")
            seen[base] += 1
    return found


def text_files(*names: str) -> list[Path]:
    """The readable text files under the given folders / files of the repository (no caches, no binaries)."""
    files = []
    for name in names:
        path = ROOT / name
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for candidate in candidates:
            if "__pycache__" in candidate.parts or candidate.suffix in {".pyc", ".png", ".gguf", ".safetensors"}:
                continue
            try:
                candidate.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            files.append(candidate)
    return files


def python_files(*packages: str) -> list[Path]:
    return sorted(
        path for package in packages for path in (ROOT / package).rglob("*.py") if "__pycache__" not in path.parts
    )


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _external_citations(path: Path) -> list[str]:
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for what, pattern in EXTERNAL_CITATIONS.items():
            if pattern.search(line):
                found.append(f"{_relative(path)}:{number}: cites {what}: {line.strip()}")
    return found


@pytest.mark.parametrize("path", python_files(*CODE_PACKAGES), ids=_relative)
def test_code_cites_no_external_document(path):
    found = _external_citations(path)
    assert not found, "replace with a docs/method.md or docs/architecture.md section:\n" + "\n".join(found)


def test_tests_configs_and_readme_cite_no_external_document():
    this_file = Path(__file__).resolve()
    found = [
        citation
        for path in text_files("benchmarks", "tests", "task_configs", "README.md", "docs/guide")
        if path.resolve() != this_file
        for citation in _external_citations(path)
    ]
    assert not found, "replace with a docs/method.md or docs/architecture.md section:\n" + "\n".join(found)


def test_docs_pages_have_headings():
    for page in ("method", "architecture"):
        assert len(anchors(DOCS / f"{page}.md")) > 10, f"docs/{page}.md has almost no headings"


def test_every_docs_citation_resolves_to_a_heading():
    pages: dict[str, set[str]] = {}
    citations = unresolved = 0
    problems = []
    for path in text_files(*CITING):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for page, anchor in DOC_REFERENCE.findall(line):
                citations += 1
                target = DOCS / f"{page}.md"
                if page not in pages:
                    pages[page] = anchors(target) if target.is_file() else set()
                if anchor not in pages[page]:
                    unresolved += 1
                    problems.append(f"{_relative(path)}:{number}: docs/{page}.md#{anchor}")
    assert citations > 50, f"only {citations} docs citations found: is the pattern still right?"
    assert not problems, f"{unresolved} citation(s) name no heading of their page:\n" + "\n".join(problems)


# ---------------------------------------------------------------------------------------------------------------------
# The README and docs/: links, repository paths and commands
# ---------------------------------------------------------------------------------------------------------------------


def _page_id(page: Path) -> str:
    return _relative(page)


def _prose_lines(page: Path) -> Iterator[tuple[int, str]]:
    """The page's lines outside fenced code blocks, with their numbers."""
    in_fence = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            yield number, line


@functools.cache
def _anchors_of(page: Path) -> frozenset[str]:
    return frozenset(anchors(page))


def test_the_readme_is_a_front_page():
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250, "the README is a front page: move details into docs/guide/"
    assert text.count("<!-- demo-output -->") == 1 and text.count("<!-- /demo-output -->") == 1
    demo = text.split("<!-- demo-output -->")[1].split("<!-- /demo-output -->")[0]
    assert "trac_demo: acc" in demo, "the demo output block holds what `bash scripts/demo.sh` printed"
    for page in GUIDE_PAGES:
        assert f"](docs/guide/{page}.md)" in text, f"the README links docs/guide/{page}.md"


@pytest.mark.parametrize("page", MARKDOWN_PAGES, ids=_page_id)
def test_links_and_images_resolve(page: Path):
    """Every relative link and image of the page names an existing file, and an anchor names a heading of its page
    (GitHub-style); links with a scheme (https:, mailto:) are not followed."""
    problems = []
    for number, line in _prose_lines(page):
        for image, target in LINK.findall(INLINE_CODE.sub("", line)):
            if URL_SCHEME.match(target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            what = "image" if image else "link"
            if not linked.exists():
                problems.append(f"{_relative(page)}:{number}: {what} {target}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors_of(linked):
                problems.append(f"{_relative(page)}:{number}: {what} {target}: no heading #{anchor} in that page")
    assert not problems, "broken links:\n" + "\n".join(problems)


@pytest.mark.parametrize("page", MARKDOWN_PAGES, ids=_page_id)
def test_repository_paths_exist(page: Path):
    """Every inline code span that is a repository path (``tests/e2e/test_hf.py``, ``task_configs/``, a glob such as
    ``task_configs/*.yaml``) names something that exists."""
    problems = []
    for number, line in _prose_lines(page):
        for _, span in INLINE_CODE.findall(line):
            if REPO_PATH.fullmatch(span.strip()) and not any(ROOT.glob(span.strip().rstrip("/"))):
                problems.append(f"{_relative(page)}:{number}: `{span}` does not exist")
    assert not problems, "paths that do not exist:\n" + "\n".join(problems)


# ------------------------------------------------------------------------------------- the commands of bash blocks


@dataclass(frozen=True)
class Command:
    """One simple command of a ``bash`` block: the words after environment assignments, where it is written."""

    page: Path
    line: int
    words: tuple[str, ...]

    def where(self) -> str:
        return f"{_relative(self.page)}:{self.line}: {shlex.join(self.words)}"


SKIPPED_PROGRAMS = {
    "pip": "installs packages (its arguments name packages and the repository's URL)",
    "vllm": "vLLM's own CLI starts a server; its options are vLLM's (checked by vLLM, not here)",
    "cd": "changes folder",
    "export": "sets environment variables",
    "git": "version control (e.g. `git show` of an earlier checker for `trac rescore`)",
    "curl": "talks to a running server",
}
"""Programs whose commands are not checked, each with the reason."""

TASKS_DEFINED_BY_THE_DOCS = {
    "my_benchmark": "defined by the YAML of docs/guide/running.md#adding-a-benchmark-by-yaml in the user's own "
    "my_tasks/ folder (--include_path); tests/task_configs/test_benchmark_tasks.py loads that very YAML",
}
"""``--tasks`` names that only a documented user folder defines, each with the reason."""

SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
OPERATORS = {"&&", "||", ";", "|", "&"}
REDIRECTIONS = {">", ">>", "<", ">&", "&>"}


def _strip_comment(line: str) -> str:
    """The line without its shell comment: a ``#`` outside quotes at the start of a word."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line


def _logical_lines(block: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """The block's commands as bash reads them: comments dropped, ``\\``-continued lines joined; each with the
    number of its first line."""
    start, parts = None, []
    for number, raw in block:
        line = _strip_comment(raw).rstrip()
        if start is None:
            start = number
        if line.endswith("\\"):
            parts.append(line[:-1])
            continue
        parts.append(line)
        joined = " ".join(part.strip() for part in parts).strip()
        if joined:
            yield start, joined
        start, parts = None, []
    if parts:
        yield start, " ".join(part.strip() for part in parts)


def _simple_commands(page: Path, number: int, line: str) -> Iterator[Command]:
    """The simple commands of one logical line: those inside ``$(...)`` too, split at ``&&``, ``|``, ``;`` and
    ``&``, redirections and leading environment assignments dropped."""
    for inner in SUBSTITUTION.findall(line):
        yield from _simple_commands(page, number, inner)
    lexer = shlex.shlex(SUBSTITUTION.sub("SUBSTITUTION", line), posix=True, punctuation_chars=True)
    lexer.whitespace_split, lexer.commenters = True, ""
    words: list[str] = []
    tokens = list(lexer)
    skip_next = False
    for token in [*tokens, ";"]:
        if skip_next:
            skip_next = False
        elif token in REDIRECTIONS:
            if words and words[-1].isdigit():
                words.pop()
            skip_next = True
        elif token in OPERATORS:
            while words and ASSIGNMENT.match(words[0]):
                words.pop(0)
            if words:
                yield Command(page, number, tuple(words))
            words = []
        else:
            words.append(token)


def bash_commands(page: Path) -> list[Command]:
    """Every simple command of the page's ``bash`` blocks."""
    commands, block, in_bash, in_fence = [], [], False, False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            if in_fence:
                for start, logical in _logical_lines(block):
                    commands.extend(_simple_commands(page, start, logical))
                block, in_bash, in_fence = [], False, False
            else:
                in_fence, in_bash = True, line.strip().lstrip("`~").strip() in {"bash", "sh", "shell"}
        elif in_fence and in_bash:
            block.append((number, line))
    return commands


def _argparse_error(parse: Callable[[], object]) -> str | None:
    """None when ``parse()`` parses, else the parser's error message (``--help`` counts as parsing; lm-eval's parser
    also raises ``ValueError`` for a malformed JSON value)."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            parse()
        except SystemExit as stop:
            if stop.code not in (0, None):
                return (stderr.getvalue().strip().splitlines() or [f"exit status {stop.code}"])[-1]
        except ValueError as error:
            return f"{type(error).__name__}: {error}"
    return None


@functools.cache
def known_tasks() -> frozenset[str]:
    """Every task and group lm-eval's TaskManager knows, trac-eval's package tasks included (once per session)."""
    from lm_eval.tasks import TaskManager

    from trac_tasks.harness.lm_eval_hooks import task_config_dir

    names = set(TaskManager().all_tasks)
    if "trac_demo" not in names:  # the start-up hook is off (TRAC_EVAL_DISABLE=1): index the package's tasks here
        names |= set(TaskManager(include_path=str(task_config_dir()), include_defaults=False).all_tasks)
    return frozenset(names)


def check_trac(words: tuple[str, ...]) -> str | None:
    from trac_metrics.cli import build_parser

    return _argparse_error(lambda: build_parser().parse_args(list(words[1:])))


def check_lm_eval(words: tuple[str, ...]) -> str | None:
    """lm-eval's own command line (``HarnessCLI``, ``run`` inserted as lm-eval does), then the task names."""
    from lm_eval._cli import HarnessCLI

    parsed: list[argparse.Namespace] = []
    with mock.patch.object(sys, "argv", ["lm_eval", *words[1:]]):
        error = _argparse_error(lambda: parsed.append(HarnessCLI().parse_args()))
    if error or not parsed:
        return error or "lm-eval printed its help instead of parsing"
    args = parsed[0]
    if isinstance(args.metadata, str):
        return f"--metadata is not a JSON object: {args.metadata}"
    unknown = [name for name in args.tasks or [] if name not in known_tasks() and name not in TASKS_DEFINED_BY_THE_DOCS]
    return f"lm-eval knows no task {', '.join(unknown)}" if unknown else None


class _ParserFound(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser


@functools.cache
def script_parser(script: Path) -> argparse.ArgumentParser | None:
    """The argparse parser a repository script builds, caught when it first parses (the script runs as
    ``__main__`` up to that point, nothing further); None for a script that parses no options."""
    source = script.read_text(encoding="utf-8")
    if "ArgumentParser" not in source or "parse_args" not in source:
        return None

    def found(parser: argparse.ArgumentParser, *args, **kwargs):
        raise _ParserFound(parser)

    saved_path = sys.path[:]
    try:
        with mock.patch.object(argparse.ArgumentParser, "parse_known_args", found):
            runpy.run_path(str(script), run_name="__main__")
    except _ParserFound as caught:
        return caught.parser
    finally:
        sys.path[:] = saved_path
    raise RuntimeError("it builds an ArgumentParser but never parses its options")


def check_python(words: tuple[str, ...]) -> str | None:
    if words[1:2] == ("-m",):
        try:
            found = importlib.util.find_spec(words[2])
        except ModuleNotFoundError:  # a parent package is missing
            found = None
        return None if found else f"no module {words[2]}"
    if words[1:2] == ("-c",):
        try:
            compile(words[2], "<python -c>", "exec")
        except SyntaxError as error:
            return f"python -c: {error}"
        return None
    script = ROOT / words[1]
    if script.suffix != ".py" or not script.is_file():
        return f"no script {words[1]} in the repository"
    try:
        parser = script_parser(script)
    except Exception as error:  # noqa: BLE001 - any failure before the options are parsed is the finding
        return f"{words[1]} fails before parsing its options: {type(error).__name__}: {error}"
    if parser is None:
        flags = [word for word in words[2:] if word.startswith("-")]
        return f"{words[1]} defines no options, given {', '.join(flags)}" if flags else None
    return _argparse_error(lambda: parser.parse_args(list(words[2:])))


def check_shell_script(words: tuple[str, ...]) -> str | None:
    if len(words) < 2 or not words[1].endswith(".sh"):
        return f"{words[0]} runs no script of the repository"
    return None if (ROOT / words[1]).is_file() else f"no script {words[1]} in the repository"


CHECKERS: dict[str, Callable[[tuple[str, ...]], str | None]] = {
    "trac": check_trac,
    "lm_eval": check_lm_eval,
    "lm-eval": check_lm_eval,
    "python": check_python,
    "python3": check_python,
    "bash": check_shell_script,
    "source": check_shell_script,
}
"""How each program's commands are checked, without running them."""


def command_problem(command: Command) -> str | None:
    program = command.words[0]
    if program in SKIPPED_PROGRAMS:
        return None
    if program not in CHECKERS:
        return f"no check for `{program}`: add one to CHECKERS, or the program to SKIPPED_PROGRAMS with the reason"
    return CHECKERS[program](command.words)


def test_bash_blocks_are_found():
    """The block reader sees the pages' commands: joined continuations, comments dropped, ``$(...)`` inside."""
    commands = [command for page in MARKDOWN_PAGES for command in bash_commands(page)]
    programs = Counter(command.words[0] for command in commands)
    assert programs["lm_eval"] >= 5 and programs["trac"] >= 5 and programs["python"] >= 5, programs
    demo = next(command for command in commands if command.words[:3] == ("lm_eval", "--tasks", "trac_demo"))
    assert demo.words[-1] == "--log_samples" and not any(word.startswith("#") for word in demo.words)


@pytest.mark.parametrize("page", MARKDOWN_PAGES, ids=_page_id)
def test_bash_commands_parse(page: Path):
    """Every command of the page's ``bash`` blocks is valid as written: ``trac`` and ``lm_eval`` parse with their own
    parsers (and lm-eval knows every ``--tasks`` name), a repository script exists and takes the options given, a
    ``python -m`` module is importable; nothing is run."""
    problems = [
        f"{command.where()}\n    -> {problem}"
        for command in bash_commands(page)
        if (problem := command_problem(command)) is not None
    ]
    assert not problems, "commands that would not run:\n" + "\n".join(problems)


FIDELITY_ROW = re.compile(r"^\| (?!definition|---)(?P<cells>.+) \|$")
TEST_REFERENCE = re.compile(r"^`(?P<path>tests/[\w/]+\.py)::(?P<name>test_\w+)`$")


def fidelity_rows() -> list[list[str]]:
    """The rows of docs/method.md#fidelity-to-the-paper, each a list of its five cells."""
    text = (DOCS / "method.md").read_text(encoding="utf-8")
    section = text.split("## Fidelity to the paper", 1)[1].split("\n## ", 1)[0]
    rows = [match["cells"] for line in section.splitlines() if (match := FIDELITY_ROW.match(line))]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)] for row in rows]


def test_every_fidelity_row_says_same_or_differs_and_names_a_test_that_exists():
    """A "same" row names the test that fails if the code drifts from the paper; a "differs" row says why and names
    the test that pins what the code does instead."""
    rows = fidelity_rows()
    assert len(rows) >= 25, "the fidelity table lost its rows"
    for cells in rows:
        assert len(cells) == 5, cells
        definition, _, _, verdict, test = cells
        assert verdict == "same" or verdict.startswith(("same (", "differs: ")), (definition, verdict)
        reference = TEST_REFERENCE.match(test)
        assert reference, f"{definition}: {test!r} is not `tests/<file>.py::<test>`"
        source = (ROOT / reference["path"]).read_text(encoding="utf-8")
        assert re.search(rf"^def {reference['name']}\(", source, re.MULTILINE), f"{definition}: no {test}"
