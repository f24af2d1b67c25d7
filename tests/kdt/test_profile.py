"""kdt.Profile: per-instruction traces, job placement, the utilisation summary and the Perfetto export."""
import inspect
import json

import pytest
import torch

import kdt
from conformance import load_case, run_case
from kdt.simulator.profile import JobRun, TraceEntry


def lines_of(fn, *needles):
    """File line numbers of the first source line of ``fn`` containing each needle."""
    fn = getattr(fn, "fn", fn)
    src, first = inspect.getsourcelines(fn)
    out = []
    for needle in needles:
        out.append(next(first + i for i, line in enumerate(src) if needle in line))
    return out


def all_lines(fn, needle):
    """File line numbers of every source line of ``fn`` containing ``needle``."""
    fn = getattr(fn, "fn", fn)
    src, first = inspect.getsourcelines(fn)
    return [first + i for i, line in enumerate(src) if needle in line]


def run_c04(profile):
    m = load_case("c04_isu_waits_for_busy_unit")
    io = m.make_io(torch.Generator().manual_seed(1234))
    cycles = kdt.launch_kernel(m.kernel.compile(dict(m.TASK_ARGS), io), io, kdt.TPUSpec(**m.TPU), profile=profile)
    return m, cycles


def test_trace_entries_carry_op_cycles_unit_and_the_source_line():
    prof = kdt.Profile()
    m, cycles = run_c04(prof)
    assert cycles == 2114
    allocs = lines_of(m.kernel, "big = ", "big2 = ", "small = ", "small2 = ", "m1 = ", "m2 = ", "m3 = ", "m4 = ")
    exp_, add, store = lines_of(m.kernel, "kdt.exp(", "kdt.add(", "kdt.store(")
    load1, load2 = all_lines(m.kernel, "kdt.load(")
    mm1, mm2 = all_lines(m.kernel, "kdt.matmul(")
    # the reasons: cause, wait (cycles), gate (trace index of the instruction waited for)
    assert prof.traces == {0: [TraceEntry("fill", 1, 1, "FREE", line, "isu", 0, None) for line in allocs] + [
        TraceEntry("exp", 1, 65, "VXM", exp_, "isu", 0, None),
        TraceEntry("load", 2, 32, "MEM", load1, "isu", 0, 8),
        TraceEntry("add", 65, 66, "VXM", add, "unit", 62, 8),
        TraceEntry("matmul", 66, 1090, "MXM", mm1, "isu", 0, 10),
        TraceEntry("matmul", 1090, 2114, "MXM", mm2, "unit", 1023, 11),
        TraceEntry("load", 1091, 1121, "MEM", load2, "isu", 0, 12),
        TraceEntry("store", 1092, 1122, "MEM", store, "isu", 0, 13),
    ]}
    assert prof.traces[0][10].row() == ["add", 65, 66, "VXM", add, "unit", 62, 8]
    assert TraceEntry(*prof.traces[0][10].row()) == prof.traces[0][10]
    assert TraceEntry("add", 65, 66, "VXM", add).row() == ["add", 65, 66, "VXM", add]  # no reason: 5 fields
    assert load2 == load1 + 4 and mm2 == mm1 + 1  # as in the case file
    entry = prof.traces[0][8]
    assert (entry.op, entry.issue, entry.finish, entry.unit, entry.line) == ("exp", 1, 65, "VXM", exp_)
    assert prof.trace(0)[8:] == [["exp", 1, 65], ["load", 2, 32], ["add", 65, 66], ["matmul", 66, 1090],
                                 ["matmul", 1090, 2114], ["load", 1091, 1121], ["store", 1092, 1122]]
    assert prof.runs == [JobRun(0, 0, 0, 2114)]
    assert prof.kernel_cycles == 2114 and prof.num_sms == 1


def test_summary_of_c04():
    prof = kdt.Profile()
    run_c04(prof)
    s = prof.summary()
    # VXM: exp 64 + add 1; MXM: 1024 + 1024; MEM: union of [2,32], [1091,1121], [1092,1122] = 30 + 31;
    # ISU: exp, load, add, matmul, matmul, load, store
    busy = {"VXM": 65, "MXM": 2048, "MEM": 61, "ISU": 7}
    assert s["busy_cycles"] == busy
    assert s["instructions"] == {"MEM": 3, "VXM": 2, "MXM": 2, "FREE": 8}
    assert s["kernel_cycles"] == 2114 and s["num_sms"] == 1 and s["jobs"] == 1 and s["traced_jobs"] == 1
    # one job on one SM: busy / (kernel_cycles * num_sms)
    assert s["utilisation"] == pytest.approx({u: b / 2114 for u, b in busy.items()})
    assert s["bottleneck"] == "MXM"
    assert s["kernel"] == "kernel"


def one_job(task_args):
    return 1


def n_jobs(task_args):
    return task_args['n']


@kdt.kernel(num_jobs_calculator=n_jobs)
def memory_bound(task_args, io_tensors):
    j = kdt.get_job_id()
    a = kdt.alloc_spm((256,))
    b = kdt.alloc_spm((256,))
    kdt.load(io_tensors['x'][j], a)
    kdt.load(io_tensors['x'][j], b)
    kdt.add(a, b, a)
    kdt.store(a, io_tensors['y'][j])
    if j == 0:
        kdt.store(b, io_tensors['z'])


def test_summary_over_several_jobs_and_sms():
    io = {'x': torch.randn(3, 256), 'y': torch.zeros(3, 256), 'z': torch.zeros(256)}
    prof = kdt.Profile()
    c = memory_bound.compile({'n': 3}, io)
    # each job: loads 1->11, 2->12; add (2 cycles) 12->14; store 14->24; job 0 also stores b: 15->25
    cycles = kdt.launch_kernel(c, io, kdt.TPUSpec(num_sms=2, load_store_latency=10), profile=prof)
    assert [r.cycles for r in prof.runs] == [25, 24, 24]
    assert prof.runs == [JobRun(0, 0, 0, 25), JobRun(1, 1, 0, 24), JobRun(2, 1, 24, 24)]
    assert cycles == 48
    s = prof.summary()
    # MEM per job: union of [1,11], [2,12], [14,24] (+ [15,25] for job 0) = 11 + 10 (+ 1) -> 22 + 21 + 21
    assert s["busy_cycles"] == {"VXM": 6, "MXM": 0, "MEM": 64, "ISU": 13}
    assert s["instructions"] == {"MEM": 10, "VXM": 3, "MXM": 0, "FREE": 6}
    assert s["jobs"] == 3 and s["traced_jobs"] == 3
    assert s["kernel_utilisation"] == pytest.approx({"VXM": 6 / 96, "MXM": 0.0, "MEM": 64 / 96, "ISU": 13 / 96})
    assert s["utilisation"] == pytest.approx({"VXM": 6 / 73, "MXM": 0.0, "MEM": 64 / 73, "ISU": 13 / 73})
    assert s["bottleneck"] == "ISU"  # memory is not a unit that anything waits for


def test_profile_of_selected_jobs_only():
    io = {'x': torch.randn(3, 256), 'y': torch.zeros(3, 256), 'z': torch.zeros(256)}
    c = memory_bound.compile({'n': 3}, io)
    prof = kdt.Profile(jobs=[1])
    assert kdt.launch_kernel(c, io, kdt.TPUSpec(num_sms=2, load_store_latency=10), profile=prof) == 48
    assert set(prof.traces) == {1}
    for job in (0, 2, 99):  # not traced, or not in the launch: an error, not an empty trace
        with pytest.raises(KeyError, match=f"job {job} was not traced"):
            prof.trace(job)
    assert prof.trace(1) == [["fill", 1, 1], ["fill", 1, 1], ["load", 1, 11], ["load", 2, 12], ["add", 12, 14],
                             ["store", 14, 24]]
    assert len(prof.runs) == 3  # the placement is always complete
    s = prof.summary()
    assert s["traced_jobs"] == 1 and s["jobs"] == 3
    assert s["busy_cycles"] == {"VXM": 2, "MXM": 0, "MEM": 21, "ISU": 4}
    assert s["kernel_utilisation"] is None  # only meaningful when every job is traced
    assert s["utilisation"] == pytest.approx({"VXM": 2 / 24, "MXM": 0.0, "MEM": 21 / 24, "ISU": 4 / 24})
    prof = kdt.Profile(jobs=range(0, 3, 2))
    kdt.launch_kernel(c, io, kdt.TPUSpec(num_sms=2, load_store_latency=10), profile=prof)
    assert set(prof.traces) == {0, 2}
    prof = kdt.Profile(jobs=[])
    kdt.launch_kernel(c, io, kdt.TPUSpec(num_sms=2, load_store_latency=10), profile=prof)
    assert prof.traces == {} and len(prof.runs) == 3


def test_perfetto_export(tmp_path):
    io = {'x': torch.randn(3, 256), 'y': torch.zeros(3, 256), 'z': torch.zeros(256)}
    c = memory_bound.compile({'n': 3}, io)
    prof = kdt.Profile()
    kdt.launch_kernel(c, io, kdt.TPUSpec(num_sms=2, load_store_latency=10), profile=prof)
    doc = prof.to_perfetto()
    events = doc["traceEvents"]
    meta = [e for e in events if e["ph"] == "M"]
    # one process per SM; per SM a job track, one thread per unit, and as many MEM lanes as overlapping
    # loads/stores need (here 2 on each SM: the two loads of a job overlap)
    assert {(e["pid"], e["args"]["name"]) for e in meta if e["name"] == "process_name"} == {(0, "SM 0"), (1, "SM 1")}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    for sm in (0, 1):
        names = [name for (pid, _), name in threads.items() if pid == sm]
        assert sorted(names) == sorted(["jobs", "VXM", "MXM", "FREE", "MEM 0", "MEM 1"])
    spans = [e for e in events if e["ph"] == "X"]
    assert all((e["pid"], e["tid"]) in threads for e in spans)
    jobs = sorted((e["args"]["job"], e["pid"], e["ts"], e["dur"]) for e in spans
                  if threads[(e["pid"], e["tid"])] == "jobs")
    assert jobs == [(0, 0, 0, 25), (1, 1, 0, 24), (2, 1, 24, 24)]
    job2 = sorted((e["ts"], e["dur"], e["name"], threads[(e["pid"], e["tid"])]) for e in spans
                  if threads[(e["pid"], e["tid"])] != "jobs" and e["args"]["job"] == 2)
    # job 2 starts at 24 on SM 1: ts = 24 + issue, dur = finish - issue; its second load overlaps the first
    assert job2 == [(25, 0, "fill", "FREE"), (25, 0, "fill", "FREE"), (25, 10, "load", "MEM 0"),
                    (26, 10, "load", "MEM 1"), (36, 2, "add", "VXM"), (38, 10, "store", "MEM 0")]
    add_line = lines_of(memory_bound, "kdt.add(")[0]
    add = next(e for e in spans if e["name"] == "add" and e["args"]["job"] == 2)
    load2_line = all_lines(memory_bound, "kdt.load(")[1]
    assert add["pid"] == 1 and add["args"] == {  # it read b, written by the second load at 12: RAW
        "job": 2, "line": add_line, "issue": 12, "finish": 14, "cause": "raw", "wait": 9,
        "gate": {"op": "load", "line": load2_line, "finish": 12}}
    assert sum(1 for e in spans if threads[(e["pid"], e["tid"])] != "jobs") == 6 + 6 + 7
    assert doc["otherData"] == {"kernel": "memory_bound", "kernel_cycles": 48}
    path = tmp_path / "trace.json"
    prof.write_perfetto(path)
    assert json.loads(path.read_text()) == json.loads(json.dumps(doc))


def test_the_perfetto_trace_of_the_statements_example_carries_the_stall_reasons_and_their_flows():
    """c01 (L_mem = 100, 1126 cycles): [1] add waits 99 cycles on RAW of [0] load, [3] mul 14 on RAW of
    [1] add, [4] sub 15 for the VXM busy with [3] mul; each wait is an arrow from the gate's slice to the
    waiting one (both ends at the middle of their slices)."""
    r = run_case("c01_statement_example")
    assert r["cycles"] == 1126
    doc = r["profile"].to_perfetto()
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["tid"] != 0]
    assert [(e["name"], e["tid"], e["ts"], e["dur"]) for e in spans[8:]] == [
        ("load", 4, 1, 100), ("add", 1, 101, 16), ("matmul", 2, 102, 1024), ("mul", 1, 117, 16), ("sub", 1, 133, 1)]
    assert [e["args"] for e in spans] == [{"job": 0, "line": line, "issue": 1, "finish": 1, "cause": "isu", "wait": 0}
                                          for line in range(15, 23)] + [
        {"job": 0, "line": 23, "issue": 1, "finish": 101, "cause": "isu", "wait": 0},
        {"job": 0, "line": 24, "issue": 101, "finish": 117, "cause": "raw", "wait": 99,
         "gate": {"op": "load", "line": 23, "finish": 101}},
        {"job": 0, "line": 25, "issue": 102, "finish": 1126, "cause": "isu", "wait": 0},
        {"job": 0, "line": 26, "issue": 117, "finish": 133, "cause": "raw", "wait": 14,
         "gate": {"op": "add", "line": 24, "finish": 117}},
        {"job": 0, "line": 27, "issue": 133, "finish": 134, "cause": "unit", "wait": 15,
         "gate": {"op": "mul", "line": 26, "finish": 133}}]
    flows = [e for e in doc["traceEvents"] if e["ph"] in "sf"]
    assert doc["traceEvents"][-len(flows):] == flows  # after every slice
    assert flows == [
        {"ph": "s", "id": 0, "name": "raw", "cat": "stall", "pid": 0, "tid": 4, "ts": 51},
        {"ph": "f", "id": 0, "name": "raw", "cat": "stall", "pid": 0, "tid": 1, "ts": 109, "bp": "e"},
        {"ph": "s", "id": 1, "name": "raw", "cat": "stall", "pid": 0, "tid": 1, "ts": 109},
        {"ph": "f", "id": 1, "name": "raw", "cat": "stall", "pid": 0, "tid": 1, "ts": 125, "bp": "e"},
        {"ph": "s", "id": 2, "name": "unit", "cat": "stall", "pid": 0, "tid": 1, "ts": 125},
        {"ph": "f", "id": 2, "name": "unit", "cat": "stall", "pid": 0, "tid": 1, "ts": 133.5, "bp": "e"}]
    for flow in flows:  # each end lies inside its own slice on its thread
        inside = [e for e in spans if e["tid"] == flow["tid"] and e["ts"] < flow["ts"] < e["ts"] + e["dur"]]
        assert len(inside) == 1


def test_an_unused_profile_is_empty():
    prof = kdt.Profile()
    assert prof.traces == {} and prof.runs == []
    with pytest.raises(KeyError):
        prof.trace(0)
    s = prof.summary()
    assert s["busy_cycles"] == {"ISU": 0, "MEM": 0, "VXM": 0, "MXM": 0} and s["jobs"] == 0
    assert s["bottleneck"] is None  # nothing ran, so no unit is the bottleneck
    assert prof.to_perfetto()["traceEvents"] == []


def test_a_profile_reused_for_a_second_launch_describes_the_second_launch():
    io = {'x': torch.randn(3, 256), 'y': torch.zeros(3, 256), 'z': torch.zeros(256)}
    prof = kdt.Profile()
    kdt.launch_kernel(memory_bound.compile({'n': 3}, io), io, kdt.TPUSpec(num_sms=2, load_store_latency=10),
                      profile=prof)
    try:
        kdt.launch_kernel(memory_bound.compile({'n': 2}, io), io, kdt.TPUSpec(num_sms=1, load_store_latency=10),
                          profile=prof)
    except (ValueError, RuntimeError):
        return  # refusing to reuse a profile is fine too
    assert len(prof.runs) == 2 and prof.kernel_cycles == 49 and prof.num_sms == 1
    assert set(prof.traces) == {0, 1}
    assert len(prof.trace(0)) == 7 and len(prof.trace(1)) == 6
    assert prof.summary()["busy_cycles"]["ISU"] == 9


@pytest.mark.parametrize("which", ["c04", "memory_bound"])
def test_perfetto_slices_on_one_thread_nest(which):
    """The trace-event format needs the complete ('X') events of one thread to be disjoint or nested;
    loads and stores overlap (c04: a load [1091, 1121] and a store [1092, 1122])."""
    prof = kdt.Profile()
    if which == "c04":
        run_c04(prof)
    else:
        io = {'x': torch.randn(3, 256), 'y': torch.zeros(3, 256), 'z': torch.zeros(256)}
        kdt.launch_kernel(memory_bound.compile({'n': 3}, io), io, kdt.TPUSpec(num_sms=2, load_store_latency=10),
                          profile=prof)
    tracks = {}
    for e in prof.to_perfetto()["traceEvents"]:
        if e["ph"] == "X":
            tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
    for key, spans in tracks.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for lo, hi, name in spans:
            while stack and stack[-1][1] <= lo:
                stack.pop()
            assert not stack or hi <= stack[-1][1], f"track {key}: {name} [{lo}, {hi}] crosses {stack[-1]}"
            stack.append((lo, hi, name))
