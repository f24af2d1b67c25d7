"""The live parts of the pages over a real ``kdt-grade serve``, with plain HTTP: the header's contest clock
(its text before the start, while running with a freeze to come or in force, after the end; the server's
times for ``static/live.js``) on every page; the submissions lists' verdicts at a glance, the submission that
counts and their live JSON; the scoreboard's task cells coloured by the share of the task's weight."""
from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from html import unescape

import httpx

from grader.service import contest
from db.submissions import Submission
from grader.service import queries, standings
from grader.web.pages.render import score_band
from judger.verdicts import VERDICTS
from pages_testlib import VADD_ONLY, csrf_of, server, submit_page, wait_done  # noqa: F401 (a fixture)
from weblib import NOTHING


def clock_of(html: str) -> tuple[dict, str]:
    """The header clock's data attributes and its text."""
    found = re.search(r'<div class="clock" id="contest-clock" ([^>]*)>([^<]*)</div>', html)
    assert found, html[:2000]
    return dict(re.findall(r'data-([a-z]+)="([^"]*)"', found.group(1))), unescape(found.group(2))


def ms(moment: datetime) -> str:
    return str(int(moment.timestamp() * 1000))


def test_the_header_clock_before_during_and_after_the_contest(server):
    service = server.deployment.service
    now = datetime.now(UTC).replace(microsecond=0)
    starts = now + timedelta(hours=2)
    contest.set_rules(service, starts_at=starts, ends_at=starts + timedelta(hours=5))
    before = time.time() * 1000
    data, text = clock_of(httpx.get(f"{server.url}/rules", timeout=30).text)
    assert re.fullmatch(r"Starts in 1:59:[0-5]\d", text), text
    assert data["phase"] == "before" and data["starts"] == ms(starts) and data["ends"] == ms(starts + timedelta(hours=5))
    assert before - 2000 <= int(data["now"]) <= time.time() * 1000 + 2000  # the server's time, in ms

    # running, the scheduled freeze to come: both counted down
    contest.set_rules(service, starts_at=now - timedelta(hours=1), ends_at=now + timedelta(days=2, hours=3),
                      freeze_at=now + timedelta(hours=1))
    for path in ("/", "/rules", "/login", "/submissions/99"):  # every page, the error pages too
        response = httpx.get(f"{server.url}{path}", timeout=30, follow_redirects=True)
        data, text = clock_of(response.text)
        assert re.fullmatch(r"Ends in 2 d 0[23]:[0-5]\d:[0-5]\d · freeze in 0:59:[0-5]\d", text), (path, text)
        assert data["phase"] == "running" and data["freeze"] == ms(now + timedelta(hours=1)) and data["frozen"] == "0"
        assert '<script src="/static/live.js" defer></script>' in response.text  # logged in or not
        assert re.search(r'<time id="server-time" datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</time>',
                         response.text)

    # the freeze in force: no countdown to it, "frozen" instead
    contest.set_rules(service, freeze_at=now - timedelta(minutes=5))
    data, text = clock_of(httpx.get(f"{server.url}/", timeout=30).text)
    assert re.fullmatch(r"Ends in 2 d 0[23]:[0-5]\d:[0-5]\d · scoreboard frozen", text), text
    assert data["frozen"] == "1" and data["freeze"] == ""

    # after the end
    contest.set_rules(service, freeze_at=None, ends_at=now - timedelta(minutes=1))
    data, text = clock_of(httpx.get(f"{server.url}/rules", timeout=30).text)
    assert text == "Contest over" and data["phase"] == "over"

    # no contest times at all
    contest.set_rules(service, starts_at=None, ends_at=None)
    data, text = clock_of(httpx.get(f"{server.url}/rules", timeout=30).text)
    assert text == "Running (no end time)" and data["phase"] == "open" and data["starts"] == data["ends"] == ""


def list_rows(html: str, table_id: str) -> dict[int, dict]:
    """The rows of a submissions list by id: the status, the verdicts line and its marks' classes, the
    total, and whether it carries the "counts" mark."""
    table = html.split(f'id="{table_id}"')[1].split("</table>")[0]
    rows = {}
    for sid, row in re.findall(r'<tr data-id="(\d+)">(.*?)</tr>', table, re.S):
        cell = lambda name: re.search(rf'<td[^>]*data-f="{name}"[^>]*>(.*?)</td>', row, re.S).group(1)
        rows[int(sid)] = {"status": re.sub(r"<[^>]+>", "", cell("status")),
                          "verdicts": unescape(re.sub(r"<[^>]+>", "", cell("verdicts"))),
                          "classes": re.findall(r'class="verdict (v-\w+)"', cell("verdicts")),
                          "total": cell("total"), "counts": 'class="counts"' in cell("counts")}
    return rows


def expected_line(state: dict) -> str:
    """The verdicts at a glance of a graded submission, from its status document."""
    found = [p["verdict"] for p in state["points"]]
    return " · ".join(f"{found.count(v)} {v}" for v in VERDICTS if v in found)


def test_the_lists_show_verdicts_at_a_glance_and_the_submission_that_counts(server):
    root, alice, bob = server.add_user("root", admin=True), server.add_user("alice"), server.add_user("bob")
    service = server.deployment.service
    mine = server.client(alice)
    for path in (NOTHING, VADD_ONLY, NOTHING):  # 1: 0 points, 2: the best, 3: 0 points again
        assert submit_page(mine, path).status_code == 303
    assert submit_page(server.client(bob), NOTHING).status_code == 303  # 4
    organiser = server.client(root)
    assert submit_page(organiser, VADD_ONLY).status_code == 303  # 5: an organiser's never counts
    for i in range(1, 6):
        wait_done(organiser, i)
    states = {i: queries.status(service, i) for i in range(1, 6)}

    rows = list_rows(mine.get("/submissions").text, "submissions")
    assert list(rows) == [3, 2, 1]  # hers only, newest first
    for i, row in rows.items():
        assert row["status"] == "done" and row["verdicts"] == expected_line(states[i]), (i, row)
    assert rows[2]["verdicts"].startswith("2 AC · ") and "v-AC" in rows[2]["classes"]
    assert rows[1]["verdicts"] == "10 CE" and rows[1]["classes"] == ["v-CE"]
    best = {r["user_name"]: r["submission_id"] for r in standings.jury_leaderboard(service)["rows"]}
    assert best == {"alice": 2, "bob": 4}
    assert [i for i, row in rows.items() if row["counts"]] == [2] and rows[2]["total"] == f"{states[2]['total']:.2f}"

    live = mine.get("/submissions.json")
    assert live.status_code == 200 and live.headers["cache-control"] == "private, no-cache"
    doc = live.json()
    assert doc["live"] is False and [r["id"] for r in doc["rows"]] == [3, 2, 1]
    assert doc["rows"][1]["verdicts_text"] == rows[2]["verdicts"] and doc["rows"][1]["counts"] is True
    assert doc["rows"][2]["marks"] == [{"text": "10 CE", "cls": "v-CE", "title": "10 point(s): compile error"}]
    assert mine.get("/submissions.json", headers={"If-None-Match": live.headers["etag"]}).status_code == 304
    assert httpx.get(f"{server.url}/submissions.json").status_code == 401

    admin = organiser.get("/admin")
    everyone = list_rows(admin.text, "all-submissions")
    assert list(everyone) == [5, 4, 3, 2, 1]
    assert {i for i, row in everyone.items() if row["counts"]} == {2, 4}  # each contestant's, not the organiser's
    assert everyone[4]["verdicts"] == "10 CE" and everyone[5]["verdicts"] == expected_line(states[5])
    assert 'data-live="0" data-live-url="/admin/submissions.json?page=1"' in admin.text
    filtered = organiser.get("/admin/submissions.json", params={"user": "bob"})
    assert [(r["id"], r["counts"], r["verdicts_text"]) for r in filtered.json()["rows"]] == [(4, True, "10 CE")]
    assert organiser.get("/admin/submissions.json", params={"task": "9"}).status_code == 400
    assert mine.get("/admin/submissions.json").status_code == 403


def test_a_list_being_graded_is_live_and_counts_the_pending_points(server):
    """A submission stored without a grading yet (as the intake leaves it before a worker starts) is
    ``queued`` with every point pending, and makes the list live."""
    import db

    alice = server.add_user("alice")
    service = server.deployment.service
    with service.session() as session:
        user = db.get_or_create_user(session, "alice")
        db.create_submission(session, user["id"], "k.py", "ab" * 32, "x = 1\n")
    html = server.client(alice).get("/submissions").text
    assert 'data-live="1" data-live-url="/submissions.json"' in html and 'id="list-live-hint"' in html
    row = list_rows(html, "submissions")[1]
    assert row == {"status": "queued", "verdicts": "10 pending", "classes": ["v-queued"], "total": "\u2013",
                   "counts": False}
    assert server.client(alice).get("/submissions.json").json()["live"] is True


def scored(server, user: str, scores: tuple[float, float, float, float]) -> int:
    """A submission of ``user`` stored straight in the database with these task scores (and their sum)."""
    import db

    with server.deployment.service.session() as session:
        user_id = db.get_or_create_user(session, user)["id"]
        submission_id = db.create_submission(session, user_id, "k.py", "ab" * 32, "x = 1\n")["id"]
        row = session.get(Submission, submission_id)
        row.task1, row.task2, row.task3, row.task4 = scores
        row.total = sum(scores)
    return submission_id


def board_cells(html: str, user: str) -> list[tuple[str, str]]:
    """(class, text) of the task cells of ``user``'s scoreboard row."""
    row = re.search(rf'<tr data-user="{user}">(.*?)</tr>', html, re.S).group(1)
    return re.findall(r'<td class="num ?([\w-]*)">([^<]*)</td>', row)[1:5]  # after the rank, before the total


def test_score_bands_split_at_nothing_half_and_all_of_the_weight():
    assert [score_band(s, 20) for s in (0, 0.01, 9.99, 10, 19.99, 20, 20.0000000001)] == [
        "sc-zero", "sc-low", "sc-low", "sc-mid", "sc-mid", "sc-full", "sc-full"]
    assert score_band(None, 10) == "" and score_band(7.3333333333, 22) == "sc-low"


def test_the_scoreboard_colours_each_task_by_the_share_of_its_weight(server):
    scored(server, "alice", (10, 9.99, 15, 0))        # weights 10, 20, 30, 40
    scored(server, "bob", (4.99, 20, 29.99, 39.9999999999))
    html = httpx.get(f"{server.url}/", timeout=30).text
    assert board_cells(html, "alice") == [("sc-full", "10.00"), ("sc-low", "9.99"), ("sc-mid", "15.00"),
                                          ("sc-zero", "0.00")]
    assert board_cells(html, "bob") == [("sc-low", "4.99"), ("sc-full", "20.00"), ("sc-mid", "29.99"),
                                        ("sc-full", "40.00")]
    legend = re.search(r'<p class="legend" id="legend">(.*?)</p>', html, re.S).group(1)
    assert re.findall(r'<span class="(sc-\w+)">([^<]*)</span>', legend) == [
        ("sc-zero", "0"), ("sc-low", "under 50%"), ("sc-mid", "50% or more"), ("sc-full", "100%")]
    update = httpx.get(f"{server.url}/scoreboard.json", timeout=30).json()
    assert {r["user"]: r["bands"] for r in update["changed"]} == {
        "alice": ["sc-full", "sc-low", "sc-mid", "sc-zero"], "bob": ["sc-low", "sc-full", "sc-mid", "sc-full"]}
