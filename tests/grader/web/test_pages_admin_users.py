"""The organisers' users and contest rules pages, and the frozen board's pending mark, over one real
``kdt-grade serve`` shared by the module (uvicorn on a loopback port, SQLite), driven with plain HTTP:
tokens shown once that work (and old ones that stop), imports that are all or nothing, disable and
reset-token only once confirmed, CSRF and contestants refused, the rules form checked as the CLI checks,
and a contestant seeing only their own hidden submissions on the frozen board."""
from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from html import unescape

import httpx
import pytest

import db
from db.submissions import Submission
from grader.service import accounts, contest
from pages_testlib import csrf_of, module_server
from test_pages_admin import confirm_form

pytestmark = pytest.mark.xdist_group("pages-admin-users")  # one worker, so one start of the module's server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with module_server(tmp_path_factory, "admin-users") as pages:
        yield pages


def api_status(server, token: str) -> int:
    """The status of the contestant API's list of the token's own submissions (200, 401, 403)."""
    return httpx.get(f"{server.url}/api/v1/submissions", headers={"Authorization": f"Bearer {token}"}).status_code


def shown_tokens(html: str) -> dict[str, str]:
    """The tokens page's ``{login: token}``."""
    table = html.split('id="new-tokens"')[1].split("</table>")[0]
    return dict(re.findall(r'<tr data-user="([^"]+)"><td><code>[^<]+</code></td><td><code class="token">([^<]+)</code>',
                           table))


def user_row(server, name: str) -> dict | None:
    with server.deployment.service.read_session() as session:
        return db.accounts.get_account(session, name)


def names(server) -> set[str]:
    return {u["name"] for u in accounts.list_users(server.deployment.service)}


def insert_submission(server, user: str, created: datetime, total: float | None = None) -> int:
    """A submission of ``user`` stored straight in the database (never graded), with ``total`` set."""
    with server.deployment.service.session() as session:
        user_id = db.get_or_create_user(session, user)["id"]
        submission_id = db.create_submission(session, user_id, "k.py", "ab" * 32, "x = 1\n", created=created)["id"]
        if total is not None:
            for task in (1, 2, 3, 4):
                setattr(session.get(Submission, submission_id), f"task{task}", total / 4)
            session.get(Submission, submission_id).total = total
    return submission_id


def test_only_organisers_see_the_users_page(server):
    root = server.client(server.add_user("root1", admin=True))
    contestant_token = server.add_user("carol1", display_name="Carol <C.>")
    insert_submission(server, "carol1", datetime.now(UTC))
    insert_submission(server, "carol1", datetime.now(UTC))
    contestant = server.client(contestant_token)

    assert server.client().get("/admin/users").headers["location"] == "/login?next=/admin/users"
    assert contestant.get("/admin/users").status_code == 403
    assert contestant.get("/admin/contest").status_code == 403
    csrf = csrf_of(contestant.get("/submissions").text)
    refused = contestant.post("/admin/users/add", data={"csrf": csrf, "name": "sneaky", "admin": "1"})
    assert refused.status_code == 403 and "sneaky" not in names(server)

    page = root.get("/admin/users")
    assert page.status_code == 200
    row = page.text.split('<tr data-user="carol1">')[1].split("</tr>")[0]
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[:5] == ["carol1", "Carol &lt;C.&gt;", "contestant", "enabled", "2"]  # escaped, counted
    admin_row = page.text.split('<tr data-user="root1">')[1].split("</tr>")[0]
    assert ">admin<" in admin_row and ">you<" in admin_row and "/admin/users/disable" not in admin_row


def test_adding_a_user_shows_its_token_once_and_it_works(server):
    root = server.client(server.add_user("root2", admin=True))
    csrf = csrf_of(root.get("/admin/users").text)

    forged = root.post("/admin/users/add", data={"csrf": "forged", "name": "dora"})
    assert forged.status_code == 403 and user_row(server, "dora") is None

    added = root.post("/admin/users/add", data={"csrf": csrf, "name": "dora", "display_name": " Dora D. "})
    assert added.status_code == 200 and added.headers["cache-control"] == "no-store"
    assert "Copy this token now." in added.text and "shown only on this page, this once" in added.text
    token = shown_tokens(added.text)["dora"]
    assert api_status(server, token) == 200
    stored = user_row(server, "dora")
    assert (stored["display_name"], stored["is_admin"], stored["disabled"]) == ("Dora D.", False, False)
    assert f"dora,{token}" in unescape(added.text)  # the CSV to copy
    assert token not in root.get("/admin/users").text  # never shown again

    organiser = root.post("/admin/users/add", data={"csrf": csrf, "name": "eve2", "admin": "1"})
    assert organiser.status_code == 200 and accounts.authenticate(server.deployment.service,
                                                                  shown_tokens(organiser.text)["eve2"]).is_admin

    taken = root.post("/admin/users/add", data={"csrf": csrf, "name": "dora", "display_name": "Other"})
    assert taken.status_code == 400 and "Nobody was added: a user called &#39;dora&#39; exists already" in taken.text
    assert 'value="Other"' in taken.text  # the form as sent
    assert user_row(server, "dora")["display_name"] == "Dora D." and api_status(server, token) == 200
    bad = root.post("/admin/users/add", data={"csrf": csrf, "name": "bad name"})
    assert bad.status_code == 400 and "invalid user name" in bad.text and user_row(server, "bad name") is None


def test_an_import_is_all_or_nothing_and_names_the_bad_line(server):
    root = server.client(server.add_user("root3", admin=True))
    server.add_user("taken3")
    csrf = csrf_of(root.get("/admin/users").text)

    def post(text: str = "", file: bytes | None = None, token: str = csrf) -> httpx.Response:
        files = {"file": ("team.csv", file, "text/csv")} if file is not None else {"file": ("", b"")}
        return root.post("/admin/users/import", data={"csrf": token, "text": text}, files=files)

    before = names(server)
    bad_name = post("name,display_name\nimp1,One\nimp 2,Two\n")
    assert bad_name.status_code == 400 and "Nothing was imported: line 3: invalid user name" in unescape(bad_name.text)
    assert "imp1,One" in unescape(bad_name.text)  # the pasted list, to correct
    taken = post("imp1,One\n\ntaken3,Again\n")
    assert taken.status_code == 400
    assert "line 3: a user called 'taken3' exists already; nothing was imported" in unescape(taken.text)
    repeated = post("imp1\nimp1\n")
    assert repeated.status_code == 400 and "line 2: &#39;imp1&#39; appears twice" in repeated.text
    assert post("\n\n").status_code == 400
    assert post(file=b"imp1,\xff\n").status_code == 400
    assert post("imp1\n", token="forged").status_code == 403
    assert names(server) == before  # nothing stored by any of them

    pasted = post("name,display_name\r\nimp1,Imp One\r\nimp2\r\n")
    assert pasted.status_code == 200 and "Copy these tokens now." in pasted.text
    tokens = shown_tokens(pasted.text)
    assert list(tokens) == ["imp1", "imp2"] and all(api_status(server, t) == 200 for t in tokens.values())
    assert user_row(server, "imp1")["display_name"] == "Imp One"

    uploaded = post("ignored-when-a-file-is-sent\n", file="\ufeffimp3,Imp Three\n".encode())
    assert uploaded.status_code == 200 and list(shown_tokens(uploaded.text)) == ["imp3"]
    assert "ignored-when-a-file-is-sent" not in names(server)


def test_disable_and_reset_token_act_only_once_confirmed(server):
    root_token = server.add_user("root4", admin=True)
    root = server.client(root_token)
    frank_token = server.add_user("frank4")
    frank = server.client(frank_token)
    csrf = csrf_of(root.get("/admin/users").text)
    frank_id = user_row(server, "frank4")["id"]

    asked = root.post("/admin/users/disable", data={"csrf": csrf, "user": "frank4"})
    assert asked.status_code == 200 and "<h1>Disable frank4?</h1>" in asked.text
    assert user_row(server, "frank4")["disabled"] is False and api_status(server, frank_token) == 200
    action, fields = confirm_form(asked.text)
    assert (action, fields) == ("/admin/users/disable", {"csrf": csrf, "user": "frank4", "confirm": "yes"})
    assert root.post(action, data={**fields, "csrf": "forged"}).status_code == 403
    assert user_row(server, "frank4")["disabled"] is False
    done = root.post(action, data=fields)
    assert done.status_code == 303 and done.headers["location"] == f"/admin/users?notice=disabled&id={frank_id}"
    assert "frank4 is disabled: its token answers 403" in root.get(done.headers["location"]).text
    assert user_row(server, "frank4")["disabled"] is True and api_status(server, frank_token) == 403
    assert frank.get("/submissions").status_code == 303  # the page session ended with it

    enabled = root.post("/admin/users/enable", data={"csrf": csrf, "user": "frank4"})
    assert enabled.status_code == 303 and api_status(server, frank_token) == 200
    assert user_row(server, "frank4")["disabled"] is False
    own = root.post("/admin/users/disable", data={"csrf": csrf, "user": "root4", "confirm": "yes"})
    assert own.status_code == 400 and user_row(server, "root4")["disabled"] is False
    missing = root.post("/admin/users/disable", data={"csrf": csrf, "user": "nobody4", "confirm": "yes"})
    assert missing.status_code == 404

    frank = server.client(frank_token)
    asked = root.post("/admin/users/reset-token", data={"csrf": csrf, "user": "frank4"})
    assert asked.status_code == 200 and "<h1>Give frank4 a new token?</h1>" in asked.text
    assert api_status(server, frank_token) == 200  # not yet
    action, fields = confirm_form(asked.text)
    reset = root.post(action, data=fields)
    assert reset.status_code == 200 and "Copy this token now." in reset.text
    new_token = shown_tokens(reset.text)["frank4"]
    assert new_token != frank_token
    assert api_status(server, frank_token) == 401 and api_status(server, new_token) == 200
    assert frank.get("/submissions").status_code == 303  # logged out everywhere
    assert root.get("/admin/users").status_code == 200  # the organiser's own session stays


def rules_values(html: str) -> dict[str, str]:
    return {k: unescape(v) for k, v in re.findall(r'<input type="text" id="rule-[a-z_]+" name="([a-z_]+)" value="([^"]*)"',
                                                    html)}


def test_the_contest_rules_form_stores_valid_settings_and_refuses_the_rest(server):
    service = server.deployment.service
    root = server.client(server.add_user("root5", admin=True))
    contest.set_rules(service, max_pending=3)
    form = root.get("/admin/contest")
    assert form.status_code == 200
    values = rules_values(form.text)
    assert values["max_pending"] == "3" and values["starts_at"] == "" and len(values) == 8
    csrf = csrf_of(form.text)

    changed = {**values, "name": "KDT 2026", "starts_at": "2026-12-06T09:00+08:00",
               "ends_at": "2026-12-06T17:00+08:00", "min_interval_seconds": "60", "max_per_hour": "20",
               "max_pending": ""}
    saved = root.post("/admin/contest", data={**changed, "csrf": csrf})
    assert saved.status_code == 303 and saved.headers["location"] == "/admin/contest?notice=saved"
    rules = contest.get_rules(service)
    assert (rules.name, rules.starts_at, rules.ends_at) == ("KDT 2026", datetime(2026, 12, 6, 1, tzinfo=UTC),
                                                            datetime(2026, 12, 6, 9, tzinfo=UTC))
    assert (rules.min_interval_seconds, rules.max_per_hour, rules.max_pending) == (60.0, 20, None)
    shown = rules_values(root.get(saved.headers["location"]).text)
    assert shown["starts_at"] == "2026-12-06T01:00+00:00" and shown["min_interval_seconds"] == "60"

    for field, text, words in (("max_per_hour", "0", "--max-per-hour must be between 1 and 1000000"),
                               ("max_per_hour", "5.5", "expected a whole number or `none`, got &#39;5.5&#39;"),
                               ("min_interval_seconds", "-1", "--min-interval must be between 0"),
                               ("ends_at", "2026-12-06T08:00+08:00", "must be after the start"),
                               ("starts_at", "2026-12-06T09:00", "has no UTC offset"),
                               ("freeze_at", "tomorrow", "not an ISO 8601 time")):
        refused = root.post("/admin/contest", data={**shown, field: text, "csrf": csrf})
        assert refused.status_code == 400 and "Nothing was saved (" in refused.text, (field, text)
        assert words in refused.text, (field, text, refused.text)
        assert rules_values(refused.text)[field] == text  # the form as sent
        if field != "ends_at":  # the window order names no single setting
            assert f'id="rule-{field}" name="{field}" value="{text}"' in refused.text.replace("&#39;", "'")
            assert f'aria-describedby="error-{field}"' in refused.text
        assert contest.get_rules(service) == rules  # nothing stored
    assert root.post("/admin/contest", data={**shown, "max_per_hour": "1", "csrf": "forged"}).status_code == 403
    assert contest.get_rules(service) == rules

    # saving the form unchanged after an unfreeze does not freeze again
    past = (datetime.now(UTC) - timedelta(hours=1)).replace(second=0, microsecond=0)
    contest.set_rules(service, freeze_at=past)
    contest.unfreeze(service)
    again = root.post("/admin/contest", data={**rules_values(root.get("/admin/contest").text), "csrf": csrf})
    assert again.headers["location"] == "/admin/contest?notice=unchanged"
    assert contest.get_rules(service).unfrozen is True and not contest.get_rules(service).frozen(datetime.now(UTC))
    contest.set_rules(service, **{key: None for key in contest.TEXT_SETTINGS})


def board_html(client: httpx.Client, server, must: str) -> str:
    """The scoreboard page once it shows ``must`` (the board is recomputed at most once a second)."""
    deadline = time.monotonic() + 10
    while True:
        html = client.get("/").text
        if must in html or time.monotonic() > deadline:
            return html
        time.sleep(0.3)


def own_row(html: str, user: str) -> str:
    return html.split(f'<tr data-user="{user}"')[1].split("</tr>")[0]


def test_the_frozen_board_shows_a_contestant_their_own_pending_submissions_only(server):
    service = server.deployment.service
    gina_token, hal_token = server.add_user("gina6", display_name="Gina"), server.add_user("hal6")
    root = server.client(server.add_user("root6", admin=True))
    freeze = datetime.now(UTC) - timedelta(minutes=30)
    insert_submission(server, "gina6", freeze - timedelta(minutes=20), total=40.0)
    insert_submission(server, "hal6", freeze - timedelta(minutes=10), total=30.0)
    for minutes in (5, 6):  # after the freeze: hidden from the public board
        insert_submission(server, "gina6", freeze + timedelta(minutes=minutes), total=90.0)
    insert_submission(server, "hal6", freeze + timedelta(minutes=7))
    contest.set_rules(service, freeze_at=freeze)
    try:
        gina, hal = server.client(gina_token), server.client(hal_token)
        seen = board_html(gina, server, "+2 pending")
        assert 'id="frozen-notice"' in seen
        assert '<span class="pending" title="2 submission(s) of yours since the freeze' in own_row(seen, "gina6")
        assert "pending" not in own_row(seen, "hal6") and "+1 pending" not in seen
        assert 'You have made 2 submission(s) since the freeze' in seen and 'data-own-user="gina6"' in seen
        assert ">40.00<" in own_row(seen, "gina6")  # the board itself stays frozen

        hals = board_html(hal, server, "+1 pending")
        assert "+1 pending" in own_row(hals, "hal6") and "+2 pending" not in hals
        for other in (server.client(), root):  # anonymous, and an organiser: nothing of anyone's
            html = other.get("/").text
            assert 'id="frozen-notice"' in html and "pending" not in html.split('id="scoreboard"')[1]
            assert 'id="own-pending"' not in html
        assert "pending" not in httpx.get(f"{server.url}/scoreboard.json").text

        contest.unfreeze(service)
        after = board_html(gina, server, ">90.00<")
        assert 'id="frozen-notice"' not in after and "+2 pending" not in after
    finally:
        contest.set_rules(service, freeze_at=None)
