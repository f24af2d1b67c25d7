"""Grading only what changed (issue 33): a test point whose compiled kernel this judge already simulated
takes the stored result, marked reused, bit for bit what a fresh simulation gives (the service, on SQLite
and PostgreSQL, and ``kdt-grade local``); an identical file is not compiled again; ``--fresh`` reuses
nothing; only verdicts no machine changes are stored."""
import json

from sqlalchemy import select

import db
from db.reuse import ReusableResult
from service_testlib import FIXTURES, clean_env, run_cli

QUICK = FIXTURES / "quick_vadd.py"  # task 1 AC, tasks 2-4 CE
OUT_OF_BOUNDS = FIXTURES.parents[2] / "judger" / "fixtures" / "out_of_bounds.py"  # task 1 RE
FIELDS = ("verdict", "cycles", "score", "message", "utilisation")


def _graded(service, data: bytes, name: str, user: str) -> tuple[int, dict]:
    submission_id = service.accept(data, name, user)
    service.grade_embedded(submission_id)
    state = service.status(submission_id)
    assert state["status"] in ("done", "failed"), state
    return submission_id, state


def _outcomes(state: dict) -> list:
    return [tuple(p[f] for f in FIELDS) for p in state["points"]]


def _reused(state: dict) -> list:
    return [(p["task"], p["point"]) for p in state["points"] if p["reused"]]


def _entries(service) -> dict:
    with service.session() as session:
        return {r.key: r for r in session.scalars(select(ReusableResult))}


def _traces(service, submission_id: int) -> dict:
    with service.session() as session:
        return db.get_traces(session, submission_id)


def test_an_identical_kernel_takes_the_stored_result_and_a_fresh_rejudge_simulates_it(make_deployment,
                                                                                         database_url):
    service = make_deployment(database_url=database_url).service
    first, fresh = _graded(service, QUICK.read_bytes(), "quick.py", "alice")
    assert _reused(fresh) == [] and [p["verdict"] for p in fresh["points"][:2]] == ["AC", "AC"]
    entries = _entries(service)
    assert sorted((e.task, e.point, e.verdict) for e in entries.values()) == [(1, 0, "AC"), (1, 1, "AC")]  # no CE
    assert all(e.trace for e in entries.values()) and all(e.simulate_seconds > 0 for e in entries.values())

    # the same kernel in another file (a comment at a line's end), by another contestant: not simulated
    variant = QUICK.read_text().replace("kdt.add(x, y, x)", "kdt.add(x, y, x)  # c = a + b").encode()
    second, copied = _graded(service, variant, "mine.py", "bob")
    assert _reused(copied) == [(1, 0), (1, 1)]
    assert _outcomes(copied) == _outcomes(fresh) and copied["total"] == fresh["total"]
    assert _traces(service, second) == _traces(service, first) and len(_traces(service, first)) == 2
    assert [p["wall_seconds"] for p in copied["points"][:2]] == [0.0, 0.0]
    assert _entries(service).keys() == entries.keys()

    # the identical file: its compile is copied as well (the stored compiled points, compile time included)
    third, same = _graded(service, QUICK.read_bytes(), "copy.py", "carol")
    with service.session() as session:
        assert [db.get_compiled(session, third, 1, p) for p in (0, 1)] == \
            [db.get_compiled(session, first, 1, p) for p in (0, 1)]
    assert _reused(same) == [(1, 0), (1, 1)] and _outcomes(same) == _outcomes(fresh)

    # another kernel (blocks of 2048): simulated, and stored under new keys
    changed = QUICK.read_text().replace("4096", "2048").encode()
    _, other = _graded(service, changed, "halves.py", "alice")
    assert _reused(other) == [] and other["points"][1]["cycles"] != fresh["points"][1]["cycles"]
    assert len(_entries(service)) == 4

    # a rejudge with --fresh simulates every point again, with the same results; a plain one reuses
    assert service.rejudge([third], fresh=True) == [third]
    again = service.status(third)
    assert _reused(again) == [] and _outcomes(again) == _outcomes(fresh)
    assert service.rejudge([third]) == [third]
    assert _reused(service.status(third)) == [(1, 0), (1, 1)]


def test_runtime_errors_are_reused_with_their_message_and_the_setting_turns_reuse_off(make_deployment,
                                                                                      sqlite_url):
    service = make_deployment(database_url=sqlite_url).service
    _, first = _graded(service, OUT_OF_BOUNDS.read_bytes(), "oob.py", "alice")
    assert [p["verdict"] for p in first["points"][:2]] == ["RE", "RE"] and "OutOfBoundsError" in \
        first["points"][0]["message"]
    _, second = _graded(service, OUT_OF_BOUNDS.read_bytes() + b"\n", "oob2.py", "bob")
    assert _reused(second) == [(1, 0), (1, 1)] and _outcomes(second) == _outcomes(first)

    off = make_deployment(database_url=sqlite_url, reuse_results=False).service
    _, third = _graded(off, OUT_OF_BOUNDS.read_bytes(), "oob3.py", "carol")
    assert _reused(third) == [] and _outcomes(third) == _outcomes(first)
    stricter = make_deployment(database_url=sqlite_url, sim_timeout_seconds=19).service  # another limit: other keys
    _, fourth = _graded(stricter, OUT_OF_BOUNDS.read_bytes(), "oob4.py", "dave")
    assert _reused(fourth) == [] and _outcomes(fourth) == _outcomes(first)


def test_kdt_grade_local_reuses_its_own_store_unless_told_not_to(tmp_path):
    env = {**clean_env(), "KDT_GRADE_CACHE_DIR": str(tmp_path / "cache"), "KDT_GRADE_WORKERS": "2"}

    def local(*flags) -> dict:
        proc = run_cli(["local", str(QUICK), "--task", "1", "--json", *flags], env)
        return json.loads(proc.stdout)

    store = tmp_path / "cache" / "results.sqlite3"
    plain = local("--no-reuse")
    assert not store.exists() and [p["reused"] for p in plain["points"]] == [False, False]
    first, second, fresh = local(), local(), local("--fresh")
    assert store.exists()
    assert [p["reused"] for r in (first, second, fresh) for p in r["points"]] == [False, False, True, True,
                                                                                  False, False]
    for report in (first, second, fresh):
        assert [tuple(p[f] for f in FIELDS) for p in report["points"]] == \
            [tuple(p[f] for f in FIELDS) for p in plain["points"]] and report["total"] == plain["total"]
    text = run_cli(["local", str(QUICK), "--task", "1"], {**env, "COLUMNS": "200"}).stdout
    assert "reused, not simulated again (this judge graded the same kernel before, same result): 1.0, 1.1" in text
