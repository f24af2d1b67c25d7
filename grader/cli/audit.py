"""``kdt-grade audit FILE``: the judge's static audit of one file (``grader.judging.audit``), for
contestants: what it refuses as ``SV`` before any of the file runs."""
from __future__ import annotations

import json
from pathlib import Path

import click

from grader.judging.audit import audit_file


@click.command("audit")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def audit_command(ctx: click.Context, file: Path, as_json: bool) -> None:
    """Run the static audit of FILE alone (what the judge refuses as SV before anything runs).

    Exit status: 0 when clean, 1 when there are violations, 2 when FILE cannot be read as UTF-8.
    """
    try:
        report = audit_file(file)
    except (OSError, UnicodeDecodeError) as err:
        click.echo(f"kdt-grade audit: cannot read {file}: {err}", err=True)
        ctx.exit(2)
    click.echo(json.dumps(report.to_dict(), indent=2) if as_json else report.format())
    ctx.exit(0 if report.ok else 1)
