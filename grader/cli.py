"""The `kdt-grade` command line: thin click commands over the grader's modules.

Each command group lives in the module of its concept and is registered here.
"""
import click

from grader.audit import audit_command
from grader.design.cli import design


@click.group()
def main() -> None:
    """kdt-grade: judge KDT-DSL kernels for the KDT-TPU contest."""


for command in (design, audit_command):
    main.add_command(command)

if __name__ == "__main__":
    main()
