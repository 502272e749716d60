"""The repository documents itself: code cites ``docs/*.md`` sections, never the external specification, the paper's
LaTeX source or issue numbers, and every cited section exists (GitHub-style heading anchors)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from testenv import REPO as ROOT

DOCS = ROOT / "docs"
CODE_PACKAGES = ("trac_tasks", "trac_metrics")
CITING = (*CODE_PACKAGES, "benchmarks", "tests", "task_configs", "README.md")
"""Where ``docs/<page>.md#<anchor>`` citations are looked for."""

EXTERNAL_CITATIONS = {
    "SPEC §": re.compile(r"SPEC §"),
    "SPEC.md": re.compile(r"\bSPEC\.md\b"),
    "DATASETS.md": re.compile(r"\bDATASETS\.md\b"),
    "the paper's .tex": re.compile(r"trac_paper\.tex"),
    "an issue number": re.compile(r"\bissue #\d+"),
}
"""Citations of documents outside the repository; each must be replaced by a docs section."""

DOC_REFERENCE = re.compile(r"docs/([A-Za-z0-9_-]+)\.md#([A-Za-z0-9_-]+)")
MARKDOWN_LINK = re.compile(r"\]\(([A-Za-z0-9_./-]*?)#([^)\s]+)\)")
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
        for path in text_files("benchmarks", "tests", "task_configs", "README.md")
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


def test_links_inside_the_docs_resolve():
    problems = []
    for page in sorted(DOCS.glob("*.md")):
        in_fence = False
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            if FENCE.match(line):
                in_fence = not in_fence
            if in_fence:
                continue
            for target, anchor in MARKDOWN_LINK.findall(line):
                linked = page if not target else (page.parent / target)
                if linked.suffix != ".md":
                    continue
                if not linked.is_file() or anchor not in anchors(linked):
                    problems.append(f"docs/{page.name}:{number}: {target}#{anchor}")
    assert not problems, "links to missing sections:\n" + "\n".join(problems)
