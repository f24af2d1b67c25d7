"""``kdt-grade admin``: the organisers' commands (thin, over ``grader.service.Service``)."""
import sys
from pathlib import Path

import click
from rich.table import Table

from grader.runtime.urls import safe_url
from grader.service import Service

from .contest import contest_group
from .messages import admin_announce, admin_answer, admin_clarifications, admin_ignore
from .output import csv_text, dump_json, err, out, safe, show_result, source_for_terminal, submissions_table, when
from .users import users

SUBMISSION_COLUMNS = ["submission_id", "user_id", "user_name", "file_name", "sha256", "created", "status",
                      "task1", "task2", "task3", "task4", "total"]


@click.group()
def admin() -> None:
    """Organisers' commands: database, users, contest rules, submissions, rejudges, the sweeper, exports;
    clarifications, answer, ignore, announce.

    They act on this machine's database (KDT_GRADE_DATA_DIR or KDT_GRADE_DATABASE_URL: the server's, when
    run with its settings). Only clarifications, answer, ignore and announce go to a contest server when
    one is configured (`kdt-grade login` with an organiser's token); without one, answer, ignore and
    announce act as the database's only enabled organiser account, or as --as NAME."""


admin.add_command(users)
admin.add_command(contest_group)
for _command in (admin_clarifications, admin_answer, admin_ignore, admin_announce):  # a server's API when logged in
    admin.add_command(_command)


@admin.command("init-db")
def init_db() -> None:
    """Create the database schema, or upgrade it to the newest revision (repeatable); drop the reusable
    results of other judge versions."""
    with Service() as service:
        purged = service.init_db()
        out.print(f"database at head: {safe(safe_url(service.settings.db_url))}", soft_wrap=True)
        if purged:
            out.print(f"dropped {purged} stored result(s) of another judge version")


@admin.command()
@click.option("--user", help="Only this user's submissions.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def submissions(user: str | None, as_json: bool) -> None:
    """List submissions with their derived status and scores, oldest first."""
    with Service() as service:
        rows = [r for r in service.all_submissions() if user is None or r["user_name"] == user]
    if as_json:
        dump_json(rows)
    else:
        out.print(submissions_table(rows))


@admin.command()
@click.argument("submission_id", type=int)
@click.option("--source", is_flag=True, help="Also print the submitted file.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show(submission_id: int, source: bool, as_json: bool) -> None:
    """One submission in full: results, attempts, workers, timings (and the source)."""
    with Service() as service:
        try:
            state = service.status(submission_id)
            text = service.submission_source(submission_id) if source else None
        except LookupError as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        dump_json({**state, **({"source": text} if source else {})})
        return
    out.print(f"submission {state['id']}: {safe(state['file_name'])} by {safe(state['user'])}, "
              f"{when(state['created'])}, "
              f"sha256 {state['sha256']}, status {state['status']}")
    show_result(state, "results")
    table = Table(title="grading", title_justify="left")
    for name in ("task", "point", "state", "attempts", "worker", "started", "finished", "seconds"):
        table.add_column(name)
    for p in state["points"]:
        table.add_row(str(p["task"]), str(p["point"]), p["state"], str(p["attempts"]), safe(p["worker"]),
                      when(p["started_at"]), when(p["finished_at"]),
                      "-" if p["wall_seconds"] is None else f"{p['wall_seconds']:.2f}")
    out.print(table)
    if source:
        out.print(f"\n--- {safe(state['file_name'])} ---")
        shown = source_for_terminal(text, submission_id) if sys.stdout.isatty() else text
        sys.stdout.write(shown if shown.endswith("\n") else shown + "\n")


@admin.command()
@click.argument("submission_ids", nargs=-1, type=int)
@click.option("--user", help="Every submission of this user.")
@click.option("--all", "everything", is_flag=True, help="Every submission.")
@click.option("--fresh", is_flag=True, help="Compile and simulate every point again: reuse no stored result "
                                            "or compile of an identical kernel or file.")
def rejudge(submission_ids: tuple, user: str | None, everything: bool, fresh: bool) -> None:
    """Grade submissions again from scratch (ids, a user's, or --all); the leaderboard follows.

    A point whose kernel this judge version already simulated takes that stored result (marked reused)
    unless --fresh. Without a broker they are graded here, before the command returns."""
    if not (submission_ids or user or everything):
        raise click.UsageError("name submission ids, --user NAME or --all")
    with Service() as service:
        try:
            done = service.rejudge(submission_ids, user=user, everything=everything, fresh=fresh)
        except LookupError as exc:
            raise click.ClickException(f"{exc}; nothing was rejudged") from None
        mode = "graded" if service.settings.embedded else "queued"
    out.print(f"rejudge{' (fresh)' if fresh else ''}: {mode} {len(done)} submission(s): "
              f"{', '.join(map(str, done)) or '-'}")


@admin.command()
@click.option("--older-than", type=float, help="Seconds a point may stay unclaimed or without a heartbeat "
                                                  "(default: KDT_GRADE_STUCK_AFTER_SECONDS).")
def sweep(older_than: float | None) -> None:
    """Heal what an outage left, now: send the outbox, store missing totals, queue again the test points
    that are missing or stuck. (Workers and the server also do this by themselves, every few seconds.)"""
    with Service() as service:
        report = service.sweep_report(older_than)
    points = report["points"]
    if report["dispatched"]:
        out.print(f"sweep: sent {report['dispatched']} queued message(s) from the outbox")
    if report["totals"]:
        out.print(f"sweep: stored the missing totals of submission(s) {', '.join(map(str, report['totals']))}")
    for note in report["notes"]:
        out.print(f"sweep: {safe(note)}")
    if not points:
        if not (report["dispatched"] or report["totals"]):
            out.print("sweep: nothing is missing or stuck")
        return
    table = Table(title=f"sweep: {len(points)} test point(s) queued again", title_justify="left")
    for name in ("submission", "task", "point", "reason", "attempts", "action"):
        table.add_column(name)
    for p in points:
        table.add_row(str(p["submission_id"]), str(p["task"]), str(p["point"]), p["reason"], str(p["attempts"]),
                      p["action"])
    out.print(table)


@admin.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON: [{name, ok, detail}].")
def doctor(as_json: bool) -> None:
    """Check this deployment: the sandbox (a known-good kernel through the real sandbox with the configured
    limits), the database, its migrations, the broker and the outbox. Exit code 1 if anything is wrong."""
    from grader.config import load_settings
    from grader.service.doctor import run_checks

    checks = run_checks(load_settings())
    if as_json:
        dump_json([vars(check) for check in checks])
        sys.exit(0 if all(check.ok for check in checks) else 1)
    table = Table(title="kdt-grade doctor", title_justify="left")
    for name in ("check", "result", "detail"):
        table.add_column(name, overflow="fold" if name == "detail" else "ellipsis")
    for check in checks:
        table.add_row(check.name, "[green]ok[/green]" if check.ok else "[bold red]FAILED[/bold red]",
                      safe(check.detail))
    out.print(table)
    if not all(check.ok for check in checks):
        sys.exit(1)


@admin.command("leaderboard")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV (every column, the sha256 included).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write the CSV here.")
def admin_leaderboard(as_csv: bool, output: Path | None) -> None:
    """Every user and every submission (not only the best), oldest first; CSV export."""
    with Service() as service:
        rows = service.all_submissions()
    if output is not None:
        output.write_text(csv_text(rows, SUBMISSION_COLUMNS))
        err.print(f"wrote {len(rows)} submission(s) to {output}")
    elif as_csv:
        sys.stdout.write(csv_text(rows, SUBMISSION_COLUMNS))
    else:
        out.print(submissions_table(rows, title="All submissions"))
