"""The local ``kdt-grade`` commands: ``local``, and the local (no server) side of ``submit``,
``status``, ``diff``, ``submissions``, ``source``, ``leaderboard``, ``rules``, which ``grader.cli.contestant`` calls when no
server is configured, and of the contest communication (``LocalMessages``: ``ask``, ``clarifications``,
``announcements`` and ``admin clarifications|answer|ignore|announce``, for ``grader.cli.messages``).

Thin: each parses options, calls ``grader.service.Service`` (or ``grader.judging.pipeline`` for ``local``) and
renders plain data with ``grader.cli.output``. Configuration comes from ``KDT_GRADE_*`` (``grader.config``).
"""
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from grader.config import load_settings
from grader.judging import pipeline
from grader.runtime.pool import InterruptLatch, open_pool
from grader.service import Service, accounts, compare, messages, reuse, rules_text
from grader.service.progress import scoreboard_progress
from judger.cache_dir import cache_dir
from judger.totals import summarize
from judger.tasks import TASK_IDS

from .output import (dump_json, err, newest_first, out, points_progress, print_explanations, print_leaderboard,
                     print_progress, progress_updater, safe, show_result, show_submitted, submissions_table,
                     verdicts_exit_code)


def submit_local(file: Path, user: str, wait: bool, timeout: float, as_json: bool = False) -> None:
    """``kdt-grade submit`` into the local database. The file is refused (and nothing stored) if it is
    larger than the limit, not UTF-8 or not Python (exit status 2). Without a broker (KDT_GRADE_BROKER_URL
    unset) it is graded here, before the command returns. With ``wait`` the exit status is
    ``verdicts_exit_code`` of the result."""
    with Service() as service:
        _say_where(service)
        try:
            submission_id = service.accept(file.read_bytes(), file.name, user)
        except pipeline.Rejected as exc:
            err.print(f"[red]refused:[/red] {safe(file.name)}: {safe(exc)}. Nothing was stored.", soft_wrap=True)
            if as_json:
                dump_json({"error": "rejected", "message": f"{exc}. Nothing was stored.", "status": 400,
                           "retry_after": None})
            sys.exit(2)
        except KeyboardInterrupt:  # accept is one transaction: interrupted, it stored nothing
            err.print(f"\n[yellow]interrupted:[/yellow] {safe(file.name)} was not submitted (nothing was stored)")
            sys.exit(130)
        (err if as_json else out).print(f"submission {submission_id} accepted ({safe(file.name)}, user {safe(user)})")
        sys.stdout.flush()
        if service.settings.embedded:
            _grade_here(service, submission_id, wait)
        elif not service.enqueue(submission_id):
            err.print(f"[yellow]the broker is unreachable:[/yellow] submission {submission_id} is stored and "
                      "queued in the database; a worker or the server sends it as soon as the broker is back "
                      "(nothing to do)")
        if wait and not service.settings.embedded:
            _wait_with_progress(service, submission_id, timeout)
        state = service.status(submission_id)
    show_submitted(state, wait, as_json)
    if wait:
        sys.exit(verdicts_exit_code(state["points"]))


def _say_where(service: Service, doing: str = "submitting to", goal: str = "submit to the contest") -> None:
    """One line on stderr when this machine's own database is used (no contest server and no database
    configured): a contestant whose login was lost must not believe they submitted to the contest (or
    asked its organisers: ``doing`` and ``goal`` say what was done). An organiser who set
    ``KDT_GRADE_DATABASE_URL`` chose the database and is told nothing."""
    if service.settings.database_url is not None:
        return
    err.print(f"no contest server configured: {doing} the database of this machine ({service.settings.db_url}); "
              f"`kdt-grade login --server URL` first to {goal}", markup=False, highlight=False, soft_wrap=True)


def _grade_here(service: Service, submission_id: int, wait: bool) -> None:
    """Embedded mode: grade in this process (a progress bar with ``wait``), then resume submissions an
    earlier interrupted run left unfinished. Ctrl-C says how the submission resumes, and exits 130."""
    progress = points_progress() if wait else None
    latch = InterruptLatch()
    try:
        with latch.armed():
            if progress:
                with progress:
                    bar = progress.add_task(f"grading #{submission_id}", total=len(pipeline.ALL_POINTS))
                    service.enqueue(submission_id, on_result=lambda _r: (latch.check(), progress.advance(bar)))
            else:
                err.print(f"grading #{submission_id} here (embedded mode: no broker configured) ...")
                service.enqueue(submission_id, on_result=lambda _r: latch.check())
            resumed = service.resume_interrupted()
    except KeyboardInterrupt:
        err.print(f"\n[yellow]interrupted:[/yellow] submission {submission_id} is stored with the test points "
                  "graded so far. The next `kdt-grade submit` here resumes it (or now: `kdt-grade admin sweep "
                  "--older-than 0`); `kdt-grade status` shows it meanwhile.")
        sys.exit(130)
    if resumed:
        err.print(f"resumed interrupted submission(s): {', '.join(map(str, resumed))}")


def _wait_with_progress(service: Service, submission_id: int, timeout: float) -> None:
    with points_progress() as progress:
        bar = progress.add_task(f"grading #{submission_id}", total=len(pipeline.ALL_POINTS))
        try:
            service.wait(submission_id, timeout=timeout, on_progress=progress_updater(progress, bar))
        except TimeoutError as exc:
            err.print(f"[yellow]{safe(exc)}[/yellow]; see `kdt-grade status {submission_id}`")
            sys.exit(1)


def _local_service() -> Service:
    """The local database's ``Service`` for the reading commands; ``click.ClickException`` (exit 1) when no
    database URL is set and the local SQLite file does not exist yet: a contestant who logged out (or
    never logged in) is told so, and no empty database is made in the current directory."""
    settings = load_settings()
    path = settings.data_dir / "kdt-grade.sqlite3"
    if settings.database_url is None and not path.exists():
        raise click.ClickException(f"no server is configured (`kdt-grade login --server URL` sets one) and there is "
                                   f"no local database at {path.resolve()}: nothing was submitted here yet")
    return Service(settings)


def status_local(submission_id: int, as_json: bool) -> None:
    """``kdt-grade status`` from the local database."""
    with _local_service() as service:
        try:
            state = service.status(submission_id)
        except LookupError as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        dump_json(state)
    else:
        note = ", rejudging: the scores shown are the previous grading's" if state.get("rejudging") else ""
        show_result(state, f"submission {state['id']}: {state['file_name']} by {state['user']} "
                           f"({state['status']}{note})")


def diff_local(a: int, b: int) -> dict:
    """``kdt-grade diff``: submissions ``a`` and ``b`` of the local database compared
    (``grader.service.compare.comparison``)."""
    with _local_service() as service:
        try:
            return compare.comparison(service, a, b)
        except LookupError as exc:
            raise click.ClickException(f"{exc} in the local database") from None


def leaderboard_local(as_json: bool, as_csv: bool, progress: bool = False) -> None:
    """``kdt-grade leaderboard`` from the local database (every submission counts: no freeze here); with
    ``progress``, the top 10's best totals over time as the scoreboard page draws them
    (``grader.service.progress.scoreboard_progress``: the stored rules' freeze applies, as on the page)."""
    with _local_service() as service:
        if progress:
            print_progress(scoreboard_progress(service), as_json, as_csv)
            return
        rows = service.leaderboard()
    print_leaderboard(rows, as_json, as_csv)


def _with_cycles_needed(point: dict) -> dict:
    """A ``PointResult`` dict with the cycles it needs for 100 and for 10 points more (as ``status``)."""
    return {**point, **rules_text.cycles_needed(point["task"], point["point"], point["verdict"], point["score"])}


def rules_local() -> dict:
    """``kdt-grade rules`` of this installation: its judger's tasks and the local database's contest rules."""
    with Service() as service:
        return rules_text.contestant_rules(service)


def submissions_local(user: str, as_json: bool) -> None:
    """``kdt-grade submissions``: one user's submissions in the local database, newest first."""
    with _local_service() as service:
        rows = newest_first([r for r in service.all_submissions() if r["user_name"] == user])
    if as_json:
        dump_json(rows)
    else:
        out.print(submissions_table(rows, title=f"Submissions of {user}"))


def source_local(submission_id: int) -> str:
    """``kdt-grade source``: the text of a submission in the local database."""
    with _local_service() as service:
        try:
            return service.submission_source(submission_id)
        except LookupError as exc:
            raise click.ClickException(f"{exc} in the local database") from None


class LocalMessages:
    """The contest-communication methods of ``grader.client.http.Client`` (same arguments, same documents)
    over this machine's database, for the commands run with no server configured. No token says who
    acts, so: a contestant's commands act as user ``user`` (``accounts.local_account``: ``ask`` creates a
    missing user, as a local ``submit`` does), an organiser's as the enabled organiser ``organiser``, or
    as the database's only one when it is None (``accounts.acting_organiser``). Refusals are the
    service's (``grader.refusals.Refusal``); no organiser to act as is ``click.ClickException``."""

    def __init__(self, service: Service, user: str | None = None, organiser: str | None = None):
        self.service, self.user, self.organiser = service, user, organiser

    def _contestant(self, create: bool = False) -> accounts.Account:
        try:
            return accounts.local_account(self.service, self.user, create)
        except LookupError:
            raise click.ClickException(f"no user {self.user} in the database of this machine: name one with --user "
                                       "NAME (`kdt-grade admin users list` lists them)") from None

    def _acting(self) -> accounts.Account:
        try:
            return accounts.acting_organiser(self.service, self.organiser)
        except accounts.NoActingOrganiser as exc:
            raise click.ClickException(_no_organiser(exc)) from None

    def ask(self, text: str, task: int | None = None) -> dict:
        """``messages.ask`` as ``user`` (created if missing); says first, on stderr, which database it is."""
        account = self._contestant(create=True)
        _say_where(self.service, "asking in", "ask the contest's organisers")
        return messages.ask(self.service, account, text, task)

    def clarifications(self) -> list[dict]:
        """``messages.clarifications_for`` of ``user``."""
        return messages.clarifications_for(self.service, self._contestant())

    def announcements(self) -> list[dict]:
        """``messages.announcements``."""
        return messages.announcements(self.service)

    def open_questions(self, every: bool = False) -> list[dict]:
        """The open questions, oldest first, or with ``every`` all of them, newest first (no organiser
        needs to be chosen to read them)."""
        return messages.all_questions(self.service) if every else messages.open_questions(self.service)

    def answer(self, clarification_id: int, text: str, publish: bool = False, public_text: str | None = None) -> dict:
        """``messages.answer`` as the acting organiser."""
        return messages.answer(self.service, self._acting(), clarification_id, text, publish, public_text)

    def ignore(self, clarification_id: int) -> dict:
        """``messages.ignore`` as the acting organiser."""
        return messages.ignore(self.service, self._acting(), clarification_id)

    def announce(self, text: str, pinned: bool = False) -> dict:
        """``messages.announce`` as the acting organiser."""
        return messages.announce(self.service, self._acting(), text, pinned)


def _no_organiser(exc: accounts.NoActingOrganiser) -> str:
    """The one-line error of ``NoActingOrganiser``: what to do about it."""
    names = ", ".join(exc.organisers)
    if exc.name is not None:
        return (f"{exc.name} is not an enabled organiser account of this database "
                f"(its organisers: {names or 'none'})")
    if not exc.organisers:
        return ("this database has no organiser account to act as: create one with `kdt-grade admin users add "
                "NAME --admin` (or log in to a contest server with an organiser's token)")
    return f"this database has {len(exc.organisers)} organiser accounts ({names}): name the one who acts with --as NAME"


@contextmanager
def local_messages(user: str | None = None, organiser: str | None = None,
                   contestant: bool = True) -> Iterator[LocalMessages]:
    """``LocalMessages`` over this machine's database for a contestant's command (``contestant``: the
    database must exist, see ``_local_service``) or an organiser's (the database of the other ``admin``
    commands)."""
    with _local_service() if contestant else Service() as service:
        yield LocalMessages(service, user, organiser)


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--task", "task_id", type=click.Choice([str(t) for t in TASK_IDS]), help="Only this task.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: PointResult dicts, task scores, total.")
@click.option("--explain", is_flag=True, help="Say why every test point takes its cycles (every job traced): the "
                                              "bound, job 0's critical path, the stall cycles and the lines "
                                              "that cause them; with --json under \"explain\".")
@click.option("--fresh", is_flag=True, help="Simulate every test point again, even a kernel whose result is stored "
                                            "(the new results are stored).")
@click.option("--no-reuse", is_flag=True, help="Neither take nor store results in the local result store.")
def local(file: Path, task_id: str | None, as_json: bool, explain: bool, fresh: bool, no_reuse: bool) -> None:
    """Grade FILE here, with no database or broker, exactly as the service does (same numbers).

    A test point whose compiled kernel was graded here before by this judge version takes that result
    (marked reused; the results file in the test point cache directory, KDT_GRADE_CACHE_DIR) instead of
    being simulated again, as the service does; --fresh or --no-reuse simulate it.

    Exit status: 0 when every graded test point is AC; 1 when some test point is not AC (everything is
    still printed); 2 when FILE is refused before grading (too large, not UTF-8, not Python)."""
    settings = load_settings()
    data = file.read_bytes()
    try:
        pipeline.check_source(data, settings.submission_max_bytes)
    except pipeline.Rejected as exc:
        err.print(f"[red]refused:[/red] {safe(file.name)}: {safe(exc)}")
        sys.exit(2)
    # The warm compile template imports numpy and torch while this process starts its grading pool and
    # audits the file: the compile forks from it instead of starting a fresh interpreter afterwards.
    pipeline.prestart(settings.sandbox_limits)
    points = [p for p in pipeline.ALL_POINTS if task_id is None or p[0] == int(task_id)]
    explanations = {} if explain else None
    store = None if no_reuse or explain else reuse.local_results(cache_dir(), fresh)
    with open_pool(settings, min(settings.workers, len(points))) as pool:
        if as_json:
            results = pipeline.grade_source(data, settings, points, pool, explanations=explanations, store=store)
        else:
            with points_progress() as progress:
                bar = progress.add_task(f"grading {file.name}", total=len(points))
                results = pipeline.grade_source(data, settings, points, pool, explanations=explanations,
                                                on_result=lambda _r: progress.advance(bar), store=store)
    if store is not None:
        store.close()
    summary = summarize(results)
    points = [_with_cycles_needed(r.to_dict()) for r in results]
    report = {"file": file.name, "points": points, "tasks": summary["tasks"],
              "total": summary["total"]}
    if explain:
        report["explain"] = explanations
    if as_json:
        dump_json(report)
    else:
        show_result(report, f"{file.name} (local)")
        if explain:
            print_explanations(report["points"], explanations)
    sys.stdout.flush()
    sys.exit(verdicts_exit_code(report["points"]))
