"""What a Python without the judge's dependencies (torch above all) is told, in one line, instead of a
traceback: which module is missing and the README's install command.

It imports nothing of ours and nothing installed, so ``judger/judger.py`` and ``kdt-grade`` can use it
before their first import of torch, numpy or click.
"""
import sys

INSTALL_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' torch==2.13.0"
OUR_PACKAGES = frozenset({"kdt", "judger", "grader", "db", "worker"})


def is_missing_dependency(exc: BaseException) -> bool:
    """True for a ``ModuleNotFoundError`` of an installed dependency (torch, numpy, click, ...), not of
    one of our own packages (that would be a bug to show in full)."""
    name = getattr(exc, "name", None)
    return isinstance(exc, ModuleNotFoundError) and bool(name) and name.split(".")[0] not in OUR_PACKAGES


def missing_dependency_message(exc: ModuleNotFoundError, program: str, run_as: str) -> str:
    """The one line for ``program`` (``judger/judger.py``, ``kdt-grade``): the missing module, this
    Python, the install command (run in the repository) and how to run ``program`` afterwards."""
    return (f"{program}: this Python ({sys.executable}) has no module {exc.name!r}; the judge needs torch and "
            f"the other dependencies: install them in the repository with `{INSTALL_COMMAND}`, then run "
            f"`{run_as}`")


def exit_if_missing_dependency(exc: ModuleNotFoundError, program: str, run_as: str) -> None:
    """For an entry point's ``except ModuleNotFoundError``: print ``missing_dependency_message`` on stderr
    and exit with status 1 when a dependency is missing; return (for the caller to re-raise) otherwise."""
    if is_missing_dependency(exc):
        print(missing_dependency_message(exc, program, run_as), file=sys.stderr)
        sys.exit(1)
