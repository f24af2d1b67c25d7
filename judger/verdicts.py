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

    AC = "AC"    # correct; scored by judger.scoring.point_score
    WA = "WA"    # wrong output (the comparison's diagnostics are in the message)
    CE = "CE"    # compile error, including a missing or failing get_kernel
    RE = "RE"    # error at launch (out-of-bounds view, SPM overflow, shape or type error)
    TLE = "TLE"  # the simulation passed its wall-clock limit
    MLE = "MLE"  # memory limit of the grading process (set by the grading service)
    SV = "SV"    # security violation: the audit or the sandbox stopped it (set by the grading service)
    IE = "IE"    # internal error of the judge, detected by the judge; never the submission's fault

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    Verdict.AC: "accepted", Verdict.WA: "wrong answer", Verdict.CE: "compile error",
    Verdict.RE: "runtime error", Verdict.TLE: "time limit exceeded", Verdict.MLE: "memory limit exceeded",
    Verdict.SV: "security violation", Verdict.IE: "internal error",
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
    ``utilisation`` is the MXM utilisation (tasks 2-4, when ``cycles`` is known), else None.
    """

    task: int
    point: int
    verdict: Verdict
    cycles: int | None = None
    score: float = 0.0
    message: str = ""
    timings: dict = field(default_factory=_timings)
    utilisation: float | None = None

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
                "utilisation": self.utilisation}

    @classmethod
    def from_dict(cls, data: Any) -> "PointResult":
        """Rebuild from ``to_dict()`` output; raises ``ValueError`` for anything malformed."""
        if not isinstance(data, dict):
            raise ValueError(f"a PointResult must be a dict, got {type(data).__name__}")
        keys = {"task", "point", "verdict", "cycles", "score", "message", "timings", "utilisation"}
        if set(data) != keys:
            raise ValueError(f"PointResult keys differ: missing {sorted(keys - set(data))}, "
                             f"unexpected {sorted(set(data) - keys)}")
        if data["verdict"] not in VERDICTS:
            raise ValueError(f"unknown verdict {data['verdict']!r}; expected one of {VERDICTS}")
        timings = data["timings"]
        if not isinstance(timings, dict) or set(timings) != set(TIMING_KEYS):
            raise ValueError(f"timings must have exactly the keys {TIMING_KEYS}, got {timings!r}")
        return cls(task=data["task"], point=data["point"], verdict=Verdict(data["verdict"]),
                   cycles=data["cycles"], score=data["score"], message=data["message"],
                   timings=dict(timings), utilisation=data["utilisation"])


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
    if not isinstance(r.timings, dict) or not set(r.timings) <= set(TIMING_KEYS) \
            or not all(_is_num(v) and v >= 0 for v in r.timings.values()):
        raise ValueError(f"timings must map {TIMING_KEYS} to non-negative seconds, got {r.timings!r}")
    r.timings = {**_timings(), **{k: float(v) for k, v in r.timings.items()}}
    if r.utilisation is not None and (not _is_num(r.utilisation) or r.utilisation < 0):
        raise ValueError(f"utilisation must be a non-negative number or None, got {r.utilisation!r}")
    r.score = float(r.score)
