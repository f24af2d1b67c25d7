"""Traces are kept per graded point by the trusted judge step (grader.pipeline.judge_traced ->
Service.finish_point -> db.traces), equal to a local profiled run, and replaced by each new result."""
from __future__ import annotations

from pathlib import Path

import db
from grader import traces
from grader.config import load_settings
from grader.service import Service
from judger.grading import grade_point, kernel_for_task, load_submission
from judger.tasks import get_point, get_task
from judger.verdicts import PointResult, Verdict

SMALL = Path(__file__).resolve().parents[1] / "judger" / "fixtures" / "vadd_only.py"  # task 1 only


def local_record(task_id: int, index: int) -> dict:
    profile = traces.profile_for_judging()
    kernel = kernel_for_task(load_submission(SMALL), task_id)
    result = grade_point(kernel, get_task(task_id), get_point(task_id, index), profile=profile)
    assert result.verdict == "AC"
    return traces.record_of(profile)


def test_the_judge_stores_each_points_trace_and_a_rejudge_replaces_it(tmp_path):
    service = Service(load_settings(data_dir=tmp_path / "var", workers=2))
    try:
        sid = service.submit(SMALL.read_bytes(), "vadd_only.py", "alice")
        state = service.status(sid)
        assert state["status"] == "done"
        assert [p["verdict"] for p in state["points"]] == ["AC", "AC"] + ["CE"] * 8
        with service.session() as session:
            assert db.traced_points(session, sid) == {(1, 0), (1, 1)}  # CE points have none
            stored = {p: traces.decode(db.get_trace(session, sid, *p)) for p in [(1, 0), (1, 1)]}
        for (task, index), record in stored.items():
            local = local_record(task, index)
            assert record == traces.decode(traces.encode(local))
            assert record["kernel_cycles"] == state["points"][index]["cycles"]
        assert stored[(1, 1)]["jobs"] == 256 and traces.traced_jobs(stored[(1, 1)]) == [0, 1, 2, 3]
        assert [e[0] for e in traces.job_trace(stored[(1, 1)], 0)] == ["fill", "fill", "load", "load", "add", "store"]

        with service.session() as session:  # a rejudge: the new result of each point brings its own trace
            db.store_trace(session, sid, 1, 0, b"stale")
            db.store_trace(session, sid, 2, 0, b"stale")
        service.rejudge([sid])
        with service.session() as session:
            assert db.traced_points(session, sid) == {(1, 0), (1, 1)}
            assert traces.decode(db.get_trace(session, sid, 1, 0)) == stored[(1, 0)]
    finally:
        service.close()


def test_a_result_without_a_trace_deletes_the_old_one(tmp_path):
    service = Service(load_settings(data_dir=tmp_path / "var", workers=1))
    try:
        sid = service.accept(SMALL.read_bytes(), "vadd_only.py", "bob")
        with service.session() as session:
            db.store_trace(session, sid, 1, 0, b"old")
        service.finish_point(sid, PointResult(1, 0, Verdict.CE, message="x"), "w")
        with service.session() as session:
            assert db.get_trace(session, sid, 1, 0) is None
    finally:
        service.close()
