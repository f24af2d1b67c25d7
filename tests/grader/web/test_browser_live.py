"""The live parts of the pages in a real browser (Debian's Chromium through Playwright, as
``test_browser.py``) against a real ``kdt-grade serve``: the header's contest clock ticking from the
server's time (the browser's own clock set hours wrong) through the freeze and the end without a reload.
Screenshots go to ``$KDT_GRADE_TEST_ARTIFACTS/browser``."""
from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

import pytest

from grader.service import contest
from pages_testlib import server  # noqa: F401 (a fixture)
from test_browser import ARTIFACTS, browser, expect  # noqa: F401 (browser: a fixture)

pytestmark = pytest.mark.slow


def test_the_clock_passes_the_freeze_and_the_end_without_a_reload(server, browser):
    """The contest freezes 4 s and ends 8 s after the page loads; the browser's clock is 3 hours behind.
    The header counts down from the server's time, says "scoreboard frozen" and then "Contest over" with a
    notice each time, without a reload; the footer's server time ticks with the server's clock."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.clock.install(time=datetime.now(UTC) - timedelta(hours=3))  # a wrong clock in the browser
    page = context.new_page()
    now = datetime.now(UTC)
    contest.set_rules(server.deployment.service, starts_at=now - timedelta(hours=1), ends_at=now + timedelta(seconds=8),
                      freeze_at=now + timedelta(seconds=4))
    page.goto(f"{server.url}/rules")
    page.evaluate("window.__kdtMarker = 'no reload'")
    clock = page.locator("#contest-clock")
    assert re.fullmatch(r"Ends in 0:00:0\d · freeze in 0:00:0[0-4]", clock.inner_text()), clock.inner_text()
    assert page.locator("#clock-notice").is_hidden()
    first = clock.inner_text()
    expect(clock).not_to_have_text(first, timeout=3_000)  # it ticks

    expect(clock).to_have_text(re.compile(r"Ends in 0:00:0[0-4] · scoreboard frozen"), timeout=8_000)
    expect(page.locator("#clock-notice")).to_have_text(
        "The scoreboard is now frozen: it shows only submissions made before this moment.")
    page.locator("header.top").screenshot(path=str(ARTIFACTS / "clock-frozen.png"))

    expect(clock).to_have_text("Contest over", timeout=8_000)
    expect(clock).to_have_attribute("data-phase", "over")
    expect(page.locator("#clock-notice")).to_have_text("The contest has ended.")
    assert page.evaluate("window.__kdtMarker") == "no reload"
    shown = datetime.strptime(page.locator("#server-time").inner_text(), "%Y-%m-%d %H:%M:%S UTC").replace(tzinfo=UTC)
    assert abs(shown.timestamp() - time.time()) < 3  # the server's time, not the browser's (3 hours behind)
    assert page.evaluate("Date.now()") < (time.time() - 3600) * 1000  # the browser's clock is still wrong
    page.screenshot(path=str(ARTIFACTS / "clock-over.png"))


def test_without_javascript_the_header_shows_the_static_clock(server, browser):
    """With JavaScript off the header shows the server's text (and no notice)."""
    now = datetime.now(UTC)
    contest.set_rules(server.deployment.service, starts_at=now + timedelta(hours=3))
    page = browser.new_context(java_script_enabled=False).new_page()
    page.goto(f"{server.url}/")
    assert re.fullmatch(r"Starts in 2:59:[0-5]\d", page.locator("#contest-clock").inner_text())
    assert page.locator("#clock-notice").is_hidden()
