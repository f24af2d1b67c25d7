"""Issue 5's adversarial corpus: hostile submissions graded through the service's own path
(``grader.judging.pipeline``: static audit, sandboxed compile, trusted judging), each with the verdict it must
get; then a normal submission must still grade correctly (the worker stays healthy).

Each ``cases/*.py`` starts with ``# expect: V`` (every graded point) or ``# expect: {"t:p": V, ...}`` and
optionally ``# message: text`` that the message of task 1's point (where every case puts its hostile
code) must contain.
"""
import json
import os
from pathlib import Path

import pytest

from grader.judging.compile import _parse_results
from grader.config import load_settings
from grader.judging.pipeline import grade_source, judge, prepare

CASES = sorted((Path(__file__).parent / "cases").glob("*.py"))
POINTS = ((1, 0), (4, 0))
ROOT = Path(__file__).resolve().parents[2]
# Tighter than production so the corpus runs quickly; the mechanisms are the same.
SETTINGS = load_settings(compile_cpu_seconds=6, compile_wall_seconds=30, compile_memory_mb=1024,
                         sim_timeout_seconds=20)


def expectation(path: Path):
    lines = path.read_text().splitlines()
    expect = lines[0].removeprefix("# expect:").strip()
    verdicts = json.loads(expect) if expect.startswith("{") else {f"{t}:{p}": expect for t, p in POINTS}
    message = lines[1].removeprefix("# message:").strip() if lines[1].startswith("# message:") else ""
    return verdicts, message


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_hostile_submission_gets_its_verdict(case, tmp_path):
    verdicts, fragment = expectation(case)
    pwned = Path("/tmp/kdt-pwned")
    pwned.unlink(missing_ok=True)
    results = grade_source(case.read_bytes(), SETTINGS, points=POINTS)
    got = {f"{r.task}:{r.point}": r.verdict.value for r in results}
    assert got == verdicts, "\n".join(r.message for r in results)
    assert all(r.score == 0 for r in results)
    assert fragment in results[0].message, results[0].message
    assert not pwned.exists()


def test_corpus_has_every_kind():
    assert len(CASES) >= 20


def test_a_normal_submission_still_grades_after_the_corpus():
    source = (ROOT / "submissions/examples/baseline.py").read_bytes()
    results = grade_source(source, SETTINGS, points=POINTS)
    assert [(r.verdict.value, r.cycles, r.score) for r in results] == [("AC", 332, 100.0), ("AC", 4822, 100.0)]


def test_monkeypatching_in_the_child_cannot_change_the_trusted_result():
    """Defence in depth: with the static audit bypassed, a submission that replaces kdt.launch_kernel
    and the judger's scoring at import still gets the real cycles, because the simulation and the score
    run in the trusted process; the child's patches die with it."""
    source = (ROOT / "submissions/examples/baseline.py").read_bytes() + b"""
import judger.scoring
kdt.launch_kernel = lambda *a, **k: 1
kdt.simulator.launch.launch_kernel = lambda *a, **k: 1
judger.scoring.point_score = lambda cycles, threshold: 100.0
"""
    from grader.judging.compile import compile_submission
    outcome = compile_submission(source, list(POINTS), SETTINGS.sandbox_limits)
    results = [judge(t, p, {"ir": outcome.kernels[(t, p)].to_json()}, SETTINGS) for t, p in POINTS]
    assert [(r.verdict.value, r.cycles) for r in results] == [("AC", 332), ("AC", 4822)]


def test_with_the_audit_bypassed_the_sandbox_still_keeps_secrets_and_sources(tmp_path, monkeypatch):
    """Defence in depth: a submission that got past the static audit reaches the builtins through a frame,
    clears what the audit hook recorded, and tries to read the grader's environment and a stored
    submission. The OS walls hold: its own user id cannot read either."""
    secret = "s3cret-" + os.urandom(4).hex()
    monkeypatch.setenv("KDT_GRADE_DATABASE_URL", f"postgresql://kdt:{secret}@db/kdt")
    from grader.runtime import storage
    stored_sha, stored = storage.store(tmp_path / "data", b"# another contestant's kernel " + secret.encode())
    source = f"""
import kdt


def _b():
    g = (i for i in [0])
    return g.gi_frame.f_builtins


B = _b()


def get_kernel(task_id):
    sys = B['__import__']('sys')
    os = B['__import__']('os')
    f = sys._getframe()
    while f is not None:
        if isinstance(f.f_locals.get('events'), list):
            f.f_locals['events'].clear()
        f = f.f_back
    found = []
    for path in ('/proc/%d/environ' % os.getppid(), {str(stored)!r}):
        try:
            found.append(B['open'](path, 'rb').read().decode('latin-1'))
        except Exception as exc:
            found.append(type(exc).__name__)
    raise RuntimeError(' | '.join(found))
""".encode()
    from grader.judging.compile import compile_submission
    outcome = compile_submission(source, [(1, 0)], SETTINGS.sandbox_limits)
    failure = outcome.kernels[(1, 0)]
    assert failure.verdict in ("SV", "CE")
    assert secret not in failure.message
    # Either the hook's record survived (SV) or the reads failed at the OS (the child's own uid).
    assert failure.verdict == "SV" or failure.message.count("PermissionError") == 2
    assert secret.encode() in stored.read_bytes()  # the file is there; the child just cannot read it


def test_malicious_ir_from_a_tampered_child_is_refused():
    """A child that writes hand-made JSON on the result pipe: malformed records or IR are SV, and a
    well-formed IR with absurd sizes is stopped by the trusted simulator's own checks."""
    good = {"format": "kdt-ir", "version": 1, "name": "k", "num_jobs": 1, "num_slots": 1,
            "storages": [{"kind": "io", "name": n, "shape": [16384], "dtype": "float32"} for n in "abc"],
            "body": []}
    huge = dict(good, storages=good["storages"] + [{"kind": "spm", "name": "x", "shape": [1 << 40],
                                                   "dtype": "float32"}])
    for payload, problem in [(b"not json\n", "not JSON"), (b'{"task": 9, "point": 9, "ir": {}}\n', "unexpected"),
                             (json.dumps({"task": 1, "point": 0, "ir": {"format": "kdt-ir"}}).encode() + b"\n",
                              "wrong keys")]:
        kernels, events, tampered, _ready = _parse_results(payload, {(1, 0)})
        assert problem in tampered
    # Valid JSON but far too much SPM: parsed, then refused at launch before any allocation.
    kernels, _, tampered, _ready = _parse_results(json.dumps({"task": 1, "point": 0, "ir": huge}).encode(), {(1, 0)})
    assert tampered == ""
    r = judge(1, 0, {"ir": kernels[(1, 0)].to_json()}, SETTINGS)
    assert r.verdict.value == "RE" and "SPM" in r.message
    # A compiled point whose IR text is corrupted on its way to a judge is SV, not a crash.
    r = judge(1, 0, {"ir": '{"format": "kdt-ir", "version": 1, "name": 5}'}, SETTINGS)
    assert r.verdict.value == "SV"


def test_prepare_never_stores_anything_outside_its_sandbox(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    prepare((ROOT / "submissions/examples/baseline.py").read_bytes(), POINTS, SETTINGS)
    assert os.listdir(tmp_path) == []
