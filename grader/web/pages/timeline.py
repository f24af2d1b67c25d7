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
- the job's critical path (``kdt.simulator.explain.critical_path``) highlighted: its bars carry ``tl-crit``
  (a dark outline, full colour while the others are faded: the root ``<svg>`` has ``tl-dim``), the root
  ``data-critical`` (how many links are instructions), and a strip labelled "path" above the lanes lays
  its links end to end from cycle 0 (``<rect class="tl-path" data-cycles>``, coloured by unit: at every
  cycle of the job, what it was waiting for);
- below the lanes, "where the cycles went" (``_cycles_chart``): the job's cycles along its critical path by
  source line (``<rect class="tl-share" data-line data-cycles>``, their cycles add up to the job's), the
  issue unit's stall cycles by cause (``<rect class="tl-stall" data-cause data-cycles>``, their sum is
  the gaps between the job's issue cycles) and the lines that hold others up most. A trace stored
  before stall reasons existed draws none of this;
- the unit utilisations of the traced jobs beside the lanes (``Profile.summary()``);
- the point's threshold (the most cycles that score 100), when given: the top line says how the
  launch's cycles stand to it (``threshold_text``, the picture's one statement of it), and a dashed line
  (``<line class="tl-threshold" data-cycles>``, labelled only "for 100") marks it on the lanes when the job started at cycle 0 and on the
  placement's launch axis, wherever it falls inside the drawn range (never off-scale);
- below, the job -> SM placement of the whole launch, the drawn job highlighted: up to
  ``LABELLED_SMS`` SMs one labelled row per SM with one bar per job; more SMs (tasks 2 and 3 have 32) a
  strip of how many SMs are busy over the launch (``<path class="tl-occ">``) above compact rows, one per
  SM (``SM_ROW`` pixels, every ``SM_LABEL_EVERY``-th labelled; a hover band ``<rect class="tl-sm-row"
  data-sm data-jobs data-busy>`` per row says its SM, jobs and busy cycles);
- ``zoom`` (``ZOOMS``: 1 to 16) widens the lanes' and the placement's cycle axes that many times (the
  picture is ``svg_width(zoom)`` wide, the page's frame scrolls sideways), with more axis ticks;
- with ``source_url`` (the submission page's address), every source line the picture names (the bars,
  the critical path's segments, the lines that hold others up) is a link to ``source_url#L-N``, the
  page's listing of that line (``target="_top"``: the picture is shown in a frame of that page).

Geometry, so a test can check bar positions against the trace: a bar of an instruction issued at
cycle ``i`` finishing at ``f`` has ``x = X0 + i * scale`` and ``width = max((f - i) * scale, MIN_WIDTH)``,
both rounded to 2 decimals, where ``scale = PLOT_WIDTH * zoom / span`` pixels per cycle and ``span`` is the
job's length in cycles (at least its last finish, at least 1); the root ``<svg>`` carries ``data-x0``,
``data-scale``, ``data-span`` and ``data-threshold``. The placement's axis is the launch's:
``X0 + cycle * PLOT_WIDTH * zoom / launch`` with ``launch`` the kernel's cycles (at least every job's end). At most ``MAX_BARS`` bars are drawn (the first ones in program order;
the picture says so when it cuts).

All text from the record is escaped (the kernel's name comes from the submission).
"""
from __future__ import annotations

from html import escape
from itertools import groupby

import numpy as np

from kdt.simulator import explain

from grader.display import count_text
from grader.judging.trace_record import job_trace, traced_jobs

X0 = 48.0            # left gutter for lane names, pixels
PLOT_WIDTH = 800.0   # the cycle axis, pixels
UTIL_WIDTH = 150.0   # right gutter for the utilisations, pixels
SVG_WIDTH = int(X0 + PLOT_WIDTH + UTIL_WIDTH)  # every picture's width (the page's frame scrolls to it on phones)
ROW = 12.0           # height of one bar row, pixels
LANE_GAP = 6.0
AXIS_HEIGHT = 42.0   # the caption and threshold line, the threshold's label, the tick labels
MIN_WIDTH = 1.0      # so zero-cycle instructions stay visible
MAX_MEM_ROWS = 6
MAX_BARS = 6_000
MAX_PLACEMENT_JOBS = 512
CHART_HEIGHT = 74.0  # "where the cycles went": a heading, two bars and the top lines
TOP_LINES = 3
SM_ROW = 4.0         # placement row height with more than LABELLED_SMS SMs (else SM_ROW_WIDE): compact rows
SM_ROW_WIDE = 11.0
LABELLED_SMS = 8     # up to this many SMs, one labelled row per SM; more: the busy strip and compact rows
SM_LABEL_EVERY = 8   # compact rows: every 8th SM is labelled (each row says its SM and jobs on hover)
ZOOMS = (1, 2, 4, 8, 16)  # the cycle axes' widths, times PLOT_WIDTH (the page's zoom links)
PATH_ROW = 10.0      # the critical path's strip above the lanes
OCC_HEIGHT = 22.0    # the strip of busy SMs over the launch
OCC_BUCKETS = 200    # its resolution: the launch in this many equal spans (4 pixels each)
LABEL_ROW = 12.0     # the threshold's label above the placement, when it is drawn there
LANES = ("ISU", "MEM", "VXM", "MXM")
MARK_LABEL = "for 100"  # the dashed threshold lines' label
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
    ".tl-threshold{stroke:#c0392b;stroke-width:1.5;stroke-dasharray:4 3}"
    ".tl-threshold-label{font:bold 10px sans-serif;fill:#c0392b}"
    "a .tl-link,.tl-link{fill:#2b5fb4;text-decoration:underline}a:hover .tl-link{fill:#123d80}a{cursor:pointer}"
    ".tl-occ{fill:#8e8e99}.tl-occ-bg{fill:#f0f0f3}"
    ".tl-sm-row{fill:transparent}.tl-sm-row:hover{fill:rgba(43,95,180,.12)}"
    ".tl-path{stroke:#1b1b1f;stroke-width:.6}.tl-dim .tl-bar{fill-opacity:.35}.tl-dim .tl-bar.tl-crit{fill-opacity:1}"
)
LIGHT_SEGMENTS = frozenset({"tl-issuing", "tl-share tl-isu"})  # labelled in dark ink
STALL_WORDS = {"raw": "an input not yet written by", "waw": "its output still being written by",
               "war": "its output still being read by", "unit": "its unit busy with"}


def timeline_svg(record: dict, job: int = 0, *, svg_id: str = "", threshold: int | None = None,
                 source_url: str = "", zoom: int = 1) -> str:
    """The SVG text (one ``<svg>`` element) of ``job``'s trace in ``record``; geometry in the module
    docstring. ``svg_id`` becomes the element's id (escaped); ``threshold`` is the point's cycles for
    100 (None: not marked); with ``source_url`` the source lines named are links to ``source_url#L-N``;
    ``zoom`` (one of ``ZOOMS``) widens the lanes' and the placement's cycle axes that many times.
    Raises ``KeyError`` if ``job`` is not traced, ``ValueError`` for another zoom."""
    if zoom not in ZOOMS:
        raise ValueError(f"zoom must be one of {ZOOMS}, not {zoom!r}")
    plot = PLOT_WIDTH * zoom
    entries = job_trace(record, job)
    raw = record["traces"][str(job)]
    path = explain.critical_path(raw)
    on_path = {link["index"] for link in path if link["index"] is not None}
    runs = record["runs"]
    span = _span(record, job)
    scale = plot / span
    drawn = entries[:MAX_BARS]
    mem_rows = _mem_rows(drawn)
    lane_y, lane_rows, y = _lanes_layout(mem_rows, bool(path))
    links = _Links(source_url)
    parts = []
    parts += _axis(span, scale, y, zoom)
    parts += _threshold_head(record, job, threshold, scale, y)
    parts += _lanes(lane_y, lane_rows, record["summary"].get("utilisation") or {},
                    record["summary"].get("traced_jobs", len(traced_jobs(record))), plot)
    if path:
        parts += _path_strip(raw, path, scale, AXIS_HEIGHT, links)
    parts.append(_ticks(entries[:MAX_BARS], scale, lane_y["ISU"]))
    bars = []
    for k, (op, issue, finish, unit, line) in enumerate(drawn):
        lane = _LANE_OF_UNIT[unit]
        row = min(mem_rows[k], MAX_MEM_ROWS - 1) if unit == "MEM" else 0
        x = X0 + issue * scale
        width = max((finish - issue) * scale, MIN_WIDTH)
        title = (f"{op} (line {line})\nissue {issue}, finish {finish}: {finish - issue} cycles"
                 f"{'' if unit == 'FREE' else ' on ' + unit}{reason_text(raw, k)}"
                 f"{chr(10) + 'on the critical path' if k in on_path else ''}")
        crit = " tl-crit" if k in on_path else ""
        bars.append((line, f'<rect class="tl-bar tl-{lane.lower()}{crit}" x="{x:.2f}" '
                           f'y="{lane_y[lane] + row * ROW + 1:.2f}" width="{width:.2f}" height="{ROW - 2:.2f}">'
                           f'<title>{escape(title)}</title></rect>'))
    parts += _linked_runs(bars, links)
    if path:
        chart, y = _cycles_chart(raw, path, runs[job][2] if job < len(runs) else span, y + 4, job,
                                 record["kernel_cycles"], links)
        parts += chart
    y += 4
    if _cut(record, job):
        total = _instructions(record, job)
        parts.append(f'<text class="tl-small" x="{X0}" y="{y + 10:.2f}">the first {len(drawn)} of {total} '
                     'instructions are drawn; the Perfetto trace has the stored ones</text>')
        y += 16
    placement, y = _placement(record, job, y + 6, threshold, plot)
    parts += placement
    width = svg_width(zoom)
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline{" tl-dim" if path else ""}" '
            f'width="{width:.0f}" height="{y:.0f}" '
            f'viewBox="0 0 {width:.0f} {y:.0f}" role="img" data-x0="{X0}" data-scale="{scale!r}" '
            f'data-span="{span}" data-job="{job}" data-bars="{len(drawn)}" data-critical="{len(on_path)}" '
            f'data-threshold="{threshold or ""}" data-zoom="{zoom}"' + (f' id="{escape(svg_id)}"' if svg_id else "") + ">")
    label = escape(f"timeline of job {job} of kernel {record['kernel']}: {len(entries)} instructions, "
                   f"{span} cycles")
    return "".join([head, f"<title>{label}</title><style>{_STYLE}</style>",
                    f'<rect class="tl-bg" x="0" y="0" width="{width:.0f}" height="{y:.0f}"/>', *parts, "</svg>"])


def svg_width(zoom: int = 1) -> int:
    """The pixel width of a picture drawn with ``zoom``."""
    return int(X0 + PLOT_WIDTH * zoom + UTIL_WIDTH)


def timeline_height(record: dict, job: int = 0, threshold: int | None = None) -> int:
    """The pixel height of ``timeline_svg(record, job, threshold=threshold)`` (for the page's frame),
    without drawing it (the zoom changes only the width)."""
    path = bool(explain.critical_path(record["traces"][str(job)]))
    _, _, y = _lanes_layout(_mem_rows(job_trace(record, job)[:MAX_BARS]), path)
    if path:
        y += 4 + CHART_HEIGHT
    y += 4 + (16 if _cut(record, job) else 0) + 6
    return int(round(y + _placement_height(record, threshold)))


def threshold_text(cycles: int, threshold: int | None) -> str:
    """How a launch of ``cycles`` stands to the point's ``threshold`` (the most cycles scoring 100), in
    words: ``"threshold for 100: 23,272 cycles; this launch's 31,491 is 1.35x it, 8,219 to go"``, or
    that it is within it; "" without a threshold."""
    if not threshold:
        return ""
    if cycles > threshold:
        return (f"threshold for 100: {threshold:,} cycles; this launch's {cycles:,} is "
                f"{cycles / threshold:.2f}x it, {cycles - threshold:,} to go")
    return f"threshold for 100: {threshold:,} cycles; this launch's {cycles:,} is within it (scores 100)"


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


def _cycles_chart(raw: list, path: list, job_cycles: int, y: float, job: int, kernel_cycles: int,
                  links: _Links) -> tuple[list[str], float]:
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
         f'tl-share tl-{_LANE_OF_UNIT[units[line]].lower()}', f'data-line="{"" if line is None else line}"', line)
        for line, cycles in sorted(per_line.items(), key=lambda kv: -kv[1])], links)
    stalled = explain.stall_cycles(raw)
    waited = sum(stalled.values())
    out += _stacked(y + 34, "stalls", scale, [
        (f"{cause} stall", cycles, f"tl-stall tl-{cause}", f'data-cause="{cause}"', None)
        for cause, cycles in sorted(stalled.items(), key=lambda kv: -kv[1]) if cycles]
        + [("issuing, and after the last issue", job_cycles - waited, "tl-issuing", 'data-cause="none"', None)],
        links)
    tops = explain.top_lines({0: raw}, TOP_LINES)["caused"]
    said = "; ".join(links.name(e["line"]) + escape(f" ({'/'.join(e['ops'])}) {e['cycles']:,} cycles, "
                                                     + "/".join(e["causes"])) for e in tops)
    out.append(f'<text class="tl-small tl-tops" x="{X0}" y="{y + 64:.2f}">'
               f'{"holds up others most: " + said if tops else "no instruction waited for another"}</text>')
    return out, y + CHART_HEIGHT


def _path_strip(raw: list, path: list, scale: float, y: float, links: _Links) -> list[str]:
    """The critical path along the lanes' axis: its links end to end from cycle 0 (their cycles add up to
    the job's), each ``<rect class="tl-path tl-UNIT" data-cycles>`` coloured by its instruction's unit,
    a source line's links to the listing; ``PATH_ROW`` pixels from ``y``, labelled "path"."""
    out = [f'<text class="tl-small" x="4" y="{y + 9:.2f}">path</text>']
    items, at = [], 0
    for link in path:
        unit = raw[link["index"]][3] if link["index"] is not None else "FREE"
        what = "before the first issue" if link["index"] is None else f"{link['op']} (line {link['line']})"
        held = ", holding the issue unit" if link["via"] == "issue" else ""
        title = f"critical path: {what}, {_count(link['cycles'], 'cycle')}{held} (cycles {at:,} to {at + link['cycles']:,})"
        items.append((link["line"], f'<rect class="tl-path tl-{_LANE_OF_UNIT[unit].lower()}" data-cycles="{link["cycles"]}" '
                                    f'x="{X0 + at * scale:.2f}" y="{y + 1:.2f}" width="{max(link["cycles"] * scale, 0.5):.2f}" '
                                    f'height="{PATH_ROW - 2:.2f}"><title>{escape(title)}</title></rect>'))
        at += link["cycles"]
    return out + _linked_runs(items, links)


def _stacked(y: float, label: str, scale: float, segments: list, links: _Links) -> list[str]:
    """One horizontal bar of ``(name, cycles, class, data attributes, source line or None)`` segments,
    labelled inside when wide; a segment of a source line links to the listing."""
    out = [f'<text class="tl-small" x="4" y="{y + 10:.2f}">{escape(label)}</text>']
    x = X0
    for name, cycles, cls, data, line in segments:
        width = cycles * scale
        segment = (f'<rect class="{cls}" {data} data-cycles="{cycles}" x="{x:.2f}" y="{y:.2f}" '
                   f'width="{width:.2f}" height="{ROW:.2f}"><title>{escape(f"{name}: {cycles:,} cycles")}'
                   '</title></rect>')
        text = f"{name} {cycles:,}"
        if width >= 6 * len(text) + 6:
            ink = "tl-small" if cls in LIGHT_SEGMENTS else "tl-inner"
            segment += (f'<text class="{ink}" x="{x + 3:.2f}" y="{y + 9:.2f}" pointer-events="none">'
                        f'{escape(text)}</text>')
        out.append(links.wrap(line, segment))
        x += width
    return out


class _Links:
    """Links from the picture to the page's listing of a source line (``BASE#L-N``, the listing's
    anchors); with no base address, nothing is linked."""

    def __init__(self, source_url: str):
        self.base = escape(source_url)

    def wrap(self, line, inner: str) -> str:
        """``inner`` (SVG text) as a link to ``line``'s listing, or as it is (no base, no line)."""
        if not self.base or not isinstance(line, int):
            return inner
        return f'<a href="{self.base}#L-{line}" target="_top">{inner}</a>'

    def name(self, line) -> str:
        """The words "line N" (SVG text), a link when there is a listing."""
        text = escape(f"line {line}")
        return self.wrap(line, f'<tspan class="tl-link">{text}</tspan>') if self.base else text


def _linked_runs(items: list[tuple], links: _Links) -> list[str]:
    """``(line, svg)`` items in order, each run of one source line wrapped in one link (bars of a
    line come in runs: one link per run, not per bar, keeps the picture small)."""
    return [links.wrap(line, "".join(svg for _, svg in run)) for line, run in groupby(items, key=lambda i: i[0])]


def _span(record: dict, job: int) -> int:
    """The cycles the lanes' axis covers: the job's own (at least its last finish, at least 1)."""
    runs = record["runs"]
    return max(runs[job][2] if job < len(runs) else 0, max((e[2] for e in job_trace(record, job)), default=0), 1)


def _launch(record: dict) -> int:
    """The cycles the placement's axis covers: the launch's (at least every job's end, at least 1)."""
    return max(record["kernel_cycles"], max((s + c for _, s, c in record["runs"]), default=0), 1)


def _threshold_head(record: dict, job: int, threshold: int | None, scale: float, bottom: float) -> list[str]:
    """The top line's words on the threshold (right-aligned) and its mark across the lanes when the
    lanes' axis is the launch's from cycle 0 (the job started at 0) and it falls inside them."""
    if not threshold:
        return []
    out = [f'<text class="tl-threshold-label tl-threshold-text" x="{X0 + PLOT_WIDTH:.2f}" y="11" '
           f'text-anchor="end">{escape(threshold_text(record["kernel_cycles"], threshold))}</text>']
    runs = record["runs"]
    if job < len(runs) and runs[job][1] == 0 and threshold <= _span(record, job):
        out += _threshold_mark(threshold, scale, 14.0, bottom, 23.0)
    return out


def _threshold_mark(threshold: int, scale: float, top: float, bottom: float, label_y: float) -> list[str]:
    """A dashed vertical line at cycle ``threshold`` from ``top`` to ``bottom`` (pixels) and its label at
    ``label_y``, on the side of the line with more room. The label only names the line ("for 100"): the
    threshold's number is said once, in the top line, and in the line's hover text."""
    x = X0 + threshold * scale
    left = x > X0 + PLOT_WIDTH / 2
    return [f'<line class="tl-threshold" data-cycles="{threshold}" x1="{x:.2f}" y1="{top:.2f}" x2="{x:.2f}" '
            f'y2="{bottom:.2f}"><title>threshold for 100: {count_text(threshold)} cycles</title></line>',
            f'<text class="tl-threshold-label" x="{x - 4 if left else x + 4:.2f}" y="{label_y:.2f}" '
            f'text-anchor="{"end" if left else "start"}">{MARK_LABEL}</text>']


def _sm_row(sms: int) -> float:
    return SM_ROW_WIDE if sms <= LABELLED_SMS else SM_ROW


def _lanes_layout(mem_rows: list[int], path: bool = False) -> tuple[dict, dict, float]:
    """Top of each lane, its number of rows, and the y below the last lane (with ``path``, the critical
    path's strip first)."""
    lane_rows = {"ISU": 1, "MEM": max(1, min(max(mem_rows, default=0) + 1, MAX_MEM_ROWS)), "VXM": 1, "MXM": 1}
    lane_y, y = {}, AXIS_HEIGHT + (PATH_ROW + LANE_GAP if path else 0)
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


def _axis(span: int, scale: float, bottom: float, zoom: int = 1) -> list[str]:
    step = _nice_step(span, 8 * zoom)
    out = [f'<text class="tl-small" x="{X0}" y="11">cycles (relative to the job\'s start)</text>']
    for cycle in range(0, span + 1, step):
        x = X0 + cycle * scale
        out.append(f'<line class="tl-axis" x1="{x:.2f}" y1="{AXIS_HEIGHT - 6}" x2="{x:.2f}" y2="{bottom:.2f}"/>'
                   f'<text class="tl-small" x="{x:.2f}" y="{AXIS_HEIGHT - 9}" text-anchor="middle">{count_text(cycle)}</text>')
    return out


def _lanes(lane_y: dict, lane_rows: dict, util: dict, traced: int, plot: float = PLOT_WIDTH) -> list[str]:
    out = [f'<text class="tl-small" x="{X0 + plot + 10}" y="{AXIS_HEIGHT - 9}">utilisation '
           f'({traced} traced job{"s" if traced != 1 else ""})</text>']
    for lane in LANES:
        y, height = lane_y[lane], lane_rows[lane] * ROW
        share = util.get(lane)
        value = "n/a" if share is None else f"{100 * share:.1f}%"
        out.append(f'<rect class="tl-lane" x="{X0}" y="{y:.2f}" width="{plot}" height="{height:.2f}"/>'
                   f'<text class="tl-label" x="4" y="{y + 10:.2f}">{lane}</text>'
                   f'<text class="tl-label tl-util" data-unit="{lane}" x="{X0 + plot + 10}" '
                   f'y="{y + 10:.2f}">{lane} {value}</text>')
    return out


def _ticks(entries, scale: float, y: float) -> str:
    """One tick per issued instruction on the ISU lane's top edge (FREE ones included)."""
    path = "".join(f"M{X0 + issue * scale:.2f} {y:.2f}v3" for _, issue, _, _, _ in entries)
    return f'<path class="tl-tick" d="{path}"/>' if path else ""


def _placement_layout(record: dict, threshold: int | None) -> tuple[bool, float, float]:
    """Whether the threshold is marked on the placement (it falls inside the launch), the height of the
    part on the launch's axis (the SM rows; with many SMs the busy strip, the drawn job's row and the
    compact SM rows) and of what lies below it (nothing now: 0), in pixels."""
    sms = max(record["num_sms"], 1)
    marked = bool(threshold) and threshold <= _launch(record)
    if sms <= LABELLED_SMS:
        return marked, sms * _sm_row(sms), 0.0
    return marked, OCC_HEIGHT + 8 + sms * SM_ROW + 2, 0.0


def _placement_height(record: dict, threshold: int | None) -> float:
    """The pixels ``_placement`` takes: its heading, the threshold's label row, the axis part, the grid."""
    marked, axis, grid = _placement_layout(record, threshold)
    return 16 + (LABEL_ROW if marked else 0) + axis + grid + 6


def _placement(record: dict, job: int, y: float, threshold: int | None,
               plot: float = PLOT_WIDTH) -> tuple[list[str], float]:
    """The job -> SM placement of the launch from ``y`` (module docstring), the drawn job highlighted and
    the threshold marked on the launch's axis (``plot`` pixels wide); returns the SVG parts and the y
    below them."""
    runs, sms = record["runs"], max(record["num_sms"], 1)
    cycles = _launch(record)
    scale = plot / cycles
    where = (f"SM {runs[job][0]}, cycles {runs[job][1]:,} to {runs[job][1] + runs[job][2]:,}"
             if job < len(runs) else "?")
    out = [f'<text class="tl-small" x="{X0}" y="{y + 10:.2f}">placement: {_count(record["jobs"], "job")} on '
           f'{_count(sms, "SM")} over {record["kernel_cycles"]:,} cycles; job {job} ran on {escape(where)}</text>']
    marked, axis, grid = _placement_layout(record, threshold)
    top = y + 16
    y = top + (LABEL_ROW if marked else 0)
    if sms <= LABELLED_SMS:
        out += _sm_rows(record, job, y, scale)
    else:
        out += _busy_strip(record, job, y, scale, plot)
        out += _sm_rows(record, job, y + OCC_HEIGHT + 8, scale, plot)
    if marked:
        out += _threshold_mark(threshold, scale, top + LABEL_ROW - 3, y + axis - 2, top + 9)
    return out, y + axis + grid + 6


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _job_bar(cls: str, x0: float, y: float, start: int, length: int, scale: float, height: float,
             title: str = "") -> str:
    """One bar of the placement from cycle ``start`` for ``length`` cycles (at least half a pixel)."""
    tip = f"<title>{escape(title)}</title>" if title else ""
    return (f'<rect class="{cls}" x="{x0 + start * scale:.2f}" y="{y:.2f}" width="{max(length * scale, 0.5):.2f}" '
            f'height="{height:.2f}">{tip}</rect>')


def _sm_rows(record: dict, job: int, y: float, scale: float, plot: float = PLOT_WIDTH) -> list[str]:
    """One row per SM, one bar per job (or one per SM, its first start to its last end, when there are
    more than ``MAX_PLACEMENT_JOBS`` jobs). Up to ``LABELLED_SMS`` SMs each row is labelled; more are
    compact (``SM_ROW`` pixels, every ``SM_LABEL_EVERY``-th labelled), each row with a hover band
    ``<rect class="tl-sm-row" data-sm data-jobs data-busy>`` saying its SM, jobs and busy cycles."""
    runs, sms = record["runs"], max(record["num_sms"], 1)
    row = _sm_row(sms)
    if sms <= LABELLED_SMS:
        out = [f'<text class="tl-small" x="4" y="{y + sm * row + min(row, 9):.2f}">SM {sm}</text>' for sm in range(sms)]
    else:
        out = [f'<text class="tl-small" x="4" y="{y + sm * row + 8:.2f}">SM {sm}</text>'
               for sm in range(0, sms, SM_LABEL_EVERY)]
        out.append(f'<text class="tl-small" x="{X0 + plot + 10}" y="{y + 8:.2f}">one row per SM</text>')
        out += _sm_bands(record, job, y, plot)
    if len(runs) <= MAX_PLACEMENT_JOBS:
        return out + [_job_bar("tl-job tl-job0" if j == job else "tl-job", X0, y + sm * row, start, length, scale,
                               row - 1, f"job {j}: SM {sm}, cycles {start} to {start + length}")
                      for j, (sm, start, length) in enumerate(runs)]
    busy: dict[int, tuple] = {}
    for sm, start, length in runs:
        lo, hi = busy.get(sm, (start, start + length))
        busy[sm] = (min(lo, start), max(hi, start + length))
    out += [_job_bar("tl-job", X0, y + sm * row, lo, hi - lo, scale, row - 1) for sm, (lo, hi) in sorted(busy.items())]
    if job < len(runs):
        sm, start, length = runs[job]
        out.append(_job_bar("tl-job tl-job0", X0, y + sm * row, start, length, scale, row - 1))
    return out


def busy_sms(runs: list, cycles: int, buckets: int = OCC_BUCKETS) -> list[float]:
    """How many SMs are busy on average in each of ``buckets`` equal spans of a launch of ``cycles``
    cycles, given its placement ``runs`` (``[[sm, start, length], ...]``, cycles); ``buckets`` floats."""
    if not runs:
        return [0.0] * buckets
    placed = np.asarray(runs, dtype=np.float64)
    edges = np.linspace(0.0, float(cycles), buckets + 1)
    done = np.clip(edges[None, :] - placed[:, 1:2], 0.0, placed[:, 2:3]).sum(axis=0)  # busy SM-cycles by each edge
    return (np.diff(done) / np.diff(edges)).tolist()


def _busy_strip(record: dict, job: int, y: float, scale: float, plot: float = PLOT_WIDTH) -> list[str]:
    """Many SMs: the launch's busy SMs over time (``OCC_HEIGHT`` pixels, full height = every SM busy)
    and, under it, the drawn job's bar."""
    runs, sms = record["runs"], max(record["num_sms"], 1)
    levels = busy_sms(runs, _launch(record))
    step = plot / len(levels)
    base = y + OCC_HEIGHT
    path = f"M{X0:.2f} {base:.2f}" + "".join(
        f"V{base - min(level / sms, 1.0) * OCC_HEIGHT:.2f}H{X0 + (k + 1) * step:.2f}" for k, level in enumerate(levels))
    out = ['<text class="tl-small" x="4" y="{:.2f}">busy</text>'.format(y + 10),
           '<text class="tl-small" x="4" y="{:.2f}">SMs</text>'.format(y + 20),
           f'<rect class="tl-occ-bg" x="{X0}" y="{y:.2f}" width="{plot}" height="{OCC_HEIGHT}"/>',
           f'<path class="tl-occ" d="{path}V{base:.2f}Z"><title>busy SMs over the launch (full height: all '
           f'{sms})</title></path>',
           f'<text class="tl-small" x="{X0 + plot + 10}" y="{y + 10:.2f}">busy SMs over time</text>',
           f'<text class="tl-small" x="{X0 + plot + 10}" y="{y + 20:.2f}">(full: all {sms})</text>']
    if job < len(runs):
        sm, start, length = runs[job]
        out.append(_job_bar("tl-job tl-job0", X0, base + 2, start, length, scale, 4.0,
                            f"job {job}: SM {sm}, cycles {start} to {start + length}"))
    return out


def _sm_bands(record: dict, job: int, y: float, plot: float) -> list[str]:
    """Compact rows: a band over each SM's row (under its bars) whose hover text says the SM, its jobs
    and how much of the launch it was busy."""
    runs, sms = record["runs"], max(record["num_sms"], 1)
    cycles = _launch(record)
    jobs: dict[int, list[int]] = {sm: [] for sm in range(sms)}
    busy = dict.fromkeys(range(sms), 0)
    for j, (sm, _, length) in enumerate(runs):
        jobs.setdefault(sm, []).append(j)
        busy[sm] = busy.get(sm, 0) + length
    out = []
    for sm in range(sms):
        listed = ", ".join(map(str, jobs[sm][:12])) + (", ..." if len(jobs[sm]) > 12 else "")
        title = (f"SM {sm}: {_count(len(jobs[sm]), 'job')}{f' ({listed})' if listed else ''}, busy "
                 f"{busy[sm]:,} of {cycles:,} cycles ({100 * busy[sm] / cycles:.1f}%)")
        out.append(f'<rect class="tl-sm-row" data-sm="{sm}" data-jobs="{len(jobs[sm])}" data-busy="{busy[sm]}" '
                   f'x="{X0}" y="{y + sm * SM_ROW:.2f}" width="{plot}" height="{SM_ROW:.2f}">'
                   f'<title>{escape(title)}</title></rect>')
    return out
