"""The `kdt-grade` command line: thin click commands over the grader's modules.

Each command group lives in the module of its concept and is registered here.
"""
import click

from grader.design.cli import design


@click.group()
def main() -> None:
    """kdt-grade: judge KDT-DSL kernels for the KDT-TPU contest."""


main.add_command(design)

if __name__ == "__main__":
    main()
