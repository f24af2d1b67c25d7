"""The pages in a real browser: Playwright driving Debian's Chromium (/usr/bin/chromium) against a real
``kdt-grade serve``. Log in with a token, upload ``submissions/examples/baseline.py``, watch the per-point
table fill in without a reload, find the timeline SVG with the right number of instruction bars, see the
scoreboard update live in a second browser context, get 404 on another user's page. Screenshots of the
scoreboard, the submission page and a timeline go to ``$KDT_GRADE_TEST_ARTIFACTS/browser`` (default
``test-artifacts/browser`` in the repository)."""
from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from grader import traces
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


@pytest.fixture
def browser():
    require(None if CHROMIUM.exists() else f"Chromium is not installed at {CHROMIUM} (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


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
    page.screenshot(path=str(ARTIFACTS / "submission.png"), full_page=True)

    # the timeline of task 4 point 0: one bar per instruction of job 0, hover text from the trace
    item = page.locator("#tl-4-0")
    item.locator("summary").click()
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
