"""``kdt-grade admin contest ...``: the contest's rules (thin, over ``grader.service.contest``)."""
from __future__ import annotations

import click
from rich.table import Table

from grader.refusals import Refusal
from grader.service import Service, contest

from .output import dump_json, out, refused, safe, when


@click.group("contest")
def contest_group() -> None:
    """The contest's rules: window, freeze, submission limits (stored in the database)."""


def _setting(key: str):
    """The option's callback: not given stays unchanged (``...``), else ``contest.parse_setting``."""
    def convert(_ctx, _param, value):
        if value is None:
            return ...  # not given: unchanged
        try:
            return contest.parse_setting(key, value)
        except Refusal as exc:
            raise click.BadParameter(exc.message) from None
    return convert


@contest_group.command("set")
@click.option("--name", callback=_setting("name"), help="The contest's name (`none` clears).")
@click.option("--start", callback=_setting("starts_at"),
              help="ISO time with offset, e.g. 2026-12-06T09:00+08:00 (`none`: open).")
@click.option("--end", callback=_setting("ends_at"), help="ISO time with offset (`none`: no end).")
@click.option("--freeze", callback=_setting("freeze_at"),
              help="The scheduled freeze: from this time the public leaderboard counts only earlier submissions "
              "(`none`: never; `admin contest freeze` freezes now).")
@click.option("--min-interval", callback=_setting("min_interval_seconds"),
              help="Seconds between two submissions of a user.")
@click.option("--max-per-hour", callback=_setting("max_per_hour"), help="Submissions per user in any hour.")
@click.option("--max-pending", callback=_setting("max_pending"), help="Submissions per user not graded yet.")
@click.option("--max-questions-per-hour", callback=_setting("max_questions_per_hour"),
              help="Clarification requests per user in any hour.")
def set_(name, start, end, freeze, min_interval, max_per_hour, max_pending, max_questions_per_hour) -> None:
    """Change the given rules (others stay; `none` clears one: no limit) and show them."""
    given = {"name": name, "starts_at": start, "ends_at": end, "freeze_at": freeze,
             "min_interval_seconds": min_interval, "max_per_hour": max_per_hour, "max_pending": max_pending,
             "max_questions_per_hour": max_questions_per_hour}
    changes = {k: v for k, v in given.items() if v is not ...}
    if not changes:
        raise click.UsageError("give at least one of --name --start --end --freeze --min-interval "
                               "--max-per-hour --max-pending --max-questions-per-hour")
    with Service() as service:
        try:
            rules = contest.set_rules(service, **changes)
        except Refusal as exc:
            raise refused(exc) from None
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
def freeze() -> None:
    """Freeze the scoreboard now (the scheduled --freeze time stays as it is)."""
    with Service() as service:
        _show(contest.freeze_now(service))


@contest_group.command()
def unfreeze() -> None:
    """Lift the scoreboard freeze in force: the public leaderboard counts every submission again (before
    the scheduled freeze time, that freeze still comes)."""
    with Service() as service:
        _show(contest.unfreeze(service))


def _show(rules: contest.Rules) -> None:
    plain = rules.to_dict()
    table = Table(title="Contest rules", title_justify="left", show_header=False)
    labels = {"name": "name", "starts_at": "start", "ends_at": "end", "freeze_at": "freeze",
              "unfrozen": "unfrozen", "frozen_since": "frozen by hand since", "min_interval_seconds": "min interval (s)", "max_per_hour": "max per hour",
              "max_pending": "max pending", "max_questions_per_hour": "max questions per hour"}
    for key, label in labels.items():
        table.add_row(label, _cell(key, plain[key]))
    out.print(table)


_TIMES = ("starts_at", "ends_at", "freeze_at", "frozen_since")


def _cell(key: str, value) -> str:
    """A rules field as the table shows it: times as the pages write them, ``-`` for unset."""
    if key in _TIMES:
        return when(value)
    return safe(value)
