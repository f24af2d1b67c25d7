"""The live parts of the pages in a real browser (Debian's Chromium through Playwright, as
``test_browser.py``) against a real ``kdt-grade serve``: the header's contest clock ticking from the
server's time (the browser's own clock set hours wrong) through the freeze and the end without a reload;
"My submissions" and the organisers' list filling in their verdicts at a glance while grading.
Screenshots go to ``$KDT_GRADE_TEST_ARTIFACTS/browser``."""
from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

import pytest

from grader.service import contest
from pages_testlib import server, wait_until  # noqa: F401 (a fixture)
from test_browser import ARTIFACTS, BASELINE, api_status, api_submit, browser, expect, log_in  # noqa: F401
from weblib import NOTHING

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


def test_the_lists_fill_in_their_verdicts_while_grading(server, browser):
    """Alice's zero-point submission counts; her baseline submission is being graded while "My
    submissions" and the organisers' list are open: both rows turn done, "10 AC", and take the "counts"
    mark from the first one, without a reload."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    alice, root = server.add_user("alice", display_name="Alice A."), server.add_user("root", admin=True)
    first = api_submit(server, alice, NOTHING)
    wait_until(lambda: api_status(server, alice, first)["status"] == "done", 120, "the first submission")
    page = log_in(browser, server, alice)
    second = api_submit(server, alice, BASELINE)
    page.goto(f"{server.url}/submissions")
    organiser = log_in(browser, server, root)
    organiser.goto(f"{server.url}/admin")
    for view, table in ((page, "#submissions"), (organiser, "#all-submissions")):
        view.evaluate("window.__kdtMarker = 'no reload'")
        row = view.locator(f'{table} tr[data-id="{second}"]')
        assert row.locator('[data-f="status"]').inner_text() in ("queued", "running")
        assert view.locator(table).get_attribute("data-live") == "1"
        assert view.locator(f'{table} tr[data-id="{first}"] [data-f="counts"] .counts').count() == 1
    page.screenshot(path=str(ARTIFACTS / "submissions-grading.png"), full_page=True)

    for view, table in ((page, "#submissions"), (organiser, "#all-submissions")):
        row = view.locator(f'{table} tr[data-id="{second}"]')
        expect(row.locator('[data-f="status"]')).to_have_text("done", timeout=300_000)
        expect(row.locator('[data-f="verdicts"]')).to_have_text("10 AC")
        expect(row.locator('[data-f="verdicts"] .verdict.v-AC')).to_have_count(1)
        expect(row.locator('[data-f="counts"] .counts')).to_have_text("counts")
        expect(view.locator(f'{table} tr[data-id="{first}"] [data-f="counts"] .counts')).to_have_count(0)
        expect(view.locator(table)).to_have_attribute("data-live", "0")
        total = api_status(server, alice, second)["total"]
        assert row.locator('[data-f="total"]').inner_text() == f"{total:.2f}"
        assert view.locator(f'{table} tr[data-id="{first}"] [data-f="verdicts"]').inner_text() == "10 CE"
        assert view.evaluate("window.__kdtMarker") == "no reload"
    page.screenshot(path=str(ARTIFACTS / "submissions-glance.png"), full_page=True)
    organiser.locator("#submissions").screenshot(path=str(ARTIFACTS / "admin-glance.png"))
