"""Two submissions compared: ``grader.service.compare`` (exact deltas, verdicts, ratios, the
change of each point, task scores and totals), the JSON API's statuses (200 / 401 / 404, an organiser any),
the page and the submission page's picker, and ``kdt-grade diff`` on the local database (one subprocess).

Fast: the submissions and their results are written straight into a SQLite database (nothing is graded),
and the app runs in this process (``TestClient`` without its lifespan: no grading threads start)."""
from __future__ import annotations

import io
import json
import re
from html import unescape
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from rich.console import Console

import db
from grader.cli import output
from grader.config import load_settings
from grader.service import Service, accounts, compare
from grader.web.app import create_app
from judger.scoring import task_score
from judger.tasks import TASKS
from pages_testlib import csrf_of
from tests.grader.service.service_testlib import clean_env, run_cli

# (task, point) -> (verdict, cycles, score, reused) of submission A and of B; every other point is CE in both
A_POINTS = {(1, 0): ("AC", 536, 100.0, False), (1, 1): ("AC", 34304, 10.95, False),
            (2, 0): ("WA", 1000, 0.0, False), (4, 0): ("AC", 4822, 100.0, True)}
B_POINTS = {(1, 0): ("AC", 332, 100.0, True), (1, 1): ("AC", 21248, 16.46, False),
            (2, 0): ("AC", 31491, 36.84, False), (4, 0): ("WA", 4000, 0.0, False)}
CE = ("CE", None, 0.0, False)


def insert_graded(service: Service, user: str, points: dict, created: datetime, name: str = "k.py") -> int:
    """A submission of ``user`` with every point's result and its totals stored (never graded)."""
    with service.session() as session:
        user_id = db.get_or_create_user(session, user)["id"]
        sid = db.create_submission(session, user_id, name, f"{len(name):02x}" * 32, "x = 1\n", created=created)["id"]
        for task_id, task in TASKS.items():
            for point in range(len(task.points)):
                verdict, cycles, score, reused = points.get((task_id, point), CE)
                db.record_result(session, sid, task_id, point, verdict, cycles, score, "", "test", reused=reused)
    with service.session() as session:
        db.finalize_submission(session, sid, {t: task.weight for t, task in TASKS.items()},
                               {t: len(task.points) for t, task in TASKS.items()}, task_score)
    return sid


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """An app over a fresh SQLite database holding alice's submissions A (older) and B, bob's one and the
    tokens of alice, bob and an organiser."""
    settings = load_settings(data_dir=tmp_path_factory.mktemp("compare") / "var", workers=1)
    service = Service(settings)
    service.init_db()
    now = datetime.now(UTC)
    tokens = {name: accounts.add_user(service, name, is_admin=name == "root")[1] for name in ("alice", "bob", "root")}
    ids = {"a": insert_graded(service, "alice", A_POINTS, now - timedelta(minutes=10), "first.py"),
           "b": insert_graded(service, "alice", B_POINTS, now - timedelta(minutes=5), "second.py"),
           "bob": insert_graded(service, "bob", {}, now - timedelta(minutes=7), "bob.py")}
    app = create_app(settings)
    client = TestClient(app, follow_redirects=False)  # not entered: no lifespan, nothing is graded
    yield {"service": service, "client": client, "tokens": tokens, "ids": ids, "settings": settings}
    app.state.service.close()
    service.close()


def test_the_comparison_gives_each_points_change_from_a_to_b(site):
    a, b = site["ids"]["a"], site["ids"]["b"]
    doc = compare.comparison(site["service"], a, b)
    assert (doc["a"]["id"], doc["a"]["file_name"], doc["b"]["id"], doc["b"]["file_name"]) == (a, "first.py", b, "second.py")
    assert doc["same_file"] is False
    points = {(p["task"], p["point"]): p for p in doc["points"]}
    assert len(points) == 10
    assert points[1, 0] == {"task": 1, "point": 0, "verdict_a": "AC", "verdict_b": "AC", "verdict_changed": False,
                            "cycles_a": 536, "cycles_b": 332, "cycles_delta": -204, "cycles_ratio": 0.6194,
                            "score_a": 100.0, "score_b": 100.0, "score_delta": 0.0, "reused_a": False,
                            "reused_b": True, "change": "better"}  # equal scores of two AC: fewer cycles
    assert (points[1, 1]["cycles_delta"], points[1, 1]["cycles_ratio"], points[1, 1]["score_delta"],
            points[1, 1]["change"]) == (-13056, 0.6194, 5.51, "better")
    assert (points[2, 0]["verdict_a"], points[2, 0]["verdict_b"], points[2, 0]["verdict_changed"],
            points[2, 0]["score_delta"], points[2, 0]["change"]) == ("WA", "AC", True, 36.84, "better")
    assert (points[4, 0]["verdict_a"], points[4, 0]["verdict_b"], points[4, 0]["cycles_delta"],
            points[4, 0]["score_delta"], points[4, 0]["reused_a"], points[4, 0]["change"]) == (
        "AC", "WA", -822, -100.0, True, "worse")  # fewer cycles, but wrong: worse by the score
    assert points[3, 1]["change"] == "same" and points[3, 1]["cycles_delta"] is None
    assert doc["counts"] == {"better": 3, "worse": 1, "same": 6, "pending": 0}
    tasks = {t["task"]: t for t in doc["tasks"]}
    assert (tasks[1]["score_a"], tasks[1]["score_b"]) == (pytest.approx(5.5475), pytest.approx(5.823))
    assert tasks[1]["delta"] == pytest.approx(0.2755)
    assert tasks[2]["delta"] == pytest.approx(36.84 / 2 * 20 / 100) and tasks[4]["delta"] == pytest.approx(-10.0)
    assert tasks[3]["delta"] == 0.0
    assert doc["total_delta"] == pytest.approx(doc["total_b"] - doc["total_a"])
    assert doc["total_delta"] == pytest.approx(sum(t["delta"] for t in doc["tasks"]))


def test_a_point_not_graded_in_both_is_pending():
    done = {"task": 1, "point": 0, "state": "done", "verdict": "AC", "cycles": 500, "score": 100.0, "reused": False}
    queued = {**done, "state": "queued", "verdict": None, "cycles": None, "score": None}
    side = {"id": 1, "user": "u", "file_name": "f", "sha256": "0", "created": "", "status": "done", "total": None,
            "tasks": {1: {"name": "t", "weight": 10, "score": None}}}
    doc = compare.compare({**side, "points": [done]}, {**side, "id": 2, "status": "running", "points": [queued]})
    assert doc["same_file"] is True
    assert doc["points"][0]["change"] == "pending" and doc["points"][0]["verdict_b"] is None
    assert doc["points"][0]["cycles_delta"] is doc["points"][0]["score_delta"] is None
    assert doc["tasks"] == [{"task": 1, "name": "t", "weight": 10, "score_a": None, "score_b": None, "delta": None}]
    assert doc["total_delta"] is None and doc["counts"]["pending"] == 1


def test_the_api_compares_only_the_callers_own_submissions(site):
    client, tokens, ids = site["client"], site["tokens"], site["ids"]
    url = f"/api/v1/submissions/{ids['a']}/compare/{ids['b']}"
    mine = client.get(url, headers={"Authorization": f"Bearer {tokens['alice']}"})
    assert mine.status_code == 200
    assert mine.json() == json.loads(json.dumps(compare.comparison(site["service"], ids["a"], ids["b"])))
    assert client.get(url).status_code == 401
    other = client.get(url, headers={"Authorization": f"Bearer {tokens['bob']}"})
    assert other.status_code == 404 and other.json()["message"] == f"no submission {ids['a']} of yours"
    mixed = client.get(f"/api/v1/submissions/{ids['a']}/compare/{ids['bob']}",
                       headers={"Authorization": f"Bearer {tokens['alice']}"})
    assert mixed.status_code == 404 and mixed.json()["message"] == f"no submission {ids['bob']} of yours"
    missing = client.get(f"/api/v1/submissions/{ids['a']}/compare/999",
                         headers={"Authorization": f"Bearer {tokens['alice']}"})
    assert missing.status_code == 404
    organiser = client.get(f"/api/v1/submissions/{ids['bob']}/compare/{ids['b']}",
                           headers={"Authorization": f"Bearer {tokens['root']}"})
    assert organiser.status_code == 200 and organiser.json()["a"]["user"] == "bob"


def page_client(site, name: str) -> TestClient:
    """A page client of ``site``'s app logged in as ``name`` (its own cookie jar)."""
    client = TestClient(site["client"].app, follow_redirects=False)
    form = client.get("/login")
    response = client.post("/login", data={"token": site["tokens"][name], "csrf": csrf_of(form.text), "next": "/"})
    assert response.status_code == 303
    return client


def text_of(html: str) -> str:
    """The words of an HTML fragment (tags dropped, entities read)."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).strip()


def test_the_page_shows_both_side_by_side_and_the_submission_page_links_to_it(site):
    ids = site["ids"]
    alice = page_client(site, "alice")
    page = alice.get(f"/submissions/{ids['b']}")
    picker = page.text.split('id="compare-picker"')[1].split("</form>")[0]
    assert f'href="/submissions/{ids["a"]}/compare/{ids["b"]}"' in picker  # the default: the previous one
    assert f"What changed since #{ids['a']} (the previous one)" in picker
    assert re.findall(r'<option value="(\d+)"( selected)?', picker) == [(str(ids["a"]), " selected")]  # hers only
    chosen = alice.get(f"/submissions/{ids['b']}/compare", params={"with": ids["a"]})
    assert chosen.status_code == 303 and chosen.headers["location"] == f"/submissions/{ids['a']}/compare/{ids['b']}"
    assert alice.get(f"/submissions/{ids['a']}/compare").headers["location"] == \
        f"/submissions/{ids['b']}/compare/{ids['a']}"  # no earlier one: the other

    shown = alice.get(f"/submissions/{ids['a']}/compare/{ids['b']}")
    assert shown.status_code == 200
    row = text_of(shown.text.split('id="cmp-1-1"')[1].split(">", 1)[1].split("</tr>")[0])
    assert "AC → AC" in row and "34,304 21,248 -13,056 0.62×" in row and "10.95 16.46 +5.51 ▲ better" in row
    assert 'class="num delta up" data-f="score_change"' in shown.text.split('id="cmp-1-1"')[1].split("</tr>")[0]
    worse = shown.text.split('id="cmp-4-0"')[1].split("</tr>")[0]
    assert 'class="num delta down" data-f="score_change" data-label="Δ score">-100.00' in worse
    assert "▼ worse" in worse and worse.count(">reused<") == 1
    assert "3 better, 1 worse, 6 same" in text_of(shown.text)
    assert f'href="/submissions/{ids["b"]}/compare/{ids["a"]}" id="swap"' in shown.text

    bob = page_client(site, "bob")
    refused = bob.get(f"/submissions/{ids['a']}/compare/{ids['b']}")
    assert refused.status_code == 404 and f"There is no submission {ids['a']} of yours." in refused.text
    assert bob.get(f"/submissions/{ids['bob']}").text.count('id="compare-picker"') == 0  # nothing to compare with
    root = page_client(site, "root")
    assert root.get(f"/submissions/{ids['bob']}/compare/{ids['a']}").status_code == 200
    logged_out = TestClient(site["client"].app, follow_redirects=False)
    assert logged_out.get(f"/submissions/{ids['a']}/compare/{ids['b']}").headers["location"].startswith("/login?next=")


def test_the_table_says_the_changes_in_words_and_signs(site):
    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(output.comparison_table(compare.comparison(site["service"], site["ids"]["a"], site["ids"]["b"])))
    lines = console.file.getvalue().splitlines()
    row = next(line for line in lines if re.match(r"\W+1 \W+1 ", line))
    assert re.findall(r"[^│┃\s][^│┃]*?(?=\s*[│┃])", row)[2:] == [
        "AC -> AC", "34,304", "21,248", "-13,056", "0.62x", "10.95", "16.46", "+5.51", "better"]
    assert any("reused: B" in line for line in lines)


def test_kdt_grade_diff_compares_two_submissions_of_the_local_database(site):
    env = {**clean_env(), "KDT_GRADE_DATA_DIR": str(site["settings"].data_dir)}
    a, b = site["ids"]["a"], site["ids"]["b"]
    shown = run_cli(["diff", str(a), str(b), "--json"], env, check=True)
    assert json.loads(shown.stdout) == json.loads(json.dumps(compare.comparison(site["service"], a, b)))
