"""Verdicts and the plain-data result of one test point (spec judging.md, "Verdicts").

``PointResult`` crosses process boundaries as JSON (``to_dict``/``from_dict``); ``from_dict`` checks
every field, so a malformed record is rejected instead of being stored.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any


class Verdict(enum.StrEnum):
    """How a test point ended. Only ``AC`` scores above zero."""

    AC = "AC"
    WA = "WA"
    CE = "CE"
    RE = "RE"
    TLE = "TLE"
    MLE = "MLE"
    SV = "SV"
    IE = "IE"

    @property
    def description(self) -> str:
        """Its name in words ("wrong answer")."""
        return _DESCRIPTIONS[self][0]

    @property
    def explanation(self) -> str:
        """What it means for a contestant, in one sentence without the name (the rules list each)."""
        return _DESCRIPTIONS[self][1]


# Per verdict: (description, explanation). The explanations are the contestant's (the rules show them);
# MLE and SV are set by the grading service, IE is detected by the judge itself.
_DESCRIPTIONS = {
    Verdict.AC: ("accepted", "the output was correct in every trial; the point is scored by its cycles"),
    Verdict.WA: ("wrong answer", "a trial's output differed from the reference beyond the tolerances (the "
                                 "message gives the worst errors)"),
    Verdict.CE: ("compile error", "the file, its get_kernel or the kernel's compilation failed"),
    Verdict.RE: ("runtime error", "the launch failed (out-of-bounds view, SPM overflow, shape or type error)"),
    Verdict.TLE: ("time limit exceeded", "a launch ran past its time limit (on the judge: CPU time, whatever "
                                         "the machine's load)"),
    Verdict.MLE: ("memory limit exceeded", "the grading process ran past its memory limit"),
    Verdict.SV: ("security violation", "the audit or the sandbox stopped the submission"),
    Verdict.IE: ("internal error", "the judge's own fault, never the submission's: the point is graded again, "
                                   "never scored"),
}

VERDICTS = tuple(v.value for v in Verdict)
TIMING_KEYS = ("compile_s", "simulate_s", "total_s")


def _timings() -> dict:
    return {k: 0.0 for k in TIMING_KEYS}


@dataclass
class PointResult:
    """The outcome of one test point.

    ``cycles`` are the last launched trial's (None when no launch finished); ``score`` is 0 unless the
    verdict is ``AC``; ``message`` is what the contestant needs (empty for ``AC``); ``timings`` holds
    ``compile_s``, ``simulate_s`` (all launches) and ``total_s`` (the whole test point) in seconds;
    ``utilisation`` is the MXM utilisation (tasks 2-4, when ``cycles`` is known), else None; ``reused``:
    the outcome was copied from an identical kernel's earlier simulation (``db.reuse``), not simulated again.
    """

    task: int
    point: int
    verdict: Verdict
    cycles: int | None = None
    score: float = 0.0
    message: str = ""
    timings: dict = field(default_factory=_timings)
    utilisation: float | None = None
    reused: bool = False

    def __post_init__(self):
        self.verdict = Verdict(self.verdict)
        _check(self)

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.AC

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data."""
        return {"task": self.task, "point": self.point, "verdict": self.verdict.value, "cycles": self.cycles,
                "score": self.score, "message": self.message, "timings": dict(self.timings),
                "utilisation": self.utilisation, "reused": self.reused}

    @classmethod
    def from_dict(cls, data: Any) -> "PointResult":
        """Rebuild from ``to_dict()`` output; raises ``ValueError`` for anything malformed."""
        if not isinstance(data, dict):
            raise ValueError(f"a PointResult must be a dict, got {type(data).__name__}")
        keys = {"task", "point", "verdict", "cycles", "score", "message", "timings", "utilisation"}
        if set(data) - {"reused"} != keys or not isinstance(data.get("reused", False), bool):
            raise ValueError(f"PointResult keys differ: missing {sorted(keys - set(data))}, "
                             f"unexpected {sorted(set(data) - keys)}")
        if data["verdict"] not in VERDICTS:
            raise ValueError(f"unknown verdict {data['verdict']!r}; expected one of {VERDICTS}")
        timings = data["timings"]
        if not isinstance(timings, dict) or set(timings) != set(TIMING_KEYS):
            raise ValueError(f"timings must have exactly the keys {TIMING_KEYS}, got {timings!r}")
        return cls(task=data["task"], point=data["point"], verdict=Verdict(data["verdict"]),
                   cycles=data["cycles"], score=data["score"], message=data["message"],
                   timings=dict(timings), utilisation=data["utilisation"], reused=data.get("reused", False))


def encodable(text: str) -> str:
    """``text`` as UTF-8 can store it: a lone surrogate (which a submission can put in an exception's text or
    an IR string) written as its escape ``\\udXXX``; other text unchanged."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _is_int(v) -> bool:
    return type(v) is int


def _is_num(v) -> bool:
    return type(v) in (int, float) and math.isfinite(v)


def _check(r: PointResult) -> None:
    if not _is_int(r.task) or r.task < 1 or not _is_int(r.point) or r.point < 0:
        raise ValueError(f"invalid test point: task {r.task!r}, point {r.point!r}")
    if r.cycles is not None and (not _is_int(r.cycles) or r.cycles < 0):
        raise ValueError(f"cycles must be a non-negative int or None, got {r.cycles!r}")
    if not _is_num(r.score) or not 0 <= r.score <= 100:
        raise ValueError(f"score must be a number within 0..100, got {r.score!r}")
    if r.verdict is not Verdict.AC and r.score != 0:
        raise ValueError(f"only AC scores above zero; got {r.verdict.value} with score {r.score!r}")
    if not isinstance(r.message, str):
        raise ValueError(f"message must be a str, got {type(r.message).__name__}")
    r.message = encodable(r.message)
    if not isinstance(r.timings, dict) or not set(r.timings) <= set(TIMING_KEYS) \
            or not all(_is_num(v) and v >= 0 for v in r.timings.values()):
        raise ValueError(f"timings must map {TIMING_KEYS} to non-negative seconds, got {r.timings!r}")
    r.timings = {**_timings(), **{k: float(v) for k, v in r.timings.items()}}
    if r.utilisation is not None and (not _is_num(r.utilisation) or r.utilisation < 0):
        raise ValueError(f"utilisation must be a non-negative number or None, got {r.utilisation!r}")
    r.score = float(r.score)
