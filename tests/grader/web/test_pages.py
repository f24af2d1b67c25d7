"""The pages over a real ``kdt-grade serve`` (uvicorn on a loopback port, embedded grading, SQLite), driven
with plain HTTP: login and the session cookie, CSRF, submitting with limits shown and enforced, the
per-point table, the timeline and Perfetto downloads equal to a local profiled run, isolation (404),
escaping, the scoreboard's live updates, and the admin page's buttons."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html import unescape

import httpx
import pytest

from grader.judging import trace_record as traces
from grader.service.rules_text import cycles_needed
from judger.grading import grade_point, kernel_for_task, load_submission
from judger.scoring import point_score
from judger.tasks import get_point, get_task
from pages_testlib import VADD_ONLY as SMALL
from pages_testlib import (Pages, csrf_of, server, shared_server, submit_page, wait_done,  # noqa: F401 (fixtures)
                           wait_until)
SVG = "{http://www.w3.org/2000/svg}"


def local_profile(task_id: int, index: int):
    profile = traces.profile_for_judging()
    kernel = kernel_for_task(load_submission(SMALL), task_id)
    result = grade_point(kernel, get_task(task_id), get_point(task_id, index), profile=profile)
    return result, profile


def cells(html: str, marker: str) -> list[str]:
    """The texts of the cells of the table row whose start tag has ``marker`` (e.g. ``id="pt-1-0"``)."""
    row = re.search(rf'<tr {marker}.*?</tr>', html, re.S).group(0)
    return [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def test_login_sets_an_httponly_strict_cookie_and_logout_clears_it(server):
    token = server.add_user("alice")
    client = server.client()
    assert client.get("/submissions").headers["location"] == "/login?next=/submissions"
    form = client.get("/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)
    assert "kdt_login_csrf" in form.headers["set-cookie"] and "HttpOnly" in form.headers["set-cookie"]

    wrong = client.post("/login", data={"token": "kdt_" + "x" * 43, "csrf": csrf})
    assert wrong.status_code == 401 and "unknown token" in wrong.text and "kdt_session" not in client.cookies
    forged = httpx.post(f"{server.url}/login", data={"token": token, "csrf": csrf})  # no login-CSRF cookie
    assert forged.status_code == 403 and "kdt_session" not in forged.headers.get("set-cookie", "")

    ok = client.post("/login", data={"token": token, "csrf": csrf, "next": "/submit"})
    assert ok.status_code == 303 and ok.headers["location"] == "/submit"
    cookie = next(v for k, v in ok.headers.multi_items() if k == "set-cookie" and v.startswith("kdt_session="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Max-Age=43200" in cookie
    assert token not in client.get("/submissions").text  # the token is never shown in a page
    page = client.get("/submissions")
    assert page.status_code == 200 and 'data-user="alice"' in page.text

    assert client.post("/logout", data={"csrf": "wrong"}).status_code == 403  # a forged logout changes nothing
    assert client.get("/submissions").status_code == 200
    out = client.post("/logout", data={"csrf": csrf_of(page.text)})
    assert out.status_code == 303 and 'kdt_session=""' in out.headers["set-cookie"]
    assert client.get("/submissions").status_code == 303
    assert token not in server.log()


def test_submit_grade_and_read_the_results_page(server):
    alice, bob = server.add_user("alice"), server.add_user("bob")
    client = server.client(alice)
    refused = client.post("/submit", data={"csrf": "0000"}, files={"file": ("x.py", SMALL.read_bytes())})
    assert refused.status_code == 403 and "did not come from this site" in refused.text
    missing = client.post("/submit", files={"file": ("x.py", SMALL.read_bytes())})
    assert missing.status_code == 403 and "did not come from this site" in missing.text
    assert 'class="empty"' in client.get("/submissions").text  # nothing was stored

    response = submit_page(client)
    assert response.status_code == 303 and response.headers["location"] == "/submissions/1"
    doc = wait_done(client, 1)
    api = httpx.get(f"{server.url}/api/v1/submissions/1", headers={"Authorization": f"Bearer {alice}"}).json()
    assert [p["verdict"] for p in api["points"]] == ["AC", "AC"] + ["CE"] * 8
    page = client.get("/submissions/1")
    assert page.status_code == 200 and "no-store" in page.headers["cache-control"]
    for p in api["points"]:
        row = cells(page.text, f'id="pt-{p["task"]}-{p["point"]}"')
        assert row[:4] == [str(p["task"]), str(p["point"]), p["verdict"], f"{p['cycles']:,}" if p["cycles"] else ""]
        assert row[4] == f"{p['score']:.2f}" and row[5] == f"{get_point(p['task'], p['point']).threshold:,}"
        assert p["cycles_for_100"] == get_point(p["task"], p["point"]).threshold
        plus = cycles_needed(p["task"], p["point"], p["verdict"], p["score"])["cycles_for_plus_10"]
        assert p["cycles_for_plus_10"] == plus and row[6] == ("" if plus is None else f"{plus:,}")
    # task 1 point 1: 34,304 cycles score 10.95; 18,624 cycles would score 10 points more
    assert (api["points"][1]["cycles"], api["points"][1]["cycles_for_plus_10"]) == (34304, 18624)
    assert point_score(18624, 11000) >= api["points"][1]["score"] + 10 > point_score(18625, 11000)
    assert cells(page.text, 'id="pt-1-1"')[3:7] == ["34,304", "10.95", "11,000", "18,624"]
    assert cells(page.text, 'id="pt-1-0"')[5:7] == ["1,919,810", ""]  # 100 already: the threshold only
    assert cells(page.text, 'id="pt-2-0"')[5:7] == ["23,272", ""]  # CE: the threshold only
    assert [(p["for_100"], p["for_plus_10"]) for p in doc["points"][:3]] == [
        ("1,919,810", ""), ("11,000", "18,624"), ("23,272", "")]  # the live document: what live.js fills in
    assert '<th class="num" title="the threshold: at most this many cycles score 100">Cycles for 100</th>' in page.text
    assert "this file does not solve task 2 (get_kernel returned None)" in page.text
    assert f'<strong id="sub-total">{api["total"]:.2f}</strong>' in page.text
    assert '<span class="kn">import</span><span class="w"> </span><span class="nn">kdt</span>' in page.text  # Pygments
    assert [p["timeline"] for p in doc["points"][:3]] == ["/submissions/1/points/1/0/timeline.svg",
                                                         "/submissions/1/points/1/1/timeline.svg", None]

    # the picture and the Perfetto trace are the judge's run, equal to a local profiled run
    result, profile = local_profile(1, 1)
    assert result.cycles == api["points"][1]["cycles"]
    svg = client.get("/submissions/1/points/1/1/timeline.svg")
    assert svg.headers["content-type"] == "image/svg+xml" and "default-src 'none'" in svg.headers["content-security-policy"]
    root = ET.fromstring(svg.text)
    bars = [el for el in root.iter(f"{SVG}rect") if "tl-bar" in el.get("class", "")]
    assert len(bars) == len(profile.trace(0)) == 6  # fill, fill, load, load, add, store
    perfetto = client.get("/submissions/1/points/1/1/perfetto.json")
    assert perfetto.headers["content-disposition"] == 'attachment; filename="submission-1-task1-point1.perfetto.json"'
    assert perfetto.json() == json.loads(json.dumps(profile.to_perfetto()))

    # live: unchanged -> 304
    live = client.get("/submissions/1/status.json")
    assert client.get("/submissions/1/status.json", headers={"If-None-Match": live.headers["etag"]}).status_code == 304

    # isolation: bob sees none of it, exactly as for a missing id
    other = server.client(bob)
    for path in ("/submissions/1", "/submissions/1/status.json", "/submissions/1/points/1/1/timeline.svg",
                 "/submissions/1/points/1/1/perfetto.json"):
        assert other.get(path).status_code == 404, path
    assert "There is no submission 1 of yours." in other.get("/submissions/1").text
    assert "There is no submission 77 of yours." in other.get("/submissions/77").text
    assert "vadd_only.py" not in other.get("/submissions").text
    assert client.get("/submissions/1/points/2/0/timeline.svg").status_code == 404  # CE: nothing simulated


def test_user_text_is_escaped_everywhere(server):
    token = server.add_user("mallory", display_name='<img src=x onerror="alert(1)">')
    client = server.client(token)
    assert submit_page(client, SMALL, name='<b onmouseover=alert(2)>x.py').status_code == 303
    wait_done(client, 1)
    for path in ("/submissions/1", "/submissions", "/"):
        html = client.get(path).text
        assert "<b onmouseover" not in html and "<img src=x" not in html, path
    assert "&lt;b onmouseover=alert(2)&gt;x.py" in client.get("/submissions/1").text
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in client.get("/").text


def test_submit_page_shows_and_enforces_the_limits(server):
    server.cli("admin", "contest", "set", "--min-interval", "3600", "--max-per-hour", "5")
    client = server.client(server.add_user("alice"))
    form = client.get("/submit").text
    assert "You may submit now." in form and "At most one submission every 1 h 00 min." in form
    assert "At most 5 submissions in any hour." in form
    assert "<li>File size: at most 1,048,576 bytes.</li>" in form  # as the Rules page writes it
    assert submit_page(client).status_code == 303
    form = client.get("/submit").text
    assert "Not now:" in form and re.search(r"next submission allowed in (59 min \d\d s|1 h 00 min)", form)
    assert "Not now: one submission every 3600 s; next submission allowed in" in form and "try again" not in form
    again = submit_page(client)
    assert again.status_code == 429 and "Not now:" in again.text
    # the refusal is said once, with one wait (a contestant saw it twice, with two countdowns a second apart)
    assert again.text.count("one submission every 3600 s") == 1 and "try again" not in again.text
    assert client.get("/submissions").text.count('<tr data-id="') == 1  # the refused one is not stored


def test_scoreboard_live_updates_send_only_what_changed(make_deployment, start_server):
    """The versions a diff is made from are those of one HTTP process (``web.scoreboard``: another
    process answers an unknown version with the full board), so this server has one: with two, the
    viewer's next connection (uvicorn closes idle ones after 5 s) may reach the other process."""
    deployment = make_deployment()
    server = Pages(deployment, start_server(deployment, KDT_GRADE_HTTP_WORKERS=1))
    alice, bob = server.add_user("alice"), server.add_user("bob")
    viewer = server.client()
    first = viewer.get("/")
    version = re.search(r'data-version="([0-9a-f]+)"', first.text).group(1)
    assert viewer.get(f"/scoreboard.json?since={version}").status_code == 304
    unknown = viewer.get("/scoreboard.json?since=0123456789abcdef").json()
    assert unknown["full"] is True and unknown["changed"] == []

    a = server.client(alice)
    submit_page(a)
    wait_done(a, 1)
    doc = wait_until(lambda: (r := viewer.get(f"/scoreboard.json?since={version}")).status_code == 200 and r.json(),
                     10, "a scoreboard change")
    assert doc["full"] is False and [r["user"] for r in doc["changed"]] == ["alice"] and doc["removed"] == []
    assert doc["changed"][0]["rank"] == 1 and doc["changed"][0]["tasks"][1:] == ["0.00", "0.00", "0.00"]
    v2 = doc["version"]

    b = server.client(bob)
    submit_page(b)
    wait_done(b, 2)
    doc = wait_until(lambda: (r := viewer.get(f"/scoreboard.json?since={v2}")).status_code == 200 and r.json(),
                     10, "the second change")
    # bob ties alice's total; ties go to the earlier submission, so only bob's new row is sent
    assert [(r["user"], r["rank"]) for r in doc["changed"]] == [("bob", 2)]
    assert len(json.dumps(doc)) < 400
    html = viewer.get("/").text
    assert html.index('data-user="alice"') < html.index('data-user="bob"')


def test_admin_page_rejudge_freeze_and_unfreeze(server):
    root, alice = server.add_user("root", admin=True), server.add_user("alice")
    contestant = server.client(alice)
    submit_page(contestant)
    wait_done(contestant, 1)
    assert contestant.get("/admin").status_code == 403
    assert server.client().get("/admin").headers["location"] == "/login?next=/admin"

    admin = server.client(root)
    page = admin.get("/admin")
    assert page.status_code == 200
    row = cells(page.text, 'data-id="1"')
    total = httpx.get(f"{server.url}/api/v1/submissions/1", headers={"Authorization": f"Bearer {alice}"}).json()["total"]
    assert [row[0], row[1], row[3], row[4], row[-3], row[-2]] == ["1", "alice", "vadd_only.py", "done", f"{total:.2f}",
                                                                 "counts"]  # her best: the one the leaderboard counts
    assert "0 points queued · 0 running · 0 stuck" in page.text
    assert re.search(r"<tr><td>[^<]+:\d+</td><td><time", page.text)  # the worker that graded it, seen recently
    csrf = csrf_of(page.text)

    assert admin.post("/admin/rejudge", data={"id": 1, "csrf": "bad"}).status_code == 403
    done = admin.post("/admin/rejudge", data={"id": 1, "csrf": csrf, "confirm": "yes"})
    # the notice is a code (pages_admin.NOTICES), never text carried by the link
    assert done.status_code == 303 and done.headers["location"] == "/admin?notice=rejudged&id=1"
    assert "Submission 1 is queued for rejudging." in admin.get(done.headers["location"]).text
    wait_done(contestant, 1)
    api = httpx.get(f"{server.url}/api/v1/submissions/1", headers={"Authorization": f"Bearer {alice}"}).json()
    assert [p["verdict"] for p in api["points"]] == ["AC", "AC"] + ["CE"] * 8 and api["status"] == "done"

    assert admin.post("/admin/freeze", data={"csrf": csrf, "confirm": "yes"}).status_code == 303
    assert "The scoreboard is frozen since" in admin.get("/admin").text
    bob = server.client(server.add_user("bob"))
    submit_page(bob)  # after the freeze: bob sees his result, the public board does not show it
    wait_done(bob, 2)
    public = wait_until(lambda: (r := httpx.get(f"{server.url}/")).status_code == 200 and r.text, 5, "the board")
    assert 'id="frozen-notice"' in public and 'data-user="alice"' in public and 'data-user="bob"' not in public
    assert admin.post("/admin/unfreeze", data={"csrf": csrf, "confirm": "yes"}).status_code == 303

    def unfrozen():
        html = httpx.get(f"{server.url}/").text
        return 'id="frozen-notice"' not in html and 'data-user="bob"' in html
    wait_until(unfrozen, 5, "the unfrozen board")


@pytest.mark.xdist_group("pages-shared-server")  # one worker, so one start of shared_server
@pytest.mark.parametrize("n, path", list(enumerate(["/submissions/0", "/submissions/abc", "/submissions/99999999999"])))
def test_bad_ids_are_refused_cleanly(shared_server, n, path):
    client = shared_server.client(shared_server.add_user(f"alice{n}"))
    assert client.get(path).status_code in (404, 422)


@pytest.mark.xdist_group("pages-shared-server")
@pytest.mark.parametrize("path", ["/submissions/abc", "/no-such-page", "/submissions/1/nothing"])
def test_a_browser_gets_an_html_error_page_where_an_api_client_gets_json(shared_server, path):
    server = shared_server
    page = httpx.get(f"{server.url}{path}", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html") and "<h1>" in page.text and "Not found" in page.text
    api = httpx.get(f"{server.url}{path}", headers={"Accept": "application/json"})
    assert api.status_code in (404, 422) and set(api.json()) == {"error", "message"}
    assert httpx.get(f"{server.url}/favicon.ico").status_code == 204


def test_a_submission_with_nothing_simulated_says_so_instead_of_an_empty_timelines_section(server, tmp_path):
    token = server.add_user("carol")
    client = server.client(token)
    broken = tmp_path / "broken.py"
    broken.write_text("import kdt\n\ndef get_kernel(task_id):\n    return 1 / 0\n")
    assert submit_page(client, broken).status_code == 303
    wait_done(client, 1)
    html = client.get("/submissions/1").text
    assert 'id="no-timelines"' in html and "no test point of this submission was simulated" in html
    assert 'class="timeline-item"' not in html.split('id="timelines"')[1].split("</div>")[0]
    assert {cells(html, f'id="pt-{t}-0"')[2] for t in (1, 2, 3, 4)} == {"CE"}


def test_a_reused_result_is_marked_on_the_submission_page_and_in_its_live_document(server):
    alice, bob = server.client(server.add_user("alice")), server.client(server.add_user("bob"))
    assert submit_page(alice).status_code == 303
    first = wait_done(alice, 1)
    assert submit_page(bob).status_code == 303  # the same file by another contestant: nothing simulated again
    second = wait_done(bob, 2)
    assert [p["reused"] for p in first["points"][:2]] == [False, False]
    assert [p["reused"] for p in second["points"][:2]] == [True, True]
    assert [p["cycles"] for p in second["points"]] == [p["cycles"] for p in first["points"]]
    page = bob.get("/submissions/2").text
    for task, point in ((1, 0), (1, 1)):
        row = re.search(rf'<tr id="pt-{task}-{point}".*?</tr>', page, re.S).group(0)
        assert '<span class="reused" title="not simulated again: this judge graded the same compiled kernel' in row
        assert cells(page, f'id="pt-{task}-{point}"')[2] == "AC reused"
    assert 'class="reused"' not in alice.get("/submissions/1").text
    assert bob.get("/submissions/2/status.json").json()["points"][0]["reused"] is True
