"""The `kdt-grade` command line: thin click commands over the grader's modules.

Each command group lives in the module of its concept and is registered here:
`submit`, `status`, `leaderboard`, `local`, `worker` (grader.cli_service), `admin ...` (grader.cli_admin),
`audit` (grader.audit), `design ...` (grader.design.cli). Configuration: `KDT_GRADE_*` (grader.config).
"""
import click

from grader.audit import audit_command
from grader.errors import ServiceUnavailable
from grader.transient import is_transient
from grader.cli_admin import admin
from grader.cli_service import leaderboard, local, status, submit, worker
from grader.design.cli import design


class _Main(click.Group):
    """Turns an unreachable database or broker into one line on stderr (exit code 1), not a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ServiceUnavailable as exc:
            raise click.ClickException(str(exc)) from None
        except Exception as exc:
            if is_transient(exc):
                first = (str(getattr(exc, "orig", None) or exc).strip().splitlines() or [""])[0]
                raise click.ClickException(f"the database or the broker is unreachable ({type(exc).__name__}: "
                                           f"{first[:200]}); try again in a minute") from None
            raise


@click.group(cls=_Main)
def main() -> None:
    """kdt-grade: judge KDT-DSL kernels for the KDT-TPU contest."""


for command in (submit, status, leaderboard, local, worker, admin, design, audit_command):
    main.add_command(command)

if __name__ == "__main__":
    main()
