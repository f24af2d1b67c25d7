"""Contest communication on the command line, over the server's API (``grader.client.http``): the
contestant's ``ask``, ``clarifications``, ``announcements``, and the organisers' ``admin clarifications``,
``admin answer``, ``admin ignore``, ``admin announce`` (these need ``kdt-grade login`` with an organiser's
token: the server records who answered). Rich tables, or ``--json``; everything the users wrote goes
through ``output.safe``. Exit codes as the other client commands: 2 refused (the server's message), 1 error.
"""
from __future__ import annotations

import click
from rich.table import Table

from grader.client.http import Client, ClientError

from .contestant import _client, _fail, _server
from .output import dump_json, out, safe, when


def _connected() -> Client:
    config = _server()
    if config is None:
        raise click.ClickException("this needs a contest server: run `kdt-grade login --server URL --token TOKEN` "
                                   "or set KDT_GRADE_SERVER and KDT_GRADE_TOKEN")
    return _client(config)


def _call(as_json: bool, method: str, *args, **kwargs):
    """``Client.method(*args, **kwargs)`` on the configured server; a refusal exits (``_fail``)."""
    with _connected() as client:
        try:
            return getattr(client, method)(*args, **kwargs)
        except ClientError as exc:
            _fail(exc, as_json=as_json)


def _task(task) -> str:
    return "general" if task is None else f"task {task}"


@click.command()
@click.argument("text")
@click.option("--task", type=int, help="The task the question is about (default: a general question).")
@click.option("--json", "as_json", is_flag=True, help="Print the stored question as JSON.")
def ask(text: str, task: int | None, as_json: bool) -> None:
    """Ask the organisers TEXT (before, during or after the contest); see the answer with
    `kdt-grade clarifications`."""
    question = _call(as_json, "ask", text, task)
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
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def clarifications(as_json: bool) -> None:
    """Your questions with their answers, and every question answered to all, newest first."""
    rows = _call(as_json, "clarifications")
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
    """The questions waiting for an answer, oldest first (needs an organiser's login)."""
    rows = _call(as_json, "open_questions", every)
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
@click.option("--json", "as_json", is_flag=True, help="Print the question after the answer as JSON.")
def admin_answer(clarification_id: int, text: str, to_all: bool, public_text: str | None, as_json: bool) -> None:
    """Answer question CLARIFICATION_ID with TEXT (to its author; --to-all: to everyone)."""
    if public_text is not None and not to_all:
        raise click.UsageError("--public-text is the wording shown to everyone: use it with --to-all")
    row = _call(as_json, "answer", clarification_id, text, to_all, public_text)
    if as_json:
        dump_json(row)
    else:
        out.print(f"question {row['id']} of {row['author']} answered "
                  f"{'to everyone' if row['published'] else 'privately'}", markup=False)


@click.command("ignore")
@click.argument("clarification_id", type=int)
def admin_ignore(clarification_id: int) -> None:
    """Close question CLARIFICATION_ID without an answer."""
    row = _call(False, "ignore", clarification_id)
    out.print(f"question {row['id']} of {row['author']} ignored", markup=False)


@click.command("announce")
@click.argument("text")
@click.option("--pin", is_flag=True, help="Pin it: listed before every other announcement.")
@click.option("--json", "as_json", is_flag=True, help="Print the announcement as JSON.")
def admin_announce(text: str, pin: bool, as_json: bool) -> None:
    """Announce TEXT to every contestant."""
    row = _call(as_json, "announce", text, pin)
    if as_json:
        dump_json(row)
    else:
        out.print(f"announcement {row['id']} made{' (pinned)' if row['pinned'] else ''}", markup=False)
