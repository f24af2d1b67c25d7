"""The timeline picture (grader/web/pages/timeline.py) against the shared conformance traces: for cases with
known per-instruction issue/finish cycles (``../shared/conformance/expected.json``, the handout
simulator's), every bar of the SVG sits where the trace says. Also the stored trace record
(grader/judging/trace_record.py): round trip, caps, hostile text escaped."""
from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kdt"))  # the shared conformance helpers
from conformance import EXPECTED, run_case  # noqa: E402
from grader.judging import trace_record as traces  # noqa: E402
from grader.web.pages import timeline  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
LANE_CLASS = {"FREE": "tl-isu", "MEM": "tl-mem", "VXM": "tl-vxm", "MXM": "tl-mxm"}


def record_for(case: str) -> dict:
    run = run_case(case)
    assert run["stage"] is None and run["cycles"] == EXPECTED[case]["cycles"]
    return traces.decode(traces.encode(traces.record_of(run["profile"])))


def bars(root):
    return [el for el in root.iter(f"{SVG}rect") if "tl-bar" in el.get("class", "").split()]


@pytest.mark.parametrize("case, job", [("c04_isu_waits_for_busy_unit", 0), ("c14_control_flow", 0),
                                       ("c14_control_flow", 2), ("c19_flash_attention_small", 0),
                                       ("c20_double_buffered_matmul", 1), ("c03_greedy_sm_assignment", 3)])
def test_bar_positions_equal_the_conformance_trace(case, job):
    record = record_for(case)
    expected = EXPECTED[case]["trace"][str(job)]          # the handout's [op, issue, finish]
    root = ET.fromstring(timeline.timeline_svg(record, job))
    span = record["runs"][job][2]                          # the job's own cycles
    assert span == max(f for _, _, f in expected)
    scale = timeline.PLOT_WIDTH / span
    assert float(root.get("data-scale")) == pytest.approx(scale, rel=1e-12)
    assert float(root.get("data-x0")) == timeline.X0
    drawn = bars(root)
    assert len(drawn) == len(expected) == int(root.get("data-bars"))
    assert int(root.get("height")) == timeline.timeline_height(record, job)
    units = [e[3] for e in traces.job_trace(record, job)]
    lines = [e[4] for e in traces.job_trace(record, job)]
    for bar, (op, issue, finish), unit, line in zip(drawn, expected, units, lines):
        assert float(bar.get("x")) == pytest.approx(round(timeline.X0 + issue * scale, 2), abs=1e-9)
        width = max((finish - issue) * scale, timeline.MIN_WIDTH)
        assert float(bar.get("width")) == pytest.approx(round(width, 2), abs=1e-9)
        assert LANE_CLASS[unit] in bar.get("class").split()
        title = bar.find(f"{SVG}title").text
        assert title.startswith(f"{op} (line {line})\n")
        assert f"issue {issue}, finish {finish}: {finish - issue} cycles" in title


def test_c04_lanes_rows_and_utilisations():
    """c04 (one job, 2114 cycles): 8 fills in the ISU lane, exp+add in VXM, two matmuls in MXM, and the
    overlapping load (1091-1121) and store (1092-1122) on two MEM rows; utilisations from the summary."""
    record = record_for("c04_isu_waits_for_busy_unit")
    root = ET.fromstring(timeline.timeline_svg(record, 0))
    by_lane = {}
    for bar in bars(root):
        lane = next(c for c in bar.get("class").split() if c in LANE_CLASS.values())
        by_lane.setdefault(lane, []).append(bar)
    assert {k: len(v) for k, v in by_lane.items()} == {"tl-isu": 8, "tl-vxm": 2, "tl-mem": 3, "tl-mxm": 2}
    mem_y = [float(b.get("y")) for b in by_lane["tl-mem"]]
    assert mem_y[0] == mem_y[1] and mem_y[2] == mem_y[0] + timeline.ROW  # load@2, load@1091 row 0; store row 1
    util = {t.get("data-unit"): t.text for t in root.iter(f"{SVG}text") if t.get("data-unit")}
    # busy: VXM 65, MXM 2048, MEM 61, ISU 7 of 2114 cycles (tests/kdt/test_profile.py)
    assert util == {"ISU": f"ISU {100 * 7 / 2114:.1f}%", "MEM": f"MEM {100 * 61 / 2114:.1f}%",
                    "VXM": f"VXM {100 * 65 / 2114:.1f}%", "MXM": f"MXM {100 * 2048 / 2114:.1f}%"}
    ticks = root.find(f"{SVG}path[@class='tl-tick']").get("d")
    assert ticks.count("M") == 15  # one tick per issued instruction


def test_c01_hover_says_why_each_instruction_waited_and_the_critical_path_is_outlined():
    """The statement's worked example (L_mem = 100, 1126 cycles; tests/kdt/test_explain.py): [1] add waits
    99 cycles on RAW of [0] load, [3] mul 14 on RAW of [1], [4] sub 15 for the VXM busy with [3], [2]
    matmul issues in its slot; the critical path is load -> add (its issue slot) -> matmul."""
    record = record_for("c01_statement_example")
    root = ET.fromstring(timeline.timeline_svg(record, 0))
    holding = [(b, e) for b, e in zip(bars(root), record["traces"]["0"]) if e[3] != "FREE"]
    titles = {e[0]: b.find(f"{SVG}title").text for b, e in holding}
    assert "\nissued in its slot, right after the previous instruction" in titles["load"]
    assert "\nwaited 99 cycles (raw): an input not yet written by load (line 23), which finished at 101" in titles["add"]
    assert "\nissued in its slot" in titles["matmul"]
    assert "\nwaited 14 cycles (raw): an input not yet written by add (line 24), which finished at 117" in titles["mul"]
    assert "\nwaited 15 cycles (unit): its unit busy with mul (line 26), which finished at 133" in titles["sub"]
    outlined = [e[0] for b, e in holding if "tl-crit" in b.get("class").split()]
    assert outlined == ["load", "add", "matmul"] and root.get("data-critical") == "3"
    assert all("tl-crit" not in b.get("class") for b, e in zip(bars(root), record["traces"]["0"]) if e[3] == "FREE")
    assert titles["matmul"].endswith("\non the critical path") and not titles["mul"].endswith("critical path")


def test_c01_the_critical_path_is_a_strip_above_the_lanes_and_the_other_bars_fade():
    """The strip lays the path's links end to end from cycle 0 (the cycle before the first issue, load's
    100, add's issue slot, matmul's 1024: 1126 in all) at the lanes' scale, coloured by unit; the bars off
    the path are faded."""
    record = record_for("c01_statement_example")
    root = ET.fromstring(timeline.timeline_svg(record, 0))
    strip = [r for r in root.iter(f"{SVG}rect") if "tl-path" in r.get("class", "").split()]
    assert [r.get("class") for r in strip] == ["tl-path tl-isu", "tl-path tl-mem", "tl-path tl-vxm", "tl-path tl-mxm"]
    assert [int(r.get("data-cycles")) for r in strip] == [1, 100, 1, 1024]
    scale = float(root.get("data-scale"))
    assert [float(r.get("x")) for r in strip] == [round(timeline.X0 + at * scale, 2) for at in (0, 1, 101, 102)]
    assert strip[3].find(f"{SVG}title").text == "critical path: matmul (line 25), 1,024 cycles (cycles 102 to 1,126)"
    assert strip[2].find(f"{SVG}title").text == "critical path: add (line 24), 1 cycle, holding the issue unit (cycles 101 to 102)"
    assert "tl-dim" in root.get("class").split()  # .tl-dim .tl-bar fades all but .tl-crit
    assert int(root.get("height")) == timeline.timeline_height(record, 0)


@pytest.mark.parametrize("case, job", [("c01_statement_example", 0), ("c04_isu_waits_for_busy_unit", 0),
                                       ("c14_control_flow", 2), ("c19_flash_attention_small", 0),
                                       ("c20_double_buffered_matmul", 1)])
def test_where_the_cycles_went_adds_up_against_the_trace(case, job):
    """The chart's critical-path segments add up to the job's cycles, and its stall segments to the gaps
    between the issue cycles of the instructions that hold the issue unit (computed here from the trace)."""
    record = record_for(case)
    root = ET.fromstring(timeline.timeline_svg(record, job))
    assert int(root.get("height")) == timeline.timeline_height(record, job)
    rects = list(root.iter(f"{SVG}rect"))
    shares = [int(r.get("data-cycles")) for r in rects if "tl-share" in r.get("class", "")]
    job_cycles = record["runs"][job][2]
    assert sum(shares) == job_cycles and shares == sorted(shares, reverse=True)
    stalls = {r.get("data-cause"): int(r.get("data-cycles")) for r in rects if "tl-stall" in r.get("class", "")}
    issues = [e[1] for e in record["traces"][str(job)] if e[3] != "FREE"]
    gaps = sum(b - a - 1 for a, b in zip(issues, issues[1:]))
    assert sum(stalls.values()) == gaps and 0 not in stalls.values()
    heading = next(t.text for t in root.iter(f"{SVG}text") if (t.text or "").startswith("where job"))
    of = f" (of the launch's {record['kernel_cycles']:,})" if record["kernel_cycles"] > job_cycles else ""
    assert heading == f"where job {job}'s {job_cycles:,} cycles went{of}"
    rest = next(r for r in rects if r.get("data-cause") == "none")
    assert int(rest.get("data-cycles")) == job_cycles - gaps
    if case == "c01_statement_example":
        assert stalls == {"raw": 113, "unit": 15}
        assert {r.get("data-line"): int(r.get("data-cycles")) for r in rects if "tl-share" in r.get("class", "")} == {
            "25": 1024, "23": 100, "": 1, "24": 1}
        heading = [t.text for t in root.iter(f"{SVG}text") if (t.text or "").startswith("where job")]
        assert heading == ["where job 0's 1,126 cycles went"]  # one job, the whole launch
        said = [t.text for t in root.iter(f"{SVG}text") if (t.text or "").startswith("holds up others most")]
        assert said == ["holds up others most: line 23 (load) 99 cycles, raw; line 26 (mul) 15 cycles, unit; "
                        "line 24 (add) 14 cycles, raw"]


def test_a_trace_stored_before_stall_reasons_draws_no_reasons():
    record = record_for("c04_isu_waits_for_busy_unit")
    record["traces"] = {job: [e[:5] for e in entries] for job, entries in record["traces"].items()}
    root = ET.fromstring(timeline.timeline_svg(record, 0))
    assert int(root.get("height")) == timeline.timeline_height(record, 0)
    assert root.get("data-critical") == "0" and not any("tl-stall" in r.get("class", "") for r in root.iter(f"{SVG}rect"))
    assert all("waited" not in b.find(f"{SVG}title").text and "slot" not in b.find(f"{SVG}title").text
               for b in bars(root))


def test_placement_draws_every_job_on_its_sm():
    record = record_for("c03_greedy_sm_assignment")
    root = ET.fromstring(timeline.timeline_svg(record, 0))
    jobs = [el for el in root.iter(f"{SVG}rect") if "tl-job" in el.get("class", "").split()]
    assert len(jobs) == record["jobs"] == len(record["runs"])
    cycles = record["kernel_cycles"]
    assert cycles == EXPECTED["c03_greedy_sm_assignment"]["cycles"]
    for el, (sm, start, length) in zip(jobs, record["runs"]):
        assert float(el.get("x")) == pytest.approx(round(timeline.X0 + start * timeline.PLOT_WIDTH / cycles, 2))
        assert f"SM {sm}, cycles {start} to {start + length}" in el.find(f"{SVG}title").text
    assert ["tl-job0" in el.get("class") for el in jobs].count(True) == 1 and "tl-job0" in jobs[0].get("class")


def test_record_round_trip_gives_the_judges_perfetto_and_summary():
    run = run_case("c20_double_buffered_matmul")
    record = traces.decode(traces.encode(traces.record_of(run["profile"])))
    assert traces.traced_jobs(record) == [0, 1, 2, 3]
    again = traces.to_profile(record)
    assert again.to_perfetto() == run["profile"].to_perfetto()
    assert again.summary() == run["profile"].summary() == record["summary"]
    for job in range(4):
        assert again.trace(job) == EXPECTED["c20_double_buffered_matmul"]["trace"][str(job)]


def test_hostile_text_is_escaped():
    record = traces.record_of(run_case("c04_isu_waits_for_busy_unit")["profile"])
    record["kernel"] = '<script>alert("k")</script>&'
    record["traces"]["0"][0][0] = "<img src=x onerror=alert(1)>"
    svg = timeline.timeline_svg(record, 0, svg_id='"><script>x</script>')
    root = ET.fromstring(svg)  # well-formed XML
    assert "<script" not in svg and "<img" not in svg
    assert root.find(f"{SVG}title").text.startswith('timeline of job 0 of kernel <script>alert("k")</script>&')
    assert bars(root)[0].find(f"{SVG}title").text.startswith("<img src=x onerror=alert(1)> (line")


def test_caps_bars_and_blob_size(monkeypatch):
    record = traces.record_of(run_case("c19_flash_attention_small")["profile"])
    monkeypatch.setattr(timeline, "MAX_BARS", 10)
    root = ET.fromstring(timeline.timeline_svg(record, 0))
    assert len(bars(root)) == 10 and int(root.get("height")) == timeline.timeline_height(record, 0)
    assert any("the first 10 of 72 instructions are drawn" in (t.text or "") for t in root.iter(f"{SVG}text"))
    big = dict(record, traces={str(j): [["load", i, i + 7, "MEM", i] for i in range(0, 400_000, 3)]
                               for j in range(4)})
    blob = traces.encode(big)
    assert len(blob) <= traces.MAX_BLOB_BYTES
    small = traces.decode(blob)
    assert traces.traced_jobs(small) == [0] and 0 < len(small["traces"]["0"]) < len(big["traces"]["0"])
    assert small["traces"]["0"] == big["traces"]["0"][: len(small["traces"]["0"])]


@pytest.mark.parametrize("blob, message", [
    (b"not zlib", "not a compressed trace record"),
    (zlib.compress(b'{"v": 2}'), "not a version-1 record"),
    (zlib.compress(b"\0" * (traces.MAX_RECORD_BYTES + 10)), "inflates beyond"),
])
def test_decode_refuses_what_is_not_a_record(blob, message):
    with pytest.raises(traces.TraceFormatError, match=re.escape(message)):
        traces.decode(blob)


def threshold_marks(root) -> list[float]:
    return [float(line.get("x1")) for line in root.iter(f"{SVG}line") if line.get("class") == "tl-threshold"]


@pytest.mark.parametrize("threshold, marks", [(1000, 2), (1126, 2), (1127, 0), (None, 0)])
def test_a_threshold_inside_a_one_job_launch_is_marked_on_both_axes(threshold, marks):
    """c01: one job of 1,126 cycles from cycle 0, so the lanes' axis is the launch's: a threshold up to
    1,126 is marked on the lanes and on the placement at the same x, one beyond it only said."""
    record = record_for("c01_statement_example")
    root = ET.fromstring(timeline.timeline_svg(record, 0, threshold=threshold))
    assert int(root.get("height")) == timeline.timeline_height(record, 0, threshold)
    assert root.get("data-threshold") == (str(threshold) if threshold else "")
    assert threshold_marks(root) == [round(timeline.X0 + (threshold or 0) * timeline.PLOT_WIDTH / 1126, 2)] * marks
    said = [t.text for t in root.iter(f"{SVG}text") if "tl-threshold-text" in t.get("class", "")]
    assert said == ([timeline.threshold_text(1126, threshold)] if threshold else [])
    assert timeline.threshold_text(1126, 1000) == ("threshold for 100: 1,000 cycles; this launch's 1,126 is 1.13x it, "
                                                   "126 to go")


def test_a_later_jobs_lanes_show_no_threshold_but_the_launch_does():
    """c20, job 2: it starts at cycle 4,702 of the 9,404, so its lanes' axis is its own; the threshold
    (6,000) is marked only on the placement's launch axis."""
    record = record_for("c20_double_buffered_matmul")
    root = ET.fromstring(timeline.timeline_svg(record, 2, threshold=6000))
    assert threshold_marks(root) == [round(timeline.X0 + 6000 * timeline.PLOT_WIDTH / 9404, 2)]


def test_busy_sms_averages_the_placement_over_equal_spans():
    assert timeline.busy_sms([[0, 0, 100], [1, 50, 50]], 100, 4) == [1.0, 1.0, 2.0, 2.0]
    assert timeline.busy_sms([[0, 0, 30]], 40, 4) == [1.0, 1.0, 1.0, 0.0]
    assert timeline.busy_sms([], 40, 2) == [0.0, 0.0]
    record = record_for("c20_double_buffered_matmul")  # 2 SMs busy the whole launch
    assert timeline.busy_sms(record["runs"], record["kernel_cycles"]) == pytest.approx([2.0] * timeline.OCC_BUCKETS)


def test_source_lines_link_only_with_a_source_url():
    """c01 (lines 23-26): with the page's address every bar is in a link to its own line; without, none is."""
    record = record_for("c01_statement_example")
    assert not list(ET.fromstring(timeline.timeline_svg(record, 0)).iter(f"{SVG}a"))
    root = ET.fromstring(timeline.timeline_svg(record, 0, source_url="/submissions/7"))
    linked = {id(bar): a.get("href") for a in root.iter(f"{SVG}a") for bar in a.iter(f"{SVG}rect")}
    for bar, entry in zip(bars(root), record["traces"]["0"]):
        assert linked[id(bar)] == f"/submissions/7#L-{entry[4]}"
    said = next(t for t in root.iter(f"{SVG}text") if "tl-tops" in t.get("class", ""))
    assert "".join(said.itertext()) == ("holds up others most: line 23 (load) 99 cycles, raw; line 26 (mul) 15 "
                                       "cycles, unit; line 24 (add) 14 cycles, raw")
    assert [a.get("href") for a in said.iter(f"{SVG}a")] == ["/submissions/7#L-23", "/submissions/7#L-26",
                                                             "/submissions/7#L-24"]


def test_a_message_is_cut_where_it_names_a_line():
    from grader.web.pages import render

    message = "UnsupportedFeatureError: Line 10, Col 5, no\n      10 |     x\nsee Line 3"
    parts = render.message_parts(message)
    assert parts == [["UnsupportedFeatureError: ", None], ["Line 10", 10], [", Col 5, no\n      10 |     x\nsee ", None],
                     ["Line 3", 3]]
    assert "".join(text for text, _ in parts) == message and render.message_parts("") == []
    assert render.message_lines({"points": [{"message": message}, {"message": None}]}) == [3, 10]
