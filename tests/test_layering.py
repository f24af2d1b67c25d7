"""The layering of pyproject.toml's import-linter contracts holds (entry points -> service -> judging ->
runtime -> foundation -> db -> judger -> kdt; the entry points reach the database only through the
service, the untrusted-code path never; no import cycle between sibling modules): ``lint-imports`` exits 0."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_the_processes_that_never_simulate_start_without_torch():
    """``import kdt``, ``import judger.tasks`` and ``import grader.service`` (what the HTTP processes, the
    CLI and the leaderboard load) leave torch unimported: it costs a process seconds to import, and only
    the compile and the simulation need it. ``judger.grading`` (the judge itself) does import it."""
    probe = ("import sys, importlib\n"
             "for name in sys.argv[1:]:\n"
             "    importlib.import_module(name)\n"
             "    print(name, 'torch' in sys.modules)\n")
    names = ["kdt", "judger.tasks", "grader.service", "grader.web.app", "grader.cli.admin", "judger.grading"]
    run = subprocess.run([sys.executable, "-c", probe, *names], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:-1] == [f"{n} {n == 'judger.grading'}" for n in names]


def test_the_code_carries_no_issue_tags():
    """Comments and docstrings say why, not which tracker entry asked for it: "issue N" belongs in commit
    messages (the tests may name the issue that a case comes from)."""
    import re

    tag = re.compile(r"\bissue\s+\d+", re.IGNORECASE)
    found = [f"{path.relative_to(ROOT)}:{n}" for package in ("grader", "kdt", "judger", "db", "worker")
             for path in sorted((ROOT / package).rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if tag.search(line)]
    assert found == []
