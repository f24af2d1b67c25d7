"""``kdt-grade admin users ...`` and ``kdt-grade admin contest ...``: accounts and contest rules (thin, over
``grader.accounts`` and ``grader.contest``). Tokens are printed once, when made, and never again."""
from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from . import accounts, contest
from .cli_output import csv_text, dump_json, out
from .refusals import Refusal
from .service import Service


def _refused(exc: Refusal) -> click.ClickException:
    return click.ClickException(exc.message)


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
            raise _refused(exc) from None
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
        rows = accounts.parse_user_csv(file.read_text(encoding="utf-8-sig"))
        with Service() as service:
            created = accounts.import_users(service, rows)
    except Refusal as exc:
        raise _refused(exc) from None
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
        table.add_row(escape(r["name"]), escape(r["display_name"] or ""), "yes" if r["is_admin"] else "",
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


@click.group("contest")
def contest_group() -> None:
    """The contest's rules: window, freeze, submission limits (stored in the database)."""


def _number(kind):
    def convert(_ctx, _param, value):
        if value is None:
            return ...  # not given: unchanged
        if value.strip().lower() == "none":
            return None
        try:
            return kind(value)
        except ValueError:
            raise click.BadParameter(f"expected a number or `none`, got {value!r}") from None
    return convert


def _time(_ctx, _param, value):
    if value is None:
        return ...
    try:
        return contest.parse_time(value)
    except Refusal as exc:
        raise click.BadParameter(exc.message) from None


@contest_group.command("set")
@click.option("--name", help="The contest's name (`none` clears).")
@click.option("--start", callback=_time, help="ISO time with offset, e.g. 2026-12-06T09:00+08:00 (`none`: open).")
@click.option("--end", callback=_time, help="ISO time with offset (`none`: no end).")
@click.option("--freeze", callback=_time, help="Freeze the public leaderboard from this time (`none`: never).")
@click.option("--min-interval", callback=_number(float), help="Seconds between two submissions of a user.")
@click.option("--max-per-hour", callback=_number(int), help="Submissions per user in any hour.")
@click.option("--max-pending", callback=_number(int), help="Submissions per user not graded yet.")
def set_(name, start, end, freeze, min_interval, max_per_hour, max_pending) -> None:
    """Change the given rules (others stay; `none` clears one: no limit) and show them."""
    given = {"name": ... if name is None else (None if name.lower() == "none" else name), "starts_at": start,
             "ends_at": end, "freeze_at": freeze, "min_interval_seconds": min_interval,
             "max_per_hour": max_per_hour, "max_pending": max_pending}
    changes = {k: v for k, v in given.items() if v is not ...}
    if not changes:
        raise click.UsageError("give at least one of --name --start --end --freeze --min-interval "
                               "--max-per-hour --max-pending")
    with Service() as service:
        try:
            rules = contest.set_rules(service, **changes)
        except Refusal as exc:
            raise _refused(exc) from None
    _show(rules)


@contest_group.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show(as_json: bool) -> None:
    """Show the rules (unset: no limit)."""
    with Service() as service:
        rules = contest.get_rules(service)
    if as_json:
        dump_json(rules.to_dict())
    else:
        _show(rules)


@contest_group.command()
def unfreeze() -> None:
    """Lift the scoreboard freeze: the public leaderboard counts every submission again."""
    with Service() as service:
        _show(contest.unfreeze(service))


def _show(rules: contest.Rules) -> None:
    plain = rules.to_dict()
    table = Table(title="Contest rules", title_justify="left", show_header=False)
    labels = {"name": "name", "starts_at": "start", "ends_at": "end", "freeze_at": "freeze",
              "unfrozen": "unfrozen", "min_interval_seconds": "min interval (s)", "max_per_hour": "max per hour",
              "max_pending": "max pending"}
    for key, label in labels.items():
        value = plain[key]
        table.add_row(label, "-" if value is None else escape(str(value)))
    out.print(table)
