"""What the whole suite shares: one temporary directory per run, and the order tests start in.

The run's temporary directory (``KDT_GRADE_TEST_RUN_DIR``) is made by the pytest process that starts the
run (the xdist controller) and is ``TMPDIR`` for it, its xdist workers and every process they start: pytest's
own ``tmp_path`` directories, the servers' locks and run directories, multiprocessing's and Redis's
directories all land there, and it is removed when the run has passed (a failed run keeps it, and says
where). Nothing of a run is left in the system's temporary directory.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest

RUN_DIR_ENV = "KDT_GRADE_TEST_RUN_DIR"
_PREFIX = "kdt-tests-"


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_dead_runs(root: str) -> None:
    """Run directories of earlier failed runs whose pytest process is gone."""
    for name in os.listdir(root):
        pid = name[len(_PREFIX):].split("-", 1)[0]
        if name.startswith(_PREFIX) and pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)


@pytest.hookimpl(tryfirst=True)  # before pytest's own reads --basetemp
def pytest_configure(config: pytest.Config) -> None:
    if _is_xdist_worker(config) or os.environ.get(RUN_DIR_ENV):
        return  # the controller's (or an enclosing run's) directory is in the environment already
    root = tempfile.gettempdir()
    _remove_dead_runs(root)
    run_dir = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=root)
    config.stash[_RUN_DIR] = (run_dir, os.environ.get("TMPDIR"))
    os.environ[RUN_DIR_ENV] = os.environ["TMPDIR"] = run_dir
    tempfile.tempdir = run_dir
    if not config.option.basetemp:
        # tmp_path directly below it: their paths (which some tests see printed, wrapped at the terminal's
        # width) are as long as below /tmp/pytest-of-USER/pytest-N
        config.option.basetemp = os.path.join(run_dir, "p")


_RUN_DIR = pytest.StashKey[tuple]()


def pytest_unconfigure(config: pytest.Config) -> None:
    if _RUN_DIR not in config.stash:
        return
    run_dir, old_tmpdir = config.stash[_RUN_DIR]
    os.environ.pop(RUN_DIR_ENV, None)
    if old_tmpdir is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = old_tmpdir
    tempfile.tempdir = None
    failed = config.stash.get(_FAILED, False)
    if not failed:
        shutil.rmtree(run_dir, ignore_errors=True)


_FAILED = pytest.StashKey[bool]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _RUN_DIR in session.config.stash and exitstatus not in (0, 5):
        session.config.stash[_FAILED] = True


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if _RUN_DIR in config.stash and exitstatus not in (0, 5):
        terminalreporter.write_line(f"this run's temporary files are kept in {config.stash[_RUN_DIR][0]}")


# Where the tests that start servers, workers and grading pools live: they are the long ones.
_PROCESS_DIRS = ("tests/grader/service/", "tests/grader/web/", "tests/adversarial/")


@pytest.hookimpl(trylast=True)  # after xdist's own, see _mark_xdist_groups
def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """Long tests first, so that under xdist (``--dist loadgroup`` hands out one test, or one group, at a
    time in this order) none of them starts last and runs alone at the end: modules with a test marked
    ``slow`` (those that start processes first), then the other modules that start processes, then the rest;
    a module's tests stay together and in their order (its module-scoped fixtures are set up once)."""
    def rank(path: str) -> int:
        starts_processes = path.startswith(_PROCESS_DIRS)
        if path in slow_modules:
            return 0 if starts_processes else 1
        return 2 if starts_processes else 3

    slow_modules = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: rank(item.nodeid.split("::")[0]))
    if getattr(config.option, "loadgroup", False):  # an xdist worker of a --dist loadgroup run
        _mark_xdist_groups(items)


def _mark_xdist_groups(items: list) -> None:
    """xdist (3.8) puts a test in its ``xdist_group`` by appending ``@group`` to the item's ``_nodeid``, which
    pytest 9 no longer reads (the id is ``_id``): the groups silently did nothing. Does the same to ``_id``
    where xdist's own marking did not take (nothing to do where it did)."""
    from _pytest.nodeid import NodeId

    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    report = yield
    if report.failed:
        from tests.shared_services import FAILED_PHASE

        item.stash[FAILED_PHASE] = report.when
    return report

