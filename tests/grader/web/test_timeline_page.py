"""The timeline on a submission's page, over one real ``kdt-grade serve`` shared by the module (one graded
submission, ``fixtures/timeline_mix.py``: task 1 on 1 SM, task 2 on 32 SMs, task 3 a compile error on
line 46): the "picture" link opens its section (rendered open for ``?open=T-P``, without JavaScript), the
threshold is marked or said, the 32 SMs' placement is a compact grid, the source lines the picture and
the messages name link to the listing's ``#L-N``. Then in Chromium (as ``test_browser.py``): the link
opens the section, a bar's link highlights its line in the listing, the compile error's link too, and at
390 px the picture scrolls sideways with its cue. Screenshots go to ``$KDT_GRADE_TEST_ARTIFACTS/browser``."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from grader.web.pages import timeline
from pages_testlib import module_server, wait_done
from test_browser import ARTIFACTS, chromium, expect, log_in
from weblib import FIXTURES

MIX = FIXTURES / "timeline_mix.py"
SVG = "{http://www.w3.org/2000/svg}"
CE_LINE = 46  # the fixture's `for i in range(0, 4, 2):`
PHONE = {"width": 390, "height": 844}
pytestmark = pytest.mark.xdist_group("timeline-page")  # one worker, so one start of the module's server


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(pages, token, submission id, its status document) of the fixture, graded once for the module."""
    with module_server(tmp_path_factory, "timeline-page") as pages:
        token = pages.add_user("tina")
        client = pages.client(token)
        with MIX.open("rb") as f:
            response = client.post("/api/v1/submissions", headers={"Authorization": f"Bearer {token}"},
                                   files={"file": (MIX.name, f)})
        assert response.status_code == 202, response.text
        submission = response.json()["id"]
        doc = wait_done(client, submission)
        assert doc["status"] == "done"
        yield pages, token, submission, doc


def point(doc: dict, task: int, index: int) -> dict:
    return next(p for p in doc["points"] if (p["task"], p["point"]) == (task, index))


def details_tag(html: str, task: int, index: int) -> str:
    return re.search(rf'<details class="timeline-item" id="tl-{task}-{index}"[^>]*>', html).group(0)


def svg_of(graded, task: int, index: int):
    pages, token, submission, _ = graded
    response = pages.client(token).get(f"/submissions/{submission}/points/{task}/{index}/timeline.svg")
    assert response.status_code == 200
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    return ET.fromstring(response.text)


def test_the_picture_link_renders_its_section_open(graded):
    pages, token, submission, doc = graded
    assert point(doc, 2, 0)["picture"] == f"/submissions/{submission}?open=2-0#tl-2-0"
    assert point(doc, 3, 0)["picture"] is None  # a compile error has no picture
    client = pages.client(token)
    plain = client.get(f"/submissions/{submission}").text
    assert f'<a class="tl-link" href="/submissions/{submission}?open=2-0#tl-2-0">picture</a>' in plain
    assert all(" open" not in details_tag(plain, t, i) for t, i in ((1, 0), (1, 1), (2, 0), (2, 1)))
    linked = client.get(f"/submissions/{submission}?open=2-0").text
    assert details_tag(linked, 2, 0).endswith(" open>")
    assert all(" open" not in details_tag(linked, t, i) for t, i in ((1, 0), (1, 1), (2, 1)))
    odd = client.get(f"/submissions/{submission}", params={"open": '"><script>x</script>'})
    assert odd.status_code == 200 and "<script>x" not in odd.text


def said_and_marks(root) -> tuple[str, list[float], list[str]]:
    """The picture's words on the threshold, the x of its marks, their labels."""
    said = next(t.text for t in root.iter(f"{SVG}text") if "tl-threshold-text" in t.get("class", ""))
    marks = [line for line in root.iter(f"{SVG}line") if line.get("class") == "tl-threshold"]
    assert all(line.get("x1") == line.get("x2") for line in marks)
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "tl-threshold-label"]
    return said, [float(line.get("x1")) for line in marks], labels


def test_the_threshold_is_marked_on_the_lanes_and_the_launch_and_said_in_words(graded):
    """Task 2 point 0: 31,491 cycles against a threshold of 23,272 (1.35x); its 32 jobs run the whole
    launch, one per SM, so job 0's lanes show the launch from cycle 0 and both axes mark the threshold."""
    root = svg_of(graded, 2, 0)
    assert root.get("data-threshold") == "23272"
    said, xs, labels = said_and_marks(root)
    assert said == "threshold for 100: 23,272 cycles; this launch's 31,491 is 1.35x it, 8,219 to go"
    assert point(graded[3], 2, 0)["threshold_note"] == said  # also above the picture, where a phone shows it
    lanes = round(timeline.X0 + 23272 * float(root.get("data-scale")), 2)
    launch = round(timeline.X0 + 23272 * timeline.PLOT_WIDTH / 31491, 2)
    assert xs == [lanes, launch] and labels == ["for 100"] * 2  # the number is said once, in the top line
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert sum("23,272" in t for t in texts) == 1 and sum("threshold" in t for t in texts) == 1
    hovers = [m.find(f"{SVG}title").text for m in root.iter(f"{SVG}line") if m.get("class") == "tl-threshold"]
    assert hovers == ["threshold for 100: 23,272 cycles"] * 2
    # the cycle axis's numbers with thousands separators
    ticks = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "tl-small" and t.get("text-anchor") == "middle"]
    assert ticks == ["0", "5,000", "10,000", "15,000", "20,000", "25,000", "30,000"]


def test_a_threshold_beyond_the_jobs_lanes_is_marked_on_the_launch_only(graded):
    """Task 1 point 1: 256 jobs one after another on 1 SM, 34,304 cycles, threshold 11,000: beyond job
    0's own 134 cycles (the lanes), inside the launch (the placement)."""
    root = svg_of(graded, 1, 1)
    said, xs, labels = said_and_marks(root)
    assert int(root.get("data-span")) < 11000
    assert said == "threshold for 100: 11,000 cycles; this launch's 34,304 is 3.12x it, 23,304 to go"
    assert xs == [round(timeline.X0 + 11000 * timeline.PLOT_WIDTH / 34304, 2)] and len(labels) == 1


def test_a_threshold_beyond_the_launch_is_said_not_drawn(graded):
    """Task 1 point 0: 536 cycles, threshold 1,919,810."""
    root = svg_of(graded, 1, 0)
    said, xs, labels = said_and_marks(root)
    assert said == "threshold for 100: 1,919,810 cycles; this launch's 536 is within it (scores 100)"
    assert xs == [] and labels == []


def test_32_sms_are_compact_rows_one_per_sm(graded):
    """Task 2 point 0: 32 jobs of 128x128 tiles on 32 SMs, one job each; one compact row per SM under the
    busy strip, every 8th labelled, each row's hover band saying its SM and jobs."""
    root = svg_of(graded, 2, 0)
    bands = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "tl-sm-row"]
    assert [int(b.get("data-sm")) for b in bands] == list(range(32))
    assert [b.get("data-jobs") for b in bands] == ["1"] * 32
    tops = [float(b.get("y")) for b in bands]
    assert [round(t - tops[0], 2) for t in tops] == [round(sm * timeline.SM_ROW, 2) for sm in range(32)]
    assert bands[0].find(f"{SVG}title").text == "SM 0: 1 job (0), busy 31,491 of 31,491 cycles (100.0%)"
    jobs = [r for r in root.iter(f"{SVG}rect") if r.get("class", "").startswith("tl-job")]
    assert len(jobs) == 32 + 1 and [r.get("class") for r in jobs].count("tl-job tl-job0") == 2  # + the strip's
    assert [t.text for t in root.iter(f"{SVG}text") if (t.text or "").startswith("SM ")] == [
        "SM 0", "SM 8", "SM 16", "SM 24"]
    assert root.find(f".//{SVG}path[@class='tl-occ']") is not None
    placement_top = next(float(t.get("y")) for t in root.iter(f"{SVG}text") if (t.text or "").startswith("placement:"))
    assert float(root.get("height")) - placement_top < 32 * timeline.SM_ROW + 80


def test_a_zoomed_picture_is_wider_with_the_same_geometry(graded):
    pages, token, submission, _ = graded
    client = pages.client(token)
    base = f"/submissions/{submission}/points/2/0/timeline.svg"
    plain, zoomed = ET.fromstring(client.get(base).text), ET.fromstring(client.get(base + "?zoom=4").text)
    assert (int(plain.get("width")), int(zoomed.get("width"))) == (timeline.svg_width(1), timeline.svg_width(4))
    assert zoomed.get("height") == plain.get("height") and zoomed.get("data-zoom") == "4"
    assert float(zoomed.get("data-scale")) == pytest.approx(4 * float(plain.get("data-scale")))
    first = [r for r in zoomed.iter(f"{SVG}rect") if "tl-mxm" in r.get("class", "") and "tl-bar" in r.get("class", "")][0]
    assert float(first.get("x")) == pytest.approx(timeline.X0 + 4 * (float(
        [r for r in plain.iter(f"{SVG}rect") if "tl-mxm" in r.get("class", "") and "tl-bar" in r.get("class", "")][0]
        .get("x")) - timeline.X0), abs=0.05)
    assert client.get(base + "?zoom=3").status_code == 404


def test_the_pictures_source_lines_link_to_the_listing(graded):
    pages, token, submission, _ = graded
    root = svg_of(graded, 2, 0)
    links = list(root.iter(f"{SVG}a"))
    assert links and all(a.get("target") == "_top" for a in links)
    hrefs = {a.get("href") for a in links}
    # the matmul's lines: the loop's loads (32, 33), the matmul (34), the store (35), the allocs and fills
    assert {f"/submissions/{submission}#L-{n}" for n in (32, 33, 34, 35)} <= hrefs
    for a in links:
        line = a.get("href").rsplit("#L-", 1)[1]
        for bar in a.iter(f"{SVG}rect"):
            if "tl-bar" in bar.get("class"):
                assert bar.find(f"{SVG}title").text.split("\n")[0].endswith(f"(line {line})")
    tops = next(t for t in root.iter(f"{SVG}text") if "tl-tops" in t.get("class", ""))
    assert "".join(tops.itertext()).startswith("holds up others most: line ")
    assert tops.find(f"{SVG}a").get("href").startswith(f"/submissions/{submission}#L-")


def test_the_compile_errors_line_links_to_the_marked_listing_line(graded):
    pages, token, submission, doc = graded
    assert point(doc, 3, 0)["message_parts"][:2] == [["UnsupportedFeatureError: ", None], [f"Line {CE_LINE}", CE_LINE]]
    html = pages.client(token).get(f"/submissions/{submission}").text
    row = re.search(r'<tr id="pt-3-0".*?</tr>', html, re.S).group(0)
    assert (f'<pre class="message">UnsupportedFeatureError: <a class="src-line" href="#L-{CE_LINE}">Line {CE_LINE}</a>'
            ', Col 14, range() takes') in row
    assert f'<span id="L-{CE_LINE}"><span class="hll">' in html  # marked in the listing
    assert html.count('class="hll"') == 1


# ---- in the browser ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    """One Chromium for the module's browser tests."""
    with chromium() as launched:
        yield launched


def logged_in(browser, graded, **options):
    """A new browser context logged in as the module's contestant, on the graded submission's page."""
    pages, token, submission, _ = graded
    page = log_in(browser, pages, token, **options)
    page.goto(f"{pages.url}/submissions/{submission}")
    return page, submission


def highlighted(page, line: int) -> bool:
    """The listing's line is the page's :target and its band is drawn."""
    return page.evaluate(f"""() => {{
        const el = document.getElementById("L-{line}");
        return el.matches(":target") && getComputedStyle(el, "::before").content === '""';
    }}""")


@pytest.mark.slow
def test_in_the_browser_the_link_opens_the_picture_and_its_lines_lead_to_the_listing(graded, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page, submission = logged_in(browser, graded)
    item = page.locator("#tl-2-0")
    assert item.get_attribute("open") is None
    page.evaluate("window.__kdtMarker = 'no reload'")
    page.locator('#pt-2-0 [data-f="timeline"] a').click()
    expect(item).to_have_attribute("open", "")
    assert page.evaluate("location.hash") == "#tl-2-0" and page.evaluate("window.__kdtMarker") == "no reload"
    frame = page.frame_locator("#tl-2-0 iframe")
    expect(frame.locator("line.tl-threshold")).to_have_count(2)
    expect(frame.locator("rect.tl-sm-row")).to_have_count(32)
    item.scroll_into_view_if_needed()
    page.locator("#tl-2-0 iframe").screenshot(path=str(ARTIFACTS / "timeline-32-sms.png"))

    # clicked again after closing it: open again (the fragment did not change)
    item.locator("summary").click()
    expect(item).not_to_have_attribute("open", "")
    page.locator('#pt-2-0 [data-f="timeline"] a').click()
    expect(item).to_have_attribute("open", "")

    # a matmul bar (line 34) goes to its line in the listing, highlighted, without a reload
    frame.locator('a[href$="#L-34"] rect.tl-mxm').first.click()
    page.wait_for_function("location.hash === '#L-34'")
    assert page.evaluate("window.__kdtMarker") == "no reload" and highlighted(page, 34)
    page.locator(".source-box").screenshot(path=str(ARTIFACTS / "timeline-source-line.png"))

    # the compile error's "Line 46" too
    page.locator(f'#pt-3-0 a.src-line[href="#L-{CE_LINE}"]').click()
    page.wait_for_function(f"location.hash === '#L-{CE_LINE}'")
    assert highlighted(page, CE_LINE) and not highlighted(page, 34)
    page.screenshot(path=str(ARTIFACTS / "timeline-compile-error-line.png"))


@pytest.mark.slow
def test_without_javascript_the_link_opens_the_picture(graded, browser):
    page, submission = logged_in(browser, graded, java_script_enabled=False)
    page.locator('#pt-1-1 [data-f="timeline"] a').click()
    page.wait_for_url(f"{graded[0].url}/submissions/{submission}?open=1-1#tl-1-1")
    expect(page.locator("#tl-1-1")).to_have_attribute("open", "")
    expect(page.locator("#tl-1-1 iframe")).to_be_visible()


@pytest.mark.slow
def test_on_a_phone_the_picture_scrolls_sideways_with_its_cue(graded, browser):
    page, submission = logged_in(browser, graded, **PHONE)
    page.locator('#pt-2-0 [data-f="timeline"] a').click()
    item = page.locator("#tl-2-0")
    expect(item).to_have_attribute("open", "")
    box, frame = item.locator(".tl-scroll"), item.locator("iframe")
    expect(frame).to_be_visible()
    assert box.evaluate("b => b.scrollWidth > b.clientWidth")  # it scrolls, it is not cut
    assert frame.bounding_box()["width"] >= timeline.SVG_WIDTH
    assert box.bounding_box()["x"] >= 0 and box.bounding_box()["x"] + box.bounding_box()["width"] <= PHONE["width"] + 0.5
    expect(item.locator(".scroll-cue")).to_be_visible()
    note = item.locator(".tl-note")
    expect(note).to_have_text("threshold for 100: 23,272 cycles; this launch's 31,491 is 1.35x it, 8,219 to go")
    assert note.bounding_box()["x"] + note.bounding_box()["width"] <= PHONE["width"]  # wrapped on screen
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    item.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "phone-timeline-32-sms.png"))
    box.evaluate("b => { b.scrollLeft = b.scrollWidth; }")
    page.screenshot(path=str(ARTIFACTS / "phone-timeline-32-sms-scrolled.png"))
