"""The left-overs of the contest-day review, each checked in this process (``TestClient`` over a SQLite
database, nothing graded): a 404 page keeps the caller's header (logged in: their name and links; logged
out: the login link), the admin page links to the users and the contest rules pages, and the frozen
board's notice of one's own submissions since the freeze says so when one has no row on it yet. (The
organisers' badge: ``tests/grader/service/test_messages_service.py``; the phone's header:
``test_browser_compare.py``.)"""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from grader.config import load_settings
from grader.service import Service, accounts, contest
from grader.web.app import create_app
from pages_testlib import csrf_of
from test_compare import insert_graded, text_of


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """An app over a fresh database with the tokens of dora, eve (contestants) and an organiser."""
    settings = load_settings(data_dir=tmp_path_factory.mktemp("review") / "var", workers=1)
    service = Service(settings)
    service.init_db()
    tokens = {name: accounts.add_user(service, name, is_admin=name == "root")[1] for name in ("dora", "eve", "root")}
    app = create_app(settings)
    yield {"service": service, "app": app, "tokens": tokens}
    app.state.service.close()
    service.close()


def client(site, name: str | None = None) -> TestClient:
    """A page client, logged in as ``name`` when given."""
    made = TestClient(site["app"], follow_redirects=False)
    if name is not None:
        form = made.get("/login")
        assert made.post("/login", data={"token": site["tokens"][name], "csrf": csrf_of(form.text)}).status_code == 303
    return made


def header(html: str) -> str:
    return text_of(html.split('<header class="top">')[1].split("</header>")[0])


def test_a_404_page_keeps_the_callers_header(site):
    mine = client(site, "dora").get("/no/such/page", headers={"accept": "text/html"})
    assert mine.status_code == 404 and "There is no such page." in mine.text
    assert "My submissions" in header(mine.text) and "dora" in header(mine.text) and "Log in" not in header(mine.text)
    bad_id = client(site, "dora").get("/submissions/0", headers={"accept": "text/html"})
    assert bad_id.status_code == 404 and "Log out" in header(bad_id.text)
    nobody = client(site).get("/no/such/page", headers={"accept": "text/html"})
    assert nobody.status_code == 404
    assert header(nobody.text).endswith("Log in") and "Rules" in header(nobody.text)
    assert "My submissions" not in header(nobody.text)


def test_the_admin_page_links_to_the_users_and_the_contest_rules(site):
    page = client(site, "root").get("/admin")
    assert page.status_code == 200
    nav = page.text.split('id="admin-nav"')[1].split("</nav>")[0]
    assert 'href="/admin/users"' in nav and 'href="/admin/contest"' in nav


def test_the_frozen_board_tells_a_contestant_of_their_own_submissions_since_the_freeze(site):
    service, now = site["service"], datetime.now(UTC)
    freeze = now - timedelta(minutes=30)
    insert_graded(service, "dora", {(1, 0): ("AC", 536, 100.0, False)}, freeze - timedelta(minutes=5))
    insert_graded(service, "dora", {(1, 0): ("AC", 500, 100.0, False)}, freeze + timedelta(minutes=5))
    insert_graded(service, "eve", {(1, 0): ("AC", 500, 100.0, False)}, freeze + timedelta(minutes=10))
    contest.set_rules(service, freeze_at=freeze)
    try:
        dora = client(site, "dora").get("/").text
        notice = text_of(dora.split('id="own-pending"')[1].split("</p>")[0])
        assert "You have made 1 submission(s) since the freeze" in notice and "your row is marked +1 pending" in notice
        assert 'tr data-user="dora" class="own"' in dora
        eve = client(site, "eve").get("/").text  # her only submission came after the freeze: no row
        notice = text_of(eve.split('id="own-pending"')[1].split("</p>")[0])
        assert "You have made 1 submission(s) since the freeze" in notice
        assert "you are not on it yet" in notice and "your row" not in notice and '<tr data-user="eve"' not in eve
        assert 'id="own-pending"' not in client(site).get("/").text
    finally:
        contest.set_rules(service, freeze_at=None)
