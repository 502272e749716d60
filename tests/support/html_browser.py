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
