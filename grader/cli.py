"""The `kdt-grade` command line: thin click commands over the grader's modules.

Each command lives in the module of its concept and is imported only when it runs (a contestant's
`kdt-grade submit` to a server must not import torch or the simulator):
`login`, `submit`, `status`, `submissions`, `leaderboard`, `version` (grader.cli_client: over HTTP with a
server configured, else local), `local`, `worker` (grader.cli_service), `serve` (grader.cli_server),
`admin ...` (grader.cli_admin), `audit` (grader.audit), `design ...` (grader.design.cli).
Configuration: `KDT_GRADE_*` (grader.config).
"""
import importlib

import click

COMMANDS = {
    "login": "grader.cli_client:login",
    "submit": "grader.cli_client:submit",
    "status": "grader.cli_client:status",
    "submissions": "grader.cli_client:submissions",
    "leaderboard": "grader.cli_client:leaderboard",
    "version": "grader.cli_client:version",
    "local": "grader.cli_service:local",
    "worker": "grader.cli_service:worker",
    "serve": "grader.cli_server:serve",
    "admin": "grader.cli_admin:admin",
    "audit": "grader.audit:audit_command",
    "design": "grader.design.cli:design",
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


@click.group(cls=LazyGroup)
def main() -> None:
    """kdt-grade: judge KDT-DSL kernels for the KDT-TPU contest."""


if __name__ == "__main__":
    main()
