"""``kdt-grade admin users ...``: contestant and organiser accounts and their tokens (thin, over
``grader.service.accounts``). Tokens are printed once, when made, and never again."""
from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from grader.refusals import Refusal
from grader.service import Service, accounts

from .output import csv_text, dump_json, out, refused, safe


@click.group()
def users() -> None:
    """Contestant and organiser accounts and their tokens."""


@users.command("add")
@click.argument("name")
@click.option("--display-name", help="The name shown on the leaderboard (default: NAME).")
@click.option("--admin", "is_admin", is_flag=True, help="An organiser: admin API, no window or limits.")
@click.option("--json", "as_json", is_flag=True, help='Print {"user": NAME, "token": TOKEN}.')
def add(name: str, display_name: str | None, is_admin: bool, as_json: bool) -> None:
    """Create user NAME and print its token (shown only now: hand it to the contestant)."""
    with Service() as service:
        try:
            _row, token = accounts.add_user(service, name, display_name, is_admin)
        except Refusal as exc:
            raise refused(exc) from None
    if as_json:
        dump_json({"user": name, "token": token})
    else:
        out.print(f"user {escape(name)} created{' (admin)' if is_admin else ''}; token (shown only now):")
        sys.stdout.write(token + "\n")


@users.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def import_(file: Path) -> None:
    """Create the users of FILE.csv (lines `name[,display_name]`) and print `name,token` CSV.

    All or nothing: if one name is invalid or taken, no user is created."""
    try:
        text = file.read_text(encoding="utf-8-sig")
        with Service() as service:
            created = accounts.import_user_csv(service, text)
    except Refusal as exc:
        raise refused(exc) from None
    except UnicodeDecodeError:
        raise click.ClickException(f"{file} is not UTF-8 text") from None
    sys.stdout.write(csv_text([{"name": n, "token": t} for n, t in created], ["name", "token"]))


@users.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_(as_json: bool) -> None:
    """Every user: display name, admin, disabled, whether it has a token, its submissions."""
    with Service() as service:
        rows = accounts.list_users(service)
    if as_json:
        dump_json(rows)
        return
    table = Table(title="Users", title_justify="left")
    for column in ("name", "display name", "admin", "disabled", "token", "submissions"):
        table.add_column(column, justify="right" if column == "submissions" else "left")
    for r in rows:
        table.add_row(safe(r["name"]), safe(r["display_name"] or ""), "yes" if r["is_admin"] else "",
                      "DISABLED" if r["disabled"] else "", "yes" if r["has_token"] else "none",
                      str(r["submissions"]))
    out.print(table)


def _switch(name: str, disabled: bool) -> None:
    with Service() as service:
        try:
            accounts.set_disabled(service, name, disabled)
        except LookupError as exc:
            raise click.ClickException(str(exc)) from None
    out.print(f"user {escape(name)} {'disabled: its token now answers 403' if disabled else 'enabled'}")


@users.command()
@click.argument("name")
def disable(name: str) -> None:
    """Refuse user NAME's requests (403) until `enable`; its submissions stay."""
    _switch(name, True)


@users.command()
@click.argument("name")
def enable(name: str) -> None:
    """Accept user NAME's requests again."""
    _switch(name, False)


@users.command("reset-token")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help='Print {"user": NAME, "token": TOKEN}.')
def reset_token(name: str, as_json: bool) -> None:
    """Give user NAME a new token (the old one stops working at once) and print it."""
    with Service() as service:
        try:
            token = accounts.reset_token(service, name)
        except LookupError as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        dump_json({"user": name, "token": token})
    else:
        out.print(f"new token of {escape(name)} (shown only now; the old one no longer works):")
        sys.stdout.write(token + "\n")
