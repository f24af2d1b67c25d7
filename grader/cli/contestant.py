"""The contestant's commands: ``login``, ``logout``, ``submit``, ``status``, ``diff``, ``submissions``, ``source``,
``leaderboard``, ``rules``, ``version``.

With a server configured (``kdt-grade login``, or ``KDT_GRADE_SERVER``/``KDT_GRADE_TOKEN``) they talk to it
over HTTP (``grader.client.http``) and print what the local commands print; without one they run locally
(``grader.cli.local``, imported only then). This module imports neither torch nor the simulator, so
the client commands start fast. Exit codes: 0 done, 1 an error (server unreachable, a fault of the
judge, a timeout), 2 refused (the server's message is printed; nothing was stored); ``submit --wait``
also exits 1 when a test point is not AC (``verdicts_exit_code``).
"""
from __future__ import annotations

import getpass
import os
import sys
from pathlib import Path

import click
from rich.markup import escape

from grader.client.http import Client, ClientError
from grader.client.login import (ENV_SERVER, ENV_TOKEN, ClientConfig, config_path, forget_config, load_config,
                                 normalise_server, save_config)

from .output import (dump_json, err, newest_first, out, points_progress, print_leaderboard, printable, print_progress,
                     print_rules, progress_updater, show_comparison, show_result, show_submitted, submissions_table,
                     verdicts_exit_code, when, write_source)

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def default_user() -> str:
    """The login name of this process's user ("anonymous" if there is none)."""
    try:
        return getpass.getuser()
    except Exception:  # no user database entry (containers)
        return "anonymous"


def _server() -> ClientConfig | None:
    try:
        return load_config()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


def _client(config: ClientConfig) -> Client:
    if not config.token:
        raise click.ClickException(f"no token for {config.server}: run `kdt-grade login --server "
                                   f"{config.server} --token TOKEN` or set KDT_GRADE_TOKEN")
    return Client(config)


def _fail(exc: ClientError, what: str = "", as_json: bool = False) -> None:
    """Print the server's message (it says when to retry) and exit: 2 for a refusal, 1 otherwise. With
    ``as_json`` also ``{"error", "message", "status", "retry_after"}`` on stdout."""
    label = "refused" if exc.refused else "error"
    err.print(f"[red]{label}:[/red] {escape(what + exc.message)}", soft_wrap=True)
    if as_json:
        dump_json({"error": exc.code, "message": exc.message, "status": exc.status, "retry_after": exc.retry_after})
    sys.exit(2 if exc.refused else 1)


@click.command()
@click.option("--server", required=True, help="The contest server's URL, e.g. https://judge.example.org")
@click.option("--token", prompt=True, hide_input=True, help="Your token (asked for if not given).")
def login(server: str, token: str) -> None:
    """Check TOKEN against SERVER and save both (your config directory, readable by you only)."""
    try:
        config = ClientConfig(normalise_server(server), token.strip())
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--server") from None
    with Client(config) as client:
        try:
            contest = client.contest()
        except ClientError as exc:
            _fail(exc, "login: ")
    if contest.get("user") is None:  # a server that ignores tokens is not ours
        raise click.ClickException(f"{config.server} did not recognise the token")
    path = save_config(config)
    name = f" ({printable(contest['name'])})" if contest.get("name") else ""  # a server's text, never escapes
    out.print(f"logged in to {config.server}{name} as {contest['user']}; saved to {path}", markup=False,
              soft_wrap=True)  # a long path is not broken over two lines


@click.command()
def logout() -> None:
    """Forget the saved server and token.

    Removes what `kdt-grade login` saved; the commands then work locally. Nothing to forget is not an
    error (exit status 0)."""
    forgotten = forget_config()
    if forgotten is None:
        out.print(f"not logged in: there is no saved login ({config_path()}); nothing was removed", markup=False,
                  soft_wrap=True)
    else:
        path, server = forgotten
        what = f"the token for {server}" if server else "an unreadable login file"
        out.print(f"logged out: removed {what} ({path})", markup=False, soft_wrap=True)
    if os.environ.get(ENV_SERVER):
        err.print(f"{ENV_SERVER} is still set in your environment: the commands still use "
                  f"{os.environ[ENV_SERVER]}; unset it (and {ENV_TOKEN}) to work locally", markup=False,
                  soft_wrap=True)


@click.command()
@click.argument("file", type=FILE)
@click.option("--user", help="Contestant name (local mode only; a server knows you by your token).")
@click.option("--wait", is_flag=True, help="Show progress over the test points, then the result table; the exit "
                                           "status is then 0 only if every test point is AC.")
@click.option("--json", "as_json", is_flag=True, help="Print the status document as JSON at the end.")
@click.option("--timeout", type=float, default=3600.0, show_default=True, help="Seconds --wait waits.")
def submit(file: Path, user: str | None, wait: bool, as_json: bool, timeout: float) -> None:
    """Submit FILE for grading and print its submission id.

    The file is refused (and nothing stored) if it is larger than the limit, not UTF-8 or not Python,
    or (on a server) outside the contest window or over a submission limit.

    Exit status: 0 accepted (with --wait: and every test point is AC); 1 with --wait when some test point
    is not AC (everything is still printed), or an error (the server unreachable, a timeout); 2 refused."""
    config = _server()
    if config is None:
        from .local import submit_local

        submit_local(file, user or default_user(), wait, timeout, as_json)  # exits as submit does
        return
    if user is not None:
        raise click.UsageError("--user is for the local mode; the server knows you by your token")
    with _client(config) as client:
        try:
            contest = client.contest()
            limit = contest["limits"]["max_bytes"]
            if file.stat().st_size > limit:  # refuse here rather than upload what the server will refuse
                raise ClientError(413, "too_large", f"the file is {file.stat().st_size} bytes; the limit is "
                                                    f"{limit} bytes. Nothing was stored.")
            accepted = client.submit(file)
        except ClientError as exc:
            _fail(exc, f"{file.name}: ", as_json)
        submission_id = accepted["id"]
        (err if as_json else out).print(f"submission {submission_id} accepted ({file.name}, user "
                                        f"{contest['user']})", markup=False)
        sys.stdout.flush()
        try:
            if wait:
                with points_progress() as progress:
                    bar = progress.add_task(f"grading #{submission_id}", total=None)
                    try:
                        client.wait(submission_id, timeout=timeout, on_progress=progress_updater(progress, bar))
                    except TimeoutError as exc:
                        err.print(f"[yellow]{exc}[/yellow]; see `kdt-grade status {submission_id}`")
                        sys.exit(1)
            state = client.status(submission_id)
        except ClientError as exc:
            _fail(exc)
    show_submitted(state, wait, as_json)
    if wait:
        sys.exit(verdicts_exit_code(state["points"]))


@click.command()
@click.argument("submission_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(submission_id: int, as_json: bool) -> None:
    """Show a submission's status and per-test-point results.

    Exit status: 0 when it is shown, whatever the verdicts and also while it is being graded (a script
    reads "status" and each point's "verdict" of --json); 1 an error; 2 not a submission of yours."""
    config = _server()
    if config is None:
        from .local import status_local

        status_local(submission_id, as_json)
        return
    with _client(config) as client:
        try:
            state = client.status(submission_id)
        except ClientError as exc:
            _fail(exc)
    if as_json:
        dump_json(state)
    else:
        show_result(state, f"submission {state['id']}: {state['file_name']} by {state['user']} "
                           f"({state['status']})")


@click.command()
@click.argument("a", type=int)
@click.argument("b", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the document of GET /api/v1/submissions/A/compare/B).")
def diff(a: int, b: int, as_json: bool) -> None:
    """Compare two of your submissions, A then B: per test point the verdicts, cycles and scores side by
    side with the change from A to B (green better, red worse, and said in the last column), per task and
    in total; whether a result was reused.

    Exit status: 0 when shown (whatever changed); 1 an error; 2 not a submission of yours (on a server)."""
    config = _server()
    if config is None:
        from .local import diff_local

        show_comparison(diff_local(a, b), as_json)
        return
    with _client(config) as client:
        try:
            doc = client.compare(a, b)
        except ClientError as exc:
            _fail(exc)
    show_comparison(doc, as_json)


@click.command()
@click.option("--user", help="Whose submissions (local mode only; default: your login name).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def submissions(user: str | None, as_json: bool) -> None:
    """Your submissions, newest first, with their status and scores (also with --json)."""
    config = _server()
    if config is None:
        from .local import submissions_local

        submissions_local(user or default_user(), as_json)
        return
    with _client(config) as client:
        try:
            rows = newest_first(client.submissions())
        except ClientError as exc:
            _fail(exc)
    if as_json:
        dump_json(rows)
    else:
        out.print(submissions_table(rows, title="Your submissions"))


@click.command()
@click.argument("submission_id", type=int)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Write it to FILE (replacing FILE) instead of printing it.")
def source(submission_id: int, output: Path | None) -> None:
    """Download a submission's file (to stdout, or -o FILE).

    Prints the file you submitted as SUBMISSION_ID exactly as it was stored. On a server only your own
    submissions (another id is refused as missing, exit status 2); without a server, any submission of the
    local database (exit status 1 for a missing id)."""
    config = _server()
    if config is None:
        from .local import source_local

        text = source_local(submission_id)
    else:
        with _client(config) as client:
            try:
                text = client.source(submission_id)
            except ClientError as exc:
                _fail(exc)
    write_source(text, output, submission_id)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
@click.option("--progress", is_flag=True,
              help="The top 10's best total over contest time instead: when each one's best rose, and to what "
                   "(the scoreboard page's graph).")
def leaderboard(as_json: bool, as_csv: bool, progress: bool) -> None:
    """Each user's best submission, best first (equal totals: the earlier submission first); a user is
    shown by their display name, with the login in brackets.

    On a server, while the scoreboard is frozen only submissions made before the freeze count."""
    config = _server()
    if config is None:
        from .local import leaderboard_local

        leaderboard_local(as_json, as_csv, progress)
        return
    with Client(config) as client:  # public: no token needed
        try:
            board = client.leaderboard_progress() if progress else client.leaderboard()
        except ClientError as exc:
            _fail(exc)
    if progress:
        print_progress(board, as_json, as_csv)
        return
    if board["frozen"] and not (as_json or as_csv):
        err.print(f"[yellow]frozen since {when(board['freeze_at'])}: later submissions are not shown[/yellow]")
    print_leaderboard(board["rows"], as_json, as_csv, tasks=board["tasks"])


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the document of GET /api/v1/rules).")
def rules(as_json: bool) -> None:
    """How a test point's score follows from its cycles, the totals and the ranking, every task and test
    point with its threshold, and the contest's times and submission limits.

    From the server when one is configured (no token needed), else from this installation."""
    config = _server()
    if config is None:
        from .local import rules_local

        doc = rules_local()
    else:
        with Client(config) as client:  # public: no token needed
            try:
                doc = client.rules()
            except ClientError as exc:
                _fail(exc)
    if as_json:
        dump_json(doc)
    else:
        print_rules(doc)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def version(as_json: bool) -> None:
    """This grader's version and the hash of its judging code (kdt/, judger/), and the server's if one is
    configured: equal hashes mean the judge grades exactly as your `kdt-grade local`."""
    from grader.version import grader_version

    mine = grader_version()
    report = {"local": mine, "server": None, "same_code": None}
    config = _server()
    if config is not None:
        with Client(config) as client:
            try:
                report["server"] = client.contest()["grader"]
            except ClientError as exc:
                _fail(exc)
        report["same_code"] = report["server"]["code_sha256"] == mine["code_sha256"]
    if as_json:
        dump_json(report)
        return
    out.print(f"local:  kdt-grade {mine['version']}, code {mine['code_sha256']}", markup=False)
    if report["server"] is not None:
        theirs = report["server"]
        out.print(f"server: kdt-grade {theirs['version']}, code {theirs['code_sha256']} ({config.server})",
                  markup=False)
        out.print("same judging code" if report["same_code"] else
                  "[yellow]different judging code: update your copy to grade locally as the server does[/yellow]")


__all__ = ["config_path", "diff", "leaderboard", "login", "logout", "rules", "source", "status", "submissions", "submit",
           "version"]
