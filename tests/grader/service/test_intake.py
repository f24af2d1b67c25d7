"""Intake: accepted files are stored (file + row); refused ones leave nothing behind (no file, no row)."""
import json

import pytest

import db
from grader.runtime import storage
from grader.judging.pipeline import Rejected

from service_testlib import BASELINE


@pytest.fixture
def deployment(make_deployment, sqlite_url):
    return make_deployment(database_url=sqlite_url, submission_max_bytes=4096)


def _stored_files(deployment):
    root = deployment.data_dir / "submissions"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def _rows(deployment):
    with deployment.service.session() as session:
        return db.all_submissions(session)


def test_an_accepted_file_is_stored_by_hash_and_in_the_database(deployment):
    data = b"import kdt\n\ndef get_kernel(task_id):\n    return None\n"
    submission_id = deployment.service.accept(data, "/some/dir/kernel.py", "alice")
    sha = storage.sha256_of(data)
    assert storage.load(deployment.data_dir, sha) == data
    with deployment.service.session() as session:
        row = db.get_submission(session, submission_id, include_source=True)
    assert (row["file_name"], row["sha256"], row["source"]) == ("kernel.py", sha, data.decode())
    assert deployment.service.source(submission_id) == data
    assert deployment.status(submission_id)["status"] == "queued"


def test_a_file_with_a_byte_order_mark_is_stored_as_sent_and_graded(make_deployment, sqlite_url):
    """Python reads a UTF-8 file that starts with a byte-order mark; the stored text keeps the mark, so
    it encodes back to exactly the bytes whose sha256 was recorded (dropping it made every point IE)."""
    deployment = make_deployment(database_url=sqlite_url)
    data = b"\xef\xbb\xbf" + BASELINE.read_bytes()
    submission_id = deployment.service.accept(data, "bom.py", "alice")
    assert deployment.service.source(submission_id) == data
    totals = deployment.service.grade_embedded(submission_id, points=[(1, 0), (2, 0)])
    assert totals is None  # two points only: the submission is not complete
    state = deployment.status(submission_id)
    graded = {(p["task"], p["point"]): p["verdict"] for p in state["points"] if p["verdict"]}
    assert graded == {(1, 0): "AC", (2, 0): "AC"}


@pytest.mark.parametrize("data, reason", [
    (b"x = 1\n" + b"#" * 5000, "the limit is 4096 bytes"),
    (b"x = '\xff\xfe'\n", "not UTF-8"),
    (b"def get_kernel(:\n", "not valid Python: line 1"),
    (b"   \n", "empty"),
    (b"x = 1\x00\n", "is not valid Python: source code string cannot contain null bytes"),
    (b"x = " + b"-" * 3000 + b"1\n", "cannot be parsed as Python: it is nested too deeply"),
])
def test_refused_files_store_nothing(deployment, data, reason):
    with pytest.raises(Rejected, match=reason):
        deployment.service.accept(data, "kernel.py", "alice")
    assert _stored_files(deployment) == []
    assert _rows(deployment) == []


@pytest.mark.parametrize("file_name, user", [("kernel.py", ""), ("kernel.py", "u" * 101), ("", "alice"),
                                             ("ok.py\x1b[2K\x1b]52;c;ZW\x07", "alice"), ("a\rb.py", "alice")])
def test_bad_names_are_refused_before_anything_is_stored(deployment, file_name, user):
    with pytest.raises(Rejected):
        deployment.service.accept(b"x = 1\n", file_name, user)
    assert _stored_files(deployment) == [] and _rows(deployment) == []


def test_the_submit_command_refuses_clearly_and_stores_nothing(deployment, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"def f(:\n    pass\n")
    big = tmp_path / "big.py"
    big.write_bytes(BASELINE.read_bytes() * 2)  # over the 4096-byte limit of this deployment
    for path, reason in ((bad, "not valid Python"), (big, "the limit is 4096 bytes")):
        proc = deployment.cli("submit", path, "--user", "alice", check=False)
        assert proc.returncode == 2, proc.stderr
        assert "refused" in proc.stderr and reason in proc.stderr and "Nothing was stored" in proc.stderr
        as_json = deployment.cli("submit", path, "--user", "alice", "--json", check=False)
        refusal = json.loads(as_json.stdout)
        assert as_json.returncode == 2 and refusal["error"] == "rejected" and reason in refusal["message"]
    assert _stored_files(deployment) == [] and _rows(deployment) == []


def test_intake_with_the_database_down_is_unavailable_and_leaves_nothing(make_deployment, postgresql_url):
    """A cut connection to PostgreSQL (our own proxy in front of it): one clear error, no file, no row."""
    from sqlalchemy.engine import make_url

    from grader.errors import ServiceUnavailable
    from tests.faults import TCPProxy

    direct = make_url(postgresql_url)
    proxy = TCPProxy(direct.host, direct.port or 5432)
    try:
        proxied = direct.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        deployment = make_deployment(database_url=proxied, broker_url="redis://127.0.0.1:1/0")
        deployment.service.init_db()
        kept = deployment.service.accept(b"x = 1\n", "kept.py", "alice")
        proxy.cut()
        with pytest.raises(ServiceUnavailable, match=r"^the database is unreachable: .*nothing was stored"):
            deployment.service.accept(b"x = 2\n", "kernel.py", "alice")
        with pytest.raises(ServiceUnavailable, match="the database is unreachable"):
            deployment.service.rejudge([kept])
        proxy.restore()
        assert [p.name for p in _stored_files(deployment)] == [f"{storage.sha256_of(b'x = 1' + bytes([10]))}.py"]
        assert [r["submission_id"] for r in _rows(deployment)] == [kept]
        with deployment.service.session() as session:
            assert db.list_outbox(session)[0]["key"] == f"compile {kept}"
            assert db.get_submission(session, kept)["generation"] == 0  # the failed rejudge changed nothing
    finally:
        proxy.close()
