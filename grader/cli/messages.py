"""Contest communication on the command line: the contestant's ``ask``, ``clarifications``,
``announcements``, and the organisers' ``admin clarifications``, ``admin answer``, ``admin ignore``,
``admin announce``.

With a server configured (``kdt-grade login``, or ``KDT_GRADE_SERVER``/``KDT_GRADE_TOKEN``) they go through
its API (``grader.client.http``), and the token says who acts (the organisers' commands need an
organiser's token: the server records who answered). Without one they act on this machine's database
(``grader.cli.local.LocalMessages``, imported only then), as the other local and ``admin`` commands do: a
contestant's as ``--user NAME`` (default: the login name), an organiser's as ``--as NAME`` or the
database's only enabled organiser. Rich tables, or ``--json`` (the same documents either way);
everything the users wrote goes through ``output.safe``. Exit codes as the other client commands: 2
refused (the server's or the service's message), 1 error.
"""
from __future__ import annotations

import click
from rich.table import Table

from grader.client.http import ClientError
from grader.refusals import Refusal

from .contestant import _client, _fail, _server, default_user
from .output import dump_json, out, safe, when

AS_HELP = ("The organiser account that acts (without a server only: the server knows you by your token; default: "
           "the database's only enabled organiser).")


def _call(as_json: bool, method: str, *args, user: str | None = None, organiser: str | None = None,
          contestant: bool = True):
    """``method(*args)`` of the configured server's ``Client``, or without a server of ``LocalMessages``
    over this machine's database acting as ``user`` (a ``contestant``'s command; default: the login
    name) or as the organiser ``organiser``. A refusal of either exits (``_fail``); ``--user`` or ``--as``
    with a server is a usage error."""
    config = _server()
    if config is None:
        from .local import local_messages

        with local_messages((user or default_user()) if contestant else None, organiser, contestant) as messages:
            try:
                return getattr(messages, method)(*args)
            except Refusal as exc:
                _fail(ClientError(exc.status, exc.code, exc.message, exc.retry_after), as_json=as_json)
    for option, value in (("--user", user), ("--as", organiser)):
        if value is not None:
            raise click.UsageError(f"{option} is for this machine's database, without a server; the server knows "
                                   "you by your token")
    with _client(config) as client:
        try:
            return getattr(client, method)(*args)
        except ClientError as exc:
            _fail(exc, as_json=as_json)


def _task(task) -> str:
    return "general" if task is None else f"task {task}"


@click.command()
@click.argument("text")
@click.option("--task", type=int, help="The task the question is about (default: a general question).")
@click.option("--user", help="Whose question (without a server only: a server knows you by your token; default: "
                             "your login name).")
@click.option("--json", "as_json", is_flag=True, help="Print the stored question as JSON.")
def ask(text: str, task: int | None, user: str | None, as_json: bool) -> None:
    """Ask the organisers TEXT (before, during or after the contest); see the answer with
    `kdt-grade clarifications`.

    Without a server, the question is stored in this machine's database as --user's (a missing user is
    created, as `kdt-grade submit` creates one)."""
    question = _call(as_json, "ask", text, task, user=user)
    if as_json:
        dump_json(question)
    else:
        out.print(f"question {question['id']} sent ({_task(question['task'])}); its answer will be in "
                  "`kdt-grade clarifications`", markup=False)


def questions_table(rows: list[dict], title: str) -> Table:
    """The contestant's view of questions: id, subject, state, question, answer."""
    table = Table(title=title, title_justify="left", show_lines=True)
    for name in ("id", "about", "asked", "state", "question", "answer"):
        table.add_column(name, justify="right" if name == "id" else "left",
                         overflow="fold" if name in ("question", "answer") else "ellipsis")
    for r in rows:
        state = r["state"] + (" (to all)" if r["published"] else "") + ("" if r["mine"] else ", not yours")
        table.add_row(str(r["id"]), _task(r["task"]), when(r["created"]), state, safe(r["text"]),
                      safe(r["answer"] or ""))
    return table


@click.command()
@click.option("--user", help="Whose questions (without a server only: a server knows you by your token; default: "
                             "your login name).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def clarifications(user: str | None, as_json: bool) -> None:
    """Your questions with their answers, and every question answered to all, newest first."""
    rows = _call(as_json, "clarifications", user=user)
    if as_json:
        dump_json(rows)
    else:
        out.print(questions_table(rows, "Clarifications") if rows else "no questions yet")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def announcements(as_json: bool) -> None:
    """The organisers' announcements, pinned first, then newest first."""
    rows = _call(as_json, "announcements")
    if as_json:
        dump_json(rows)
        return
    if not rows:
        out.print("no announcements")
        return
    table = Table(title="Announcements", title_justify="left", show_lines=True)
    for name in ("id", "time", "", "announcement"):
        table.add_column(name, justify="right" if name == "id" else "left",
                         overflow="fold" if name == "announcement" else "ellipsis")
    for r in rows:
        table.add_row(str(r["id"]), when(r["created"]), "pinned" if r["pinned"] else "", safe(r["text"]))
    out.print(table)


# ---- organisers (kdt-grade admin ...) ------------------------------------------------------------------

@click.command("clarifications")
@click.option("--all", "every", is_flag=True,
              help="Every question, newest first (default: the open ones, oldest first).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def admin_clarifications(every: bool, as_json: bool) -> None:
    """The questions waiting for an answer, oldest first.

    With a server, this needs an organiser's login; without one, it reads this machine's database."""
    rows = _call(as_json, "open_questions", every, contestant=False)
    if as_json:
        dump_json(rows)
        return
    if not rows:
        out.print("no questions" if every else "no open questions")
        return
    table = Table(title="Questions" if every else "Open questions", title_justify="left", show_lines=True)
    for name in ("id", "from", "about", "asked", "state", "question", "answer"):
        table.add_column(name, justify="right" if name == "id" else "left",
                         overflow="fold" if name in ("question", "answer") else "ellipsis")
    for r in rows:
        state = r["state"] + (" (to all)" if r["published"] else "")
        question = safe(r["text"]) + (f"\n[dim]shown as:[/dim] {safe(r['public_text'])}" if r["public_text"] else "")
        table.add_row(str(r["id"]), safe(r["author"]), _task(r["task"]), when(r["created"]), state, question,
                      safe(r["answer"] or ""))
    out.print(table)


@click.command("answer")
@click.argument("clarification_id", type=int)
@click.argument("text")
@click.option("--to-all", is_flag=True, help="Publish the question and the answer to every contestant.")
@click.option("--public-text", help="With --to-all: show the question in these words instead of the author's.")
@click.option("--as", "organiser", metavar="NAME", help=AS_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the question after the answer as JSON.")
def admin_answer(clarification_id: int, text: str, to_all: bool, public_text: str | None, organiser: str | None,
                 as_json: bool) -> None:
    """Answer question CLARIFICATION_ID with TEXT (to its author; --to-all: to everyone).

    With a server, as the organiser whose token is logged in; without one, in this machine's database as
    --as NAME, or as its only enabled organiser account."""
    if public_text is not None and not to_all:
        raise click.UsageError("--public-text is the wording shown to everyone: use it with --to-all")
    row = _call(as_json, "answer", clarification_id, text, to_all, public_text, organiser=organiser, contestant=False)
    if as_json:
        dump_json(row)
    else:
        out.print(f"question {row['id']} of {row['author']} answered "
                  f"{'to everyone' if row['published'] else 'privately'}", markup=False)


@click.command("ignore")
@click.argument("clarification_id", type=int)
@click.option("--as", "organiser", metavar="NAME", help=AS_HELP)
def admin_ignore(clarification_id: int, organiser: str | None) -> None:
    """Close question CLARIFICATION_ID without an answer.

    With a server, as the organiser whose token is logged in; without one, in this machine's database as
    --as NAME, or as its only enabled organiser account."""
    row = _call(False, "ignore", clarification_id, organiser=organiser, contestant=False)
    out.print(f"question {row['id']} of {row['author']} ignored", markup=False)


@click.command("announce")
@click.argument("text")
@click.option("--pin", is_flag=True, help="Pin it: listed before every other announcement.")
@click.option("--as", "organiser", metavar="NAME", help=AS_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the announcement as JSON.")
def admin_announce(text: str, pin: bool, organiser: str | None, as_json: bool) -> None:
    """Announce TEXT to every contestant.

    With a server, as the organiser whose token is logged in; without one, in this machine's database as
    --as NAME, or as its only enabled organiser account."""
    row = _call(as_json, "announce", text, pin, organiser=organiser, contestant=False)
    if as_json:
        dump_json(row)
    else:
        out.print(f"announcement {row['id']} made{' (pinned)' if row['pinned'] else ''}", markup=False)
