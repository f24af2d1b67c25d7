"""grader/judging/audithook.py: the child's audit hook, a detector (issue 20: never the wall)."""
from pathlib import Path

import pytest

from grader.judging.audithook import FRAME_ATTRIBUTES, Recorder
from grader.judging.compile import compile_submission
from grader.config import load_settings

EXPLOIT = Path(__file__).parents[2] / "adversarial" / "cases" / "a28_match_pattern_frame_builtins_unhook.py"


@pytest.mark.parametrize("name", sorted(FRAME_ATTRIBUTES))
def test_reading_a_generator_frame_is_refused_and_recorded(name):
    recorder = Recorder(["/nonexistent"])
    with pytest.raises(PermissionError):
        recorder("object.__getattr__", ((i for i in []), name))
    assert recorder.events == [{"event": "object.__getattr__", "detail": f"{name} of a generator", "blocked": True}]


def test_traceback_frames_the_judge_reads_stay_allowed():
    recorder = Recorder(["/nonexistent"])
    for name in ("tb_frame", "f_code", "__code__"):
        recorder("object.__getattr__", (object(), name))
    assert recorder.events == []


def test_the_issue_20_exploit_is_sv_in_the_child_even_without_the_static_audit():
    """Defence in depth: the file goes straight to the sandboxed child (no static audit); the hook refuses
    the class pattern's read of `gi_frame` before the builtins, `gc` and the hook itself are reached."""
    settings = load_settings(compile_cpu_seconds=6, compile_wall_seconds=30, compile_memory_mb=1024)
    outcome = compile_submission(EXPLOIT.read_bytes(), [(1, 0)], settings.sandbox_limits)
    failure = outcome.kernels[(1, 0)]
    assert failure.verdict == "SV", failure.message
    assert "gi_frame" in failure.message
