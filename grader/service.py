"""The grading service: intake, orchestration and queries over the database (issue 4).

    submit: check_source -> storage.store -> user + submission rows (commit) -> enqueue
    enqueue, embedded (no broker):  grade_embedded in this process, the test points over a process pool
    enqueue, broker (redis://...):  Celery task ``compile`` -> one ``judge`` task per test point (worker/)

Both modes run the same steps, defined here once and only calling ``grader.pipeline``:

- ``compile(id)``: load the source from the database (verified against its sha256), ``pipeline.prepare``
  every test point, store the *compiled points* (plain JSON, ``db.compiled``). Returns the points to judge.
- per test point: ``begin_point`` (skip a point that already has a verdict: a redelivered task;
  ``claim_attempt`` and commit; past ``max_attempts`` the point ends as ``IE``; else hand back its
  compiled point), ``pipeline.judge`` (anywhere: this process, a pool process, a worker), and
  ``finish_point`` (``record_result`` and commit, then ``finalize_submission`` in a new transaction, with
  the judger's ``task_score``, so the last point to finish stores the totals).

Every step takes ids and re-reads rows, and every write is idempotent, so a task may run twice.
Nothing is enqueued before the transaction that created its rows has committed.
"""
from __future__ import annotations

import concurrent.futures
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path

import db
from db.migrate import upgrade
from judger.scoring import mxm_utilisation, task_score
from judger.tasks import POINTS_PER_TASK, TASKS, WEIGHTS, get_point, get_task
from judger.verdicts import PointResult, Verdict

from . import pipeline, storage
from .config import Settings, load_settings
from .pipeline import ALL_POINTS, Rejected

COMPILE_TASK = "kdt.compile_submission"
JUDGE_TASK = "kdt.judge_point"

_MIGRATED: set[str] = set()
_MIGRATE_LOCK = threading.Lock()


def worker_name() -> str:
    """``host:pid`` of this process, stored with each claimed point (``admin show`` tells who grades)."""
    return f"{socket.gethostname()}:{os.getpid()}"


class Service:
    """One process's handle on the service: settings, a lazily created database engine, and (broker
    mode) a Celery app to send tasks with. Create it after forking; ``close()`` releases both."""

    def __init__(self, settings: Settings | None = None):
        self.settings = settings or load_settings()
        self._factory = None
        self._celery = None

    # ---- resources ---------------------------------------------------------------------------------

    @property
    def factory(self):
        """The session factory. In embedded mode the schema is created or upgraded on first use."""
        if self._factory is None:
            url = self._database_url()
            if self.settings.embedded:
                ensure_schema(url)
            self._factory = db.make_session_factory(url)
        return self._factory

    def _database_url(self) -> str:
        if self.settings.database_url is None:  # the default SQLite file lives in the data directory
            storage.private_dir(self.settings.data_dir)
        return self.settings.db_url

    def session(self):
        """A transaction scope (commit on success, rollback on error)."""
        return db.session_scope(self.factory)

    def close(self) -> None:
        if self._factory is not None:
            self._factory.kw["bind"].dispose()
            self._factory = None
        if self._celery is not None:
            self._celery.close()
            self._celery = None

    def forget_connections(self) -> None:
        """After a fork: drop the inherited pool without closing the parent's connections."""
        if self._factory is not None:
            self._factory.kw["bind"].dispose(close=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- intake --------------------------------------------------------------------------------------

    def accept(self, data: bytes, file_name: str, user: str,
               admit: Callable[[object, int], None] | None = None) -> int:
        """Check, store and record a submission; return its id. Nothing is graded or enqueued yet.

        ``admit(session, user_id)``, if given, runs in the intake's transaction before anything is stored
        (the contest server passes ``grader.contest.admit``: window and limits); what it raises propagates
        and nothing is stored.

        Raises ``pipeline.Rejected`` (nothing stored: no file, no row) for a file that fails the intake
        checks, a bad file name or a bad user name."""
        text = pipeline.check_source(data, self.settings.submission_max_bytes)
        name = Path(file_name).name
        if not name or len(name) > 255:
            raise Rejected(f"the file name must have 1..255 characters, got {name!r}")
        if not user or len(user) > 100:
            raise Rejected(f"the user name must have 1..100 characters, got {user!r}")
        with self.session() as session:
            user_id = db.get_or_create_user(session, user)["id"]
            if admit is not None:
                admit(session, user_id)
            sha, _path = storage.store(self.settings.data_dir, data)
            row = db.create_submission(session, user_id, name, sha, text)
        return int(row["id"])

    def submit(self, data: bytes, file_name: str, user: str, on_result=None) -> int:
        """``accept`` then ``enqueue`` (in embedded mode this grades before returning)."""
        submission_id = self.accept(data, file_name, user)
        self.enqueue(submission_id, on_result=on_result)
        return submission_id

    def enqueue(self, submission_id: int, on_result: Callable[[PointResult], None] | None = None) -> None:
        """Start grading a committed submission: in this process (embedded) or on the workers."""
        if self.settings.embedded:
            self.grade_embedded(submission_id, on_result=on_result)
        else:
            self.send(COMPILE_TASK, submission_id)

    def send(self, task_name: str, *args) -> None:
        """Send a Celery task by name (broker mode)."""
        if self._celery is None:
            from worker.app import make_app  # only the broker mode needs Celery

            self._celery = make_app(self.settings)
        self._celery.send_task(task_name, args=list(args))

    # ---- the grading steps (shared by the embedded mode and the workers) -------------------------------

    def source(self, submission_id: int) -> bytes:
        """The submission's bytes from the database, checked against its sha256 (``LookupError`` if it
        does not exist, ``storage.CorruptFile`` if the text does not match the hash)."""
        with self.session() as session:
            row = db.get_submission(session, submission_id, include_source=True)
        if row is None:
            raise LookupError(f"no submission with id {submission_id}")
        data = row["source"].encode("utf-8")
        if storage.sha256_of(data) != row["sha256"]:
            raise storage.CorruptFile(f"submission {submission_id}: the stored source does not match its sha256")
        return data

    def compile(self, submission_id: int, points: Iterable[tuple[int, int]] = ALL_POINTS) -> list:
        """Audit and compile ``points`` of a submission once and store the compiled points; return the
        points. A source that fails its hash check compiles to ``IE`` on every point."""
        points = list(points)
        try:
            compiled = pipeline.prepare(self.source(submission_id), points, self.settings)
        except storage.CorruptFile as exc:
            compiled = {p: {"verdict": "IE", "message": f"internal error of the judge: {exc}", "compile_s": 0.0}
                        for p in points}
        with self.session() as session:
            db.store_compiled(session, submission_id, compiled)
        return points

    def compiled_point(self, submission_id: int, task: int, point: int) -> dict:
        """The stored compiled point; compiles this one point first if it is missing."""
        with self.session() as session:
            compiled = db.get_compiled(session, submission_id, task, point)
        if compiled is None:
            self.compile(submission_id, [(task, point)])
            with self.session() as session:
                compiled = db.get_compiled(session, submission_id, task, point)
        return compiled

    def begin_point(self, submission_id: int, task: int, point: int, worker: str):
        """Claim a test point. Returns None if it already has a verdict (a duplicate delivery: nothing to
        do), a final ``PointResult`` (``IE``) if its graders died ``max_attempts`` times, else the
        compiled point to judge."""
        with self.session() as session:
            row = db.get_result(session, submission_id, task, point)
        if row is not None and row["finished_at"] is not None:
            self.finalize(submission_id)  # in case the previous delivery died between record and finalize
            return None
        with self.session() as session:
            attempts = db.claim_attempt(session, submission_id, task, point, worker)
        if attempts > self.settings.max_attempts:
            died = attempts - 1
            return PointResult(task, point, Verdict.IE, None, 0.0,
                               f"internal error of the judge: the grading process died {died} times on this "
                               "test point (not necessarily your fault; an organiser will look at it)")
        return self.compiled_point(submission_id, task, point)

    def finish_point(self, submission_id: int, result: PointResult, worker: str,
                     trace: bytes | None = None) -> dict | None:
        """Record a test point's result and its trace (``pipeline.judge_traced``; None deletes an old one)
        in one transaction (idempotent), then try the totals in a new transaction."""
        timings = result.timings
        with self.session() as session:
            db.record_result(session, submission_id, result.task, result.point, result.verdict.value,
                             result.cycles, result.score, result.message, worker,
                             wall_seconds=max(0.0, timings["total_s"] - timings["compile_s"]))
            db.store_trace(session, submission_id, result.task, result.point, trace)
        return self.finalize(submission_id)

    def finalize(self, submission_id: int) -> dict | None:
        """Store the totals if every point has finished (``db.finalize_submission`` with the judger's
        ``task_score``); None while points are missing."""
        with self.session() as session:
            return db.finalize_submission(session, submission_id, WEIGHTS, POINTS_PER_TASK, task_score=task_score)

    def judge_point(self, submission_id: int, task: int, point: int, worker: str | None = None):
        """The whole life of one test point in this process (the worker's ``judge`` task): begin, judge,
        finish. Returns the ``PointResult``, or None for a duplicate delivery."""
        worker = worker or worker_name()
        begun = self.begin_point(submission_id, task, point, worker)
        if begun is None:
            return None
        result, trace = (begun, None) if isinstance(begun, PointResult) else \
            pipeline.judge_traced(task, point, begun, self.settings)
        self.finish_point(submission_id, result, worker, trace)
        return result

    def grade_embedded(self, submission_id: int, points: Iterable[tuple[int, int]] | None = None,
                       pool: concurrent.futures.Executor | None = None,
                       on_result: Callable[[PointResult], None] | None = None) -> dict | None:
        """Grade a submission in this process: compile once, judge the points in ``pool`` (default: a new
        ``pipeline.grading_pool``), record each result as it comes. ``points`` defaults to those without a
        verdict. A point whose pool process died is tried again, alone, in a fresh process, until
        ``max_attempts``. Returns the stored totals (None if incomplete)."""
        todo = sorted(points) if points is not None else self.unfinished_points(submission_id)
        with self.session() as session:
            have = db.compiled_points(session, submission_id)
        missing = [p for p in todo if p not in have]
        if missing:
            self.compile(submission_id, missing)
        worker = worker_name()
        own_pool = pipeline.grading_pool(self.settings) if pool is None else None
        try:
            died = self._judge_batch(submission_id, todo, pool or own_pool, worker, on_result)
        finally:
            if own_pool is not None:
                own_pool.shutdown(cancel_futures=True)
        while died:  # each point whose process died goes again, alone, in a fresh process
            again = []
            for p in died:
                with pipeline.grading_pool(self.settings, 1) as single:
                    again += self._judge_batch(submission_id, [p], single, worker, on_result)
            died = again
        return self.finalize(submission_id)

    def _judge_batch(self, submission_id, points, pool, worker, on_result) -> list:
        """Claim and judge ``points`` in ``pool``; return the points whose pool process died."""
        futures, died = {}, []
        for task, point in points:
            begun = self.begin_point(submission_id, task, point, worker)
            if begun is None:
                continue
            if isinstance(begun, PointResult):
                self.finish_point(submission_id, begun, worker)
                if on_result:
                    on_result(begun)
                continue
            try:
                futures[pool.submit(pipeline.judge_traced, task, point, begun, self.settings)] = (task, point)
            except concurrent.futures.BrokenExecutor:
                died.append((task, point))
        for future in concurrent.futures.as_completed(futures):
            try:
                result, trace = future.result()
            except Exception:  # the pool process died (killed, out of memory): try the point again
                died.append(futures[future])
                continue
            self.finish_point(submission_id, result, worker, trace)
            if on_result:
                on_result(result)
        return sorted(died)

    def unfinished_points(self, submission_id: int) -> list:
        """The test points of a submission that have no verdict yet."""
        with self.session() as session:
            done = {(r["task"], r["point"]) for r in db.list_results(session, submission_id)
                    if r["finished_at"] is not None}
        return [p for p in ALL_POINTS if p not in done]

    # ---- admin operations ----------------------------------------------------------------------------

    def rejudge(self, ids: Iterable[int] = (), user: str | None = None, everything: bool = False,
                on_result=None, enqueue: Callable[[int], None] | None = None) -> list[int]:
        """Reset the chosen submissions (results, compiled points and scores) and enqueue them again;
        returns their ids. ``ids``, ``user`` and ``everything`` combine (union). ``LookupError`` for an
        unknown id (nothing is reset then). ``enqueue(id)`` replaces ``self.enqueue`` (the server grades
        in the background)."""
        with self.session() as session:
            chosen = set(ids)
            if user is not None:
                chosen.update(db.submission_ids(session, user))
            if everything:
                chosen.update(db.submission_ids(session))
            for submission_id in sorted(chosen):
                db.reset_submission(session, submission_id)
        for submission_id in sorted(chosen):  # after the commit
            if enqueue is not None:
                enqueue(submission_id)
            else:
                self.enqueue(submission_id, on_result=on_result)
        return sorted(chosen)

    def sweep(self, older_than: float | None = None) -> list[dict]:
        """Enqueue again the test points that are missing or stuck (``db.pending_points``) for longer than
        ``older_than`` seconds (default ``stuck_after_seconds``): a submission without compiled points gets
        its compile task again, the others a judge task per pending point (embedded: graded now).
        Returns the pending points with an ``"action"``: ``"compile"`` or ``"judge"``."""
        age = timedelta(seconds=self.settings.stuck_after_seconds if older_than is None else older_than)
        with self.session() as session:
            pending = db.pending_points(session, age, POINTS_PER_TASK)
            compiled = {sid: db.compiled_points(session, sid) for sid in {p["submission_id"] for p in pending}}
        by_submission: dict[int, list] = {}
        for p in pending:
            by_submission.setdefault(p["submission_id"], []).append(p)
        for submission_id, points in sorted(by_submission.items()):
            keys = [(p["task"], p["point"]) for p in points]
            action = "judge" if set(keys) <= compiled[submission_id] else "compile"
            for p in points:
                p["action"] = action
            if self.settings.embedded:
                self.grade_embedded(submission_id, keys)
            elif action == "compile":
                self.send(COMPILE_TASK, submission_id)  # compiles, then sends every point; done ones skip
            else:
                for task, point in keys:
                    self.send(JUDGE_TASK, submission_id, task, point)
        return [_plain(p) for p in pending]

    # ---- queries -------------------------------------------------------------------------------------

    def status(self, submission_id: int) -> dict:
        """Everything about one submission as plain JSON-able data: the submission, its derived status,
        one entry per test point (``state`` queued / running / done) and the stored totals."""
        with self.session() as session:
            sub = db.get_submission(session, submission_id)
            if sub is None:
                raise LookupError(f"no submission with id {submission_id}")
            user = db.get_user(session, sub["user_id"])
            state = db.submission_status(session, submission_id)
            rows = {(r["task"], r["point"]): r for r in db.list_results(session, submission_id)}
        points = [_point_entry(task, point, rows.get((task, point))) for task, point in ALL_POINTS]
        return {
            "id": sub["id"], "user": user["name"], "file_name": sub["file_name"], "sha256": sub["sha256"],
            "created": sub["created"].isoformat(), "status": state.value, "points": points,
            "tasks": {task_id: {"name": t.name, "weight": t.weight, "score": sub[f"task{task_id}"]}
                      for task_id, t in TASKS.items()},
            "total": sub["total"],
        }

    def submission_source(self, submission_id: int) -> str:
        with self.session() as session:
            sub = db.get_submission(session, submission_id, include_source=True)
        if sub is None:
            raise LookupError(f"no submission with id {submission_id}")
        return sub["source"]

    def wait(self, submission_id: int, on_progress: Callable[[dict], None] | None = None,
             timeout: float | None = None, poll: float = 0.5) -> dict:
        """Poll ``status`` until the submission is ``done`` or ``failed``; ``on_progress(status)`` after
        each poll. Raises ``TimeoutError`` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            state = self.status(submission_id)
            if on_progress:
                on_progress(state)
            if state["status"] in ("done", "failed"):
                return state
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"submission {submission_id} is still {state['status']} after {timeout:g} s")
            time.sleep(poll)

    def leaderboard(self) -> list[dict]:
        """Each user's best scored submission, best first (ties: the earlier submission)."""
        with self.session() as session:
            return [_plain(r) for r in db.leaderboard(session)]

    def all_submissions(self) -> list[dict]:
        """Every submission of every user, oldest first (admin CSV)."""
        with self.session() as session:
            return [_plain(r) for r in db.all_submissions(session)]

    def init_db(self) -> None:
        """Create or upgrade the schema (``admin init-db``; the compose file's ``migrate`` step)."""
        ensure_schema(self._database_url(), force=True)


def ensure_schema(url: str, force: bool = False) -> None:
    """Migrate the database at ``url`` to the newest revision, once per process (unless ``force``)."""
    with _MIGRATE_LOCK:
        if force or url not in _MIGRATED:
            upgrade(url)
            _MIGRATED.add(url)


def utilisation(task: int, point: int, cycles: int | None) -> float | None:
    """The MXM utilisation of a test point (tasks 2-4) from its cycles, with the judger's formula."""
    work = get_task(task).mxm_work(get_point(task, point))
    if not cycles or work is None:
        return None
    return mxm_utilisation(work, cycles, get_task(task).num_sms)


def _point_entry(task: int, point: int, row: dict | None) -> dict:
    if row is None:
        state = "queued"
    else:
        state = "done" if row["finished_at"] is not None else "running"
    row = row or {}
    cycles = row.get("cycles")
    return {
        "task": task, "point": point, "state": state, "verdict": row.get("verdict"), "cycles": cycles,
        "score": row.get("score"), "utilisation": utilisation(task, point, cycles) if state == "done" else None,
        "message": row.get("message") or "", "attempts": row.get("attempts", 0), "worker": row.get("worker"),
        "started_at": _iso(row.get("started_at")), "finished_at": _iso(row.get("finished_at")),
        "wall_seconds": row.get("wall_seconds"),
    }


def _iso(value):
    return value.isoformat() if isinstance(value, datetime) else value


def _plain(row: dict) -> dict:
    return {k: _iso(v) for k, v in row.items()}
