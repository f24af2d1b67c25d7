"""Issue 20 finding 6: an error the contestant's own code raises is theirs (CE), whatever its class. A
``.compile`` that raises the front end's ``InternalError`` (or a subclass it defines) once took the judge
for the culprit: IE, and the service compiled the file three times. Now: CE, compiled once, and recorded
at compile time without any pool work (nothing to simulate). The sandboxed child cannot claim IE either."""
import io
from pathlib import Path

import pytest

from grader.judging import compile_child, pipeline
from grader.judging.compile import Failure, _parse_results
from grader.config import load_settings
from grader.service import Service
from judger.grading import FRONT_END_FAULT, CompileFailed
from judger.verdicts import Verdict

CASE = Path(__file__).parent / "cases" / "a43_contestant_internal_error.py"


class NoPool:
    """A pool that fails the test if a point is handed to it."""

    _max_workers = 2

    def submit(self, *args, **kwargs):
        raise AssertionError("a point that needs no simulation was sent to the pool")


def test_a_contestants_internal_error_is_ce_compiled_once_and_never_pooled(tmp_path, monkeypatch):
    prepares = []
    real = pipeline.prepare
    monkeypatch.setattr(pipeline, "prepare", lambda *args: prepares.append(args) or real(*args))
    with Service(load_settings(data_dir=tmp_path / "var", workers=2)) as service:
        submission_id = service.accept(CASE.read_bytes(), CASE.name, "mallory")
        totals = service.grade_embedded(submission_id, pool=NoPool())
        state = service.status(submission_id)
    assert len(prepares) == 1
    assert totals["total"] == 0.0 and state["status"] == "done"
    assert {p["verdict"] for p in state["points"]} == {"CE"}
    assert "InternalError: Line 1, Col 1, internal error: please retry me" in state["points"][0]["message"]
    assert "MyInternalError: Line 1, Col 1" in state["points"][-1]["message"]
    assert all("not your fault" not in p["message"] for p in state["points"])
    # Claimed and recorded at once, in the compile's transaction: one attempt, never seen running.
    assert all(p["attempts"] == 1 and p["started_at"] == p["finished_at"] for p in state["points"])


@pytest.mark.parametrize("raise_line", [
    "raise SystemExit('internal error')",
    "raise kdt.language.errors.CompilationError('x')",
    "raise type('InternalError', (Exception,), {})('internal error of the judge')",
])
def test_any_exception_of_a_contestants_compile_is_ce(raise_line):
    source = f"""import kdt


class Claims:
    def compile(self, task_args, io_tensors):
        {raise_line}


def get_kernel(task_id):
    return Claims()
""".encode()
    compiled = pipeline.prepare(source, [(1, 0)], load_settings())
    assert compiled[(1, 0)]["verdict"] == "CE", compiled
    assert not pipeline.judge_fault(compiled)


def test_the_sandboxed_child_cannot_claim_an_internal_error():
    """The compile child runs the contestant's code, so its report may claim only what a contestant may
    claim: a record with verdict IE (written by a submission that found the result pipe, say) is tampering,
    SV for every point, never the judge's fault; the same record with CE is taken as it is."""
    forged = b'{"ready": true}\n{"task": 1, "point": 0, "error": {"verdict": "IE", "message": "the judge broke"}}\n'
    kernels, _, problem, ready = _parse_results(forged, {(1, 0)})
    assert (kernels, problem, ready) == ({}, "line 2: malformed test point record", True)
    kernels, _, problem, _ = _parse_results(forged.replace(b'"IE"', b'"CE"'), {(1, 0)})
    assert problem == "" and kernels == {(1, 0): Failure("CE", "the judge broke")}


def test_a_front_end_fault_seen_in_the_child_is_reported_as_ce_with_what_happened():
    """``judger.grading.front_end_fault`` (IE in the trusted local judger) noticed inside the sandboxed
    child is reported as CE: the trusted parent cannot tell it from a contestant's claim."""
    out = io.StringIO()
    failure = CompileFailed(FRONT_END_FAULT + "InternalError: Line 3, Col 1, internal error: boom", Verdict.IE)
    compile_child._emit(out, 1, 0, error=failure)
    kernels, _, problem, _ = _parse_results(b'{"ready": true}\n' + out.getvalue().encode(), {(1, 0)})
    assert problem == ""
    assert kernels == {(1, 0): Failure("CE", compile_child.FRONT_END_FAULT
                                       + "InternalError: Line 3, Col 1, internal error: boom")}
    assert "not your fault" not in kernels[(1, 0)].message


def test_event_lines_a_child_forges_are_kept_once_and_at_most_max_events():
    """The child reports each refused event at once (``{"event": ...}``) and all of them again at the end; a
    hostile child may write as many such lines as its result limit allows. They are merged without
    duplicates and at most ``MAX_EVENTS`` are kept, in one pass (no work per pair of lines)."""
    from grader.judging.compile import MAX_EVENTS

    one = b'{"event": {"event": "os.system", "detail": "x", "blocked": true}}\n'
    many = b"".join(b'{"event": {"event": "os.system", "detail": "%d", "blocked": true}}\n' % i
                    for i in range(50_000))
    final = b'{"events": [{"event": "os.system", "detail": "x", "blocked": true}]}\n'
    _, events, problem, ready = _parse_results(b'{"ready": true}\n' + one + one + final, {(1, 0)})
    assert (problem, ready) == ("", True)
    assert events == [{"event": "os.system", "detail": "x", "blocked": True}]
    _, events, problem, _ = _parse_results(b'{"ready": true}\n' + many, {(1, 0)})
    assert problem == "" and len(events) == MAX_EVENTS == 1000 and events[-1]["detail"] == "999"
    _, _, problem, _ = _parse_results(b'{"ready": true}\n{"event": {"event": 1}}\n', {(1, 0)})
    assert problem == "malformed event list"
