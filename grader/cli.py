"""The `kdt-grade` command line: thin click commands over the grader's modules.

Each command group lives in the module of its concept and is registered here:
`submit`, `status`, `leaderboard`, `local`, `worker` (grader.cli_service), `admin ...` (grader.cli_admin),
`audit` (grader.audit), `design ...` (grader.design.cli). Configuration: `KDT_GRADE_*` (grader.config).
"""
import click

from grader.audit import audit_command
from grader.cli_admin import admin
from grader.cli_service import leaderboard, local, status, submit, worker
from grader.design.cli import design


@click.group()
def main() -> None:
    """kdt-grade: judge KDT-DSL kernels for the KDT-TPU contest."""


for command in (submit, status, leaderboard, local, worker, admin, design, audit_command):
    main.add_command(command)

if __name__ == "__main__":
    main()
