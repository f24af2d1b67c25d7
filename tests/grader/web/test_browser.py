"""The pages in a real browser: Playwright driving Debian's Chromium (/usr/bin/chromium) against a real
``kdt-grade serve``. Log in with a token, upload ``submissions/examples/baseline.py``, watch the per-point
table fill in without a reload, find the timeline SVG with the right number of instruction bars, see the
scoreboard update live in a second browser context, get 404 on another user's page. And messages: a
contestant asks, an organiser answers to all (reworded) and announces, the contestant's badge counts both
without a reload, a second contestant reads the published answer. Screenshots of the scoreboard, the
submission page, a timeline, the Messages page, the admin's questions and the badge go to
``$KDT_GRADE_TEST_ARTIFACTS/browser`` (default ``test-artifacts/browser`` in the repository)."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import httpx
import pytest

import db

from grader.judging import trace_record as traces
from judger.grading import grade_point, kernel_for_task, load_submission
from judger.tasks import get_point, get_task
from pages_testlib import EXAMPLES, ROOT, VADD_ONLY, server, wait_until  # noqa: F401  (server: a fixture)
from tests.shared_services import require

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync"]
ARTIFACTS = Path(os.environ.get("KDT_GRADE_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "browser"
BASELINE = EXAMPLES / "baseline.py"

pytestmark = pytest.mark.slow


@contextlib.contextmanager
def chromium():
    """Debian's Chromium under Playwright (the test is skipped, or fails with CI set, where it is missing)."""
    require(None if CHROMIUM.exists() else f"Chromium is not installed at {CHROMIUM} (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def browser():
    with chromium() as launched:
        yield launched


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def job0_instructions(path: Path, task_id: int, index: int) -> int:
    """How many instructions job 0 of a test point executes, from a local profiled run."""
    profile = traces.profile_for_judging()
    kernel = kernel_for_task(load_submission(path), task_id)
    grade_point(kernel, get_task(task_id), get_point(task_id, index), profile=profile)
    return len(profile.trace(0))


def api_submit(server, token: str, path: Path) -> int:
    with path.open("rb") as f:
        response = httpx.post(f"{server.url}/api/v1/submissions", headers={"Authorization": f"Bearer {token}"},
                              files={"file": (path.name, f)}, timeout=30)
    assert response.status_code == 202, response.text
    return response.json()["id"]


def api_status(server, token: str, submission_id: int) -> dict:
    return httpx.get(f"{server.url}/api/v1/submissions/{submission_id}",
                     headers={"Authorization": f"Bearer {token}"}, timeout=30).json()


def test_contestant_day_in_the_browser(server, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    alice, bob = server.add_user("alice", display_name="Alice A."), server.add_user("bob")
    bobs = api_submit(server, bob, VADD_ONLY)
    wait_until(lambda: api_status(server, bob, bobs)["status"] == "done", 300, "bob's submission")

    # a second browser context watches the public scoreboard the whole time
    viewer = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    viewer.goto(f"{server.url}/")
    assert viewer.locator('#scoreboard tr[data-user="bob"]').count() == 1
    assert viewer.locator('#scoreboard tr[data-user="alice"]').count() == 0
    viewer.evaluate("window.__kdtMarker = 'no reload'")

    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(f"{server.url}/login")
    page.fill("#token", alice)
    page.click("main button[type=submit]")
    page.wait_for_url(f"{server.url}/submissions")
    assert page.locator("header .user").inner_text() == "Alice A."
    page.goto(f"{server.url}/submit")
    assert page.locator("#limits").inner_text().startswith("You may submit now.")
    page.set_input_files("#file", str(BASELINE))
    page.click("main button[type=submit]")
    page.wait_for_url(f"{server.url}/submissions/2")
    page.evaluate("window.__kdtMarker = 'no reload'")
    done_at_first = page.locator('#points tr[data-state="done"]').count()
    assert done_at_first < 10  # the table starts unfinished (grading takes far longer than the redirect)

    # the table fills in by itself
    expect(page.locator('#points tr[data-state="done"]')).to_have_count(10, timeout=300_000)
    expect(page.locator("#sub-status")).to_have_text("done", timeout=30_000)
    assert page.evaluate("window.__kdtMarker") == "no reload"
    assert int(page.locator("#points").get_attribute("data-updates")) >= 1
    state = api_status(server, alice, 2)
    assert state["status"] == "done" and round(state["total"], 1) == 37.3
    assert page.locator("#sub-total").inner_text() == f"{state['total']:.2f}"
    for p in state["points"]:
        row = page.locator(f"#pt-{p['task']}-{p['point']}")
        assert row.locator('[data-f="verdict"]').inner_text() == p["verdict"] == "AC"
        assert row.locator('[data-f="cycles"]').inner_text() == f"{p['cycles']:,}"
        assert row.locator('[data-f="score"]').inner_text() == f"{p['score']:.2f}"
        assert row.locator('[data-f="for_100"]').inner_text() == f"{p['cycles_for_100']:,}"  # filled by live.js
        plus = p["cycles_for_plus_10"]
        assert row.locator('[data-f="for_plus_10"]').inner_text() == ("" if plus is None else f"{plus:,}")
    assert page.locator('#pt-1-1 [data-f="for_plus_10"]').inner_text() == "16,819"  # 21,248 cycles score 16.46
    page.screenshot(path=str(ARTIFACTS / "submission.png"), full_page=True)

    # the timeline of task 4 point 0: one bar per instruction of job 0, hover text from the trace; the
    # point's "picture" link opens its collapsed block
    item = page.locator("#tl-4-0")
    assert item.get_attribute("open") is None
    page.locator('#pt-4-0 [data-f="timeline"] a').click()
    expect(item).to_have_attribute("open", "")
    frame = page.frame_locator("#tl-4-0 iframe")
    bars = frame.locator("rect.tl-bar")
    bars.first.wait_for(timeout=30_000)
    assert bars.count() == job0_instructions(BASELINE, 4, 0) == 29
    assert frame.locator("text.tl-util[data-unit=MXM]").text_content().startswith("MXM ")
    assert "cycles on MXM" in frame.locator("rect.tl-bar.tl-mxm title").first.text_content()
    item.scroll_into_view_if_needed()
    page.locator("#tl-4-0 iframe").screenshot(path=str(ARTIFACTS / "timeline.png"))
    with page.expect_download() as download:
        item.locator("a[download]").click()
    assert download.value.suggested_filename == "submission-2-task4-point0.perfetto.json"

    # the scoreboard in the other context moved without a reload
    viewer.wait_for_selector('#scoreboard tr[data-user="alice"]', timeout=30_000)
    assert viewer.evaluate("window.__kdtMarker") == "no reload"
    first = viewer.locator("#scoreboard tbody tr").first
    assert first.get_attribute("data-user") == "alice"
    assert first.locator("td").nth(1).inner_text() == "Alice A."
    assert first.locator("td.total").inner_text() == f"{state['total']:.2f}"
    viewer.screenshot(path=str(ARTIFACTS / "scoreboard.png"), full_page=True)

    # another user's submission: 404
    response = page.goto(f"{server.url}/submissions/{bobs}")
    assert response.status == 404
    assert page.locator("main").inner_text().count(f"There is no submission {bobs} of yours.") == 1


def log_in(browser, server, token: str, width: int = 1280, height: int = 900, **options):
    """A new browser context (``options``: Playwright's context options) logged in with ``token``; returns
    its page (on /submissions)."""
    page = browser.new_context(viewport={"width": width, "height": height}, **options).new_page()
    page.goto(f"{server.url}/login")
    page.fill("#token", token)
    page.click("main button[type=submit]")
    page.wait_for_url(f"{server.url}/submissions")
    return page


def test_a_question_answered_to_all_in_the_browser(server, browser):
    """A contestant asks on the Messages page; an organiser answers to all on /admin, reworded; the
    contestant's badge counts the answer without a reload; a second contestant reads the published
    question and answer; the badge goes back to zero once the Messages page is read."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    alice = server.add_user("alice", display_name="Alice A.")
    bob, root = server.add_user("bob"), server.add_user("root", admin=True)
    question = "Is the task 3 threshold <1,919,810> right? & what about [red]?"

    page = log_in(browser, server, alice)
    page.click("#messages-link")
    page.wait_for_url(f"{server.url}/messages")
    assert page.locator("#msg-badge").is_hidden()
    page.select_option("#task", "3")
    page.fill("#text", question)
    page.click("#ask button[type=submit]")
    page.wait_for_url(f"{server.url}/messages?notice=asked")
    mine = page.locator('#clarifications li[data-mine="1"]')
    expect(mine.locator(".question")).to_have_text(question)
    expect(mine.locator(".answer")).to_have_text("Waiting for an answer.")
    page.screenshot(path=str(ARTIFACTS / "messages-asked.png"), full_page=True)
    page.goto(f"{server.url}/")  # she watches the scoreboard meanwhile
    page.evaluate("window.__kdtMarker = 'no reload'")
    assert page.locator("#msg-badge").is_hidden()

    organiser = log_in(browser, server, root)
    organiser.goto(f"{server.url}/admin")
    item = organiser.locator("#open-questions li.message").first
    expect(item.locator(".question")).to_have_text(question)
    assert "alice" in item.locator(".meta").inner_text() and "Task 3" in item.locator(".meta").inner_text()
    item.locator("textarea[name=text]").fill("Yes: the handout's threshold is right.")
    item.locator("input[name=public_text]").fill("Is the task 3 threshold right?")
    organiser.screenshot(path=str(ARTIFACTS / "admin-questions.png"), full_page=True)
    item.locator("button[value=all]").click()
    organiser.wait_for_url(f"{server.url}/admin?notice=answered_all&id=1")
    expect(organiser.locator("main p.ok")).to_have_text("Question 1 and its answer are published to everyone.")
    expect(organiser.locator("#open-questions li.empty")).to_have_text("No open questions.")
    organiser.fill("#announcement", "Contest extended by 30 minutes")
    organiser.check("#announce input[name=pinned]")
    organiser.click("#announce button[type=submit]")
    organiser.wait_for_url(f"{server.url}/admin?notice=announced")

    # alice's badge counts the answer and the announcement without a reload
    badge = page.locator("#msg-badge")
    expect(badge).to_have_text("2", timeout=30_000)
    expect(badge).to_be_visible()
    assert page.evaluate("window.__kdtMarker") == "no reload"
    assert int(badge.get_attribute("data-updates")) >= 1
    page.locator("header.top").screenshot(path=str(ARTIFACTS / "badge.png"))
    page.click("#messages-link")
    page.wait_for_url(f"{server.url}/messages")
    expect(page.locator('#clarifications li[data-mine="1"] .answer .text')).to_have_text(
        "Yes: the handout's threshold is right.")
    expect(page.locator('#clarifications li[data-mine="1"] .question')).to_have_text(question)  # her words
    expect(page.locator("#announcements li.pinned .text")).to_have_text("Contest extended by 30 minutes")
    assert page.locator("#msg-badge").is_hidden()

    # bob reads the published question in the organiser's words, without its author
    other = log_in(browser, server, bob)
    expect(other.locator("#msg-badge")).to_have_text("2")
    other.click("#messages-link")
    public = other.locator('#clarifications li[data-mine="0"]')
    expect(public.locator(".question")).to_have_text("Is the task 3 threshold right?")
    expect(public.locator(".answer .text")).to_have_text("Yes: the handout's threshold is right.")
    assert "alice" not in other.locator("main").inner_text().lower()
    other.screenshot(path=str(ARTIFACTS / "messages-published.png"), full_page=True)


def test_the_rules_page_at_desktop_width(server, browser):
    """From the scoreboard's header to /rules: the formula, the example, every threshold, the limits set."""
    from datetime import UTC, datetime

    from grader.service import contest

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    contest.set_rules(server.deployment.service, name="KDT 2026", starts_at=datetime(2026, 1, 1, 1, tzinfo=UTC),
                      ends_at=datetime(2999, 1, 1, tzinfo=UTC), min_interval_seconds=60, max_per_hour=10,
                      max_pending=2)
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(f"{server.url}/")
    page.locator("header nav a", has_text="Rules").click()
    page.wait_for_url(f"{server.url}/rules")
    assert page.locator("h1").inner_text() == "Rules"
    assert page.locator(".formula").inner_text() == "score = 100 if cycles <= T, else 10 + 90 * (T / cycles) ** 4"
    assert "= 10 + 90 / 1.25^4 = 46.86;" in page.locator("#rules-example").inner_text()
    for task in get_task(1), get_task(4):
        for point in task.points:
            assert page.locator(f"#rule-{task.id}-{point.index} td.threshold").inner_text() == f"{point.threshold:,}"
    limits = page.locator("#rules-limits")
    assert limits.locator('tr[data-key="max_per_hour"] td').inner_text() == "10 at most"
    assert limits.locator('tr[data-key="max_questions_per_hour"] td').inner_text() == "no limit"
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # no sideways scrolling at desktop width
    page.screenshot(path=str(ARTIFACTS / "rules.png"), full_page=True)


def test_the_admin_filters_the_submissions_and_confirms_a_rejudge_in_the_browser(server, browser):
    """An organiser filters the submissions list (a verdict and a task, with the form's selects), asks to
    rejudge the filtered set, reads the confirmation (nothing changed yet), confirms, and watches the
    before/after page finish by itself (it reloads until every submission is regraded). Screenshots:
    ``admin-filter.png`` (the filtered list), ``admin-confirm.png``, ``admin-rejudge.png``."""
    root = server.add_user("root", admin=True)
    alice, bob = server.add_user("alice", display_name="Alice Zhang"), server.add_user("bob", display_name="Bob Li")
    ids = {name: api_submit(server, token, path) for name, token, path in
           (("alice", alice, VADD_ONLY), ("bob", bob, ROOT / "tests" / "grader" / "web" / "fixtures" / "nothing.py"))}
    for name, token in (("alice", alice), ("bob", bob)):
        wait_until(lambda t=token, n=name: api_status(server, t, ids[n])["status"] == "done", 300, f"{name}'s grading")

    page = log_in(browser, server, root)
    page.goto(f"{server.url}/admin")
    expect(page.locator("#all-submissions tbody tr")).to_have_count(2)
    page.select_option("#f-verdict", "CE")
    page.select_option("#f-task", "1")
    page.click("#filter button[type=submit]")
    page.wait_for_url("**/admin?*verdict=CE*")
    rows = page.locator("#all-submissions tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", str(ids["bob"]))
    expect(rows.first.locator("td").nth(1)).to_have_text("bob (Bob Li)")
    expect(page.locator("#listing-summary")).to_contain_text("1 match (submissions with a point judged CE in task 1)")
    page.locator("#submissions").screenshot(path=str(ARTIFACTS / "admin-filter.png"))

    page.click("#rejudge-filtered button")
    expect(page.locator("h1")).to_have_text("Rejudge 1 submission(s)?")
    expect(page.locator("#not-yet")).to_have_text("Nothing has been changed yet: this needs your confirmation.")
    expect(page.locator("#confirm-list tbody tr")).to_have_count(1)
    page.screenshot(path=str(ARTIFACTS / "admin-confirm.png"), full_page=True)
    with server.deployment.service.session() as session:
        assert db.get_submission(session, ids["bob"])["generation"] == 0  # not rejudged yet

    page.click("#confirm-form button")
    page.wait_for_url(f"{server.url}/admin/rejudges/1")
    expect(page.locator("#rejudge")).to_have_attribute("data-finished", "yes", timeout=120_000)
    expect(page.locator("#rejudge-progress")).to_contain_text("1 of 1 regraded · 0 totals changed")
    cells = page.locator("#comparison tbody tr").first.locator("td")
    expect(cells.nth(3)).to_have_text("0.00")
    expect(cells.nth(4)).to_have_text("0.00")
    page.screenshot(path=str(ARTIFACTS / "admin-rejudge.png"), full_page=True)


def test_an_organiser_adds_a_user_and_resets_its_token_in_the_browser(server, browser):
    """An organiser adds a user on /admin/users (the token shown once, with the warning to copy it, and it
    works), asks for a new token (the confirmation changes nothing), confirms (the old token is refused,
    the new one works), and sends the rules form a bad limit (shown again with the reason). Then the
    contestant sees their own pending submissions on the frozen board. Screenshots: ``admin-users.png``,
    ``admin-user-token.png``, ``admin-user-reset-confirm.png``, ``admin-contest-error.png``,
    ``board-own-pending.png``."""
    from datetime import UTC, datetime, timedelta

    from grader.service import contest
    from test_pages_admin_users import api_status, insert_submission

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    root = server.add_user("root", admin=True)
    server.add_user("alice", display_name="Alice Zhang")
    page = log_in(browser, server, root)
    page.goto(f"{server.url}/admin/users")
    page.fill("#add-name", "zoe")
    page.fill("#add-display", "Zoe Quinn")
    page.screenshot(path=str(ARTIFACTS / "admin-users.png"), full_page=True)
    page.click("#add-user button[type=submit]")
    expect(page.locator("h1")).to_have_text("User zoe added")
    expect(page.locator("#copy-warning")).to_contain_text("Copy this token now.")
    first = page.locator('#new-tokens tr[data-user="zoe"] code.token').inner_text()
    assert api_status(server, first) == 200
    page.screenshot(path=str(ARTIFACTS / "admin-user-token.png"), full_page=True)

    page.click("#back-to-users")
    row = page.locator('#users tr[data-user="zoe"]')
    expect(row.locator("td").nth(1)).to_have_text("Zoe Quinn")
    row.locator("form[action='/admin/users/reset-token'] button").click()
    expect(page.locator("h1")).to_have_text("Give zoe a new token?")
    page.screenshot(path=str(ARTIFACTS / "admin-user-reset-confirm.png"), full_page=True)
    assert api_status(server, first) == 200  # nothing changed yet
    page.click("#confirm-form button")
    expect(page.locator("h1")).to_have_text("New token of zoe")
    second = page.locator('#new-tokens tr[data-user="zoe"] code.token').inner_text()
    assert second != first and api_status(server, first) == 401 and api_status(server, second) == 200

    page.goto(f"{server.url}/admin/contest")
    page.fill("#rule-max_per_hour", "0")
    page.click("#contest-rules button[type=submit]")
    expect(page.locator("#form-error")).to_have_text("Nothing was saved (Submissions per user in any hour: see below).")
    expect(page.locator("#error-max_per_hour")).to_contain_text("--max-per-hour must be between 1 and 1000000")
    expect(page.locator("#rule-max_per_hour")).to_have_value("0")
    page.screenshot(path=str(ARTIFACTS / "admin-contest-error.png"), full_page=True)
    assert contest.get_rules(server.deployment.service).max_per_hour is None

    freeze = datetime.now(UTC) - timedelta(minutes=30)
    insert_submission(server, "alice", freeze - timedelta(minutes=5), total=41.5)
    insert_submission(server, "zoe", freeze - timedelta(minutes=3), total=63.25)
    insert_submission(server, "zoe", freeze + timedelta(minutes=2), total=80.0)
    contest.set_rules(server.deployment.service, freeze_at=freeze)
    zoe = log_in(browser, server, second)
    zoe.goto(f"{server.url}/")
    expect(zoe.locator('#scoreboard tr[data-user="zoe"] .pending')).to_have_text("+1 pending")
    expect(zoe.locator('#scoreboard tr[data-user="alice"] .pending')).to_have_count(0)
    zoe.screenshot(path=str(ARTIFACTS / "board-own-pending.png"), full_page=True)
