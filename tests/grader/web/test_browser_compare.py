"""Two submissions compared and the timeline, in Chromium at 1280 and 390 px, over one ``kdt-grade serve``
and one browser shared by the module: a contestant's ``quick_vadd.py`` (task 1 only) then
``fixtures/timeline_mix.py`` (task 1 on 1 SM, task 2 on 32 SMs, task 3 a compile error). The submission
page's "what changed since" link leads to the comparison (green "better", red "worse", said in words too;
cards that fit a phone), its picker to the same; the 32-SM timeline has its critical path strip and one
compact row per SM, and zooms in its frame. Screenshots of each view at both widths go to
``$KDT_GRADE_TEST_ARTIFACTS/browser`` (``compare-1280.png``, ..., copied to docs/screenshots)."""
from __future__ import annotations

import pytest

from grader.web.pages import timeline
from pages_testlib import module_server, wait_done
from test_browser import ARTIFACTS, chromium, expect, log_in
from tests.grader.service.service_testlib import ROOT
from weblib import FIXTURES

QUICK = ROOT / "tests" / "grader" / "service" / "fixtures" / "quick_vadd.py"
MIX = FIXTURES / "timeline_mix.py"
WIDTHS = (1280, 390)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser-compare")]  # one worker: one server, one browser


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(pages, token, [the first submission's id, the second's]), both graded once for the module."""
    with module_server(tmp_path_factory, "browser-compare") as pages:
        token = pages.add_user("cara", display_name="Cara")
        client = pages.client(token)
        ids = []
        for path in (QUICK, MIX):
            with path.open("rb") as f:
                response = client.post("/api/v1/submissions", headers={"Authorization": f"Bearer {token}"},
                                       files={"file": (path.name, f)})
            assert response.status_code == 202, response.text
            ids.append(response.json()["id"])
        for submission in ids:
            assert wait_done(client, submission)["status"] == "done"
        yield pages, token, ids


@pytest.fixture(scope="module")
def browser():
    with chromium() as launched:
        yield launched


def fits(page, width: int) -> bool:
    """Nothing of the page sticks out sideways (it does not scroll horizontally)."""
    return page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("width", WIDTHS)
def test_the_submission_page_leads_to_the_comparison_with_the_previous_one(graded, browser, width):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pages, token, (first, second) = graded
    page = log_in(browser, pages, token, width=width)
    page.goto(f"{pages.url}/submissions/{second}")
    link = page.locator("#compare-default")
    expect(link).to_have_text(f"What changed since #{first} (the previous one)")
    assert page.locator("#compare-with option:checked").get_attribute("value") == str(first)
    assert fits(page, width)
    page.locator("#compare-picker").screenshot(path=str(ARTIFACTS / f"submission-compare-picker-{width}.png"))
    link.click()
    page.wait_for_url(f"{pages.url}/submissions/{first}/compare/{second}")

    # task 1 is the same kernel (point 0: same cycles and score), task 2 went from CE to AC: better
    better = page.locator("#cmp-2-0")
    assert better.get_attribute("data-change") == "better"
    expect(better.locator('[data-f="mark"]')).to_have_text("\u25b2 better")
    if width == 390:  # a card: heading with the mark, the verdicts, cycles and score with their changes
        expect(better.locator(".ph-head")).to_have_text("Task 2, point 0 \u25b2 better")
        assert better.locator('[data-f="cycles_a"]').is_hidden() and better.locator(".ph-head").is_visible()
        assert better.locator(".ph-head .mark").evaluate("e => getComputedStyle(e).color") == "rgb(23, 105, 47)"
    else:
        assert better.locator('[data-f="mark"]').evaluate("e => getComputedStyle(e).color") == "rgb(23, 105, 47)"
    score = better.locator('[data-f="score_change"]')
    assert score.get_attribute("class") == "num delta up" and score.inner_text().startswith("+")
    same = page.locator("#cmp-1-0")
    assert same.get_attribute("data-change") == "same"
    expect(page.locator("#cmp-total .delta")).to_contain_text("better")
    assert fits(page, width)
    page.screenshot(path=str(ARTIFACTS / f"compare-{width}.png"), full_page=True)

    # swapped: the same points are worse, in red and in words
    page.click("#swap")
    page.wait_for_url(f"{pages.url}/submissions/{second}/compare/{first}")
    worse = page.locator("#cmp-2-0")
    assert worse.get_attribute("data-change") == "worse"
    expect(worse.locator('[data-f="mark"]')).to_have_text("\u25bc worse")
    assert worse.locator('[data-f="score_change"]').get_attribute("class") == "num delta down"
    page.screenshot(path=str(ARTIFACTS / f"compare-worse-{width}.png"), full_page=True)
    page.context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_32_sm_timeline_shows_its_critical_path_and_rows_and_zooms(graded, browser, width):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pages, token, (_, second) = graded
    page = log_in(browser, pages, token, width=width)
    page.goto(f"{pages.url}/submissions/{second}?open=2-0#tl-2-0")
    item = page.locator("#tl-2-0")
    expect(item).to_have_attribute("open", "")
    frame = page.frame_locator("#tl-2-0 iframe")
    expect(frame.locator("rect.tl-sm-row")).to_have_count(32)
    assert frame.locator("rect.tl-path").count() >= 2
    expect(frame.locator("svg")).to_have_attribute("data-zoom", "1")
    item.scroll_into_view_if_needed()
    assert fits(page, width)
    item.screenshot(path=str(ARTIFACTS / f"timeline-{width}.png"))

    item.locator('a.tl-zoom[data-zoom="4"]').click()
    expect(frame.locator("svg")).to_have_attribute("data-zoom", "4")
    expect(item.locator('a.tl-zoom[data-zoom="4"]')).to_have_attribute("aria-current", "true")
    assert item.locator("iframe").bounding_box()["width"] >= timeline.svg_width(4)
    box = item.locator(".tl-scroll")
    assert box.evaluate("b => b.scrollWidth > b.clientWidth")  # the frame scrolls sideways, the page does not
    assert fits(page, width)
    box.evaluate("b => { b.scrollLeft = b.scrollWidth * 0.3; }")
    item.screenshot(path=str(ARTIFACTS / f"timeline-zoom-{width}.png"))
    page.context.close()


def test_on_a_phone_rules_and_my_submissions_are_one_tap_away(graded, browser):
    """At 390 x 844, on a submission's page scrolled down: the header's Rules and My submissions links are
    on the first screen at the top (no menu to open) and each leads to its page in one tap."""
    pages, token, (_, second) = graded
    page = log_in(browser, pages, token, width=390, height=844)
    page.goto(f"{pages.url}/submissions/{second}")
    for name, path in (("Rules", "/rules"), ("My submissions", "/submissions")):
        link = page.locator("header.top nav a", has_text=name)
        box = link.bounding_box()
        assert link.is_visible() and box["x"] >= 0 and box["x"] + box["width"] <= 390 and box["y"] + box["height"] <= 200
        assert box["height"] >= 20  # a finger's target, not a sliver
        link.click()
        page.wait_for_url(f"{pages.url}{path}")
        page.go_back()
    page.locator("header.top").screenshot(path=str(ARTIFACTS / "header-390.png"))
    page.context.close()
