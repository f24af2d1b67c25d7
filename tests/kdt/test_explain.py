"""Why a kernel is slow (kdt.simulator.explain, Profile.stalls/critical_path/bound/explain): the causes,
waits and gates of the statement's worked example and of the conformance cases for WAR, WAW, per-element
dependencies, a busy unit and several jobs on one SM; stall cycles add up to the issue gaps and the
critical path to the job's cycles. (tests/kdt/test_timing.py checks the causes of 300 random kernels
against an element-by-element model.)"""
import pytest
import torch

import kdt
from conformance import CASES, EXPECTED, load_case, run_case
from kdt.simulator import explain


def holding(prof, job=0):
    return [(s["op"], s["issue"], s["finish"], s["cause"], s["wait"], s["gate"] and s["gate"]["op"])
            for s in prof.stalls(job) if s["holds_issue"]]


def test_the_statements_worked_example_has_the_causes_the_statement_describes():
    """[1] add and [3] mul wait on RAW of [0] load and [1] add; [4] sub waits for the VXM (busy with
    [3]); [2] matmul issues in its slot. L_mem = 100: 1126 cycles, the matmul's 1024 on the path."""
    r = run_case("c01_statement_example")
    prof = r["profile"]
    assert r["cycles"] == 1126
    assert holding(prof) == [("load", 1, 101, "isu", 0, None), ("add", 101, 117, "raw", 99, "load"),
                             ("matmul", 102, 1126, "isu", 0, "add"), ("mul", 117, 133, "raw", 14, "add"),
                             ("sub", 133, 134, "unit", 15, "mul")]
    assert prof.stalls(0)[9]["gate"] == {"index": 8, "op": "load", "line": 23, "finish": 101}
    path = prof.critical_path(0)
    assert [(link["op"], link["via"], link["cycles"]) for link in path] == [
        ("start", "start", 1), ("load", "finish", 100), ("add", "issue", 1), ("matmul", "finish", 1024)]
    assert sum(link["cycles"] for link in path) == 1126
    ex = prof.explain()
    assert ex["stall_cycles"] == {"raw": 113, "waw": 0, "war": 0, "unit": 15}
    assert ex["bound"] == {"units": {"ISU": 5, "VXM": 33, "MXM": 1024}, "unit": "MXM", "cycles": 1024,
                           "complete": True}
    assert [(e["line"], e["ops"], e["cycles"], e["causes"], e["other"]) for e in ex["top_lines"]["caused"]] == [
        (23, ["load"], 99, {"raw": 99}, [24]), (26, ["mul"], 15, {"unit": 15}, [27]), (24, ["add"], 14, {"raw": 14}, [26])]
    assert [(e["line"], e["cycles"], e["other"]) for e in ex["top_lines"]["suffered"]] == [
        (24, 99, [23]), (27, 15, [26]), (26, 14, [24])]
    assert prof.summary()["bound"]["cycles"] == 1024


def test_write_after_read_waits_for_the_last_reader():
    """c07: the second load into a waits for the matmul still reading a (511 cycles of WAR)."""
    prof = run_case("c07_write_after_read")["profile"]
    assert holding(prof) == [("load", 1, 21, "isu", 0, None), ("load", 2, 22, "isu", 0, "load"),
                             ("matmul", 22, 534, "raw", 19, "load"), ("load", 534, 554, "war", 511, "matmul"),
                             ("matmul", 554, 1066, "raw", 19, "load"), ("store", 1066, 1086, "raw", 511, "matmul")]


def test_write_after_write_and_a_short_reader_that_overwrites_the_read_stamp():
    """c08: the add into the loaded tile waits for the load's write (WAW); the second add for the first
    add still reading its output's elements (WAR, 3 cycles)."""
    prof = run_case("c08_write_after_write")["profile"]
    assert holding(prof) == [("load", 1, 61, "isu", 0, None), ("add", 61, 65, "waw", 59, "load"),
                             ("add", 65, 69, "war", 3, "add"), ("store", 66, 126, "isu", 0, "add")]


def test_per_element_dependencies_and_a_busy_unit():
    """c06: the adds read rows of a loaded early (ready at 101) but wait for the VXM, busy with the second
    exp until 258 (unit); that exp waits for the first one's writes of big2 (WAW wins the tie with the
    busy VXM: CAUSES order)."""
    prof = run_case("c06_per_element_dependencies")["profile"]
    assert holding(prof)[1:5] == [("exp", 2, 130, "isu", 0, "load"), ("exp", 130, 258, "waw", 127, "exp"),
                                  ("load", 131, 231, "isu", 0, "exp"), ("add", 258, 259, "unit", 126, "exp")]
    assert sum(link["cycles"] for link in prof.critical_path(0)) == 361


def test_the_issue_unit_waits_for_a_busy_mxm():
    """c04: the second matmul waits 1023 cycles for the MXM (unit), gated by the first matmul."""
    prof = run_case("c04_isu_waits_for_busy_unit")["profile"]
    assert ("matmul", 1090, 2114, "unit", 1023, "matmul") in holding(prof)
    assert prof.bound()["units"]["MXM"] == 2048 and prof.bound()["cycles"] == 2048


def test_the_bound_sums_the_units_of_the_jobs_on_the_busiest_sm():
    """c03: 6 jobs on 2 SMs; with every job traced, the bound is the busiest SM's ISU or VXM cycles and
    never above the kernel's cycles."""
    m = load_case("c03_greedy_sm_assignment")
    io = m.make_io(torch.Generator().manual_seed(1234))
    prof = kdt.Profile()
    cycles = kdt.launch_kernel(m.kernel.compile(dict(m.TASK_ARGS), io), io, kdt.TPUSpec(**m.TPU), profile=prof)
    b = prof.bound()
    assert cycles == EXPECTED["c03_greedy_sm_assignment"]["cycles"] and b["complete"]
    per_sm = {}
    for run in prof.runs:
        per_sm.setdefault(run.sm, []).append(explain.unit_busy(prof._job(run.job)))
    expect = {u: max(sum(j[u] for j in jobs) for jobs in per_sm.values()) for u in ("ISU", "VXM", "MXM")}
    assert b["units"] == expect and b["cycles"] == max(expect.values()) <= cycles


@pytest.mark.parametrize("name", [c for c in CASES if EXPECTED[c]["error"] is None])
def test_stall_cycles_add_up_to_the_issue_gaps_and_the_path_to_the_job(name):
    r = run_case(name)
    prof = r["profile"]
    for job in prof.traces:
        issues = [s["issue"] for s in prof.stalls(job) if s["holds_issue"]]
        gaps = sum(b - a - 1 for a, b in zip([0] + issues, issues))
        assert sum(explain.stall_cycles(prof._job(job)).values()) == gaps
        assert sum(link["cycles"] for link in prof.critical_path(job)) == \
            next(run.cycles for run in prof.runs if run.job == job)
        for s in prof.stalls(job):  # a gate set the winning term: its finish (a write or read stamp, the unit's
            if s["cause"] != "isu":  # free cycle) is the issue cycle
                assert s["gate"]["finish"] == s["issue"], s


def test_an_untraced_job_has_no_stalls():
    r = run_case("c03_greedy_sm_assignment")
    with pytest.raises(KeyError):
        r["profile"].stalls(5)


def test_the_lines_a_line_holds_up_are_kept_apart_by_cause():
    """c20 (double-buffered matmul, 4 jobs on 2 SMs): the matmul of line 34 holds up 16,368 cycles over the
    4 jobs, through three causes with their own waiting lines: the next load into its operand (line 32,
    WAR 8,184), its own next accumulate (line 34, WAW 4,092) and the store of its result (line 35, RAW
    4,092). A fresh reader of `--explain` took the store for a WAR wait when the causes were pooled."""
    prof = run_case("c20_double_buffered_matmul")["profile"]
    (first, second) = prof.explain(top=2)["top_lines"]["caused"]
    assert (first["line"], first["cycles"], first["causes"]) == (34, 16368, {"war": 8184, "waw": 4092, "raw": 4092})
    assert first["by_cause"] == [{"cause": "war", "cycles": 8184, "lines": [32]},
                                 {"cause": "waw", "cycles": 4092, "lines": [34]},
                                 {"cause": "raw", "cycles": 4092, "lines": [35]}]
    assert sum(b["cycles"] for b in first["by_cause"]) == first["cycles"]
    assert second["by_cause"] == [{"cause": "raw", "cycles": 1188, "lines": [34]}]
