"""The timeline picture of a graded test point: an SVG drawn on the server from a stored trace record.

``timeline_svg(record, job=0)`` draws one job of the judge's own first trial (``grader.judging.trace_record``):

- four lanes, ``ISU``, ``MEM``, ``VXM`` and ``MXM``; every executed instruction is one bar
  (``<rect class="tl-bar ...">``) in the lane of its unit, from its issue cycle to its finish cycle.
  ``FREE`` instructions (fills, zero-cost views, prints) take only an issue slot and go to the ISU lane,
  which also carries one tick per issued instruction (one ``<path>``). Loads and stores overlap (memory
  is not a unit), so the MEM lane has as many rows as needed (at most ``MAX_MEM_ROWS``; later overlaps
  share the last row);
- a ``<title>`` per bar (the hover text): instruction, source line, issue and finish cycle, cycles, and why
  it issued when it did (``reason_text``: the stall cause of spec §4 and the instruction waited for);
- the bars of the job's critical path (``kdt.simulator.explain.critical_path``) carry ``tl-crit`` (a dark
  outline), and the root ``<svg>`` ``data-critical`` (how many links are instructions);
- below the lanes, "where the cycles went" (``_cycles_chart``): the job's cycles along its critical path by
  source line (``<rect class="tl-share" data-line data-cycles>``, their cycles add up to the job's), the
  issue unit's stall cycles by cause (``<rect class="tl-stall" data-cause data-cycles>``, their sum is
  the gaps between the job's issue cycles) and the lines that hold others up most. A trace stored
  before stall reasons existed draws none of this;
- the unit utilisations of the traced jobs beside the lanes (``Profile.summary()``);
- below, the job -> SM placement of the whole launch, the drawn job highlighted.

Geometry, so a test can check bar positions against the trace: a bar of an instruction issued at
cycle ``i`` finishing at ``f`` has ``x = X0 + i * scale`` and ``width = max((f - i) * scale, MIN_WIDTH)``,
both rounded to 2 decimals, where ``scale = PLOT_WIDTH / span`` pixels per cycle and ``span`` is the
job's length in cycles (at least its last finish, at least 1); the root ``<svg>`` carries ``data-x0``,
``data-scale`` and ``data-span``. At most ``MAX_BARS`` bars are drawn (the first ones in program order;
the picture says so when it cuts).

All text from the record is escaped (the kernel's name comes from the submission).
"""
from __future__ import annotations

from html import escape

from kdt.simulator import explain

from grader.judging.trace_record import job_trace, traced_jobs

X0 = 48.0            # left gutter for lane names, pixels
PLOT_WIDTH = 800.0   # the cycle axis, pixels
UTIL_WIDTH = 150.0   # right gutter for the utilisations, pixels
SVG_WIDTH = int(X0 + PLOT_WIDTH + UTIL_WIDTH)  # every picture's width (the page's frame scrolls to it on phones)
ROW = 12.0           # height of one bar row, pixels
LANE_GAP = 6.0
AXIS_HEIGHT = 30.0
MIN_WIDTH = 1.0      # so zero-cycle instructions stay visible
MAX_MEM_ROWS = 6
MAX_BARS = 6_000
MAX_PLACEMENT_JOBS = 512
CHART_HEIGHT = 74.0  # "where the cycles went": a heading, two bars and the top lines
TOP_LINES = 3
SM_ROW = 6.0         # placement row height with more than LABELLED_SMS SMs (else SM_ROW_WIDE)
SM_ROW_WIDE = 11.0
LABELLED_SMS = 8
LANES = ("ISU", "MEM", "VXM", "MXM")
_LANE_OF_UNIT = {"FREE": "ISU", "MEM": "MEM", "VXM": "VXM", "MXM": "MXM"}

_STYLE = (
    ".tl-bg{fill:#fafafa}.tl-lane{fill:#f0f0f3}.tl-label{font:11px sans-serif;fill:#333}"
    ".tl-small{font:10px sans-serif;fill:#555}.tl-axis{stroke:#bbb;stroke-width:1}"
    ".tl-bar{stroke:none}.tl-bar:hover{stroke:#000;stroke-width:1}"
    ".tl-isu{fill:#8e8e99}.tl-mem{fill:#3b7dd8}.tl-vxm{fill:#2e9e5b}.tl-mxm{fill:#e07b24}"
    ".tl-tick{stroke:#55555f;stroke-width:0.6}.tl-job{fill:#c7c9d3}.tl-job0{fill:#e07b24}"
    ".tl-crit{stroke:#1b1b1f;stroke-width:1.2}.tl-share{stroke:#fff;stroke-width:0.5}.tl-free-share{fill:#c7c9d3}"
    ".tl-stall{stroke:#fff;stroke-width:0.5}.tl-raw{fill:#c0392b}.tl-waw{fill:#8e44ad}.tl-war{fill:#d4a017}"
    ".tl-unit{fill:#16a085}.tl-issuing{fill:#e3e4ea}.tl-bold{font:bold 11px sans-serif;fill:#222}"
    ".tl-inner{font:10px sans-serif;fill:#fff}"
)
LIGHT_SEGMENTS = frozenset({"tl-issuing", "tl-share tl-isu"})  # labelled in dark ink
STALL_WORDS = {"raw": "an input not yet written by", "waw": "its output still being written by",
               "war": "its output still being read by", "unit": "its unit busy with"}


def timeline_svg(record: dict, job: int = 0, *, svg_id: str = "") -> str:
    """The SVG text (one ``<svg>`` element) of ``job``'s trace in ``record``; geometry in the module
    docstring. ``svg_id`` becomes the element's id (escaped). Raises ``KeyError`` if ``job`` is not traced."""
    entries = job_trace(record, job)
    raw = record["traces"][str(job)]
    path = explain.critical_path(raw)
    on_path = {link["index"] for link in path if link["index"] is not None}
    runs = record["runs"]
    span = max(runs[job][2] if job < len(runs) else 0, max((e[2] for e in entries), default=0), 1)
    scale = PLOT_WIDTH / span
    drawn = entries[:MAX_BARS]
    mem_rows = _mem_rows(drawn)
    lane_y, lane_rows, y = _lanes_layout(mem_rows)
    parts = []
    parts += _axis(span, scale, y)
    parts += _lanes(lane_y, lane_rows, record["summary"].get("utilisation") or {},
                    record["summary"].get("traced_jobs", len(traced_jobs(record))))
    parts.append(_ticks(entries[:MAX_BARS], scale, lane_y["ISU"]))
    for k, (op, issue, finish, unit, line) in enumerate(drawn):
        lane = _LANE_OF_UNIT[unit]
        row = min(mem_rows[k], MAX_MEM_ROWS - 1) if unit == "MEM" else 0
        x = X0 + issue * scale
        width = max((finish - issue) * scale, MIN_WIDTH)
        title = (f"{op} (line {line})\nissue {issue}, finish {finish}: {finish - issue} cycles"
                 f"{'' if unit == 'FREE' else ' on ' + unit}{reason_text(raw, k)}"
                 f"{chr(10) + 'on the critical path' if k in on_path else ''}")
        crit = " tl-crit" if k in on_path else ""
        parts.append(f'<rect class="tl-bar tl-{lane.lower()}{crit}" x="{x:.2f}" y="{lane_y[lane] + row * ROW + 1:.2f}" '
                     f'width="{width:.2f}" height="{ROW - 2:.2f}"><title>{escape(title)}</title></rect>')
    if path:
        chart, y = _cycles_chart(raw, path, runs[job][2] if job < len(runs) else span, y + 4, job,
                                 record["kernel_cycles"])
        parts += chart
    y += 4
    if _cut(record, job):
        total = _instructions(record, job)
        parts.append(f'<text class="tl-small" x="{X0}" y="{y + 10:.2f}">the first {len(drawn)} of {total} '
                     'instructions are drawn; the Perfetto trace has the stored ones</text>')
        y += 16
    placement, y = _placement(record, job, y + 6)
    parts += placement
    width = X0 + PLOT_WIDTH + UTIL_WIDTH
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width:.0f}" height="{y:.0f}" '
            f'viewBox="0 0 {width:.0f} {y:.0f}" role="img" data-x0="{X0}" data-scale="{scale!r}" '
            f'data-span="{span}" data-job="{job}" data-bars="{len(drawn)}" data-critical="{len(on_path)}"'
            + (f' id="{escape(svg_id)}"' if svg_id else "") + ">")
    label = escape(f"timeline of job {job} of kernel {record['kernel']}: {len(entries)} instructions, "
                   f"{span} cycles")
    return "".join([head, f"<title>{label}</title><style>{_STYLE}</style>",
                    f'<rect class="tl-bg" x="0" y="0" width="{width:.0f}" height="{y:.0f}"/>', *parts, "</svg>"])


def timeline_height(record: dict, job: int = 0) -> int:
    """The pixel height of ``timeline_svg(record, job)`` (for the page's frame), without drawing it."""
    _, _, y = _lanes_layout(_mem_rows(job_trace(record, job)[:MAX_BARS]))
    if explain.critical_path(record["traces"][str(job)]):
        y += 4 + CHART_HEIGHT
    y += 4 + (16 if _cut(record, job) else 0) + 6
    sms = max(record["num_sms"], 1)
    return int(round(y + 16 + sms * _sm_row(sms) + 6))


def reason_text(raw: list, k: int) -> str:
    """The hover line saying why entry ``k`` of a job's raw trace issued when it did ("" for an entry
    stored before stall reasons existed): ``waited W cycles (cause): ... OP (line L), finished at F``."""
    entry = raw[k]
    if len(entry) != 8:
        return ""
    cause, wait, gate = entry[5], entry[6], entry[7]
    if cause == "isu" or gate is None:
        return "\nissued in its slot, right after the previous instruction"
    g = raw[gate]
    held = "" if entry[3] != "FREE" else " (free: the issue unit went on meanwhile)"
    return (f"\nwaited {wait} cycles ({cause}): {STALL_WORDS[cause]} {g[0]} (line {g[4]}), "
            f"which finished at {g[2]}{held}")


def _cycles_chart(raw: list, path: list, job_cycles: int, y: float, job: int = 0,
                  kernel_cycles: int = 0) -> tuple[list[str], float]:
    """"Where the cycles went" of job ``job`` (module docstring), ``CHART_HEIGHT`` pixels from ``y``; its
    heading says how the job's cycles stand to the launch's ``kernel_cycles``."""
    scale = PLOT_WIDTH / max(job_cycles, 1)
    of = f" (of the launch's {kernel_cycles:,})" if kernel_cycles > job_cycles else ""
    out = [f'<text class="tl-bold" x="{X0}" y="{y + 10:.2f}">where job {job}\'s {job_cycles:,} cycles went{of}</text>'
           f'<text class="tl-small" x="{X0 + PLOT_WIDTH}" y="{y + 10:.2f}" text-anchor="end">outlined bars: the '
           'critical path, from the last finish back to the start; the stalls are this job\'s alone</text>']
    units, per_line = {}, {}
    for link in path:
        key = link["line"]
        per_line[key] = per_line.get(key, 0) + link["cycles"]
        units.setdefault(key, raw[link["index"]][3] if link["index"] is not None else "FREE")
    out += _stacked(y + 16, "path", scale, [
        (f"line {line}" if line is not None else "before the first issue", cycles,
         f'tl-share tl-{_LANE_OF_UNIT[units[line]].lower()}', f'data-line="{"" if line is None else line}"')
        for line, cycles in sorted(per_line.items(), key=lambda kv: -kv[1])])
    stalled = explain.stall_cycles(raw)
    waited = sum(stalled.values())
    out += _stacked(y + 34, "stalls", scale, [
        (f"{cause} stall", cycles, f"tl-stall tl-{cause}", f'data-cause="{cause}"')
        for cause, cycles in sorted(stalled.items(), key=lambda kv: -kv[1]) if cycles]
        + [("issuing, and after the last issue", job_cycles - waited, "tl-issuing", 'data-cause="none"')])
    tops = explain.top_lines({0: raw}, TOP_LINES)["caused"]
    said = "; ".join(f"line {e['line']} ({'/'.join(e['ops'])}) {e['cycles']:,} cycles, "
                     + "/".join(e["causes"]) for e in tops)
    out.append(f'<text class="tl-small" x="{X0}" y="{y + 64:.2f}">'
               f'{escape("holds up others most: " + said if tops else "no instruction waited for another")}</text>')
    return out, y + CHART_HEIGHT


def _stacked(y: float, label: str, scale: float, segments: list) -> list[str]:
    """One horizontal bar of ``(name, cycles, class, data attributes)`` segments, labelled inside when wide."""
    out = [f'<text class="tl-small" x="4" y="{y + 10:.2f}">{escape(label)}</text>']
    x = X0
    for name, cycles, cls, data in segments:
        width = cycles * scale
        out.append(f'<rect class="{cls}" {data} data-cycles="{cycles}" x="{x:.2f}" y="{y:.2f}" '
                   f'width="{width:.2f}" height="{ROW:.2f}"><title>{escape(f"{name}: {cycles:,} cycles")}'
                   '</title></rect>')
        text = f"{name} {cycles:,}"
        if width >= 6 * len(text) + 6:
            ink = "tl-small" if cls in LIGHT_SEGMENTS else "tl-inner"
            out.append(f'<text class="{ink}" x="{x + 3:.2f}" y="{y + 9:.2f}" pointer-events="none">'
                       f'{escape(text)}</text>')
        x += width
    return out


def _sm_row(sms: int) -> float:
    return SM_ROW_WIDE if sms <= LABELLED_SMS else SM_ROW


def _lanes_layout(mem_rows: list[int]) -> tuple[dict, dict, float]:
    """Top of each lane, its number of rows, and the y below the last lane."""
    lane_rows = {"ISU": 1, "MEM": max(1, min(max(mem_rows, default=0) + 1, MAX_MEM_ROWS)), "VXM": 1, "MXM": 1}
    lane_y, y = {}, AXIS_HEIGHT
    for lane in LANES:
        lane_y[lane] = y
        y += lane_rows[lane] * ROW + LANE_GAP
    return lane_y, lane_rows, y


def _cut(record: dict, job: int) -> bool:
    """True when not every instruction of the job is drawn (``MAX_BARS``, or the stored trace was capped)."""
    return _instructions(record, job) > min(len(job_trace(record, job)), MAX_BARS)


def _instructions(record: dict, job: int) -> int:
    return int(record.get("instructions", {}).get(str(job), len(job_trace(record, job))))


def _mem_rows(entries) -> list[int]:
    """Row of each entry in the MEM lane (-1 for other units): the first row free at its issue cycle."""
    ends, rows = [], []
    for _, issue, finish, unit, _ in entries:
        if unit != "MEM":
            rows.append(-1)
            continue
        for i, end in enumerate(ends):
            if end <= issue:
                ends[i] = finish
                rows.append(i)
                break
        else:
            ends.append(finish)
            rows.append(len(ends) - 1)
    return rows


def _nice_step(span: int, most: int = 8) -> int:
    """The smallest 1/2/5 x 10^k cycle step giving at most ``most`` ticks over ``span`` cycles."""
    magnitude = 1
    while True:
        for step in (magnitude, 2 * magnitude, 5 * magnitude):
            if span / step <= most:
                return step
        magnitude *= 10


def _axis(span: int, scale: float, bottom: float) -> list[str]:
    step = _nice_step(span)
    out = [f'<text class="tl-small" x="{X0}" y="11">cycles (relative to the job\'s start)</text>']
    for cycle in range(0, span + 1, step):
        x = X0 + cycle * scale
        out.append(f'<line class="tl-axis" x1="{x:.2f}" y1="{AXIS_HEIGHT - 6}" x2="{x:.2f}" y2="{bottom:.2f}"/>'
                   f'<text class="tl-small" x="{x:.2f}" y="{AXIS_HEIGHT - 9}" text-anchor="middle">{cycle}</text>')
    return out


def _lanes(lane_y: dict, lane_rows: dict, util: dict, traced: int) -> list[str]:
    out = [f'<text class="tl-small" x="{X0 + PLOT_WIDTH + 10}" y="{AXIS_HEIGHT - 9}">utilisation '
           f'({traced} traced job{"s" if traced != 1 else ""})</text>']
    for lane in LANES:
        y, height = lane_y[lane], lane_rows[lane] * ROW
        share = util.get(lane)
        value = "n/a" if share is None else f"{100 * share:.1f}%"
        out.append(f'<rect class="tl-lane" x="{X0}" y="{y:.2f}" width="{PLOT_WIDTH}" height="{height:.2f}"/>'
                   f'<text class="tl-label" x="4" y="{y + 10:.2f}">{lane}</text>'
                   f'<text class="tl-label tl-util" data-unit="{lane}" x="{X0 + PLOT_WIDTH + 10}" '
                   f'y="{y + 10:.2f}">{lane} {value}</text>')
    return out


def _ticks(entries, scale: float, y: float) -> str:
    """One tick per issued instruction on the ISU lane's top edge (FREE ones included)."""
    path = "".join(f"M{X0 + issue * scale:.2f} {y:.2f}v3" for _, issue, _, _, _ in entries)
    return f'<path class="tl-tick" d="{path}"/>' if path else ""


def _placement(record: dict, job: int, y: float) -> tuple[list[str], float]:
    """The job -> SM placement of the launch: one row per SM, one bar per job (or per SM when there are
    more than ``MAX_PLACEMENT_JOBS``), the drawn job highlighted."""
    runs, sms = record["runs"], max(record["num_sms"], 1)
    cycles = max(record["kernel_cycles"], max((s + c for _, s, c in runs), default=0), 1)
    scale = PLOT_WIDTH / cycles
    where = f"SM {runs[job][0]}, cycles {runs[job][1]} to {runs[job][1] + runs[job][2]}" if job < len(runs) else "?"
    plural = "s" if sms != 1 else ""
    out = [f'<text class="tl-small" x="{X0}" y="{y + 10:.2f}">placement: {record["jobs"]} jobs on {sms} SM{plural} '
           f'over {record["kernel_cycles"]} cycles; job {job} ran on {escape(where)}</text>']
    if record["jobs"] == 1:
        out[0] = out[0].replace("1 jobs on", "1 job on", 1)
    y += 16
    row = _sm_row(sms)
    for sm in range(sms):
        if sms <= LABELLED_SMS or sm % 8 == 0:
            out.append(f'<text class="tl-small" x="4" y="{y + sm * row + min(row, 9):.2f}">SM {sm}</text>')
    if len(runs) <= MAX_PLACEMENT_JOBS:
        for j, (sm, start, length) in enumerate(runs):
            cls = "tl-job tl-job0" if j == job else "tl-job"
            out.append(f'<rect class="{cls}" x="{X0 + start * scale:.2f}" y="{y + sm * row:.2f}" '
                       f'width="{max(length * scale, 0.5):.2f}" height="{row - 1:.2f}">'
                       f'<title>job {j}: SM {sm}, cycles {start} to {start + length}</title></rect>')
    else:
        busy: dict[int, list] = {}
        for sm, start, length in runs:
            lo, hi = busy.get(sm, (start, start + length))
            busy[sm] = (min(lo, start), max(hi, start + length))
        for sm, (lo, hi) in sorted(busy.items()):
            out.append(f'<rect class="tl-job" x="{X0 + lo * scale:.2f}" y="{y + sm * row:.2f}" '
                       f'width="{max((hi - lo) * scale, 0.5):.2f}" height="{row - 1:.2f}"/>')
        if job < len(runs):
            sm, start, length = runs[job]
            out.append(f'<rect class="tl-job tl-job0" x="{X0 + start * scale:.2f}" y="{y + sm * row:.2f}" '
                       f'width="{max(length * scale, 0.5):.2f}" height="{row - 1:.2f}"/>')
    return out, y + sms * row + 6
