"""How the ``kdt-grade`` commands show plain data: rich tables, progress bars, JSON and CSV.

Everything user-controlled (user and file names, messages, worker names, printed kernel output) goes
through ``safe`` (``rich.markup.escape``) before rich renders it: a user called ``[/oops]`` or a kernel
raising ``RuntimeError("[/red]")`` is shown as typed, never read as markup; and terminal control characters
(ESC sequences that clear the screen, move the cursor or write the clipboard) are shown as ``\x1b``-style
escapes (``printable``), so a contestant's text cannot rewrite an organiser's terminal.

The same ``result_table`` renders ``kdt-grade local`` (``PointResult`` dicts) and ``kdt-grade status``
(``Service.status``), so the two look alike and can be compared line by line.
"""
import json
import os
import re
import sys

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from grader.csv_format import LEADERBOARD_COLUMNS, csv_text, progress_csv  # one CSV format, with the admin page's export
from grader.display import count_text, utc_text  # numbers and times as the pages write them

# Not a terminal (a pipe, a log): 120 columns unless COLUMNS says otherwise, instead of rich's 80.
_WIDTH = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120
out = Console(highlight=False, soft_wrap=False, width=_WIDTH)
err = Console(stderr=True, highlight=False)

_VERDICT_STYLE = {"AC": "green", "WA": "red", "CE": "yellow", "RE": "red", "TLE": "magenta", "MLE": "magenta",
                  "SV": "bold red", "IE": "bold blue"}
_SCORE_KEYS = ("task1", "task2", "task3", "task4", "total")


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab written as an escape (``\x1b``)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def safe(value) -> str:
    """``value`` as text rich shows literally (control characters escaped, markup escaped); None as ``-``."""
    return "-" if value is None else escape(printable(str(value)))


def dump_json(data) -> None:
    """Print ``data`` as JSON on stdout (machine-readable; no colours)."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _num(value, digits=2) -> str:
    """A score with two decimals (as the pages show it), ``-`` when there is none."""
    return "-" if value is None else f"{value:.{digits}f}"


def _weight(value) -> str:
    """A task's weight or the maximum total: ``10``, ``100`` (a server sends ``10.0``)."""
    return f"{float(value):g}"


def when(timestamp) -> str:
    """A time as the pages show it (``2026-12-05 14:03:12 UTC``), ``-`` when there is none."""
    return "-" if timestamp is None else utc_text(timestamp)


def _verdict(verdict, state="done") -> str:
    if verdict is None:
        return f"[dim]{state}[/dim]"
    return f"[{_VERDICT_STYLE.get(verdict, 'white')}]{safe(verdict)}[/]"


def count(value) -> str:
    """Cycles or another count with thousands separators (``21,248``), ``-`` when there is none."""
    return "-" if value is None else count_text(value)


def result_table(title: str, points: list[dict], tasks: dict, total) -> Table:
    """The per-test-point table plus task scores and the total. ``points``: dicts with ``task, point,
    verdict, cycles, score, utilisation, message`` and ``cycles_for_100`` (the threshold),
    ``cycles_for_plus_10`` (None unless AC below 100; ``grader.service.rules_text.cycles_needed``), and
    optionally ``state``; ``tasks``: ``{id: {"name", "weight", "score"}}``."""
    table = Table(title=safe(title), title_justify="left")
    for name, justify in (("task", "right"), ("point", "right"), ("verdict", "left"), ("cycles", "right"),
                          ("MXM", "right"), ("score", "right"), ("cycles for 100", "right"), ("cycles for +10", "right"),
                          ("message", "left")):
        table.add_column(name, justify=justify, overflow="fold" if name == "message" else "ellipsis")
    for p in points:
        util = p.get("utilisation")
        first = (p.get("message") or "").strip().splitlines()
        table.add_row(str(p["task"]), str(p["point"]), _verdict(p.get("verdict"), p.get("state", "done")),
                      count(p.get("cycles")), "-" if util is None else f"{100 * util:.1f}%", _num(p.get("score")),
                      count(p.get("cycles_for_100")), count(p.get("cycles_for_plus_10")),
                      safe(first[0][:100]) if first else "")
    table.add_section()
    for task_id, t in sorted(tasks.items(), key=lambda kv: int(kv[0])):
        table.add_row(str(task_id), "", "", "", "", f"{_num(t['score'])} / {_weight(t['weight'])}", "", "",
                      safe(t["name"]))
    weight = sum(t["weight"] for t in tasks.values())
    table.add_row("", "", "", "", "", f"[bold]{_num(total)} / {_weight(weight)}[/bold]", "", "", "[bold]total[/bold]")
    return table


def show_result(state: dict, title: str) -> None:
    """The result table of a status document or a ``local`` report, then the messages of failed points."""
    out.print(result_table(title, state["points"], state["tasks"], state["total"]))
    reused = [f"{p['task']}.{p['point']}" for p in state["points"] if p.get("reused")]
    if reused:
        out.print(f"reused, not simulated again (this judge graded the same kernel before, same result): "
                  f"{', '.join(reused)}", highlight=False)
    print_messages(state["points"])


_CHANGE_STYLE = {"better": "green", "worse": "red", "same": "dim", "pending": "dim"}


def signed(value, digits: int | None = 2) -> str:
    """A change with its sign (``+12.50``, ``-204``, ``0.00``; ``digits`` None: a count with thousands
    separators), ``-`` when there is none."""
    if value is None:
        return "-"
    if digits is None:
        return ("+" if value > 0 else "-" if value < 0 else "") + count_text(abs(value))
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text[1:]) == 0 else text


def _changed(text: str, good: bool | None) -> str:
    """``text`` green when the change is an improvement, red when a regression (the sign says it too)."""
    return text if good is None else f"[{'green' if good else 'red'}]{text}[/]"


def comparison_table(doc: dict) -> Table:
    """``kdt-grade diff``: two submissions side by side (``grader.service.compare.compare``), per test point
    the verdicts, cycles and scores of A and B with the change from A to B, per task and in total. The
    last column says in words what the colours say (``better`` / ``worse`` / ``same`` / ``pending``)."""
    a, b = doc["a"], doc["b"]
    title = (f"A = submission {a['id']} ({safe(a['file_name'])}, {safe(a['user'])}) -> B = submission {b['id']} "
             f"({safe(b['file_name'])}, {safe(b['user'])}){'; the same file' if doc['same_file'] else ''}")
    table = Table(title=title, title_justify="left")
    for name in ("task", "point", "verdict A -> B", "cycles A", "cycles B", "change", "B / A", "score A",
                 "score B", "change ", "B is"):
        table.add_column(name, justify="left" if name in ("verdict A -> B", "B is") else "right")
    for p in doc["points"]:
        verdicts = f"{_verdict(p['verdict_a'], 'pending')} -> {_verdict(p['verdict_b'], 'pending')}"
        cycles, score = p["cycles_delta"], p["score_delta"]
        reused = [side for side in ("A", "B") if p[f"reused_{side.lower()}"]]
        table.add_row(str(p["task"]), str(p["point"]), verdicts, count(p["cycles_a"]), count(p["cycles_b"]),
                      _changed(signed(cycles, None), None if not cycles else cycles < 0),
                      "-" if p["cycles_ratio"] is None else f"{p['cycles_ratio']:.2f}x",
                      _num(p["score_a"]), _num(p["score_b"]),
                      _changed(signed(score), None if score is None or abs(score) < 0.005 else score > 0),
                      f"[{_CHANGE_STYLE[p['change']]}]{p['change']}[/]"
                      + (f" (reused: {'/'.join(reused)})" if reused else ""))
    table.add_section()
    for t in doc["tasks"]:
        delta = t["delta"]
        table.add_row(str(t["task"]), "", safe(t["name"]), "", "", "", "", _num(t["score_a"]), _num(t["score_b"]),
                      _changed(signed(delta), None if delta is None or abs(delta) < 0.005 else delta > 0),
                      f"of {_weight(t['weight'])}")
    delta = doc["total_delta"]
    table.add_row("", "", "[bold]total[/bold]", "", "", "", "", f"[bold]{_num(doc['total_a'])}[/bold]",
                  f"[bold]{_num(doc['total_b'])}[/bold]",
                  _changed(f"[bold]{signed(delta)}[/bold]", None if delta is None or abs(delta) < 0.005 else delta > 0),
                  "of 100")
    return table


def show_comparison(doc: dict, as_json: bool) -> None:
    """What ``kdt-grade diff`` prints: the comparison document (``--json``) or its table and one line
    counting the points that got better and worse."""
    if as_json:
        dump_json(doc)
        return
    out.print(comparison_table(doc))
    counts = doc["counts"]
    out.print(", ".join(f"{counts[c]} {c}" for c in ("better", "worse", "same", "pending") if counts.get(c))
              + " (test points, from A to B)", markup=False)


def show_submitted(state: dict, wait: bool, as_json: bool) -> None:
    """What ``kdt-grade submit`` prints at the end: the status document (``--json``), the result table
    (``--wait``), or where to look."""
    if as_json:
        dump_json(state)
    elif wait:
        show_result(state, f"submission {state['id']}: {state['file_name']} ({state['status']})")
    elif state["total"] is not None and state["status"] in ("done", "failed"):
        out.print(f"total {_num(state['total'])} / 100; details: kdt-grade status {state['id']}")
    else:
        out.print(f"queued; see `kdt-grade status {state['id']}`")


def print_explanations(points: list[dict], explanations: dict) -> None:
    """Under a heading per test point (``task.point``, verdict, cycles), why it takes its cycles
    (``judger.explain.format_explanation`` of ``explanations["TASK.POINT"]``); points that ran nothing
    are left out."""
    from judger.explain import format_explanation, legend_lines  # imports kdt: only `local --explain` needs it

    for p in points:
        expl = explanations.get(f"{p['task']}.{p['point']}")
        if expl is not None:
            out.print(f"\n[bold]{p['task']}.{p['point']}[/bold] {safe(p['verdict'])}, {count(p['cycles'])} cycles")
            for line in format_explanation(expl):
                out.print(line, markup=False, highlight=False, soft_wrap=True)
    if explanations:
        out.print("\n" + "\n".join(legend_lines()), markup=False, highlight=False, soft_wrap=True)


def print_messages(points: list[dict]) -> None:
    """The full messages of the points that did not pass, each distinct message once."""
    groups: dict[str, list] = {}
    for p in points:
        if p.get("message") and p.get("verdict") not in (None, "AC"):
            groups.setdefault(p["message"], []).append(p)
    for message, group in groups.items():
        where = ", ".join(f"{p['task']}.{p['point']}" for p in group)
        out.print(f"\n[bold]{safe(group[0]['verdict'])}[/bold] on test point{'s' if len(group) > 1 else ''} {where}:")
        out.print(printable(message), markup=False)


def leaderboard_table(rows: list[dict], title="Leaderboard", tasks: dict | None = None) -> Table:
    """``tasks``: ``{id: {"name", "weight"}}`` for the column heads (default: the judger's tasks; a client
    passes the server's, so it need not import the judger and torch)."""
    if tasks is None:
        from judger.tasks import TASKS

        tasks = {task_id: {"name": t.name, "weight": t.weight} for task_id, t in TASKS.items()}
    table = Table(title=title, title_justify="left")
    for name in ("rank", "user", "submission", "submitted"):
        table.add_column(name, justify="right" if name in ("rank", "submission") else "left")
    for task_id, t in sorted(tasks.items(), key=lambda kv: int(kv[0])):
        table.add_column(f"T{task_id} /{_weight(t['weight'])}", justify="right")
    table.add_column("total", justify="right")
    for r in rows:
        table.add_row(str(r["rank"]), safe(user_label(r)), str(r["submission_id"]), when(r["created"]),
                      *(_num(r[k]) for k in _SCORE_KEYS))
    return table


def user_label(row: dict) -> str:
    """A leaderboard row's user as the scoreboard page names them: ``Display Name (login)``, or the login
    when there is no display name."""
    display = row.get("display_name")
    return f"{display} ({row['user_name']})" if display and display != row["user_name"] else row["user_name"]


def print_leaderboard(rows: list[dict], as_json: bool, as_csv: bool, tasks: dict | None = None) -> None:
    """Leaderboard rows as JSON, CSV or a table (``tasks``: the column heads, see ``leaderboard_table``)."""
    if as_json:
        dump_json(rows)
    elif as_csv:
        sys.stdout.write(csv_text(rows, LEADERBOARD_COLUMNS))
    else:
        out.print(leaderboard_table(rows, tasks=tasks))


def print_progress(doc: dict, as_json: bool, as_csv: bool) -> None:
    """The scoreboard's progress document (``GET /api/v1/leaderboard/progress``) as JSON, CSV
    (``csv_format.progress_csv``, the page's ``/scoreboard/progress.csv``) or a table: each of the top users
    with the times (UTC) their best total rose and to what."""
    if as_json:
        dump_json(doc)
        return
    if as_csv:
        sys.stdout.write(progress_csv(doc))
        return
    table = Table(title=f"The top {len(doc['users'])} over time, {when(doc['start'])} to {when(doc['end'])}"
                        + (" (frozen: only submissions before the freeze count)" if doc["frozen"] else ""),
                  title_justify="left")
    for name in ("rank", "user", "total", "best total rose (UTC time: total)"):
        table.add_column(name, justify="right" if name in ("rank", "total") else "left")
    for u in doc["users"]:
        steps = ", ".join(f"{when(s['at'])[11:16]}: {_num(s['total'])}" for s in u["steps"])
        table.add_row(str(u["rank"]), safe(user_label(u)), _num(u["total"]), steps)
    out.print(table)


def rules_points_table(doc: dict) -> Table:
    """Every task's test points of a rules document (``GET /api/v1/rules``): sizes, the threshold (the
    cycles for 100) and the cycles for each of its ``score_levels``."""
    table = Table(title="Tasks and test points (cycles: the most that still score at least the column's score)",
                  title_justify="left")
    for name in ("task", "name", "weight", "point", "sizes", "T = for 100",
                 *(f"for {level}" for level in doc["score_levels"])):
        # Only the names and sizes wrap (at spaces, never inside a word or a number).
        wraps = name in ("name", "sizes")
        table.add_column(name, justify="left" if wraps else "right", no_wrap=not wraps,
                         min_width=10 if wraps else None)
    for t in doc["tasks"]:
        for p in t["points"]:
            first = p["index"] == t["points"][0]["index"]
            sizes = " ".join(f"{key}={value}" for key, value in p["args"].items())
            table.add_row(str(t["id"]) if first else "", safe(t["name"]) if first else "",
                          str(t["weight"]) if first else "", str(p["index"]), safe(sizes), count(p["threshold"]),
                          *(count(p["cycles_for"][str(level)]) for level in doc["score_levels"]))
    return table


def print_rules(doc: dict) -> None:
    """What ``kdt-grade rules`` prints of a rules document: the scoring, the trials, correctness, time limit
    and verdicts, a worked example, the ranking, the tasks' test points and the contest's times and limits
    (every text through ``safe``)."""
    scoring = doc["scoring"]
    name = doc["contest"].get("name")
    out.print(f"[bold]Rules{' of ' + safe(name) if name else ''}[/bold]\n")
    out.print(f"[bold]A test point:[/bold] {safe(doc['formula'])}")
    for key in ("point", "task", "total"):
        out.print(safe(scoring[key]))
    out.print("\n[bold]Trials, correctness and the time limit:[/bold]")
    for key in ("trials", "correct", "time_limit"):
        out.print(safe(scoring[key]))
    out.print("\n[bold]Verdicts:[/bold]")
    for line in doc["verdicts"]:
        out.print(safe(line["text"]))
    out.print(f"\n[bold]Example:[/bold] {safe(doc['example']['text'])}")
    out.print("\n[bold]Leaderboard:[/bold]")
    for key in ("leaderboard", "ties", "freeze"):
        out.print(safe(scoring[key]))
    out.print(f"\n{safe(scoring['thresholds'])}\n")
    out.print(rules_points_table(doc))
    out.print()
    limits = Table(title="Contest times and submission limits", title_justify="left", show_header=False)
    for line in doc["lines"]:
        limits.add_row(safe(line["label"]), safe(line["text"]))
    out.print(limits)


def submissions_table(rows: list[dict], title="Submissions") -> Table:
    table = Table(title=title, title_justify="left")
    for name in ("id", "user", "file", "submitted", "status", "T1", "T2", "T3", "T4", "total"):
        table.add_column(name, justify="right" if name in ("id", "T1", "T2", "T3", "T4", "total") else "left")
    for r in rows:
        table.add_row(str(r["submission_id"]), safe(r["user_name"]), safe(r["file_name"]), when(r["created"]),
                      safe(r["status"]), *(_num(r[k]) for k in _SCORE_KEYS))
    return table


def newest_first(rows: list[dict]) -> list[dict]:
    """Submission rows (oldest first, as the service and the API give them) newest first, as the pages
    list them."""
    return list(reversed(rows))


def verdicts_exit_code(points: list[dict]) -> int:
    """The exit status of a graded run: 0 when there are test points and every one is AC, else 1."""
    return 0 if points and all(p.get("verdict") == "AC" for p in points) else 1


def write_source(text: str, output, submission_id: int) -> None:
    """A submission's source, byte for byte as stored (UTF-8), to a pipe or to the file ``output``
    (replaced), saying on stderr what was written. To a terminal, control characters are written as
    escapes (``source_for_terminal``): a contestant's file must not drive an organiser's terminal."""
    if output is None:
        if sys.stdout.isatty():
            sys.stdout.write(source_for_terminal(text, submission_id))
            sys.stdout.flush()
            return
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.buffer.flush()
        return
    data = text.encode("utf-8")
    output.write_bytes(data)
    err.print(f"wrote submission {submission_id} to {output} ({len(data)} bytes)", markup=False, highlight=False,
              soft_wrap=True)


def source_for_terminal(text: str, submission_id: int) -> str:
    """``text`` as a terminal may show it: unchanged without control characters, else with them written
    as escapes (``printable``) and a note on stderr of how to get the exact bytes."""
    shown = printable(text)
    if shown != text:
        err.print(f"submission {submission_id} holds control characters: shown escaped (\\x1b); "
                  "`-o FILE` or a pipe gives the exact bytes", markup=False, highlight=False, soft_wrap=True)
    return shown


def progress_updater(progress: Progress, bar):
    """``on_progress(status)`` for a ``wait`` loop: the bar shows the finished test points."""
    return lambda state: progress.update(bar, total=len(state["points"]),
                                         completed=sum(p["state"] == "done" for p in state["points"]))


def points_progress() -> Progress:
    """A progress bar over test points, on stderr."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("test points"), TimeElapsedColumn(), console=err, transient=False)


def refused(exc) -> click.ClickException:
    """A service's ``grader.refusals.Refusal`` as the command's one-line error (exit status 1)."""
    return click.ClickException(exc.message)
