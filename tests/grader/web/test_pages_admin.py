"""The organisers' page over a real ``kdt-grade serve`` (uvicorn on a loopback port, embedded grading,
SQLite), driven with plain HTTP: freezing now keeps the scheduled freeze; freeze, unfreeze and rejudge
act only once confirmed; the submissions list (paged, filtered, the same filters on the API) and the
rejudge of a filtered set with its before/after; the jury scoreboard and the standings CSV."""
from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from html import unescape

import httpx

import db
from db.submissions import Submission
from grader.service import contest
from pages_testlib import csrf_of, server, submit_page, wait_done, wait_until  # noqa: F401 (server: a fixture)
from weblib import NOTHING, VADD_ONLY


def confirm_form(html: str) -> tuple[str, dict]:
    """The action and the hidden fields of a confirmation page's form (what its button posts)."""
    form = re.search(r'<form method="post" action="([^"]+)" class="inline" id="confirm-form">(.*?)</form>',
                     html, re.S)
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form.group(2)))
    return unescape(form.group(1)), {k: unescape(v) for k, v in fields.items()}


def _public_frozen(server) -> bool:
    return httpx.get(f"{server.url}/api/v1/contest").json()["frozen"]


def test_freezing_now_then_unfreezing_keeps_the_scheduled_freeze(server):
    root = server.add_user("root", admin=True)
    scheduled = (datetime.now(UTC) + timedelta(seconds=15)).replace(microsecond=0)
    contest.set_rules(server.deployment.service, freeze_at=scheduled)
    admin, api = server.client(root), httpx.Client(base_url=f"{server.url}/api/v1",
                                                    headers={"Authorization": f"Bearer {root}"})
    csrf = csrf_of(admin.get("/admin").text)
    assert _public_frozen(server) is False

    assert admin.post("/admin/freeze", data={"csrf": csrf, "confirm": "yes"}).status_code == 303
    assert _public_frozen(server) is True
    assert api.get("/admin/contest").json()["freeze_at"] == scheduled.isoformat()  # the schedule is kept

    assert admin.post("/admin/unfreeze", data={"csrf": csrf, "confirm": "yes"}).status_code == 303
    assert _public_frozen(server) is False
    stored = api.get("/admin/contest").json()
    assert (stored["freeze_at"], stored["unfrozen"], stored["frozen_since"]) == (scheduled.isoformat(), False, None)

    # the API's and the command's freeze now are the same
    frozen = api.post("/admin/contest/freeze").json()
    assert frozen["freeze_at"] == scheduled.isoformat() and frozen["frozen_since"] is not None
    assert api.post("/admin/contest/unfreeze").json()["frozen_since"] is None
    assert "frozen by hand since" in server.cli("admin", "contest", "freeze") and _public_frozen(server) is True
    server.cli("admin", "contest", "unfreeze")
    stored = api.get("/admin/contest").json()
    assert (stored["freeze_at"], stored["unfrozen"], stored["frozen_since"]) == (scheduled.isoformat(), False, None)
    assert _public_frozen(server) is False
    # the last hour's freeze still comes, at its time
    wait_until(lambda: _public_frozen(server), 20, "the scheduled freeze")
    assert datetime.now(UTC) >= scheduled


def _generation(server, submission_id: int) -> int:
    with server.deployment.service.session() as session:
        return db.get_submission(session, submission_id)["generation"]


def test_freeze_unfreeze_and_rejudge_change_nothing_until_confirmed(server):
    root, alice = server.add_user("root", admin=True), server.add_user("alice", display_name="Alice A.")
    contestant = server.client(alice)
    assert submit_page(contestant, NOTHING).status_code == 303
    wait_done(contestant, 1)
    admin = server.client(root)
    csrf = csrf_of(admin.get("/admin").text)

    asked = admin.post("/admin/freeze", data={"csrf": csrf})  # the button: a confirmation page
    assert asked.status_code == 200 and "<h1>Freeze the scoreboard now?</h1>" in asked.text
    assert "Nothing has been changed yet: this needs your confirmation." in asked.text
    assert "No freeze is scheduled." in asked.text
    assert _public_frozen(server) is False and contest.get_rules(server.deployment.service).frozen_since is None
    action, fields = confirm_form(asked.text)
    assert (action, fields) == ("/admin/freeze", {"csrf": csrf, "confirm": "yes"})
    assert admin.post("/admin/freeze", data={"csrf": csrf, "confirm": "no"}).status_code == 200  # not "yes"
    assert admin.post(action, data={**fields, "csrf": "forged"}).status_code == 403
    assert _public_frozen(server) is False
    done = admin.post(action, data=fields)
    assert done.status_code == 303 and done.headers["location"] == "/admin?notice=frozen"
    assert _public_frozen(server) is True

    asked = admin.post("/admin/unfreeze", data={"csrf": csrf})
    assert asked.status_code == 200 and "<h1>Unfreeze the scoreboard?</h1>" in asked.text
    assert _public_frozen(server) is True
    action, fields = confirm_form(asked.text)
    assert admin.post(action, data=fields).headers["location"] == "/admin?notice=unfrozen"
    assert _public_frozen(server) is False

    asked = admin.post("/admin/rejudge", data={"csrf": csrf, "id": "1"})
    assert asked.status_code == 200 and "<h1>Rejudge submission 1?</h1>" in asked.text
    assert "Submission 1 of alice is graded again from scratch." in asked.text
    assert "Its current total (0.00) stays on the scoreboard until the new grading finishes." in asked.text
    assert _generation(server, 1) == 0  # not rejudged
    action, fields = confirm_form(asked.text)
    assert (action, fields) == ("/admin/rejudge", {"csrf": csrf, "id": "1", "confirm": "yes"})
    assert admin.post(action, data=fields).headers["location"] == "/admin?notice=rejudged&id=1"
    assert _generation(server, 1) == 1
    missing = admin.post("/admin/rejudge", data={"csrf": csrf, "id": "99"})
    assert missing.status_code == 303 and missing.headers["location"] == "/admin?notice=no_submission&id=99"


T0 = datetime(2099, 12, 6, 1, 0, tzinfo=UTC)


def _insert(server, user: str, count: int, start: datetime = T0) -> list[int]:
    """``count`` submissions of ``user`` stored straight in the database, one a minute from ``start`` (the
    running server never grades them: they stay queued, which is all a listing needs)."""
    with server.deployment.service.session() as session:
        user_id = db.get_or_create_user(session, user)["id"]
        return [db.create_submission(session, user_id, f"k{i}.py", "ab" * 32, "x = 1\n",
                                     created=start + timedelta(minutes=i))["id"] for i in range(count)]


def _set_total(server, submission_id: int, total: float) -> None:
    with server.deployment.service.session() as session:
        session.get(Submission, submission_id).total = total


def listed(html: str) -> list[int]:
    """The submission ids of the admin page's list, in order."""
    table = html.split('id="all-submissions"')[1].split("</table>")[0]
    return [int(i) for i in re.findall(r'<tr data-id="(\d+)">', table)]


def test_the_submissions_list_is_paged_newest_first_and_filtered(server):
    root = server.add_user("root", admin=True)
    alice, bob = server.add_user("alice", display_name="Alice <A.>"), server.add_user("bob")
    for token, path in ((alice, VADD_ONLY), (bob, NOTHING)):
        client = server.client(token)
        assert submit_page(client, path).status_code == 303
    wait_done(server.client(alice), 1)
    wait_done(server.client(bob), 2)
    carol = _insert(server, "carol", 55)  # ids 3..57, queued
    admin = server.client(root)

    first = admin.get("/admin")
    assert first.status_code == 200 and listed(first.text) == list(range(57, 7, -1))  # 50, newest first
    assert "57 matches (every submission) · page 1 of 2, newest first, 50 a page" in first.text
    older = re.search(r'<a href="([^"]+)" rel="next">Older →</a>', first.text).group(1)
    assert unescape(older) == "/admin?page=2#submissions" and 'rel="prev"' not in first.text
    second = admin.get("/admin?page=2")
    assert listed(second.text) == list(range(7, 0, -1)) and 'rel="next"' not in second.text
    assert 'Alice &lt;A.&gt;' in second.text  # the display name beside the login name, escaped

    def ids(**params):
        response = admin.get("/admin", params=params)
        assert response.status_code == 200, response.text
        return listed(response.text)
    assert ids(user="alice") == [1] and ids(user="carol") == carol[::-1][:50]
    assert ids(verdict="AC") == [1] and ids(verdict="CE", task="1") == [2] and ids(verdict="CE") == [2, 1]
    assert ids(task="1") == [1]  # a task alone: a score above 0 on it
    assert ids(since="2099-12-06T01:10", until="2099-12-06T01:13") == carol[10:13][::-1]  # the form's UTC fields
    assert ids(since="2099-12-06T01:50:00+00:00", user="carol") == carol[50:][::-1]
    page = admin.get("/admin", params={"verdict": "CE", "task": "1"}).text
    assert "1 match (submissions with a point judged CE in task 1)" in page
    assert '<option value="CE" selected>CE (compile error)</option>' in page

    verdicts = "Verdict must be one of AC, WA, CE, RE, TLE, MLE, SV, IE, got &#39;XX&#39;."
    for params, words in (({"verdict": "XX"}, verdicts),
                          ({"task": "9"}, "Task must be a whole number from 1 to 4, got &#39;9&#39;."),
                          ({"page": "0"}, "Page must be a whole number from 1 to 1000000"),
                          ({"since": "yesterday"}, "Since: not an ISO 8601 time"),
                          ({"since": "2099-12-06T02:00", "until": "2099-12-06T01:00"}, "must be after since"),
                          ({"user": "<script>"}, "Invalid user name &#39;&lt;script&gt;&#39;"),
                          ({"user": "a" * 101}, "User: at most 100 characters.")):
        refused = admin.get("/admin", params=params)
        assert refused.status_code == 400 and words in refused.text and listed(refused.text) == [], params
        assert "<script>" not in refused.text.split('id="filter"')[1]

    api = httpx.Client(base_url=f"{server.url}/api/v1", headers={"Authorization": f"Bearer {root}"})
    everything = api.get("/admin/submissions").json()  # the default is as before: all, oldest first
    assert [r["submission_id"] for r in everything] == list(range(1, 58))
    # the same rows as before (one new field, the display name: null where the old list has none)
    before = json.loads(json.dumps(server.deployment.service.all_submissions()))
    assert everything == [{**r, "display_name": None} for r in before]
    assert [r["submission_id"] for r in api.get("/admin/submissions", params={"verdict": "CE"}).json()] == [1, 2]
    paged = api.get("/admin/submissions", params={"user": "carol", "page": "2", "per_page": "10"})
    assert [r["submission_id"] for r in paged.json()] == carol[::-1][10:20] and paged.headers["x-total-count"] == "55"
    assert paged.json()[0]["display_name"] is None
    for params in ({"verdict": "ok"}, {"task": "0"}, {"per_page": "501"}, {"since": "2099-12-06T01:00"}):
        bad = api.get("/admin/submissions", params=params)
        assert bad.status_code == 400 and set(bad.json()) == {"error", "message"}, params
    assert "no UTC offset" in api.get("/admin/submissions", params={"until": "2099-12-06T01:00"}).json()["message"]
    assert httpx.get(f"{server.url}/api/v1/admin/submissions", params={"user": "alice"},
                     headers={"Authorization": f"Bearer {alice}"}).status_code == 403


def test_rejudge_these_confirms_the_filtered_set_and_compares_the_totals(server):
    root, alice = server.add_user("root", admin=True), server.add_user("alice", display_name="Alice A.")
    contestant = server.client(alice)
    assert submit_page(contestant, VADD_ONLY).status_code == 303
    graded = wait_done(contestant, 1)
    _set_total(server, 1, 1.25)  # as if an earlier judge had got it wrong
    admin = server.client(root)
    html = admin.get("/admin", params={"user": "alice", "verdict": "AC"}).text
    form = re.search(r'<form method="post" action="/admin/rejudge-filtered" class="inline" id="rejudge-filtered">'
                     r'(.*?)</form>', html, re.S).group(1)
    fields = {k: unescape(v) for k, v in re.findall(r'name="([^"]+)" value="([^"]*)"', form)}
    assert fields == {"csrf": csrf_of(html), "user": "alice", "verdict": "AC"} and "Rejudge these 1…" in form

    asked = admin.post("/admin/rejudge-filtered", data=fields)
    assert asked.status_code == 200 and "<h1>Rejudge 1 submission(s)?</h1>" in asked.text
    assert "Submissions of alice, with a point judged AC: 1 submission(s), up to #1" in asked.text
    assert _generation(server, 1) == 0  # nothing yet
    action, confirm = confirm_form(asked.text)
    assert (action, confirm) == ("/admin/rejudge-filtered", {**fields, "up_to": "1", "confirm": "yes"})
    _insert(server, "alice", 1)  # #2 comes in after the confirmation page: not in the confirmed set
    assert admin.post(action, data={**confirm, "csrf": "forged"}).status_code == 403
    without = {k: v for k, v in confirm.items() if k != "up_to"}
    refused = admin.post(action, data=without)
    assert refused.status_code == 400 and "lacks the newest submission" in refused.text
    assert _generation(server, 1) == 0
    done = admin.post(action, data=confirm)
    assert done.status_code == 303 and done.headers["location"] == "/admin/rejudges/1"
    assert _generation(server, 1) == 1 and _generation(server, 2) == 0

    def finished():
        page = admin.get("/admin/rejudges/1").text
        return page if 'data-finished="yes"' in page else None
    page = wait_until(finished, 120, "the rejudge to finish")
    assert "1 of 1 regraded · 1 total changed" in page and "requested by root" in page
    row = re.search(r'<tr data-id="1" class="moved">(.*?)</tr>', page, re.S).group(1)
    cells_text = [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells_text == ["1", "alice (Alice A.)", "done", "1.25", f"{graded['total']}",
                          f"{float(graded['total']) - 1.25:+.2f}"]
    assert admin.get("/admin/rejudges/2").status_code == 404
    assert server.client(alice).get("/admin/rejudges/1").status_code == 403
    empty = admin.post("/admin/rejudge-filtered", data={"csrf": fields["csrf"], "user": "nobody"})
    assert empty.status_code == 400 and "No submission matches these filters" in empty.text


def test_the_jury_scoreboard_ignores_the_freeze_and_exports_the_standings(server):
    root, alice = server.add_user("root", admin=True), server.add_user("alice")
    bob = server.add_user("bob", display_name="Bob B.")
    a, b = server.client(alice), server.client(bob)
    submit_page(a, VADD_ONLY)
    submit_page(b, NOTHING)
    wait_done(a, 1)
    wait_done(b, 2)
    contest.freeze_now(server.deployment.service)
    submit_page(b, VADD_ONLY)  # after the freeze: hidden from the public, not from the jury
    late = wait_done(b, 3)
    public = httpx.get(f"{server.url}/api/v1/leaderboard").json()
    assert [(r["user_name"], r["submission_id"]) for r in public["rows"]] == [("alice", 1), ("bob", 2)]

    admin = server.client(root)
    jury = admin.get("/admin/scoreboard")
    assert jury.status_code == 200 and "1 row differs from what the public sees" in jury.text
    rows = re.findall(r'<tr data-user="(\w+)" class="([^"]*)">(.*?)</tr>', jury.text, re.S)
    assert [(user, cls) for user, cls, _ in rows] == [("alice", ""), ("bob", "hidden-change")]
    bob_row = [unescape(re.sub(r"<[^>]+>", "", c)).strip()
               for c in re.findall(r"<td[^>]*>(.*?)</td>", rows[1][2], re.S)]
    assert bob_row[:2] == ["2", "bob (Bob B.)"] and bob_row[-3] == "3" and bob_row[-1] == "#2, 0.00"
    assert bob_row[-4] == late["total"]

    csv = admin.get("/admin/scoreboard.csv")
    assert csv.status_code == 200 and csv.headers["content-type"] == "text/csv; charset=utf-8"
    assert re.fullmatch(r'attachment; filename="standings-\d{8}T\d{6}Z.csv"', csv.headers["content-disposition"])
    assert csv.text == server.cli("leaderboard", "--csv")  # the command's CSV, one source
    lines = csv.text.splitlines()
    assert lines[0] == "rank,user_name,submission_id,created,task1,task2,task3,task4,total"
    assert [line.split(",")[:3] for line in lines[1:]] == [["1", "alice", "1"], ["2", "bob", "3"]]
    for client in (a, server.client()):
        for path in ("/admin/scoreboard", "/admin/scoreboard.csv"):
            assert client.get(path).status_code in (303, 403), path
    assert a.get("/admin/scoreboard.csv").status_code == 403
