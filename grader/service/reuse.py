"""Grading only what changed: copying a test point's result from an identical kernel's (``db.reuse``).

The compile step stores each point's compiled kernel with its *result key*
(``grader.judging.reuse.result_key``: IR, task, point, judge version). Before a point is simulated, the
service looks the key up: at compile time (``hits``: the point is recorded at once, as a ``CE`` is, and
never queued) and again when a worker claims it (``lookup``: an identical copy finished meanwhile). A hit
is a ``ReusedResult``: the stored verdict, cycles, score, message, utilisation and trace, marked
``reused``. After a fresh simulation, ``keep`` stores the result under its key in the transaction that
records the point (``grader.service.results.record``), so an entry exists only for a committed result.

A rejudge with ``--fresh`` (``db.rejudge.start_rejudge``) marks its compiled points ``"fresh"``: they are
simulated again and reuse nothing (their results are still kept for later submissions).

``LocalResults`` is the same rule for ``kdt-grade local``: a SQLite file in the cache directory.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import db
from db.reuse import REUSABLE_VERDICTS, ReusableResult, find_reusable, purge_other_versions, store_reusable
from grader.judging.reuse import judge_version
from judger.verdicts import PointResult, Verdict

if TYPE_CHECKING:
    from .facade import Service

log = logging.getLogger(__name__)
LOCAL_FILE = "results.sqlite3"


@dataclass
class ReusedResult(PointResult):
    """A ``PointResult`` copied from the store (``reused`` is True), with the stored trace blob."""

    trace: bytes | None = None


def reusable(compiled: dict) -> bool:
    """Whether a compiled point may take a stored result: it has a kernel and a key, and is not fresh."""
    return "key" in compiled and not compiled.get("fresh")


def as_result(found: dict, compile_s: float = 0.0) -> ReusedResult:
    """The ``ReusedResult`` of a stored entry (``db.reuse.find_reusable``); no simulation time."""
    return ReusedResult(found["task"], found["point"], Verdict(found["verdict"]), found["cycles"], found["score"],
                        found["message"], {"compile_s": compile_s, "simulate_s": 0.0, "total_s": compile_s},
                        found["utilisation"], reused=True, trace=found["trace"])


def stored(session, compiled: dict) -> ReusedResult | None:
    """The stored result of a compiled point, read in ``session``, or None (no key, fresh, or never
    simulated)."""
    if not reusable(compiled):
        return None
    found = find_reusable(session, compiled["key"])
    return None if found is None else as_result(found, float(compiled.get("compile_s", 0.0)))


def lookup(service: Service, compiled: dict) -> ReusedResult | None:
    """``stored`` in a read transaction of the service's database."""
    with service.read_session() as session:
        return stored(session, compiled)


def hits(service: Service, compiled: dict) -> dict:
    """``{(task, point): ReusedResult}`` for the compiled points ``{(task, point): compiled point}`` whose
    result is stored (one read transaction for all of them)."""
    with service.read_session() as session:
        found = {p: stored(session, point) for p, point in compiled.items()}
    return {p: result for p, result in found.items() if result is not None}


def keep(session, key: str | None, result: PointResult, trace: bytes | None) -> bool:
    """Store a freshly simulated result under ``key`` (in the caller's transaction) when its verdict is one
    no machine changes (``AC``, ``WA``, ``RE``, except an RE from Python's recursion limit, which depends on
    how deep the judging process's stack was). Returns whether an entry was written."""
    if key is None or result.reused or result.verdict.value not in REUSABLE_VERDICTS \
            or result.message.startswith("RecursionError"):  # the stack depth the judge ran at decided it
        return False
    return store_reusable(session, key, judge_version(), _entry(result, trace))


def _entry(result: PointResult, trace: bytes | None) -> dict:
    return {"task": result.task, "point": result.point, "verdict": result.verdict.value, "cycles": result.cycles,
            "score": result.score, "message": result.message, "utilisation": result.utilisation,
            "simulate_seconds": float(result.timings.get("simulate_s", 0.0)), "trace": trace}


class LocalResults:
    """``kdt-grade local``'s store: ``db.reuse``'s table in the SQLite file ``path`` (made when missing;
    entries of other judge versions are dropped on opening). ``find``/``keep`` are what
    ``grader.judging.pipeline.grade_source`` calls. A store that cannot be opened or written is skipped
    with a warning: reuse only ever saves time."""

    def __init__(self, path: Path, fresh: bool = False):
        self.fresh = fresh  # find nothing, keep every result (``kdt-grade local --fresh``)
        self.engine = db.make_engine(f"sqlite:///{path}")
        ReusableResult.__table__.create(self.engine, checkfirst=True)
        self.factory = db.make_session_factory(self.engine)
        with db.session_scope(self.factory) as session:
            purge_other_versions(session, judge_version())

    def find(self, compiled: dict) -> ReusedResult | None:
        """The stored result of a compiled point, or None (always None when ``fresh``)."""
        if self.fresh:
            return None
        with db.session_scope(self.factory) as session:
            return stored(session, compiled)

    def keep(self, compiled: dict, result: PointResult) -> None:
        """Store a freshly simulated result of a compiled point (see ``keep``)."""
        with db.session_scope(self.factory) as session:
            keep(session, compiled.get("key"), result, None)

    def close(self) -> None:
        self.engine.dispose()


def local_results(cache_dir: Path | None, fresh: bool = False) -> LocalResults | None:
    """The local store in ``cache_dir`` (None: no cache, nothing is kept), or None with a warning when the
    file cannot be opened. ``fresh``: it finds nothing but keeps every new result."""
    if cache_dir is None:
        return None
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        return LocalResults(cache_dir / LOCAL_FILE, fresh)
    except Exception as exc:  # a read-only or broken cache: grade without reuse
        log.warning("the local result store in %s cannot be used (%s); grading without reuse", cache_dir, exc)
        return None
