"""The live parts of the pages in a real browser (Debian's Chromium through Playwright, as
``test_browser.py``) against a real ``kdt-grade serve``: the header's contest clock ticking from the
server's time (the browser's own clock set hours wrong) through the freeze and the end without a reload;
"My submissions" and the organisers' list filling in their verdicts at a glance while grading; the
scoreboard's coloured cells (also in a live update); the phone layouts at 390 x 844.
Screenshots go to ``$KDT_GRADE_TEST_ARTIFACTS/browser``."""
from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

import pytest

from grader.service import contest
from judger.tasks import TASKS
from pages_testlib import server, wait_until  # noqa: F401 (a fixture)
from test_browser import ARTIFACTS, BASELINE, api_status, api_submit, browser, expect, log_in  # noqa: F401
from test_pages_live import scored
from weblib import NOTHING, VADD_ONLY

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


PHONE = {"width": 390, "height": 844}


def inside(page, locator) -> bool:
    """The element's box lies within the viewport's width (nothing of it left or right of the screen)."""
    box = locator.bounding_box()
    return box is not None and box["width"] > 0 and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 0.5


def test_the_scoreboard_colours_its_cells_and_keeps_them_in_a_live_update(server, browser):
    scored(server, "alice", (10, 9.99, 15, 0))
    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    page.goto(f"{server.url}/")
    cells = page.locator('#scoreboard tr[data-user="alice"] td')
    colours = [cells.nth(i).evaluate("td => getComputedStyle(td).backgroundColor") for i in range(2, 6)]
    assert colours == ["rgb(205, 238, 214)", "rgb(253, 232, 215)", "rgb(251, 241, 196)", "rgb(243, 243, 245)"]
    page.evaluate("window.__kdtMarker = 'no reload'")
    scored(server, "bob", (4, 20, 30, 40))  # a full score on three tasks: ranked first
    bob = page.locator('#scoreboard tr[data-user="bob"]')
    expect(bob).to_have_count(1, timeout=30_000)
    assert [bob.locator("td").nth(i).get_attribute("class") for i in range(2, 6)] == [
        "num sc-low", "num sc-full", "num sc-full", "num sc-full"]
    assert page.locator("#scoreboard tbody tr").first.get_attribute("data-user") == "bob"
    assert page.evaluate("window.__kdtMarker") == "no reload"
    expect(page.locator("#legend .sc-full")).to_have_text("100%")
    page.locator("main").screenshot(path=str(ARTIFACTS / "scoreboard-colours.png"))


def test_phone_layouts_keep_the_essential_columns_on_screen(server, browser):
    """At 390 x 844: the scoreboard's rank, name and total of every row are on screen (the task columns
    scroll between them, with the cue; the page itself does not scroll sideways); a submission's verdict,
    score and message are on screen for every test point, the message wrapped, and so are its four task
    scores with their headers (wrapped, not cut off); the timeline's frame keeps
    the picture's width and scrolls sideways inside its box, with the cue."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    alice = server.add_user("alice", display_name="Alice with a rather long display name")
    mine = api_submit(server, alice, VADD_ONLY)
    wait_until(lambda: api_status(server, alice, mine)["status"] == "done", 300, "alice's submission")
    for i, scores in enumerate(((10, 20, 30, 40), (10, 12.5, 3, 0), (0, 0, 0, 0.5))):
        scored(server, f"user{i}", scores)

    page = browser.new_context(viewport=PHONE).new_page()
    page.goto(f"{server.url}/")
    rows = page.locator("#scoreboard tbody tr")
    assert rows.count() == 4
    for i in range(4):
        row = rows.nth(i)
        for name in ("td.col-rank", "td.col-name", "td.total"):
            assert inside(page, row.locator(name)), (i, name, row.locator(name).bounding_box())
        assert row.locator("td.col-at").is_hidden()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert page.locator("#board-cue").is_visible()
    wrap = page.locator("#board-wrap")
    assert wrap.evaluate("w => w.scrollWidth > w.clientWidth")  # the tasks do scroll: they do not fit
    page.screenshot(path=str(ARTIFACTS / "phone-scoreboard.png"), full_page=True)
    wrap.evaluate("w => { w.scrollLeft = w.scrollWidth; }")
    last = rows.first.locator("td").nth(5)  # task 4, scrolled into view
    assert inside(page, last) and inside(page, rows.first.locator("td.total"))
    assert inside(page, rows.first.locator("td.col-name"))  # still there
    page.screenshot(path=str(ARTIFACTS / "phone-scoreboard-scrolled.png"))

    page = log_in(browser, server, alice, **PHONE)
    page.goto(f"{server.url}/submissions/{mine}")
    state = api_status(server, alice, mine)
    # the task scores fit the screen: every task's header and score, nothing to scroll sideways
    tasks = page.locator("#task-scores")
    assert tasks.evaluate("t => t.parentElement.scrollWidth <= t.parentElement.clientWidth")
    for task in TASKS.values():
        assert inside(page, page.locator(f'td[data-task-score="{task.id}"]')), task.id
        header = tasks.locator("th").nth(task.id - 1)
        assert inside(page, header) and header.inner_text() == f"Task {task.id}: {task.name} ({task.weight})"
    assert any(p["message"] for p in state["points"])
    for p in state["points"]:
        row = page.locator(f"#pt-{p['task']}-{p['point']}")
        assert inside(page, row.locator('[data-f="verdict"] .verdict')), p
        assert row.locator('[data-f="verdict"]').inner_text() == p["verdict"]
        assert inside(page, row.locator('[data-f="score"]'))
        assert row.locator('[data-f="score"]').inner_text().endswith(f"{p['score']:.2f}")
        if p["message"]:
            message = row.locator("pre.message")
            assert inside(page, message), (p, message.bounding_box())
            assert message.evaluate("m => m.scrollWidth <= m.clientWidth")  # wrapped, nothing hidden sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    traced = next(p for p in state["points"] if p["verdict"] == "AC")
    item = page.locator(f"#tl-{traced['task']}-{traced['point']}")
    item.locator("summary").click()
    frame, box = item.locator("iframe"), item.locator(".tl-scroll")
    expect(frame).to_be_visible()
    assert frame.bounding_box()["width"] > PHONE["width"] and inside(page, box)
    assert box.evaluate("b => b.scrollWidth > b.clientWidth")
    expect(item.locator(".scroll-cue")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    item.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "phone-timeline.png"))
    page.screenshot(path=str(ARTIFACTS / "phone-submission-full.png"), full_page=True)
    page.evaluate("window.scrollTo(0, 0)")
    assert inside(page, page.locator("main h1"))
    page.screenshot(path=str(ARTIFACTS / "phone-submission.png"))


def test_phone_layouts_of_the_rules_and_my_submissions(server, browser):
    """At 390 x 844. "My submissions": every row's number, time, verdicts at a glance and total are on
    screen (the file, status and task scores are left out, the note says where they are) and the page does
    not scroll sideways. The Rules page: the formula and the worked example are on screen; every test
    point's task, point and threshold T are on screen, before and after the table is swiped to its last
    column (the cue says it scrolls; the page itself does not); the contest's times and limits wrap."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    alice = server.add_user("alice")
    nothing = api_submit(server, alice, NOTHING)
    wait_until(lambda: api_status(server, alice, nothing)["status"] == "done", 120, "the first submission")
    vadd = api_submit(server, alice, VADD_ONLY)
    wait_until(lambda: api_status(server, alice, vadd)["status"] == "done", 300, "the second submission")

    page = log_in(browser, server, alice, **PHONE)
    page.goto(f"{server.url}/submissions")
    marks = {nothing: "10 CE", vadd: "2 AC · 8 CE"}
    for sid, text in marks.items():
        row = page.locator(f'#submissions tr[data-id="{sid}"]')
        state = api_status(server, alice, sid)
        cells = {"id": row.locator("td").first, "time": row.locator("time"),
                 "verdicts": row.locator('[data-f="verdicts"]'), "total": row.locator('[data-f="total"]')}
        for name, cell in cells.items():
            assert inside(page, cell), (sid, name, cell.bounding_box())
        assert cells["id"].inner_text() == str(sid)
        assert cells["time"].inner_text() == datetime.fromisoformat(state["created"]).astimezone(UTC).strftime(
            "%Y-%m-%d %H:%M:%S UTC")
        assert cells["verdicts"].inner_text() == text
        assert cells["total"].inner_text() == f"{state['total']:.2f}"
        for hidden in ("td.col-file", "td.col-status", "td.col-task"):
            assert row.locator(hidden).first.is_hidden(), (sid, hidden)
    expect(page.locator(f'#submissions tr[data-id="{vadd}"] [data-f="counts"] .counts')).to_be_visible()
    expect(page.locator("#submissions-cue")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.screenshot(path=str(ARTIFACTS / "phone-my-submissions.png"), full_page=True)

    page.goto(f"{server.url}/rules")
    for name in (".rules .formula code", "#rules-example"):
        assert inside(page, page.locator(name)), (name, page.locator(name).bounding_box())
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    expect(page.locator("#rules-cue")).to_be_visible()
    wrap = page.locator("#rules-points-wrap")
    assert wrap.evaluate("w => w.scrollWidth > w.clientWidth")  # the other columns do scroll: they do not fit
    assert page.locator("#rules-points td.col-tpu").first.is_hidden()
    for line in page.locator("#rules-limits tr").all():
        assert inside(page, line.locator("th")) and inside(page, line.locator("td")), line.inner_text()
    page.screenshot(path=str(ARTIFACTS / "phone-rules.png"), full_page=True)

    def essentials_on_screen():
        for task in TASKS.values():
            for point in task.points:
                row = page.locator(f"#rule-{task.id}-{point.index}")
                for name in ("td.col-point", "td.threshold"):
                    assert inside(page, row.locator(name)), (task.id, point.index, name,
                                                             row.locator(name).bounding_box())
                assert row.locator("td.threshold").inner_text() == f"{point.threshold:,}"
            first = page.locator(f"#rule-{task.id}-{task.points[0].index} td.col-task")
            assert inside(page, first) and first.inner_text() == str(task.id)

    essentials_on_screen()
    wrap.evaluate("w => { w.scrollLeft = w.scrollWidth; }")
    last = page.locator("#rule-4-3 td").last  # the cycles for 25, scrolled into view
    assert inside(page, last), last.bounding_box()
    essentials_on_screen()
    wrap.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "phone-rules-scrolled.png"))
