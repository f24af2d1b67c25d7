"""``kdt-grade admin``: the organisers' commands (thin, over ``grader.service.Service``)."""
import sys
from pathlib import Path

import click
from rich.table import Table

from .cli_contest import contest_group, users
from .cli_output import csv_text, dump_json, err, out, show_result, submissions_table
from .service import Service

SUBMISSION_COLUMNS = ["submission_id", "user_id", "user_name", "file_name", "sha256", "created", "status",
                      "task1", "task2", "task3", "task4", "total"]


@click.group()
def admin() -> None:
    """Organisers' commands: database, users, contest rules, submissions, rejudges, the sweeper, exports."""


admin.add_command(users)
admin.add_command(contest_group)


@admin.command("init-db")
def init_db() -> None:
    """Create the database schema, or upgrade it to the newest revision (repeatable)."""
    with Service() as service:
        service.init_db()
        out.print(f"database at head: {_safe_url(service.settings.db_url)}")


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
    out.print(f"submission {state['id']}: {state['file_name']} by {state['user']}, {state['created']}, "
              f"sha256 {state['sha256']}, status {state['status']}")
    show_result(state, "results")
    table = Table(title="grading", title_justify="left")
    for name in ("task", "point", "state", "attempts", "worker", "started", "finished", "seconds"):
        table.add_column(name)
    for p in state["points"]:
        table.add_row(str(p["task"]), str(p["point"]), p["state"], str(p["attempts"]), p["worker"] or "-",
                      (p["started_at"] or "-")[:19].replace("T", " "), (p["finished_at"] or "-")[11:19] or "-",
                      "-" if p["wall_seconds"] is None else f"{p['wall_seconds']:.2f}")
    out.print(table)
    if source:
        out.print(f"\n--- {state['file_name']} ---")
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


@admin.command()
@click.argument("submission_ids", nargs=-1, type=int)
@click.option("--user", help="Every submission of this user.")
@click.option("--all", "everything", is_flag=True, help="Every submission.")
def rejudge(submission_ids: tuple, user: str | None, everything: bool) -> None:
    """Grade submissions again from scratch (ids, a user's, or --all); the leaderboard follows.

    Without a broker they are graded here, before the command returns."""
    if not (submission_ids or user or everything):
        raise click.UsageError("name submission ids, --user NAME or --all")
    with Service() as service:
        try:
            done = service.rejudge(submission_ids, user=user, everything=everything)
        except LookupError as exc:
            raise click.ClickException(f"{exc}; nothing was rejudged") from None
        mode = "graded" if service.settings.embedded else "queued"
    out.print(f"rejudge: {mode} {len(done)} submission(s): {', '.join(map(str, done)) or '-'}")


@admin.command()
@click.option("--older-than", type=float, help="Seconds a point may stay unclaimed or running "
                                                  "(default: KDT_GRADE_STUCK_AFTER_SECONDS).")
def sweep(older_than: float | None) -> None:
    """Queue again the test points that are missing or stuck (a lost worker leaves them)."""
    with Service() as service:
        points = service.sweep(older_than)
    if not points:
        out.print("sweep: nothing is missing or stuck")
        return
    table = Table(title=f"sweep: {len(points)} test point(s) queued again", title_justify="left")
    for name in ("submission", "task", "point", "reason", "attempts", "action"):
        table.add_column(name)
    for p in points:
        table.add_row(str(p["submission_id"]), str(p["task"]), str(p["point"]), p["reason"], str(p["attempts"]),
                      p["action"])
    out.print(table)


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


def _safe_url(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
