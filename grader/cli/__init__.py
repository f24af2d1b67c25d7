"""The `kdt-grade` command line: thin click commands over the service layer, one module per audience.

Each command is imported only when it runs (a contestant's `kdt-grade submit` to a server must not import
torch or the simulator), from ``COMMANDS``:

- contestants: `login`, `logout`, `submit`, `status`, `diff`, `submissions`, `source`, `leaderboard`, `rules`, `version`
  (``contestant``: over HTTP with a server configured, else ``local``), `local` (``local``), `audit`
  (``audit``);
- clarifications and announcements: `ask`, `clarifications`, `announcements` (``messages``: over
  HTTP with a server configured, else on this machine's database as ``local`` does);
- organisers: `serve`, `worker` (``serve``), `admin ...` (``admin``, with ``users`` and ``contest``);
- contract authors: `design ...` (``design``).

`kdt-grade --help` lists them in two sections, ``CONTESTANT_COMMANDS`` then ``ORGANISER_COMMANDS``.
A Python without one of the dependencies (torch above all) gets one line with the install command
(``judger.dependencies``), not a traceback. ``output`` is how they all print. Configuration:
`KDT_GRADE_*` (``grader.config``).
"""
import gc
import importlib
import os

# numpy's OpenBLAS with one thread from the start in every process a command starts (the grading pool,
# the workers): the simulator runs BLAS on one thread anyway (kdt.simulator.host.single_threaded_blas), and
# setting that in a fresh pool process otherwise starts OpenBLAS's worker thread, which spins 0.1 s on a
# core another process is judging on. As judger/judger.py does; an explicit setting is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

try:
    import click
except ModuleNotFoundError as _missing:  # `python -m grader.cli` by a Python without the dependencies
    from judger.dependencies import exit_if_missing_dependency

    exit_if_missing_dependency(_missing, "kdt-grade", ".venv/bin/kdt-grade")
    raise

COMMANDS = {
    "login": "grader.cli.contestant:login",
    "logout": "grader.cli.contestant:logout",
    "submit": "grader.cli.contestant:submit",
    "status": "grader.cli.contestant:status",
    "diff": "grader.cli.contestant:diff",
    "submissions": "grader.cli.contestant:submissions",
    "source": "grader.cli.contestant:source",
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
# The sections of `kdt-grade --help`, in this order (every command of COMMANDS is in exactly one).
CONTESTANT_COMMANDS = ("submit", "status", "diff", "submissions", "source", "leaderboard", "rules", "local", "audit", "ask",
                       "clarifications", "announcements", "login", "logout", "version")
ORGANISER_COMMANDS = ("admin", "serve", "worker", "design")


def _imported(module: str):
    """``importlib.import_module(module)`` with the cyclic garbage collector paused, then the objects it
    made frozen (``gc.freeze``): the command's modules (SQLAlchemy, torch, ...) live as long as the
    process, and every collection during and after the import would walk them again. A command starts
    0.1-0.2 s sooner; a worker or server process forked later shares those pages instead of copying them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(module)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


class LazyGroup(click.Group):
    """A group whose subcommands are imported from ``COMMANDS`` ("module:attribute") on first use, listed
    by audience in its help."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*CONTESTANT_COMMANDS, *ORGANISER_COMMANDS]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name].split(":")
        return getattr(_imported(module), attribute)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Two sections: the contestants' commands, then the organisers'."""
        sections = (("Commands for contestants", CONTESTANT_COMMANDS), ("Commands for organisers", ORGANISER_COMMANDS))
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        for heading, names in sections:
            rows = [(name, self.get_command(ctx, name).get_short_help_str(limit)) for name in names]
            with formatter.section(heading):
                formatter.write_dl(rows)

    def main(self, *args, **kwargs):
        """Run the command line; a missing dependency (torch, ...) is one line on stderr with the install
        command, exit status 1."""
        try:
            return super().main(*args, **kwargs)
        except ModuleNotFoundError as exc:
            from judger.dependencies import exit_if_missing_dependency  # imports nothing itself

            exit_if_missing_dependency(exc, "kdt-grade", ".venv/bin/kdt-grade")
            raise

    def invoke(self, ctx: click.Context):
        """Run the command; an unreachable database or broker becomes one line on stderr (exit code 1),
        not a traceback (the imports stay lazy: the client commands load no SQLAlchemy)."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, ModuleNotFoundError):  # a missing dependency: see ``main``
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
    """kdt-grade: judge KDT-DSL kernels for the KDT-TPU contest.

    Grade a file on your machine with `kdt-grade local FILE`. Log in to the contest server once
    (`kdt-grade login --server URL`), then `kdt-grade submit FILE --wait`; without a login, submit,
    status, submissions, source, leaderboard, ask, clarifications and announcements use a database on
    this machine. `kdt-grade COMMAND --help` tells more about each command."""

