"""The pages' plots: inline SVG drawn on the server from the series of ``grader.service.progress`` (no
JavaScript, nothing loaded from elsewhere; the colours are ``static/style.css``'s ``.pl-*`` classes).

- ``cycles_chart(points)``: a submission's test points, each its cycles (a dot: filled when AC), its
  threshold (a solid tick: the most cycles that score 100) and the cycles for 10 more points (a dashed
  tick), on a log scale when the values span more than ``LOG_RATIO``;
- ``own_chart(progress)``: the caller's scored submissions over time, one bar each stacked by task, and
  the best total so far (a step line);
- ``scoreboard_chart(progress)``: the top users' best total over contest time, one step line each, a dot
  where it rose;
- ``queue_chart(activity)`` and ``graded_chart(activity)``: the last hour, minute by minute: the points in
  the queue (a line), the points graded and their verdicts (stacked bars).

Every picture is one ``<svg class="plot" viewBox=...>`` (it takes the page's width, 100%, at any screen
width) with a ``<title>`` and a ``<desc>``; every drawn value carries its exact number in ``data-*``
attributes (floats as Python's ``repr``: the same number as the JSON API's), what the browser tests compare
with the API. Each has a table beside it in the page (``templates/plots.html``). Geometry: ``Scale``
(linear or log), ``TimeScale``; x grows to the right from ``LEFT`` over ``PLOT_W`` units, y upwards from
``TOP + PLOT_H``. All text is escaped (user names come from the accounts).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from html import escape

from markupsafe import Markup

from grader.display import count_text, parse_time
from judger.tasks import TASKS
from judger.verdicts import VERDICTS

VIEW_W = 640.0       # the viewBox's width (the picture scales to the page's)
LEFT, RIGHT, TOP, BOTTOM = 70.0, 14.0, 12.0, 56.0   # margins for the axes' labels
PLOT_W = VIEW_W - LEFT - RIGHT
PLOT_H = 240.0
VIEW_H = TOP + PLOT_H + BOTTOM
LOG_RATIO = 30.0     # values spanning more than this factor are drawn on a log scale
COLOURS = 10         # ``.pl-c0`` .. ``.pl-c9``: one per user of the scoreboard's graph
TIME_STEPS = (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)  # seconds


def number(value) -> str:
    """A value for a ``data-*`` attribute: integers as digits, floats as ``repr`` (round trip), None as ''."""
    if value is None:
        return ""
    return str(value) if isinstance(value, int) else repr(float(value))


def short_count(value: float) -> str:
    """An axis label of a count: ``950``, ``12k``, ``1.5M``."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            text = f"{value / size:.1f}".rstrip("0").rstrip(".")
            return text + suffix
    return f"{value:g}"


def nice_step(span: float, most: int = 6) -> float:
    """The tick step (1, 2 or 5 times a power of 10) giving at most ``most`` steps over ``span`` (> 0)."""
    raw = span / max(most, 1)
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    return next(f * power for f in (1, 2, 5, 10) if f * power >= raw)


def nice_max(value: float, most: int = 5) -> float:
    """The smallest multiple of ``nice_step`` at or above ``value`` (at least 1): a linear axis' top."""
    value = max(float(value), 1.0)
    step = nice_step(value, most)
    return math.ceil(value / step - 1e-9) * step


class Scale:
    """Values ``lo``..``hi`` onto pixels ``a``..``b`` (``a`` for ``lo``), linear or log10 (``lo`` > 0)."""

    def __init__(self, lo: float, hi: float, a: float, b: float, log: bool = False):
        self.log = log
        self.lo, self.hi = (math.log10(lo), math.log10(hi)) if log else (lo, hi)
        if self.hi <= self.lo:
            self.hi = self.lo + 1
        self.a, self.b = a, b
        self.range = (lo, hi)

    def __call__(self, value: float) -> float:
        v = math.log10(max(value, 1e-12)) if self.log else value
        return round(self.a + (v - self.lo) / (self.hi - self.lo) * (self.b - self.a), 2)

    def ticks(self, most: int = 6) -> list[float]:
        """Tick values inside the range: 1-2-5 steps (linear) or powers of 10, with 2x and 5x between
        them when the range spans fewer than two decades (log)."""
        lo, hi = self.range
        if not self.log:
            step = nice_step(hi - lo, most)
            first = math.ceil(lo / step - 1e-9) * step
            return [first + k * step for k in range(int((hi - first) / step + 1e-9) + 1)]
        decades = [10 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
        marks = [d * f for d in decades for f in ((1, 2, 5) if math.log10(hi / lo) < 2 else (1,))]
        return [m for m in marks if lo <= m <= hi]


def log_range(values: Iterable[float]) -> tuple[float, float, bool]:
    """The axis range of positive ``values``: ``(lo, hi, log)``: log when they span more than
    ``LOG_RATIO`` (padded to whole-ish bounds a little beyond them), else linear from 0."""
    values = [v for v in values if v and v > 0] or [1.0]
    lo, hi = min(values), max(values)
    if hi / lo > LOG_RATIO:
        return lo / 1.6, hi * 1.6, True
    return 0.0, nice_max(hi * 1.1), False


class TimeScale:
    """Aware datetimes ``start``..``end`` onto x pixels ``LEFT``..``LEFT + PLOT_W`` (with ``pad``, that share of
    the span added at both ends, so bars at the ends stay inside)."""

    def __init__(self, start: datetime, end: datetime, pad: float = 0.0):
        if end <= start:
            start, end = start - timedelta(minutes=30), start + timedelta(minutes=30)
        margin = (end - start) * pad
        self.start, self.end = start - margin, end + margin
        self.scale = Scale(self.start.timestamp(), self.end.timestamp(), LEFT, LEFT + PLOT_W)

    def __call__(self, moment: datetime | str) -> float:
        return self.scale(parse_time(moment).timestamp())

    def ticks(self, most: int = 5) -> list[datetime]:
        """Round UTC times inside the range, at most ``most`` of them."""
        span = (self.end - self.start).total_seconds()
        step = next((s for s in TIME_STEPS if span / s <= most), TIME_STEPS[-1])
        first = math.ceil(self.start.timestamp() / step) * step
        return [datetime.fromtimestamp(first + k * step, UTC)
                for k in range(int((self.end.timestamp() - first) // step) + 1)]

    def label(self, moment: datetime) -> str:
        """``14:30`` (UTC), or ``12-05 14:30`` when the range spans more than a day."""
        return moment.strftime("%m-%d %H:%M" if self.end - self.start > timedelta(days=1) else "%H:%M")


def _attrs(**data) -> str:
    return "".join(f' data-{k.replace("_", "-")}="{escape(v if isinstance(v, str) else number(v))}"'
                   for k, v in data.items())


def _svg(chart: str, title: str, desc: str, body: list[str], **data) -> Markup:
    """The root ``<svg>`` of a picture ``chart`` (its id and class ``plot-CHART``)."""
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="plot plot-{chart}" id="plot-{chart}" '
            f'viewBox="0 0 {VIEW_W:.0f} {VIEW_H:.0f}" width="100%" role="img" '
            f'aria-labelledby="plot-{chart}-title plot-{chart}-desc"{_attrs(**data)}>'
            f'<title id="plot-{chart}-title">{escape(title)}</title><desc id="plot-{chart}-desc">{escape(desc)}</desc>')
    return Markup(head + "".join(body) + "</svg>")


def _y_axis(scale: Scale, label, caption: str) -> list[str]:
    out = [f'<g class="pl-axis pl-y">']
    for value in scale.ticks():
        y = scale(value)
        out.append(f'<line class="pl-grid" x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{y}" y2="{y}"/>'
                   f'<text x="{LEFT - 6}" y="{y}" text-anchor="end" dominant-baseline="middle">{escape(label(value))}</text>')
    out.append(f'<text class="pl-caption" x="4" y="{TOP + PLOT_H / 2}" text-anchor="middle" '
               f'transform="rotate(-90 14 {TOP + PLOT_H / 2})" dx="10">{escape(caption)}</text></g>')
    return out


def _time_axis(times: TimeScale) -> list[str]:
    bottom = TOP + PLOT_H
    out = [f'<g class="pl-axis pl-x"><line class="pl-base" x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{bottom}" y2="{bottom}"/>']
    for moment in times.ticks():
        x = times(moment)
        out.append(f'<line class="pl-tick" x1="{x}" x2="{x}" y1="{bottom}" y2="{bottom + 5}"/>'
                   f'<text x="{x}" y="{bottom + 24}" text-anchor="middle">{times.label(moment)}</text>')
    out.append(f'<text class="pl-caption" x="{LEFT + PLOT_W}" y="{bottom + 50}" text-anchor="end">time (UTC)</text></g>')
    return out


def _score(value: float) -> str:
    return f"{value:g}"


# ---- a submission: cycles against the thresholds --------------------------------------------------

def cycles_chart(points: Sequence[dict]) -> Markup:
    """The test points of ``progress.submission_cycles`` side by side, grouped by task: each a ``<g
    class="pl-point" data-task data-point data-verdict data-cycles data-for-100 data-for-plus-10>`` with a
    dot at its cycles (none: the verdict's name instead), a solid tick at its threshold and a dashed one at
    the cycles for +10 (when there are such)."""
    values = [v for p in points for v in (p["cycles"], p["cycles_for_100"], p["cycles_for_plus_10"]) if v]
    lo, hi, log = log_range(values)
    scale = Scale(lo, hi, TOP + PLOT_H, TOP, log=log)
    slot = PLOT_W / max(len(points), 1)
    body = _y_axis(scale, short_count, "cycles" + (" (log scale)" if log else ""))
    bottom = TOP + PLOT_H
    body.append(f'<line class="pl-base" x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{bottom}" y2="{bottom}"/>')
    for i, p in enumerate(points):
        x = round(LEFT + (i + 0.5) * slot, 2)
        half = round(slot * 0.32, 2)
        first_of_task = i == 0 or points[i - 1]["task"] != p["task"]
        if first_of_task:
            left = LEFT + i * slot
            if i:
                body.append(f'<line class="pl-sep" x1="{left}" x2="{left}" y1="{TOP}" y2="{bottom + 48}"/>')
            body.append(f'<text class="pl-group" x="{left + 4}" y="{bottom + 46}">Task {p["task"]}</text>')
        verdict = p["verdict"] or p["state"]
        title = (f'task {p["task"]} point {p["point"]}: {verdict}'
                 + (f', {count_text(p["cycles"])} cycles' if p["cycles"] is not None else '')
                 + f'; threshold {count_text(p["cycles_for_100"])}'
                 + (f'; +10 at {count_text(p["cycles_for_plus_10"])}' if p["cycles_for_plus_10"] else ''))
        data = _attrs(task=p["task"], point=p["point"], verdict=p["verdict"] or "", state=p["state"],
                      cycles=p["cycles"], for_100=p["cycles_for_100"], for_plus_10=p["cycles_for_plus_10"],
                      score=p["score"])
        parts = [f'<g class="pl-point"{data}><title>{escape(title)}</title>']
        y = scale(p["cycles_for_100"])
        parts.append(f'<line class="pl-thr" x1="{x - half}" x2="{x + half}" y1="{y}" y2="{y}"/>')
        if p["cycles_for_plus_10"]:
            y = scale(p["cycles_for_plus_10"])
            parts.append(f'<line class="pl-plus" x1="{x - half}" x2="{x + half}" y1="{y}" y2="{y}"/>')
        if p["cycles"] is not None:
            cls = "pl-dot pl-ok" if p["verdict"] == "AC" else "pl-dot pl-bad"
            parts.append(f'<circle class="{cls}" cx="{x}" cy="{scale(p["cycles"])}" r="7"/>')
        else:
            parts.append(f'<text class="pl-vlabel" x="{x}" y="{bottom - 10}" text-anchor="middle">{escape(verdict)}</text>')
        parts.append(f'<text x="{x}" y="{bottom + 22}" text-anchor="middle">{p["point"]}</text></g>')
        body.append("".join(parts))
    desc = ("Each test point's cycles (a dot, filled when accepted) against its threshold (a solid tick: at most "
            "this many cycles score 100) and the cycles that score 10 points more (a dashed tick).")
    return _svg("cycles", "Cycles against the thresholds", desc, body, log="1" if log else "0")


# ---- a contestant's own submissions over time ------------------------------------------------------

def own_chart(progress: dict) -> Markup:
    """The caller's scored submissions (``progress.own_progress``) over time: a ``<g class="pl-sub"
    data-submission data-at data-total data-best>`` each, a bar stacked by task (``<rect class="pl-task
    pl-tN" data-task data-score>``), and the best total so far as a step line."""
    subs = progress["submissions"]
    times = TimeScale(parse_time(subs[0]["created"]), parse_time(subs[-1]["created"]), pad=0.05) if subs else \
        TimeScale(datetime.now(UTC), datetime.now(UTC))
    top = nice_max(max([s["total"] for s in subs] + [10.0]))
    scale = Scale(0, top, TOP + PLOT_H, TOP)
    body = _y_axis(scale, _score, "points") + _time_axis(times)
    width = max(3.0, min(16.0, PLOT_W / (len(subs) * 1.6 + 1)))
    for s in subs:
        x, y0, stacked = times(s["created"]), scale(0), 0.0
        parts = [f'<g class="pl-sub"{_attrs(submission=s["submission_id"], at=s["created"], total=s["total"], best=s["best"])}>'
                 f'<title>submission {s["submission_id"]}: {s["total"]:.2f} points</title>']
        for t in TASKS:
            score = s[f"task{t}"]
            if not score:
                continue
            stacked += score
            y1 = scale(stacked)
            parts.append(f'<rect class="pl-task pl-t{t}" x="{round(x - width / 2, 2)}" y="{y1}" width="{width}" '
                         f'height="{round(y0 - y1, 2)}"{_attrs(task=t, score=score)}/>')
            y0 = y1
        body.append("".join(parts) + "</g>")
    if subs:
        steps = [f'M{times(subs[0]["created"])} {scale(subs[0]["best"])}']
        steps += [f'H{times(s["created"])}V{scale(s["best"])}' for s in subs[1:]]
        body.append(f'<path class="pl-best" d="{"".join(steps)}"/>')
    desc = "The score of each of your scored submissions by task (stacked bars) and your best total so far (a line)."
    return _svg("own", "Your scores over time", desc, body)


# ---- the scoreboard: the top users over contest time -----------------------------------------------

def scoreboard_chart(progress: dict) -> Markup:
    """The users of ``progress.scoreboard_progress``: one ``<g class="pl-user pl-cN" data-user data-rank
    data-total>`` each, a step line from 0 at the start through each rise to the end, a ``<circle
    class="pl-step" data-at data-total data-submission>`` at each rise; the freeze marked when inside."""
    times = TimeScale(parse_time(progress["start"]), parse_time(progress["end"]))
    users = progress["users"]
    top = nice_max(max([u["total"] for u in users] + [10.0]))
    scale = Scale(0, top, TOP + PLOT_H, TOP)
    body = _y_axis(scale, _score, "best total") + _time_axis(times)
    freeze = progress.get("freeze_at")
    if freeze and times.start < parse_time(freeze) <= times.end:
        x = times(freeze)
        body.append(f'<g class="pl-freeze"><line x1="{x}" x2="{x}" y1="{TOP}" y2="{TOP + PLOT_H}"/>'
                    f'<text x="{x - 4}" y="{TOP + 14}" text-anchor="end">freeze</text></g>')
    end_x = times(times.end)
    for i, u in enumerate(users):
        d = [f"M{times(times.start)} {scale(0)}"]
        dots = []
        for step in u["steps"]:
            x, y = times(step["at"]), scale(step["total"])
            d.append(f"H{x}V{y}")
            dots.append(f'<circle class="pl-step" cx="{x}" cy="{y}" r="5"'
                        f'{_attrs(at=step["at"], total=step["total"], submission=step["submission_id"])}>'
                        f'<title>{escape(u["user_name"])}: {step["total"]:.2f} at {step["at"][11:19]} UTC</title></circle>')
        d.append(f"H{end_x}")
        name = u["display_name"] or u["user_name"]
        body.append(f'<g class="pl-user pl-c{i % COLOURS}"{_attrs(user=u["user_name"], rank=u["rank"], total=u["total"])}>'
                    f'<title>#{u["rank"]} {escape(name)}: {u["total"]:.2f}</title>'
                    f'<path class="pl-line" d="{"".join(d)}"/>{"".join(dots)}</g>')
    desc = (f"The best total of the scoreboard's top {len(users)} over the contest, one line each, rising where a "
            "submission beat the user's best" + (" (frozen: only submissions before the freeze count)"
                                                 if progress["frozen"] else "") + ".")
    return _svg("scoreboard", "The top of the scoreboard over time", desc, body,
                frozen="1" if progress["frozen"] else "0", start=progress["start"], end=progress["end"])


# ---- the organisers: the last hour -----------------------------------------------------------------

def _minutes_scale(activity: dict) -> TimeScale:
    return TimeScale(parse_time(activity["start"]), parse_time(activity["end"]), pad=0.01)


def queue_chart(activity: dict) -> Markup:
    """The points in the queue at each minute's end (``progress.grading_activity``): a line through a
    ``<circle class="pl-q" data-end data-queue>`` per minute."""
    times, minutes = _minutes_scale(activity), activity["minutes"]
    scale = Scale(0, nice_max(max([m["queue"] for m in minutes] + [5])), TOP + PLOT_H, TOP)
    body = _y_axis(scale, short_count, "points waiting") + _time_axis(times)
    points = [(times(m["end"]), scale(m["queue"]), m) for m in minutes]
    if points:
        body.append(f'<path class="pl-qline" d="M{" L".join(f"{x} {y}" for x, y, _ in points)}"/>')
    body.extend(f'<circle class="pl-q" cx="{x}" cy="{y}" r="3"{_attrs(end=m["end"], queue=m["queue"])}>'
                f'<title>{m["end"][11:16]}: {m["queue"]} waiting</title></circle>' for x, y, m in points)
    desc = "How many test points were queued or running at the end of each minute of the last hour."
    return _svg("queue", "Queue length, last hour", desc, body)


def graded_chart(activity: dict) -> Markup:
    """The points graded in each minute (``progress.grading_activity``), a bar each stacked by verdict:
    ``<rect class="pl-v pl-v-XX" data-start data-verdict data-count>`` (only counts above 0)."""
    times, minutes = _minutes_scale(activity), activity["minutes"]
    scale = Scale(0, nice_max(max([m["graded"] for m in minutes] + [5])), TOP + PLOT_H, TOP)
    body = _y_axis(scale, short_count, "points per minute") + _time_axis(times)
    width = round(PLOT_W / max(len(minutes), 1) * 0.8, 2)
    for m in minutes:
        x = round((times(m["start"]) + times(m["end"])) / 2 - width / 2, 2)
        y0, count = scale(0), 0
        for verdict in VERDICTS:
            n = m["verdicts"][verdict]
            if not n:
                continue
            count += n
            y1 = scale(count)
            body.append(f'<rect class="pl-v pl-v-{verdict}" x="{x}" y="{y1}" width="{width}" height="{round(y0 - y1, 2)}"'
                        f'{_attrs(start=m["start"], verdict=verdict, count=n)}><title>{m["start"][11:16]}: {n} {verdict}'
                        f'</title></rect>')
            y0 = y1
    desc = "How many test points were graded in each minute of the last hour, by verdict (stacked bars)."
    return _svg("graded", "Grading rate and verdicts, last hour", desc, body)


# ---- what the pages show beside each picture: its table, as display strings -------------------------

def _time(value) -> str:
    return "" if value is None else parse_time(value).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _points(value) -> str:
    return "\u2013" if value is None else f"{value:.2f}"


def own_view(progress: dict) -> dict:
    """``own_progress`` for the "My submissions" page: ``{"svg", "rows": [{"id", "created", "created_text",
    "tasks": [4 texts], "total", "best"}]}`` (None when there is nothing to draw)."""
    subs = progress["submissions"]
    if not subs:
        return {"svg": None, "rows": []}
    return {"svg": own_chart(progress),
            "rows": [{"id": s["submission_id"], "created": s["created"], "created_text": _time(s["created"]),
                      "tasks": [_points(s[f"task{t}"]) for t in TASKS], "total": _points(s["total"]),
                      "best": _points(s["best"])} for s in subs]}


def scoreboard_view(progress: dict) -> dict:
    """``scoreboard_progress`` for the scoreboard page: ``{"svg", "frozen", "start_text", "end_text",
    "users": [{"rank", "user", "name", "colour" (the ``pl-cN`` class), "total", "steps": "14:02 37.30, ..."}]}``
    (``svg`` None when nobody is on the board)."""
    users = progress["users"]
    return {"svg": scoreboard_chart(progress) if users else None, "frozen": progress["frozen"],
            "start_text": _time(progress["start"]), "end_text": _time(progress["end"]),
            "users": [{"rank": u["rank"], "user": u["user_name"], "name": u["display_name"] or u["user_name"],
                       "colour": f"pl-c{i % COLOURS}", "total": _points(u["total"]),
                       "steps": ", ".join(f'{_time(s["at"])[11:16]} {_points(s["total"])}' for s in u["steps"])}
                      for i, u in enumerate(users)]}


def activity_view(activity: dict) -> dict:
    """``grading_activity`` for the admin page: both pictures, the verdict mix (``[{"verdict", "count",
    "share"}]``, verdicts seen only) and the minutes that saw anything, newest first (``rows``)."""
    graded = activity["graded"]
    mix = [{"verdict": v, "count": n, "share": f"{100 * n / graded:.0f}%"}
           for v, n in activity["verdicts"].items() if n]
    rows = [{"end": m["end"], "end_text": _time(m["end"])[11:16], "queue": m["queue"], "graded": m["graded"],
             "verdicts": ", ".join(f"{n} {v}" for v, n in m["verdicts"].items() if n)}
            for m in reversed(activity["minutes"]) if m["graded"] or m["queue"]]
    return {"queue_svg": queue_chart(activity), "graded_svg": graded_chart(activity), "graded": graded,
            "per_minute": f"{graded / max(len(activity['minutes']), 1):.1f}", "mix": mix, "rows": rows,
            "queue_now": activity["minutes"][-1]["queue"] if activity["minutes"] else 0}
