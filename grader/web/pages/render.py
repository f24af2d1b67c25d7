"""Rendering of the pages: the Jinja2 environment (autoescape on), the common context, and the view models
that turn the service's plain data into display strings, once, for the templates and the live JSON alike.

- ``render(request, template, status=200, **context)``: an HTML response with ``account``, ``csrf``, the
  contest's name, the server time and the header's contest clock (``clock_view``: the countdown's text
  and, for ``static/live.js``, the server's now and the contest's times) in the context;
- ``point_view``, ``submission_view``, ``submission_row``, ``banner_view``, ``allowance_view``,
  ``rules_view``: display strings (cycles ``22,482``, scores ``37.30``, utilisation ``91.1%``, times ``2026-12-01 09:45:12 UTC``);
- ``highlight(source, marked)``: the source as Pygments HTML (line numbers, ``#L-N`` anchors, the lines
  the messages name marked), ``pygments_css()`` its stylesheet; ``message_parts`` cuts a message where
  it names a line, for the links to those anchors.

Every value reaches HTML through autoescaping templates (or ``textContent`` in live.js); the only markup
inserted as-is is Pygments' output, which escapes the source itself.
"""
from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from grader.display import count_text, utc_text
from grader.web.http import cookie_session as session
from grader.web.http.csrf import csrf_for
from judger.tasks import TASKS

from .timeline import SVG_WIDTH, ZOOMS, svg_width, threshold_text
from judger.verdicts import VERDICTS, Verdict

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"
DEFAULT_NAME = "KDT contest"
_FORMATTER_OPTIONS = {"linenos": "table", "cssclass": "source", "linespans": "L", "wrapcode": True}
_FORMATTER = HtmlFormatter(**_FORMATTER_OPTIONS)
MESSAGE_LINE = re.compile(r"\bLine (\d{1,7})\b")  # how compile and launch errors name the kernel's line

environment = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, trim_blocks=False,
                          auto_reload=False)


@cache
def package_version() -> str:
    try:
        return version("kdt-grade")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "unknown"


def render(request: Request, template: str, status: int = 200, *, account=None, headers=None,
           **context) -> HTMLResponse:
    """Render ``template`` with the common context into an HTML response."""
    now = datetime.now(UTC)
    token = session.session_token(request)
    rules = context.pop("rules", None)
    html = environment.get_template(template).render(
        clock=clock_view(rules, now) if rules is not None else None,
        account=account, csrf=csrf_for(token) if token and account else "",
        contest_name=(rules.name if rules is not None and rules.name else DEFAULT_NAME),
        version=package_version(), now_iso=now.isoformat(), now_text=time_text(now),
        tasks=[{"id": t.id, "name": t.name, "weight": t.weight} for t in TASKS.values()], **context)
    response = HTMLResponse(html, status_code=status, headers=headers)
    response.headers.setdefault("Cache-Control", "no-store")
    return response


# ---- formatting ------------------------------------------------------------------------------------

def score_text(value) -> str:
    """A score (0..100 points) with two decimals, or an en dash when there is none yet."""
    return "\u2013" if value is None else f"{value:.2f}"


# The scoreboard's colour bands of a task cell, by the fraction of the task's weight earned (DOMjudge-style):
# ``(class, label)`` for nothing, less than half, half or more, all of it (the legend under the board).
SCORE_BANDS = (("sc-zero", "0"), ("sc-low", "under 50%"), ("sc-mid", "50% or more"), ("sc-full", "100%"))


def score_band(score: float | None, weight: float) -> str:
    """The CSS class of a task score on the scoreboard (``SCORE_BANDS``; '' for no score)."""
    if score is None:
        return ""
    fraction = score / weight
    if fraction <= 0:
        return "sc-zero"
    if fraction >= 1 - 1e-9:  # a full score, up to the rounding of the stored mean
        return "sc-full"
    return "sc-mid" if fraction >= 0.5 else "sc-low"


def task_bands(row: dict) -> list[str]:
    """``score_band`` of each task of a leaderboard row (``task1``..``task4``), in task order."""
    return [score_band(row[f"task{t}"], task.weight) for t, task in TASKS.items()]


def cycles_text(value) -> str:
    return "" if value is None else count_text(value)


def util_text(value) -> str:
    return "" if value is None else f"{100 * value:.1f}%"


def time_text(value) -> str:
    """``2026-12-01 09:45:12 UTC`` of an aware datetime or ISO string ('' for None)."""
    return "" if value is None else utc_text(value)


def duration_text(seconds: float) -> str:
    """``2 h 05 min``, ``4 min 10 s`` or ``12 s``."""
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


def countdown_text(seconds: float) -> str:
    """A countdown as the header's clock shows it (``static/live.js`` writes the same): ``0:04:05``,
    ``12:00:00``, ``3 d 04:05:06``."""
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{days} d {hours:02d}:{minutes:02d}:{secs:02d}" if days else clock


def _ms(value: datetime | None) -> str:
    """Milliseconds since the epoch of an aware time, as a data attribute ('' for None)."""
    return "" if value is None else str(int(value.timestamp() * 1000))


def clock_phase(rules, now: datetime) -> str:
    """``before`` the start, ``running``, ``over`` from the end on (``open``: neither time is set)."""
    if rules.starts_at is not None and now < rules.starts_at:
        return "before"
    if rules.ends_at is not None and now >= rules.ends_at:
        return "over"
    return "running" if rules.starts_at is not None or rules.ends_at is not None else "open"


def clock_text(rules, now: datetime, freeze: datetime | None, frozen: bool) -> str:
    """The header clock's text at ``now`` (what the page shows without JavaScript)."""
    phase = clock_phase(rules, now)
    if phase == "before":
        return f"Starts in {countdown_text((rules.starts_at - now).total_seconds())}"
    if phase == "over":
        return "Contest over"
    text = (f"Ends in {countdown_text((rules.ends_at - now).total_seconds())}" if rules.ends_at is not None
            else "Running (no end time)")
    if frozen:
        return text + " \u00b7 scoreboard frozen"
    if freeze is not None:
        return text + f" \u00b7 freeze in {countdown_text((freeze - now).total_seconds())}"
    return text


def clock_view(rules, now: datetime) -> dict:
    """The header's contest clock: its text at ``now`` and, for ``static/live.js``, the server's time and
    the contest's times in milliseconds (the script ticks from the server's clock, not the browser's).
    ``freeze``: the scheduled freeze still to come while running (not lifted, before the end)."""
    freeze = rules.freeze_at
    if freeze is None or rules.unfrozen or freeze <= now or (rules.ends_at is not None and freeze >= rules.ends_at):
        freeze = None
    frozen = rules.frozen(now)
    return {"phase": clock_phase(rules, now), "text": clock_text(rules, now, freeze, frozen), "now_ms": _ms(now),
            "starts_ms": _ms(rules.starts_at), "ends_ms": _ms(rules.ends_at), "freeze_ms": _ms(freeze),
            "frozen": "1" if frozen else "0"}


# ---- view models -----------------------------------------------------------------------------------

def point_view(submission_id: int, p: dict, frames: dict) -> dict:
    """One test point of the status document as display strings (also the live JSON's entries);
    ``frames`` maps the (task, point) of each stored trace to its picture's height in pixels."""
    done = p["state"] == "done"
    height = frames.get((p["task"], p["point"])) if done else None
    has_trace = height is not None
    base = f"/submissions/{submission_id}/points/{p['task']}/{p['point']}"
    verdict = p["verdict"] if done else p["state"]
    return {
        "task": p["task"], "point": p["point"], "state": p["state"], "verdict": verdict,
        "verdict_class": verdict, "verdict_title": _verdict_title(verdict), "reused": done and bool(p.get("reused")),
        "cycles": cycles_text(p["cycles"]), "for_100": cycles_text(p["cycles_for_100"]),
        "for_plus_10": cycles_text(p["cycles_for_plus_10"]),
        "score": score_text(p["score"]) if done else "", "utilisation": util_text(p["utilisation"]),
        "message": p["message"] or "", "message_parts": message_parts(p["message"] or ""),
        "timeline": f"{base}/timeline.svg" if has_trace else None,
        "picture": f"/submissions/{submission_id}?open={p['task']}-{p['point']}#tl-{p['task']}-{p['point']}"
        if has_trace else None,
        "perfetto": f"{base}/perfetto.json" if has_trace else None, "height": height,
        "threshold_note": threshold_text(p["cycles"], p["cycles_for_100"]) if has_trace and p["cycles"] else "",
        "width": SVG_WIDTH + 4 if has_trace else None,
        "zooms": [{"zoom": z, "url": f"{base}/timeline.svg?zoom={z}", "width": svg_width(z) + 4} for z in ZOOMS]
        if has_trace else [],
    }


def submission_view(state: dict, frames: dict) -> dict:
    """The status document (``Service.status``) of one submission as display data."""
    return {
        "id": state["id"], "user": state["user"], "file_name": state["file_name"], "sha256": state["sha256"],
        "created": state["created"], "created_text": time_text(state["created"]), "status": state["status"],
        "live": state["status"] in ("queued", "running"), "total": score_text(state["total"]),
        "tasks": [{"id": int(t), "name": v["name"], "weight": v["weight"], "score": score_text(v["score"])}
                  for t, v in state["tasks"].items()],
        "points": [point_view(state["id"], p, frames) for p in state["points"]],
    }


def live_document(state: dict, frames: dict) -> dict:
    """The small JSON a submission page polls: status, totals, and every point's display strings."""
    view = submission_view(state, frames)
    return {"status": view["status"], "total": view["total"], "points": view["points"],
            "tasks": {t["id"]: t["score"] for t in view["tasks"]}}


def submission_row(row: dict) -> dict:
    """A row of a submissions list (``db.all_submissions`` data; with ``grader.service.glance``'s
    ``verdicts``, ``pending`` and ``counts`` when given) as display data, also the lists' live JSON rows:
    ``marks`` are the verdicts at a glance (``8 AC``, ``2 WA``, ``3 pending``), ``verdicts_text`` them in
    one line (``8 AC · 2 WA``), ``live`` while the submission is queued or running."""
    marks = [{"text": f"{n} {v}", "cls": f"v-{v}", "title": f"{n} point(s): {Verdict(v).description}"}
             for v, n in row.get("verdicts", {}).items()]
    if row.get("pending"):
        marks.append({"text": f"{row['pending']} pending", "cls": "v-queued",
                      "title": f"{row['pending']} point(s) not judged yet"})
    return {"id": row["submission_id"], "user": row.get("user_name", ""), "display_name": row.get("display_name") or "",
            "file_name": row["file_name"],
            "created": row["created"], "created_text": time_text(row["created"]), "status": row["status"],
            "tasks": [score_text(row[f"task{t}"]) for t in TASKS], "total": score_text(row["total"]),
            "marks": marks, "verdicts_text": " \u00b7 ".join(m["text"] for m in marks),
            "counts": bool(row.get("counts")), "live": row["status"] in ("queued", "running")}


def etag_json(request: Request, doc) -> Response:
    """``doc`` as JSON with an ETag of its bytes: 304 when the request's ``If-None-Match`` is that ETag."""
    body = json.dumps(doc, separators=(",", ":")).encode()
    etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
    headers = {"ETag": etag, "Cache-Control": "private, no-cache"}  # one user's document: no shared cache
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def list_document(request: Request, rows: list[dict]) -> Response:
    """A submissions list's live update (``submission_row`` rows): ``{"live": some row queued or running,
    "rows": rows}`` through ``etag_json``."""
    return etag_json(request, {"live": any(r["live"] for r in rows), "rows": rows})


def verdict_options() -> list[dict]:
    """The point verdicts as the filter form's options: ``{"value": "WA", "label": "WA (wrong answer)"}``."""
    return [{"value": v, "label": f"{v} ({Verdict(v).description})"} for v in VERDICTS]


def comparison_view(batch: dict) -> dict:
    """``search.rejudge_comparison`` as display data (scores as text, the change signed)."""
    rows = [{**r, "before": score_text(r["total_before"]), "after": score_text(r["total_after"]),
             "change": "" if r["change"] is None else f"{r['change']:+.2f}",
             "moved": r["change"] is not None and abs(r["change"]) >= 0.005} for r in batch["rows"]]
    return {**batch, "rows": rows, "created_text": time_text(batch["created"]),
            "finished": batch["regraded"] == batch["count"]}


def banner_view(rules, now: datetime) -> dict:
    """The contest banner: phase (``not_started`` / ``running`` / ``ended``), time left, the freeze."""
    starts, ends = rules.starts_at, rules.ends_at
    if starts is not None and now < starts:
        phase, left = "not_started", (starts - now).total_seconds()
    elif ends is not None and now >= ends:
        phase, left = "ended", 0
    else:
        phase, left = "running", (ends - now).total_seconds() if ends is not None else 0
    freeze = rules.leaderboard_cutoff(now) or rules.freeze_at  # in force, else the scheduled one
    return {"phase": phase, "left_text": countdown_text(left), "frozen": rules.frozen(now),
            "starts_at": starts.isoformat() if starts else "", "starts_text": time_text(starts),
            "ends_at": ends.isoformat() if ends else "", "ends_text": time_text(ends),
            "freeze_at": freeze.isoformat() if freeze else "", "freeze_text": time_text(freeze)}


def allowance_view(allowance: dict, now: datetime) -> dict:
    """``grader.service.submission_limits.allowance`` with the next allowed time as text."""
    view = dict(allowance)
    wait = allowance.get("retry_after")
    if wait:
        next_at = datetime.fromtimestamp(now.timestamp() + wait, UTC)
        view.update(retry_text=duration_text(wait), next_at=next_at.isoformat(), next_text=time_text(next_at))
    return view


def rules_view(doc: dict) -> dict:
    """The rules document (``grader.service.rules_text.contestant_rules``) with its numbers as display
    strings: thresholds and cycles with thousands separators, scores with two decimals, the SPM in KiB."""
    example = doc["example"]
    tasks = [{**t, "spm_text": f"{t['spm_size'] // 1024} KiB",
              "points": [{**p, "threshold_text": cycles_text(p["threshold"]),
                          "cycles_for_text": [cycles_text(p["cycles_for"][str(level)]) for level in doc["score_levels"]]}
                         for p in t["points"]]}
             for t in doc["tasks"]]
    return {**doc, "tasks": tasks, "example": {**example, "score_text": score_text(example["score"]),
                                               "threshold_text": cycles_text(example["threshold"]),
                                               "cycles_text": cycles_text(example["cycles"])}}


def limit_lines(rules) -> list[str]:
    """The contest's submission limits in words (none set: one line saying so)."""
    lines = []
    if rules.min_interval_seconds:
        lines.append(f"At most one submission every {duration_text(rules.min_interval_seconds)}.")
    if rules.max_per_hour:
        lines.append(f"At most {rules.max_per_hour} submissions in any hour.")
    if rules.max_pending:
        lines.append(f"At most {rules.max_pending} submissions waiting to be graded.")
    return lines or ["No rate limits are set for this contest."]


def message_parts(message: str) -> list[list]:
    """A point's message cut where it names a line of the kernel (``Line 12, Col 5, ...``): ``[[text,
    line or None], ...]`` in order, the texts joined being the message; the page links each part with a
    line to the listing's ``#L-N`` (the template, and live.js with the same parts)."""
    parts, at = [], 0
    for match in MESSAGE_LINE.finditer(message):
        if match.start() > at:
            parts.append([message[at:match.start()], None])
        parts.append([match.group(0), int(match.group(1))])
        at = match.end()
    if at < len(message):
        parts.append([message[at:], None])
    return parts


def message_lines(state: dict) -> list[int]:
    """The kernel's lines the messages of a submission's points name (status document ``state``), sorted."""
    return sorted({int(m.group(1)) for p in state["points"] for m in MESSAGE_LINE.finditer(p["message"] or "")})


def highlight(source: str, marked: list[int] = ()) -> Markup:
    """The source as highlighted HTML (Pygments escapes it), each line a ``<span id="L-N">`` (the
    anchors the messages and the timelines link to), the ``marked`` lines (1-based) in ``.hll``."""
    formatter = _FORMATTER if not marked else HtmlFormatter(**{**_FORMATTER_OPTIONS, "hl_lines": list(marked)})
    return Markup(pygments_highlight(source, PythonLexer(), formatter))


@cache
def pygments_css() -> str:
    """Pygments' stylesheet for ``highlight``'s markup (generated, not copied into the repository)."""
    return _FORMATTER.get_style_defs(".source")


_STATE_TITLES = {"queued": "waiting for a worker", "running": "being graded"}


def _verdict_title(verdict: str) -> str:
    return Verdict(verdict).description if verdict in VERDICTS else _STATE_TITLES.get(verdict, verdict)
