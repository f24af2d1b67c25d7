"""Helpers of the page tests: a started contest server (``weblib.Server`` over a ``Deployment``: real
``kdt-grade serve``, embedded grading, SQLite) with page clients logged in through ``POST /login``."""
from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from grader.service import accounts
from tests.grader.service.service_testlib import ROOT, wait_until  # noqa: F401  (re-exported for the tests)
from weblib import VADD_ONLY, Server  # noqa: F401

EXAMPLES = ROOT / "submissions" / "examples"


class Pages:
    """A running server of one deployment, seen as a browser sees it."""

    def __init__(self, deployment, server: Server):
        self.deployment, self.server, self.url = deployment, server, server.url

    def add_user(self, name: str, admin: bool = False, display_name: str | None = None) -> str:
        """Create an account and return its token."""
        return accounts.add_user(self.deployment.service, name, display_name, is_admin=admin)[1]

    def cli(self, *args) -> str:
        return self.deployment.cli(*args).stdout

    def log(self) -> str:
        return self.server.log()

    def client(self, token: str | None = None) -> httpx.Client:
        """A page client (no redirects followed); with ``token``, logged in (session cookie)."""
        client = httpx.Client(base_url=self.url, timeout=30, follow_redirects=False)
        if token is not None:
            login(client, token)
        return client


def login(client: httpx.Client, token: str) -> httpx.Response:
    form = client.get("/login")
    response = client.post("/login", data={"token": token, "csrf": csrf_of(form.text), "next": "/submissions"})
    assert response.status_code == 303, response.text
    return response


def csrf_of(html: str) -> str:
    """The first CSRF hidden field of a page (the login form's, or the logout form's when logged in)."""
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def submit_page(client: httpx.Client, path: Path = VADD_ONLY, name: str | None = None) -> httpx.Response:
    """Upload through the /submit form (its CSRF token is a hidden field of the multipart body)."""
    form = client.get("/submit")
    assert form.status_code == 200
    upload = re.search(r'<form method="post" action="/submit" enctype="multipart/form-data">(.*?)</form>',
                       form.text, re.S).group(1)
    return client.post("/submit", data={"csrf": csrf_of(upload)},
                       files={"file": (name or path.name, path.read_bytes(), "text/x-python")})


def wait_done(client: httpx.Client, submission_id: int) -> dict:
    """Poll the page's live document until the submission is done or failed."""
    def done():
        doc = client.get(f"/submissions/{submission_id}/status.json").json()
        return doc if doc["status"] in ("done", "failed") else None
    return wait_until(done, 300, f"submission {submission_id} to be graded", interval=0.5)


@pytest.fixture
def server(make_deployment, start_server):
    """A started server over a fresh data directory (stopped after the test)."""
    deployment = make_deployment()
    return Pages(deployment, start_server(deployment))


@contextlib.contextmanager
def module_server(tmp_path_factory, name: str, **settings) -> Iterator[Pages]:
    """A started server over a fresh data directory of its own, for the tests of one module that share it
    (a server start costs seconds of CPU: the fork server's and the warm template's imports); ``settings``
    are the deployment's (``Settings`` fields: the server's ``KDT_GRADE_*`` and its ``Service``'s). The
    tests sharing one keep apart by their users' names (each test's own), count what they themselves
    stored, and mark themselves with one ``xdist_group`` (one worker, one start)."""
    from tests.grader.service.service_testlib import Deployment

    deployment = Deployment(tmp_path_factory.mktemp(name), None, None, **settings)
    server = Server(deployment)
    try:
        yield Pages(deployment, server)
    finally:
        server.stop()
        deployment.service.close()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    """One started server for the tests of a module that grade nothing and only read (error pages, bad
    ids): ``module_server``."""
    with module_server(tmp_path_factory, "shared-server") as pages:
        yield pages
