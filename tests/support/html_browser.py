"""Helpers of the HTML report's browser tests: Debian's Chromium, headless, driven by Playwright, the network blocked
(docs/guide/reports.md#the-html-report-trac-report---html)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

CHROMIUM = os.environ.get("TRAC_CHROMIUM", "/usr/bin/chromium")
READY = "html[data-ready=true]"
"""The page's script has drawn it. Waits are selectors: the page's Content-Security-Policy forbids the eval that
Playwright's ``wait_for_function`` polls with."""


def loaded(view: str) -> str:
    """A question view whose trace has been inflated and drawn."""
    return f"{view}[data-loaded]:not([data-loaded=''])"


def launched() -> Iterator[Browser]:
    """Chromium, launched for a module's tests (a fixture's body); the test fails when it is not installed."""
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"Chromium is not installed at {CHROMIUM}: run scripts/setup_env.sh (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@contextmanager
def opened(context: BrowserContext, url: str, file: Path) -> Iterator[Page]:
    """``url`` (the report's file:// address, perhaps with a state in its hash) opened and drawn; on leaving, no
    console error and no request but the file itself."""
    page = context.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("request", lambda request: requests.append(request.url.split("#")[0]))
    page.goto(url)
    page.wait_for_selector(READY, state="attached")
    yield page
    page.close()
    assert errors == []
    assert set(requests) == {file.as_uri()}


CALIBRATION_METRICS = ("ece", "brier", "log_loss")


def check_ranked_claims(page: Page) -> list[str]:
    """What the ranked summary claims holds under every rank-by metric (issue 47): each interval on it contains its
    value, the band tied with the leader is barred and badged, a constant score is never first on a calibration
    metric, and "best" stands only where, with the leader as the reference, every other method's paired interval
    excludes 0 (on the metrics whose paired differences the page holds against any reference: the headline ones).
    Returns the metrics checked; leaves the summary on AUROC against its default reference."""
    metrics = page.eval_on_selector_all("#ranked-metric option", "options => options.map(option => option.value)")
    for metric in metrics:
        page.select_option("#ranked-metric", metric)
        rows = page.eval_on_selector_all(
            "#ranked-summary tbody tr",
            """rows => rows.map(row => [...row.querySelectorAll('td.value, td.difference')]
                .filter(cell => cell.dataset.value).map(cell => [cell.dataset.lo, cell.dataset.value, cell.dataset.hi])
                .concat([[row.classList.contains('tied'), row.querySelector('.badge.mark')?.textContent ?? '',
                          !!row.querySelector('.badge.constant'), row.dataset.method]]))""",
        )
        for row in rows:
            *intervals, (barred, badge, _, _) = row
            for lo, value, hi in intervals:
                if lo and hi:
                    # 1e-12: a resampled metric equals the direct one up to rounding (method.md#hierarchical-bootstrap)
                    assert float(lo) - 1e-12 <= float(value) <= float(hi) + 1e-12, (metric, lo, value, hi)
            assert barred == (badge == "tied with the best"), metric
        if metric in CALIBRATION_METRICS:
            assert not rows[0][-1][2], f"a constant score ranked first on {metric}"
        leader, badge = rows[0][-1][3], rows[0][-1][1]
        references = page.eval_on_selector_all("#ranked-against option", "options => options.map(o => o.value)")
        if badge == "best" and leader in references:
            page.select_option("#ranked-against", leader)
            if page.inner_text("#ranked-summary tbody tr:first-child td.difference") != "reference":
                page.select_option("#ranked-against", references[0])
                continue  # the page holds this metric's paired differences against the default reference only
            bounds = page.eval_on_selector_all(
                "#ranked-summary tbody tr:not(:first-child) td.difference",
                "cells => cells.map(cell => [cell.dataset.lo ?? null, cell.dataset.hi ?? null])",
            )
            assert bounds and all(lo and hi for lo, hi in bounds), metric
            assert all(float(lo) > 0 or float(hi) < 0 for lo, hi in bounds), (metric, "best with a tie", bounds)
            page.select_option("#ranked-against", references[0])
    page.select_option("#ranked-metric", "auroc")
    return metrics


TABS = ("leaderboard", "figures", "analyses", "questions", "compare")
PHONE = {"width": 390, "height": 844}


def check_fits_a_phone(browser: Browser, html: Path) -> None:
    """No tab of the page ``html`` is wider than a 390 px phone's screen."""
    phone = browser.new_context(offline=True, viewport=PHONE)
    with opened(phone, html.as_uri(), html) as page:
        for tab in TABS:
            page.click(f"button[data-tab={tab}]")
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], tab
    phone.close()
