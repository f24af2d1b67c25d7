"""The plots in a real browser (Debian's Chromium under Playwright) at 1280 px and at a 390 px phone, over one
``kdt-grade serve`` and one browser for the whole module: the numbers each SVG draws (its ``data-*``
attributes) equal the JSON API's, the drawing follows them (a higher value is drawn higher), the picture
fits the screen, and a screenshot of each goes to ``$KDT_GRADE_TEST_ARTIFACTS/browser/<view>-<width>.png``
(``docs/screenshots/`` with ``KDT_GRADE_UPDATE_SCREENSHOTS=1``: a test run leaves the repository as it was).

The data: one real submission (``quick_vadd.py``: task 1 accepted, tasks 2-4 CE) graded by the server, and
rows written straight to the database for the long series (a dozen contestants' scored submissions over the
last three hours, one contestant's graded points over the last hour), at times relative to now."""
from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

import db
from db.submissions import Submission
from grader.judging.pipeline import ALL_POINTS
from grader.service import contest
from pages_testlib import ROOT, module_server, wait_until
from test_browser import ARTIFACTS, chromium

SCREENSHOTS = ROOT / "docs" / "screenshots" if os.environ.get("KDT_GRADE_UPDATE_SCREENSHOTS") == "1" else ARTIFACTS
QUICK_VADD = ROOT / "tests" / "grader" / "service" / "fixtures" / "quick_vadd.py"
WIDTHS = {1280: {"width": 1280, "height": 900}, 390: {"width": 390, "height": 844}}
VERDICT_CYCLE = ("AC", "AC", "AC", "WA", "AC", "TLE", "AC", "CE", "AC", "RE")

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser-plots")]  # one worker: one server, one browser


@pytest.fixture(scope="module")
def contest_site(tmp_path_factory):
    """The server with its data (module docstring): ``(pages, tokens by user, alice's submission id)``."""
    with module_server(tmp_path_factory, "plots") as pages:
        service = pages.deployment.service
        now = datetime.now(UTC)
        contest.set_rules(service, name="Plots cup", starts_at=now - timedelta(hours=3), ends_at=now + timedelta(hours=2))
        tokens = {"root": pages.add_user("root", admin=True), "alice": pages.add_user("alice", display_name="Alice A."),
                  "bob": pages.add_user("bob", display_name="Bob <B>")}
        api = httpx.Client(base_url=f"{pages.url}/api/v1", headers={"Authorization": f"Bearer {tokens['alice']}"},
                           timeout=30)
        with QUICK_VADD.open("rb") as f:
            submitted = api.post("/submissions", files={"file": (QUICK_VADD.name, f)})
        assert submitted.status_code == 202, submitted.text
        alice = submitted.json()["id"]
        _store_history(service, now)
        wait_until(lambda: api.get(f"/submissions/{alice}").json()["status"] == "done", 300, "alice's submission")
        yield pages, tokens, alice


def _store_history(service, now: datetime) -> None:
    """Scored submissions of eleven contestants over the last three hours, and bob's over the last hour
    with every point graded a few minutes after each (verdicts from ``VERDICT_CYCLE``)."""
    with service.session() as session:
        for k in range(11):
            user_id = db.get_or_create_user(session, f"c{k:02d}")["id"]
            for j in range(3):
                created = now - timedelta(minutes=170 - 15 * k - 40 * j)
                sid = db.create_submission(session, user_id, "k.py", f"{k:02d}{j:02d}" * 16, "x = 1\n",
                                           created=created)["id"]
                row = session.get(Submission, sid)
                row.task1, row.task2, row.task3, row.task4 = 10.0, 1.8 * k + j, 1.5 * j, 0.0
                row.total = 10.0 + (1.8 * k + j) + 1.5 * j
        bob = db.get_or_create_user(session, "bob")["id"]
        for j in range(6):
            created = now - timedelta(minutes=55 - 9 * j)
            sid = db.create_submission(session, bob, "b.py", f"b{j:03d}" * 16, "x = 2\n", created=created)["id"]
            for n, (task, point) in enumerate(ALL_POINTS):
                verdict = VERDICT_CYCLE[(n + j) % len(VERDICT_CYCLE)]
                db.record_result(session, sid, task, point, verdict, 5000 + 100 * n if verdict != "CE" else None,
                                 60.0 if verdict == "AC" else 0.0, "", "w1",
                                 started_at=created + timedelta(minutes=1),
                                 finished_at=created + timedelta(minutes=1, seconds=20 * n))
            row = session.get(Submission, sid)
            row.task1, row.task2, row.task3, row.task4 = 6.0, 4.0 * j, 3.0 * j, 2.0 * j if j > 3 else None
            row.total = 6.0 + 4.0 * j + 3.0 * j + (2.0 * j if j > 3 else 0.0)


@pytest.fixture(scope="module")
def browser():
    with chromium() as launched:
        yield launched


def _page(browser, site, width: int, user: str | None):
    """A new page at ``width`` (logged in as ``user`` when given)."""
    pages, tokens, _ = site
    page = browser.new_context(viewport=WIDTHS[width]).new_page()
    if user:
        page.goto(f"{pages.url}/login")
        page.fill("#token", tokens[user])
        page.click("main button[type=submit]")
        page.wait_for_url(f"{pages.url}/submissions")
    return page


def _api(site, user: str | None, path: str) -> dict:
    pages, tokens, _ = site
    headers = {"Authorization": f"Bearer {tokens[user]}"} if user else {}
    response = httpx.get(f"{pages.url}/api/v1{path}", headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def _drawn(page, selector: str, names: tuple) -> list[dict]:
    """The ``data-*`` attributes ``names`` and the centre ``y`` (SVG units) of each element ``selector``."""
    return page.eval_on_selector_all(selector, """(els, names) => els.map(e => {
        const out = {}; for (const n of names) out[n] = e.getAttribute('data-' + n);
        const box = e.getBBox(); out.y = box.y + box.height / 2; out.top = box.y; return out; })""", list(names))


def _number(text: str):
    return None if text in ("", None) else (float(text) if any(c in text for c in ".e") else int(text))


def _higher_is_drawn_higher(pairs: list[tuple[float, float]]) -> None:
    """(value, y) pairs: a larger value has a smaller y (SVG's y grows downwards)."""
    for (v1, y1) in pairs:
        for (v2, y2) in pairs:
            if v1 > v2:
                assert y1 < y2, (v1, y1, v2, y2)


def _fits(page, width: int, figure: str) -> None:
    """The page does not scroll sideways and the figure is within the screen."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    box = page.locator(figure).bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, box


def _csv_fits_and_shoot(page, csv_url: str, header: str, rows: int, figure: str, shot: str, view: str,
                        width: int) -> None:
    """The CSV at ``csv_url`` (with the page's session) has ``header`` and ``rows`` lines below it; the figure
    fits the screen; the element ``shot`` goes to ``SCREENSHOTS/VIEW-WIDTH.png``; the page is closed."""
    lines = page.request.get(csv_url).text().splitlines()
    assert lines[0] == header and len(lines) == 1 + rows, lines[:3]
    _fits(page, width, figure)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(shot).screenshot(path=str(SCREENSHOTS / f"{view}-{width}.png"))
    page.context.close()


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_the_submission_page_draws_each_points_cycles_against_its_threshold(contest_site, browser, width):
    pages, _, alice = contest_site
    page = _page(browser, contest_site, width, "alice")
    page.goto(f"{pages.url}/submissions/{alice}")
    points = _api(contest_site, "alice", f"/submissions/{alice}")["points"]
    names = ("task", "point", "verdict", "cycles", "for-100", "for-plus-10")
    drawn = _drawn(page, "#plot-cycles g.pl-point", names)
    assert [{n: _number(d[n]) if n != "verdict" else d[n] or None for n in names} for d in drawn] == [
        {"task": p["task"], "point": p["point"], "verdict": p["verdict"], "cycles": p["cycles"],
         "for-100": p["cycles_for_100"], "for-plus-10": p["cycles_for_plus_10"]} for p in points]
    assert {p["verdict"] for p in points} == {"AC", "CE"} and any(p["cycles"] for p in points)
    dots = _drawn(page, "#plot-cycles circle.pl-dot", ())
    thresholds = _drawn(page, "#plot-cycles line.pl-thr", ())
    assert len(dots) == sum(p["cycles"] is not None for p in points) and len(thresholds) == len(points)
    _higher_is_drawn_higher([(p["cycles_for_100"], t["y"]) for p, t in zip(points, thresholds)])
    assert page.locator("#plot-cycles > title").text_content() == "Cycles against the thresholds"
    _csv_fits_and_shoot(page, f"{pages.url}/submissions/{alice}/cycles.csv",
                        "task,point,state,verdict,cycles,score,cycles_for_100,cycles_for_plus_10", len(points),
                        "#fig-cycles", "#fig-cycles", "submission-cycles", width)


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_my_submissions_draws_my_scores_over_time(contest_site, browser, width):
    pages = contest_site[0]
    page = _page(browser, contest_site, width, "bob")
    mine = _api(contest_site, "bob", "/progress")["submissions"]
    assert len(mine) == 6
    drawn = _drawn(page, "#plot-own g.pl-sub", ("submission", "at", "total", "best"))
    assert [(int(d["submission"]), d["at"], float(d["total"]), float(d["best"])) for d in drawn] == [
        (s["submission_id"], s["created"], s["total"], s["best"]) for s in mine]
    bars = _drawn(page, "#plot-own rect.pl-task", ("task", "score"))
    assert sorted((int(b["task"]), float(b["score"])) for b in bars) == sorted(
        (t, s[f"task{t}"]) for s in mine for t in (1, 2, 3, 4) if s[f"task{t}"])
    tops = page.eval_on_selector_all("#plot-own g.pl-sub", "gs => gs.map(g => g.getBBox().y)")
    _higher_is_drawn_higher(list(zip([s["total"] for s in mine], tops)))
    assert page.locator("#own-table tbody tr").count() == len(mine)
    _csv_fits_and_shoot(page, f"{pages.url}/submissions/progress.csv", "submission_id,created,task1,task2,task3,task4,total,best",
                        len(mine), "#fig-own", "section#progress", "my-scores", width)


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_the_scoreboard_draws_the_top_ten_over_contest_time(contest_site, browser, width):
    pages = contest_site[0]
    page = _page(browser, contest_site, width, None)
    page.goto(f"{pages.url}/")
    doc = _api(contest_site, None, "/leaderboard/progress")
    board = _api(contest_site, None, "/leaderboard")["rows"]
    assert [u["user_name"] for u in doc["users"]] == [r["user_name"] for r in board[:10]]
    users = page.eval_on_selector_all("#plot-scoreboard g.pl-user", """gs => gs.map(g => ({
        user: g.dataset.user, rank: +g.dataset.rank, total: +g.dataset.total,
        steps: [...g.querySelectorAll('circle.pl-step')].map(c => ({at: c.dataset.at, total: +c.dataset.total,
            submission_id: +c.dataset.submission, y: +c.getAttribute('cy')}))}))""")
    assert [(u["user"], u["rank"], u["total"]) for u in users] == [
        (u["user_name"], u["rank"], u["total"]) for u in doc["users"]]
    assert [[{k: s[k] for k in ("at", "total", "submission_id")} for s in u["steps"]] for u in users] == [
        u["steps"] for u in doc["users"]]
    _higher_is_drawn_higher([(s["total"], s["y"]) for u in users for s in u["steps"]])
    assert page.locator("#progress-table tbody tr").count() == len(doc["users"])
    _csv_fits_and_shoot(page, f"{pages.url}/scoreboard/progress.csv", "rank,user_name,at,submission_id,total",
                        sum(len(u["steps"]) for u in doc["users"]), "#fig-scoreboard", "section#progress",
                        "scoreboard-progress", width)


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_the_admin_page_draws_the_last_hours_queue_rate_and_verdicts(contest_site, browser, width):
    pages = contest_site[0]
    page = _page(browser, contest_site, width, "root")

    def load() -> dict | None:
        before = _api(contest_site, "root", "/admin/activity")
        page.goto(f"{pages.url}/admin")
        after = _api(contest_site, "root", "/admin/activity")
        return after if after == before else None  # not across a minute's turn
    doc = wait_until(load, 60, "the same minutes on the page and the API", interval=0.5)
    queue = _drawn(page, "#plot-queue circle.pl-q", ("end", "queue"))
    assert [(q["end"], int(q["queue"])) for q in queue] == [(m["end"], m["queue"]) for m in doc["minutes"]]
    assert max(m["queue"] for m in doc["minutes"]) > 0
    _higher_is_drawn_higher(list({int(q["queue"]): q["y"] for q in queue}.items()))
    bars = _drawn(page, "#plot-graded rect.pl-v", ("start", "verdict", "count"))
    assert sorted((b["start"], b["verdict"], int(b["count"])) for b in bars) == sorted(
        (m["start"], v, n) for m in doc["minutes"] for v, n in m["verdicts"].items() if n)
    assert doc["graded"] >= 60 and sum(int(b["count"]) for b in bars) == doc["graded"]
    summary = page.locator("#activity-summary").inner_text()
    assert summary.startswith(f"{doc['graded']} points graded")
    for verdict, count in doc["verdicts"].items():
        if count:
            assert f"{verdict} {count} (" in summary
    _csv_fits_and_shoot(page, f"{pages.url}/admin/activity.csv", "start,end,queue,graded," + ",".join(doc["verdicts"]), 60,
                        "#fig-graded", "#last-hour", "admin-activity", width)


def test_the_series_endpoints_answer_each_audience_as_its_page_does(contest_site):
    """No browser: who gets what (401 without a token, 403 for a contestant on the organisers' series, 404 for
    another's submission, a page's CSV only with its session), the CSV headers and rows."""
    pages, tokens, alice = contest_site
    url = pages.url

    def api(path: str, user: str | None = None, token: str | None = None) -> httpx.Response:
        token = token or (tokens[user] if user else None)
        return httpx.get(f"{url}/api/v1{path}", headers={"Authorization": f"Bearer {token}"} if token else {},
                         timeout=30)

    assert api("/leaderboard/progress").status_code == 200
    assert [api("/progress", token=t).status_code for t in (None, "k" * 43)] == [401, 401]
    bobs = api("/progress", "bob").json()
    assert bobs["user"] == "bob" and len(bobs["submissions"]) == 6
    assert alice not in [s["submission_id"] for s in bobs["submissions"]]  # only one's own
    assert [s["submission_id"] for s in api("/progress", "alice").json()["submissions"]] == [alice]
    assert [api("/admin/activity", u).status_code for u in (None, "alice", "root")] == [401, 403, 200]
    assert api(f"/submissions/{alice}", "bob").status_code == 404

    anonymous, bob, root = pages.client(), pages.client(tokens["bob"]), pages.client(tokens["root"])
    shown = anonymous.get("/scoreboard/progress.csv")
    assert shown.status_code == 200 and shown.headers["content-type"] == "text/csv; charset=utf-8"
    assert 'filename="scoreboard-progress-' in shown.headers["content-disposition"]
    top = api("/leaderboard/progress").json()["users"][0]
    first = top["steps"][0]
    assert shown.text.splitlines()[1] == f"1,{top['user_name']},{first['at']},{first['submission_id']},{first['total']}"
    cli = pages.cli("leaderboard", "--progress", "--csv")  # the command says the same
    assert cli == shown.text
    table = pages.cli("leaderboard", "--progress")
    assert "The top 10 over time" in table and f"{first['at'][11:16]}: {first['total']:.2f}" in table
    for path in ("/submissions/progress.csv", f"/submissions/{alice}/cycles.csv", "/admin/activity.csv"):
        assert anonymous.get(path).status_code == 303  # to the login page
    assert bob.get(f"/submissions/{alice}/cycles.csv").status_code == 404
    assert bob.get("/submissions/999999/cycles.csv").status_code == 404
    assert bob.get("/admin/activity.csv").status_code == 403
    mine = bob.get("/submissions/progress.csv").text.splitlines()
    assert mine[0] == "submission_id,created,task1,task2,task3,task4,total,best" and len(mine) == 7
    first = bobs["submissions"][0]
    assert mine[1] == f"{first['submission_id']},{first['created']},6.0,0.0,0.0,,6.0,6.0"
    cycles = pages.client(tokens["alice"]).get(f"/submissions/{alice}/cycles.csv").text.splitlines()
    point = api(f"/submissions/{alice}", "alice").json()["points"][0]
    assert cycles[1] == (f"1,0,done,{point['verdict']},{point['cycles']},{point['score']},{point['cycles_for_100']},"
                         f"{point['cycles_for_plus_10'] or ''}")
    assert root.get("/admin/activity.csv").text.splitlines()[0] == "start,end,queue,graded," + ",".join(
        ("AC", "WA", "CE", "RE", "TLE", "MLE", "SV", "IE"))
