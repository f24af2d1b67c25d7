"""The `kdt-grade` command line: thin click commands over the service layer, one module per audience.

Each command is imported only when it runs (a contestant's `kdt-grade submit` to a server must not import
torch or the simulator), from ``COMMANDS``:

- contestants: `login`, `submit`, `status`, `submissions`, `leaderboard`, `rules`, `version` (``contestant``: over
  HTTP with a server configured, else ``local``), `local` (``local``), `audit` (``audit``);
- clarifications and announcements: `ask`, `clarifications`, `announcements` (``messages``: over
  HTTP only);
- organisers: `serve`, `worker` (``serve``), `admin ...` (``admin``, with ``users`` and ``contest``);
- contract authors: `design ...` (``design``).

``output`` is how they all print. Configuration: `KDT_GRADE_*` (``grader.config``).
"""
import importlib

import click

COMMANDS = {
    "login": "grader.cli.contestant:login",
    "submit": "grader.cli.contestant:submit",
    "status": "grader.cli.contestant:status",
    "submissions": "grader.cli.contestant:submissions",
    "leaderboard": "grader.cli.contestant:leaderboard",
    "version": "grader.cli.contestant:version",
    "rules": "grader.cli.contestant:rules",
    "ask": "grader.cli.messages:ask",
    "clarifications": "grader.cli.messages:clarifications",
    "announcements": "grader.cli.messages:announcements",
    "local": "grader.cli.local:local",
    "worker": "grader.cli.serve:worker",
    "serve": "grader.cli.serve:serve",
    "admin": "grader.cli.admin:admin",
    "audit": "grader.cli.audit:audit_command",
    "design": "grader.cli.design:design",
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported from ``COMMANDS`` ("module:attribute") on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name].split(":")
        return getattr(importlib.import_module(module), attribute)

    def invoke(self, ctx: click.Context):
        """Run the command; an unreachable database or broker becomes one line on stderr (exit code 1),
        not a traceback (the imports stay lazy: the client commands load no SQLAlchemy)."""
        try:
            return super().invoke(ctx)
        except click.exceptions.Exit:
            raise
        except Exception as exc:
            from grader.errors import ServiceUnavailable

            if isinstance(exc, ServiceUnavailable):
                raise click.ClickException(str(exc)) from None
            from grader.runtime.retries import is_transient

            if is_transient(exc):
                first = (str(getattr(exc, "orig", None) or exc).strip().splitlines() or [""])[0]
                raise click.ClickException(f"the database or the broker is unreachable ({type(exc).__name__}: "
                                           f"{first[:200]}); try again in a minute") from None
            raise


@click.group(cls=LazyGroup)
def main() -> None:
    """kdt-grade: judge KDT-DSL kernels for the KDT-TPU contest."""

