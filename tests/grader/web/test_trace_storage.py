"""Traces are kept per graded point by the trusted judge step (grader.judging.pipeline.judge_traced ->
Service.finish_point -> db.traces), equal to a local profiled run, and replaced by each new result."""
from __future__ import annotations

from pathlib import Path

import pytest

import db
from grader.judging import trace_record as traces
from grader.config import load_settings
from grader.service import Service
from judger.grading import grade_point, kernel_for_task, load_submission
from judger.tasks import get_point, get_task
from judger.verdicts import PointResult, Verdict

SMALL = Path(__file__).resolve().parents[2] / "judger" / "fixtures" / "vadd_only.py"  # task 1 only


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


def test_a_stored_trace_carries_the_stall_reasons_through_the_round_trip():
    """Point 1.1 of vadd_only (256 jobs, jobs 0-3 traced): the stored entries are TraceEntry.row(), and
    the decoded record gives the profile's entries, stalls, explanation and Perfetto export back."""
    profile = traces.profile_for_judging()
    kernel = kernel_for_task(load_submission(SMALL), 1)
    assert grade_point(kernel, get_task(1), get_point(1, 1), profile=profile).verdict == "AC"
    record = traces.record_of(profile)
    job0 = record["traces"]["0"]
    # L_mem = 50, the add of 4096 elements 32 cycles: the loads in their slots, the add waits for y (RAW
    # of the second load, 52 - 3 cycles), the store for x (RAW of the add, 84 - 53)
    assert [e[:3] + e[5:] for e in job0] == [
        ["fill", 1, 1, "isu", 0, None], ["fill", 1, 1, "isu", 0, None], ["load", 1, 51, "isu", 0, None],
        ["load", 2, 52, "isu", 0, 2], ["add", 52, 84, "raw", 49, 3], ["store", 84, 134, "raw", 31, 4]]
    assert traces.job_trace(record, 0) == [e[:5] for e in job0]  # what the timeline draws
    back = traces.to_profile(traces.decode(traces.encode(record)))
    assert back.traces == {job: entries for job, entries in profile.traces.items()}
    for job in traces.traced_jobs(record):
        assert back.stalls(job) == profile.stalls(job)
    assert back.critical_path(0) == profile.critical_path(0)
    assert back.explain()["stall_cycles"] == profile.explain()["stall_cycles"]
    assert back.to_perfetto() == profile.to_perfetto()


def test_a_trace_stored_before_stall_reasons_loads_with_the_reasons_absent():
    old = {"v": 1, "kernel": "k", "kernel_cycles": 120, "num_sms": 1, "jobs": 1, "runs": [[0, 0, 120]],
           "traces": {"0": [["fill", 1, 1, "FREE", 5], ["load", 1, 11, "MEM", 6], ["add", 11, 12, "VXM", 7]]},
           "instructions": {"0": 3}, "summary": {}}
    record = traces.decode(traces.encode(old))
    assert record == old and traces.job_trace(record, 0) == old["traces"]["0"]
    profile = traces.to_profile(record)
    assert [e.cause for e in profile.traces[0]] == [None] * 3 and profile.traces[0][2].row() == ["add", 11, 12, "VXM", 7]
    assert [(s["op"], s["cause"], s["wait"], s["gate"]) for s in profile.stalls(0)] == [
        ("fill", None, None, None), ("load", None, None, None), ("add", None, None, None)]
    assert profile.critical_path(0) == []
    assert profile.explain()["stall_cycles"] == {"raw": 0, "waw": 0, "war": 0, "unit": 0}
    doc = profile.to_perfetto()
    add = next(e for e in doc["traceEvents"] if e["name"] == "add")
    assert add["args"] == {"job": 0, "line": 7, "issue": 11, "finish": 12}
    assert not [e for e in doc["traceEvents"] if e["ph"] in "sf"]


def test_a_stored_entry_with_a_malformed_reason_is_refused():
    good = ["add", 11, 12, "VXM", 7, "raw", 9, 0]
    for bad in (["add", 11, 12, "VXM", 7, "slow", 9, 0], ["add", 11, 12, "VXM", 7, "raw", -1, 0],
                ["add", 11, 12, "VXM", 7, "raw", 9, 1], ["add", 11, 12, "VXM", 7, "raw"]):
        for entry, ok in ((good, True), (bad, False)):
            record = {"v": 1, "kernel": "k", "kernel_cycles": 12, "num_sms": 1, "jobs": 1, "runs": [[0, 0, 12]],
                      "traces": {"0": [["load", 1, 11, "MEM", 6, "isu", 0, None], entry]}, "summary": {}}
            if ok:
                assert traces.decode(traces.encode(record)) == record
            else:
                with pytest.raises(traces.TraceFormatError, match="an entry of job 0"):
                    traces.decode(traces.encode(record))
