"""Several processes meeting a new SQLite database at once (two `kdt-grade submit` in a fresh data
directory, or a test polling while the CLI starts) take turns migrating it: none fails."""
import subprocess
import sys
import time

from service_testlib import ROOT


def test_concurrent_first_starts_all_migrate_cleanly(tmp_path):
    url = f"sqlite:///{tmp_path / 'kdt-grade.sqlite3'}"
    start = time.time() + 8  # every process imports first, then all migrate at the same moment
    code = (f"import time\nfrom grader.service import ensure_schema\ntime.sleep(max(0, {start} - time.time()))\n"
            f"ensure_schema({url!r})\nprint('ok')")
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(6)]
    outcomes = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, [err[-800:] for _out, err in outcomes]
    assert [out for out, _err in outcomes] == ["ok\n"] * 6
