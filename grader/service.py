"""The grading service: intake, orchestration and queries over the database (issues 4 and 11).

    submit: check_source -> user + submission rows + outbox "compile N" (one transaction) -> dispatch
    embedded (no broker):  grade_embedded in this process, the test points over a process pool
    broker (redis://...):  Celery task ``compile`` -> compiled points + outbox "judge N t.p" (one
                           transaction) -> one ``judge`` task per test point (worker/)

The database is the source of truth for what must be done; the broker only carries it: every message
is first an outbox row (``db.outbox``) written in the transaction it follows from, then sent by
``dispatch`` (right after the commit, and again by the background dispatcher while the broker is down,
``grader.sweeper``). Both modes run the same steps, defined here once and only calling ``grader.pipeline``:

- ``compile(id)``: load the source from the database (verified against its sha256), ``pipeline.prepare``
  every test point, store the *compiled points* (plain JSON, ``db.compiled``). A compile that failed
  because of the judge itself (the sandboxed child died loading our own code) is tried again, then IE.
- per test point: ``begin_point`` (skip a point that already has a verdict of the current generation, or
  that another worker is judging with a live heartbeat; ``claim_attempt`` and commit; past
  ``max_attempts`` the point ends as ``IE``; else hand back its compiled point), ``pipeline.judge``
  (anywhere) and ``finish_point`` (``record_result`` and commit, then ``finalize_submission`` in a new
  transaction, so the last point to finish stores the totals). A heartbeat thread beats the point from
  its claim until its result is recorded.

Every step takes ids and re-reads rows, and every write is idempotent, so a task may run twice. Database
and broker errors inside a task are retried with backoff (``grader.transient``): an outage costs no
attempt; only a claim (a worker that actually starts judging) does.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path

import db
from db.base import utcnow
from db.migrate import upgrade
from judger.scoring import mxm_utilisation, task_score
from judger.tasks import POINTS_PER_TASK, TASKS, WEIGHTS, get_point, get_task
from judger.verdicts import PointResult, Verdict

from . import pipeline, storage
from .broker import COMPILE_TASK, JUDGE_TASK, Broker, BrokerUnavailable  # noqa: F401 (task names re-exported)
from .config import Settings, load_settings
from .errors import ServiceUnavailable  # noqa: F401 (re-exported: what accept and rejudge raise)
from .heartbeat import CompileLease, Heartbeat
from .pipeline import ALL_POINTS, Rejected
from .polling import poll_until_final
from .pool import interrupts_deferred, open_pool, renewed, stop_pool
from .transient import is_transient, retry_transient, unavailable

log = logging.getLogger(__name__)
_MIGRATED: set[str] = set()
_MIGRATE_LOCK = threading.Lock()
JUDGE_FAULT_RETRIES = 2   # a compile that failed because of the judge is tried this many more times


def worker_name() -> str:
    """``host:pid`` of this process, stored with each claimed point (``admin show`` tells who grades)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def worker_gone(worker: str | None) -> bool:
    """Whether ``worker`` (``host:pid`` or Celery's ``name@host:pid``) names a process of this host that
    no longer exists (a killed pool process, an interrupted embedded ``submit``). A zombie counts as
    gone: it has exited and only waits for its parent (or init) to reap it. The pool processes of a
    worker killed as a whole are reparented to init, and until init reaps them (seconds on a loaded
    machine, never in a container without one) signal 0 still reaches them."""
    host, _, pid = (worker or "").rpartition(":")
    if host.rpartition("@")[2] != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # it exists (another user's process)
        pass
    return _exited(int(pid))


def _exited(pid: int) -> bool:
    """Whether process ``pid`` is a zombie (Linux ``/proc``; False where that cannot be read)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (not Linux), or it went away meanwhile (then the next look sees it gone)
        return False
    return stat.rpartition(")")[2].split()[:1] in (["Z"], ["X"])  # the state follows the "(name)"


class Service:
    """One process's handle on the service: settings, a lazily created database engine, and (broker
    mode) a ``grader.broker.Broker`` to send tasks with. Create it after forking; ``close()`` releases both."""

    def __init__(self, settings: Settings | None = None):
        self.settings = settings or load_settings()
        self._factory = None
        self._broker: Broker | None = None
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        # Set when the process stops (the server's ``Dispatcher.close``): a point whose pool process was
        # ended then is left for the next start instead of being tried again in a fresh process.
        self.stopping = threading.Event()

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

    @property
    def broker(self) -> Broker:
        if self._broker is None:
            self._broker = Broker(self.settings)
        return self._broker

    def _database_url(self) -> str:
        if self.settings.database_url is None:  # the default SQLite file lives in the data directory
            storage.private_dir(self.settings.data_dir)
        return self.settings.db_url

    def session(self):
        """A transaction scope (commit on success, rollback on error)."""
        return db.session_scope(self.factory)

    def read_session(self):
        """A read-only transaction scope: one consistent snapshot that never waits for a writer (SQLite:
        a deferred transaction, writes refused; ``db.session``). For status polls, token checks, tables."""
        return db.session_scope(self.factory, read_only=True)

    @contextlib.contextmanager
    def _embedded_pool(self):
        """This service's own grading pool (``grader.pool.grading_pool``), made on first use and kept
        until ``close``: grading one submission after another (a batch ``submit``, an embedded rejudge)
        keeps its processes and their test-point data warm. Stopped at once (and made anew next time)
        when grading raises, Ctrl-C included, or when a dead process broke it."""
        self._pool = renewed(self._pool, self.settings)
        try:
            yield self._pool
        except BaseException:
            pool, self._pool = self._pool, None
            if pool is not None:
                stop_pool(pool)
            raise

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        if self._factory is not None:
            self._factory.kw["bind"].dispose()
            self._factory = None
        if self._broker is not None:
            self._broker.close()
            self._broker = None

    def forget_connections(self) -> None:
        """After a fork: drop the inherited pools (connections, grading processes) without closing the
        parent's."""
        self._pool = None
        if self._factory is not None:
            self._factory.kw["bind"].dispose(close=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def retry(self, fn: Callable, what: str):
        """``fn()`` with transient database/broker errors retried (``KDT_GRADE_TRANSIENT_RETRY_SECONDS``)."""
        return retry_transient(fn, self.settings.transient_retry_seconds, what)

    def start_background(self, sweep: bool = True):
        """Start this process's background loops (``grader.sweeper.Background``: the outbox dispatcher
        and the automatic sweeper); returns it, call ``.stop()`` at shutdown. Workers and the server
        call this once at start."""
        from .sweeper import Background

        return Background(self, sweep=sweep).start()

    # ---- intake --------------------------------------------------------------------------------------

    def accept(self, data: bytes, file_name: str, user: str,
               admit: Callable[[object, int], None] | None = None, user_id: int | None = None) -> int:
        """Check, store and record a submission; return its id. In broker mode the outbox row
        "compile N" is written in the same transaction; ``enqueue`` (or the dispatcher) sends it.

        ``user_id``: the id of the existing account ``user`` (the server's authenticated caller), which
        spares the transaction the lookup that creates user ``user`` if missing (the CLI's case).

        ``admit(session, user_id)``, if given, runs in the intake's transaction before the row is created
        (the contest server passes ``grader.contest.admit``: window and limits); what it raises propagates
        and nothing is stored.

        Raises ``pipeline.Rejected`` (nothing stored: no file, no row) for a file that fails the intake
        checks, a bad file name or a bad user name; ``ServiceUnavailable`` (nothing stored either) when
        the database cannot be reached."""
        text = pipeline.check_source(data, self.settings.submission_max_bytes)
        name = Path(file_name).name
        if not name or len(name) > 255:
            raise Rejected(f"the file name must have 1..255 characters, got {name!r}")
        if not name.isprintable():
            raise Rejected(f"the file name must not contain control characters, got {name!r}; rename the file")
        if not user or len(user) > 100:
            raise Rejected(f"the user name must have 1..100 characters, got {user!r}")
        # The archive copy (grading reads the text in the row) is written and fsynced before the
        # transaction and placed after its commit: the writers' queue is held for the rows alone, and a
        # refusal leaves no file.
        staged = storage.stage(self.settings.data_dir, data)
        try:
            with self.session() as session:
                if user_id is None:
                    user_id = db.get_or_create_user(session, user)["id"]
                if admit is not None:
                    admit(session, user_id)
                row = db.create_submission(session, user_id, name, staged.sha256, text)
                if not self.settings.embedded:
                    db.add_outbox(session, "compile", row["id"])
                session.flush()
        except Exception as exc:
            staged.discard()
            if is_transient(exc):
                raise unavailable(exc, "the database is unreachable") from exc
            raise
        try:
            staged.place()
        except OSError as exc:  # accepted all the same: the row holds the text, the file can be written again
            log.error("submission %s is stored, but its archive file %s could not be written: %s",
                      row["id"], staged.path, exc)
        finally:
            staged.discard()
        return int(row["id"])

    def submit(self, data: bytes, file_name: str, user: str, on_result=None) -> int:
        """``accept`` then ``enqueue`` (in embedded mode this grades before returning)."""
        submission_id = self.accept(data, file_name, user)
        self.enqueue(submission_id, on_result=on_result)
        return submission_id

    def enqueue(self, submission_id: int, on_result: Callable[[PointResult], None] | None = None) -> bool:
        """Start grading a committed submission: in this process (embedded; returns True) or by sending
        its outbox row (written now if missing). Returns False when the broker is down: the row stays
        and the dispatcher of any worker or server sends it once the broker is back."""
        if self.settings.embedded:
            self.grade_embedded(submission_id, on_result=on_result)
            return True
        with self.session() as session:
            key = db.add_outbox(session, "compile", submission_id)
        self.dispatch([key])
        with self.session() as session:  # gone: sent, here or by another process's dispatcher
            return not db.list_outbox(session, [key])

    def dispatch(self, keys: Iterable[str] | None = None, min_age: float = 0.0) -> int:
        """Send outbox rows (``keys``, or all of them at least ``min_age`` seconds old) and delete each one
        the broker took; returns how many were sent. Stops at the first broker error (counted on the
        rows; they stay for the next try)."""
        with self.session() as session:
            rows = db.list_outbox(session, keys)
        if min_age:
            cutoff = utcnow() - timedelta(seconds=min_age)
            rows = [r for r in rows if r["created"] <= cutoff]
        sent = 0
        for row in rows:
            try:
                self.broker.send(row["kind"], row["submission_id"], row["task"], row["point"])
            except BrokerUnavailable as exc:
                log.warning("outbox: %s; %d message(s) wait in the database", exc, len(rows) - sent)
                with self.session() as session:
                    db.note_outbox_failure(session, [r["id"] for r in rows[sent:]], str(exc))
                return sent
            with self.session() as session:
                db.delete_outbox(session, row["id"])
            sent += 1
        return sent

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

    def compile(self, submission_id: int, points: Iterable[tuple[int, int]] = ALL_POINTS,
                queue: bool = False) -> list:
        """Audit and compile ``points`` of a submission once and store the compiled points; return the
        points. With ``queue`` (the workers' compile task) the outbox rows "judge N t.p" are written in
        the same transaction and sent. A source that fails its hash check compiles to ``IE`` on every
        point (``LookupError`` for a submission that does not exist). A compile that failed because of
        the judge (``pipeline.judge_fault``) is tried again ``JUDGE_FAULT_RETRIES`` times before its ``IE``
        is stored. Database errors are retried. While it compiles it holds the lease "compile N"; with
        ``queue``, a duplicate compile task (the lease is held elsewhere, or every point is compiled
        already) does nothing and returns []."""
        points = list(points)
        with CompileLease(self, submission_id, worker_name()) as held:
            if queue and (not held or self._all_compiled(submission_id, points)):
                log.info("submission %s is compiled or being compiled elsewhere: nothing to do", submission_id)
                return []
            return self._compile(submission_id, points, queue)

    def _all_compiled(self, submission_id: int, points: list) -> bool:
        with self.session() as session:
            return set(points) <= db.compiled_points(session, submission_id)

    def _compile(self, submission_id: int, points: list, queue: bool) -> list:
        try:
            source = self.retry(lambda: self.source(submission_id), f"loading submission {submission_id}")
        except storage.CorruptFile as exc:
            source, compiled = None, {p: _ie(str(exc)) for p in points}
        for attempt in range(JUDGE_FAULT_RETRIES + 1 if source is not None else 0):
            compiled = pipeline.prepare(source, points, self.settings)
            if not pipeline.judge_fault(compiled) or attempt == JUDGE_FAULT_RETRIES:
                break
            log.warning("submission %s: the compile failed because of the judge; trying again", submission_id)
            time.sleep(1.0 + attempt)

        def store():
            with self.session() as session:
                db.store_compiled(session, submission_id, compiled)
                return [db.add_outbox(session, "judge", submission_id, t, p) for t, p in points] if queue else []

        keys = self.retry(store, f"storing the compiled points of submission {submission_id}")
        if keys:
            self.dispatch(keys)
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

    def _claim(self, submission_id: int, task: int, point: int, worker: str, take_over: bool = False,
               tried: list | None = None):
        """One transaction: ``("done", None)`` (a verdict of the current generation exists),
        ``("elsewhere", None)`` (another worker judges it with a live heartbeat, or claimed it between
        this transaction's read and its write), else ``("claimed", (attempts, generation))``.

        ``tried``: the claim times of this same claim's earlier tries (each is appended before its
        write). When the connection broke after a try's commit reached the database but before its
        reply came back, the retry finds that claim (this worker, one of those ``started_at``) and
        returns it instead of counting a second attempt."""
        with self.session() as session:
            sub = db.get_submission(session, submission_id)
            if sub is None:
                raise LookupError(f"no submission with id {submission_id}")
            generation = sub["generation"]
            row = db.get_result(session, submission_id, task, point)
            if row is not None and row["generation"] == generation:
                if row["finished_at"] is not None:
                    return "done", None
                if tried and row["worker"] == worker and row["started_at"] in tried:
                    return "claimed", (row["attempts"], generation)  # an earlier try committed after all
                if row["worker"] != worker and not take_over and self._alive(row):
                    return "elsewhere", None
            now = utcnow()
            if tried is not None:
                tried.append(now)
            attempts = db.claim_attempt(session, submission_id, task, point, worker, now=now,
                                        generation=generation, seen=row)
            if attempts is None:
                return "elsewhere", None
            return "claimed", (attempts, generation)

    def _alive(self, row: dict) -> bool:
        """Whether the worker of an unfinished row still judges it: not a process of this host that is
        gone (``worker_gone``), and its heartbeat is fresh."""
        if worker_gone(row["worker"]):
            return False
        seen = row["heartbeat_at"] or row["started_at"]
        return seen is not None and utcnow() - seen < timedelta(seconds=self.settings.heartbeat_stale_seconds)

    def begin_point(self, submission_id: int, task: int, point: int, worker: str):
        """Claim a test point. Returns None if there is nothing to do (it already has a verdict of the
        current generation, or another worker is judging it), a final ``PointResult`` (``IE``) if its
        graders died ``max_attempts`` times, else the compiled point to judge."""
        return self._begin_point(submission_id, task, point, worker)[0]

    def _begin_point(self, submission_id: int, task: int, point: int, worker: str, take_over: bool = False,
                     owned: list | None = None):
        """``begin_point``'s outcome and the generation the claim belongs to (``take_over``: claim even a
        point with a live heartbeat; the sweeper decided it is stuck). ``owned``: the list a ``Heartbeat``
        beats; the point is added to it as soon as its claim is committed, so that it beats while its
        compiled point is loaded and until its result is recorded, however long the database is away."""
        tried: list = []
        outcome, claim = self.retry(lambda: self._claim(submission_id, task, point, worker, take_over, tried),
                                    f"claiming test point {task}.{point} of submission {submission_id}")
        if outcome == "done":
            self.retry(lambda: self.finalize(submission_id), "storing totals")  # a lost finalize, if any
            return None, None
        if outcome == "elsewhere":
            return None, None
        attempts, generation = claim
        if owned is not None:
            owned.append((task, point))
        if attempts > self.settings.max_attempts:
            died = attempts - 1
            return PointResult(task, point, Verdict.IE, None, 0.0,
                               f"internal error of the judge: the grading process died {died} times on this "
                               "test point (not necessarily your fault; an organiser will look at it)"), generation
        compiled = self.retry(lambda: self.compiled_point(submission_id, task, point),
                              f"loading compiled point {task}.{point} of submission {submission_id}")
        return compiled, generation

    def finish_point(self, submission_id: int, result: PointResult, worker: str,
                     generation: int | None = None, trace: bytes | None = None) -> dict | None:
        """Record a test point's result and its trace (``pipeline.judge_traced``; None deletes an old one)
        in one transaction (idempotent), then try the totals in a new transaction; both are retried while
        the database is away."""
        timings = result.timings or {}
        if generation is None:
            with self.session() as session:
                generation = db.get_submission(session, submission_id)["generation"]

        def record():
            with self.session() as session:
                db.record_result(session, submission_id, result.task, result.point, result.verdict.value,
                                 result.cycles, result.score, result.message, worker,
                                 wall_seconds=max(0.0, timings.get("total_s", 0.0) - timings.get("compile_s", 0.0)),
                                 generation=generation)
                db.store_trace(session, submission_id, result.task, result.point, trace)

        self.retry(record, f"recording test point {result.task}.{result.point} of submission {submission_id}")
        return self.retry(lambda: self.finalize(submission_id), f"storing the totals of submission {submission_id}")

    def finalize(self, submission_id: int) -> dict | None:
        """Store the totals if every point has finished (``db.finalize_submission`` with the judger's
        ``task_score``); None while points are missing."""
        with self.session() as session:
            return db.finalize_submission(session, submission_id, WEIGHTS, POINTS_PER_TASK, task_score=task_score)

    def judge_point(self, submission_id: int, task: int, point: int, worker: str | None = None):
        """The whole life of one test point in this process (the worker's ``judge`` task): begin, judge,
        finish, the point beating from its claim until its result is recorded. Returns the
        ``PointResult``, or None when there was nothing to do."""
        worker = worker or worker_name()
        owned: list = []  # the point once claimed: it beats until its result is recorded
        with Heartbeat(self, submission_id, owned, worker):
            begun, generation = self._begin_point(submission_id, task, point, worker, owned=owned)
            if begun is None:
                return None
            if isinstance(begun, PointResult):
                result, trace = begun, None
            else:
                result, trace = pipeline.judge_traced(task, point, begun, self.settings)
            self.finish_point(submission_id, result, worker, generation, trace)
        return result

    def grade_embedded(self, submission_id: int, points: Iterable[tuple[int, int]] | None = None,
                       pool: concurrent.futures.Executor | None = None,
                       on_result: Callable[[PointResult], None] | None = None,
                       take_over: bool = False) -> dict | None:
        """Grade a submission in this process: compile once, judge the points in ``pool`` (default: a new
        ``grader.pool.open_pool``), record each result as it comes. ``points`` defaults to those without a
        verdict; ``take_over`` claims them even while another process's heartbeat is fresh (the sweeper).
        A point whose pool process died is tried again, alone, in a fresh process, until
        ``max_attempts``. Returns the stored totals (None if incomplete)."""
        todo = sorted(points) if points is not None else self.unfinished_points(submission_id)
        with self.session() as session:
            have = db.compiled_points(session, submission_id)
        missing = [p for p in todo if p not in have]
        if missing:
            self.compile(submission_id, missing)
        worker = worker_name()
        with contextlib.nullcontext(pool) if pool is not None else self._embedded_pool() as batch_pool:
            died = self._judge_batch(submission_id, todo, batch_pool, worker, on_result, take_over)
        while died and not self.stopping.is_set():  # each point whose process died goes again, alone, in a fresh process
            again = []
            for p in died:
                with open_pool(self.settings, 1) as single:
                    again += self._judge_batch(submission_id, [p], single, worker, on_result)
            died = again
        return self.finalize(submission_id)

    def _judge_batch(self, submission_id, points, pool, worker, on_result, take_over=False) -> list:
        """Claim and judge ``points`` in ``pool`` (their heartbeats beat meanwhile); return the points
        whose pool process died."""
        futures, died, beating = {}, [], []
        with Heartbeat(self, submission_id, beating, worker):
            for task, point in points:
                begun, generation = self._begin_point(submission_id, task, point, worker, take_over, owned=beating)
                if begun is None:
                    continue
                if isinstance(begun, PointResult):
                    self.finish_point(submission_id, begun, worker, generation)
                    if on_result:
                        on_result(begun)
                    continue
                try:
                    with interrupts_deferred():  # a Ctrl-C waits until the pool process is started
                        future = pool.submit(pipeline.judge_traced, task, point, begun, self.settings)
                except concurrent.futures.BrokenExecutor:
                    died.append((task, point))
                    continue
                futures[future] = (task, point, generation)
            for future in concurrent.futures.as_completed(futures):
                task, point, generation = futures[future]
                try:
                    result, trace = future.result()
                except Exception:  # the pool process died (killed, out of memory): try the point again
                    died.append((task, point))
                    continue
                self.finish_point(submission_id, result, worker, generation, trace)
                if on_result:
                    on_result(result)
        return sorted(died)

    def unfinished_points(self, submission_id: int) -> list:
        """The test points of a submission that have no verdict of its current generation yet."""
        with self.session() as session:
            generation = db.get_submission(session, submission_id)["generation"]
            done = {(r["task"], r["point"]) for r in db.list_results(session, submission_id)
                    if r["finished_at"] is not None and r["generation"] == generation}
        return [p for p in ALL_POINTS if p not in done]

    # ---- admin operations ----------------------------------------------------------------------------

    def rejudge(self, ids: Iterable[int] = (), user: str | None = None, everything: bool = False,
                on_result=None, enqueue: Callable[[int], None] | None = None) -> list[int]:
        """Grade the chosen submissions again from scratch; returns their ids. ``ids``, ``user`` and
        ``everything`` combine (union). One transaction starts a new generation of each (``db.start_rejudge``:
        the old results and totals stay visible until the new ones land) and, in broker mode, writes
        their outbox rows "compile N", which are then sent (or wait for the broker). ``LookupError`` for
        an unknown id (nothing changes then); ``ServiceUnavailable`` when the database is unreachable.
        Embedded mode: ``enqueue(id)``, if given, grades in the background (the server) instead of here."""
        try:
            with self.session() as session:
                chosen = set(ids)
                if user is not None:
                    chosen.update(db.submission_ids(session, user))
                if everything:
                    chosen.update(db.submission_ids(session))
                keys = []
                for submission_id in sorted(chosen):
                    db.start_rejudge(session, submission_id)
                    if not self.settings.embedded:
                        keys.append(db.add_outbox(session, "compile", submission_id))
        except LookupError:
            raise
        except Exception as exc:
            if is_transient(exc):
                raise unavailable(exc, "the database is unreachable") from exc
            raise
        if self.settings.embedded:
            for submission_id in sorted(chosen):
                if enqueue is not None:
                    enqueue(submission_id)
                else:
                    self.grade_embedded(submission_id, on_result=on_result)
        else:
            self.dispatch(keys)
        return sorted(chosen)

    def sweep(self, older_than: float | None = None) -> list[dict]:
        """One manual sweep (``admin sweep``, see ``grader.sweeper.Sweeper.run``) with ``older_than``
        (default ``stuck_after_seconds``) as the age a point may be unclaimed or silent; returns the
        re-queued test points, each with ``"reason"`` and ``"action"`` (``compile`` or ``judge``)."""
        return self.sweep_report(older_than)["points"]

    def resume_interrupted(self) -> list[int]:
        """Embedded mode: grade what an interrupted run left, at once: points claimed by a process of this
        host that is gone, and submissions nobody is compiling (no live lease "compile N") with points
        nobody claimed. Claims and leases keep a live process's work its own, so at worst a submission
        still waiting in an embedded server's queue is graded here instead. Returns the submissions it
        graded (none in broker mode)."""
        from .sweeper import Sweeper

        if not self.settings.embedded:
            return []
        report = Sweeper(self).run(0.0, manual=True)
        return sorted({p["submission_id"] for p in report["points"]} | set(report["totals"]))

    def sweep_report(self, older_than: float | None = None) -> dict:
        """``grader.sweeper.Sweeper(self).run(...)``: everything one manual sweep did."""
        from .sweeper import Sweeper

        age = self.settings.stuck_after_seconds if older_than is None else older_than
        return Sweeper(self).run(age, manual=True)

    # ---- queries -------------------------------------------------------------------------------------

    def status(self, submission_id: int) -> dict:
        """Everything about one submission as plain JSON-able data: the submission, its derived status,
        one entry per test point (``state`` queued / running / done) and the stored totals."""
        with self.read_session() as session:
            sub = db.get_submission(session, submission_id)
            if sub is None:
                raise LookupError(f"no submission with id {submission_id}")
            user = db.get_user(session, sub["user_id"])
            state = db.submission_status(session, submission_id)
            rows = {(r["task"], r["point"]): r for r in db.list_results(session, submission_id)}
        current = {k: r for k, r in rows.items() if r["generation"] == sub["generation"]}
        points = [_point_entry(task, point, current.get((task, point))) for task, point in ALL_POINTS]
        return {
            "id": sub["id"], "user": user["name"], "file_name": sub["file_name"], "sha256": sub["sha256"],
            "created": sub["created"].isoformat(), "status": state.value, "points": points,
            "tasks": {task_id: {"name": t.name, "weight": t.weight, "score": sub[f"task{task_id}"]}
                      for task_id, t in TASKS.items()},
            "total": sub["total"],
            # True while a rejudge is under way: ``tasks`` and ``total`` are still the previous grading's.
            "rejudging": sub["generation"] > 0 and state.value in ("queued", "running") and sub["total"] is not None,
        }

    def submission_source(self, submission_id: int) -> str:
        with self.read_session() as session:
            sub = db.get_submission(session, submission_id, include_source=True)
        if sub is None:
            raise LookupError(f"no submission with id {submission_id}")
        return sub["source"]

    def wait(self, submission_id: int, on_progress: Callable[[dict], None] | None = None,
             timeout: float | None = None, poll: float = 0.5) -> dict:
        """Poll ``status`` until the submission is ``done`` or ``failed``; ``on_progress(status)`` after
        each poll. Raises ``TimeoutError`` after ``timeout`` seconds."""
        return poll_until_final(lambda: self.status(submission_id), submission_id, on_progress, timeout, poll)

    def leaderboard(self) -> list[dict]:
        """Each user's best scored submission, best first (ties: the earlier submission)."""
        with self.read_session() as session:
            return [_plain(r) for r in db.leaderboard(session)]

    def all_submissions(self) -> list[dict]:
        """Every submission of every user, oldest first (admin CSV)."""
        with self.read_session() as session:
            return [_plain(r) for r in db.all_submissions(session)]

    def init_db(self) -> None:
        """Create or upgrade the schema (``admin init-db``; the compose file's ``migrate`` step)."""
        ensure_schema(self._database_url(), force=True)


def ensure_schema(url: str, force: bool = False) -> None:
    """Migrate the database at ``url`` to the newest revision, once per process (unless ``force``). For a
    SQLite file, processes take turns (a lock file beside it): two `kdt-grade submit` started at once on a
    new data directory would both create the tables, and one would fail."""
    with _MIGRATE_LOCK:
        if force or url not in _MIGRATED:
            with _migration_file_lock(url):
                upgrade(url)
            _MIGRATED.add(url)


@contextlib.contextmanager
def _migration_file_lock(url: str):
    """An exclusive ``flock`` on ``<database file>.migrate-lock`` for a SQLite file URL; nothing otherwise
    (PostgreSQL: Alembic's migrations run in one transaction each)."""
    parsed = db.resolve_url(url)
    path = parsed.database if parsed.get_backend_name() == "sqlite" else None
    if not path or path == ":memory:":
        yield
        return
    with open(f"{path}.migrate-lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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


def _ie(reason: str) -> dict:
    return {"verdict": "IE", "message": f"internal error of the judge: {reason}", "compile_s": 0.0}


def _iso(value):
    return value.isoformat() if isinstance(value, datetime) else value


def _plain(row: dict) -> dict:
    return {k: _iso(v) for k, v in row.items()}
