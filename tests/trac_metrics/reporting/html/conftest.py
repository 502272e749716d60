"""The browser of the HTML report's browser tests, one per test module, and its desktop-sized context
(tests/support/html_browser.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from html_browser import launched
from playwright.sync_api import Browser, BrowserContext


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from launched()


@pytest.fixture(scope="module")
def context(browser: Browser) -> Iterator[BrowserContext]:
    context = browser.new_context(offline=True, viewport={"width": 1440, "height": 960})
    yield context
    context.close()
