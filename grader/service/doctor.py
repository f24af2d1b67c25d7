"""Checks of a deployment: the sandbox self-check every worker and server runs at start, and
``kdt-grade admin doctor`` (sandbox, database, migrations, broker, outbox, limits).

``self_check(settings)`` compiles a known-good kernel through the real sandbox with the configured
limits (``pipeline.prepare``: audit, sandboxed child, strict IR loader) and raises ``SelfCheckFailed``
with one clear message when it does not come back compiled: a broken install, an install the sandbox
user cannot read, compile limits too low to import torch. A process that grades must not start then:
every submission would fail because of the judge.

``containment_check(settings)`` says whether sandboxed runs are contained here (own PID namespace and
cgroup: ``grader.judging.sandbox.containment``); as root without it the self-check refuses to let anything grade
unless ``KDT_GRADE_ALLOW_UNCONTAINED=1``, which is logged and shown. Not root (a developer's machine):
runs are uncontained as before, and it is reported.

``run_checks(settings)`` returns one ``Check`` per part; none of them raises.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from grader.config import Settings

# Task 1, test point 0, compiled by the self-check (a correct vector add).
KNOWN_GOOD = b'''import kdt


@kdt.kernel(num_jobs_calculator=lambda task_args: task_args["N"] // 8192)
def vector_add(task_args, io_tensors):
    x0 = kdt.get_job_id() * 8192
    x = kdt.alloc_spm((8192,))
    y = kdt.alloc_spm((8192,))
    kdt.load(io_tensors["a"][x0:x0 + 8192], x)
    kdt.load(io_tensors["b"][x0:x0 + 8192], y)
    kdt.add(x, y, x)
    kdt.store(x, io_tensors["c"][x0:x0 + 8192])


def get_kernel(task_id):
    return vector_add if task_id == 1 else None
'''


class SelfCheckFailed(RuntimeError):
    """The sandbox cannot compile a known-good kernel here; ``str()`` says why and what to do."""


@dataclass
class Check:
    """One line of ``admin doctor``: ``name``, ``ok`` and what was found (``detail``)."""

    name: str
    ok: bool
    detail: str


def containment_check(settings: Settings) -> Check:
    """Whether sandboxed runs are contained here; ``ok`` False only when grading must be refused (root,
    no containment, no ``KDT_GRADE_ALLOW_UNCONTAINED``)."""
    from grader.judging.sandbox import containment

    state = containment()
    if state.complete:
        return Check("containment", True, state.describe())
    if not state.root:
        return Check("containment", True, state.describe() + " (development only: runs as before)")
    if settings.allow_uncontained:
        return Check("containment", True, state.describe() + " -- GRADING ANYWAY: KDT_GRADE_ALLOW_UNCONTAINED=1 "
                                                              "(unsafe: a submission can outlive its run)")
    return Check("containment", False, state.describe() + "; refusing to grade (an organiser can set "
                                                          "KDT_GRADE_ALLOW_UNCONTAINED=1 to grade anyway, unsafe)")


def self_check(settings: Settings) -> float:
    """Compile ``KNOWN_GOOD`` through the sandbox with ``settings``' limits; return the seconds it took.

    Raises ``SelfCheckFailed`` (message: the verdict and the child's last words, plus a hint), also when
    runs cannot be contained here and no organiser allowed that (``containment_check``)."""
    from grader.judging import pipeline

    contained = containment_check(settings)
    if not contained.ok:
        raise SelfCheckFailed(f"the sandbox self-check failed: {contained.detail}")
    if "NOT CONTAINED" in contained.detail:
        logging.getLogger(__name__).warning("sandbox: %s", contained.detail)
    t0 = time.perf_counter()
    compiled = pipeline.prepare(KNOWN_GOOD, [(1, 0)], settings)[(1, 0)]
    if "ir" in compiled:
        return time.perf_counter() - t0
    message = " | ".join(compiled.get("message", "").strip().splitlines()[-6:])
    raise SelfCheckFailed(
        f"the sandbox self-check failed: a known-good kernel got {compiled.get('verdict')} ({message}). "
        "Check that the installation is readable by other users (the sandboxed child runs as an unprivileged "
        "user id), and that KDT_GRADE_COMPILE_MEMORY_MB / _CPU_SECONDS / _WALL_SECONDS leave room to import "
        "torch; `kdt-grade admin doctor` shows every check")


def run_checks(settings: Settings) -> list[Check]:
    """Every check of ``admin doctor``, in order; failures are reported, never raised."""
    checks = [containment_check(settings), _sandbox(settings), _warm(settings), _database(settings)]
    if checks[-1].ok:
        checks.append(_migrations(settings))
    if not settings.embedded:
        checks.append(_broker(settings))
        if checks[3].ok:
            checks.append(_outbox(settings))
    return checks


def _sandbox(settings: Settings) -> Check:
    try:
        seconds = self_check(settings)
    except SelfCheckFailed as exc:
        limits = _limits_hint(settings)
        return Check("sandbox", False, str(exc) + (f"; {limits}" if limits else ""))
    except Exception as exc:  # an unexpected failure of the check itself is a failed check
        return Check("sandbox", False, f"{type(exc).__name__}: {exc}")
    return Check("sandbox", True, f"a known-good kernel compiled in {seconds:.1f} s with the configured limits "
                                  f"({settings.compile_memory_mb} MiB, {settings.compile_cpu_seconds} s CPU)")


def _warm(settings: Settings) -> Check:
    """The warm compile template (``grader.judging.warm``) the sandbox check has just used in this
    process: running, how many runs it forked; or why compiles start cold here."""
    from grader.judging import warm
    from grader.judging.sandbox import containment

    if not settings.compile_warm:
        return Check("warm template", True, "off (KDT_GRADE_COMPILE_WARM=0): every compile starts a fresh "
                                            "interpreter and imports torch again")
    if not containment().complete:
        return Check("warm template", True, "not used: runs are not contained here, so every compile starts cold")
    lines = warm.status()
    if not lines:
        return Check("warm template", False, "no warm template is running after the sandbox check (see the "
                                             "sandbox line): compiles cannot start")
    return Check("warm template", True, "; ".join(lines))


def _limits_hint(settings: Settings) -> str:
    """When the configured compile limits are below the defaults, whether the defaults would work."""
    defaults = Settings.model_fields
    lower = {name: getattr(settings, name) for name in ("compile_memory_mb", "compile_cpu_seconds",
                                                         "compile_wall_seconds")
             if getattr(settings, name) < defaults[name].default}
    if not lower:
        return ""
    try:
        self_check(Settings(**{**settings.model_dump(), **{name: defaults[name].default for name in lower}}))
    except Exception:  # the defaults fail too: not (only) the limits
        return ""
    names = ", ".join(f"KDT_GRADE_{n.upper()}={v}" for n, v in lower.items())
    return f"limits: the check passes with the default limits, so {names} is too low"


def _database(settings: Settings) -> Check:
    from sqlalchemy import text

    import db
    from grader.runtime.urls import safe_url

    engine = db.make_engine(settings.db_url)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception as exc:
        return Check("database", False, f"{safe_url(settings.db_url)} is unreachable: {_line(exc)}")
    finally:
        engine.dispose()
    return Check("database", True, f"{safe_url(settings.db_url)} answers")


def _migrations(settings: Settings) -> Check:
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    import db
    from db.migrate import alembic_config

    head = ScriptDirectory.from_config(alembic_config(settings.db_url)).get_current_head()
    engine = db.make_engine(settings.db_url)
    try:
        with engine.connect() as connection:
            current = MigrationContext.configure(connection).get_current_revision()
    except Exception as exc:
        return Check("migrations", False, _line(exc))
    finally:
        engine.dispose()
    if current != head:
        return Check("migrations", False, f"the schema is at {current or 'nothing'}, the code needs {head}: "
                                          "run `kdt-grade admin init-db`")
    return Check("migrations", True, f"at head ({head})")


def _broker(settings: Settings) -> Check:
    from grader.runtime.broker import Broker, BrokerUnavailable

    broker = Broker(settings)
    try:
        broker.ping()
        waiting = len(broker.waiting())
    except BrokerUnavailable as exc:
        return Check("broker", False, str(exc))
    finally:
        broker.close()
    return Check("broker", True, f"answers; {waiting} task(s) waiting in the queue")


def _outbox(settings: Settings) -> Check:
    import db

    factory = db.make_session_factory(settings.db_url)
    try:
        with db.session_scope(factory) as session:
            rows = db.list_outbox(session)
    except Exception as exc:
        return Check("outbox", False, _line(exc))
    finally:
        factory.kw["bind"].dispose()
    failing = [r for r in rows if r["attempts"]]
    if failing:
        return Check("outbox", False, f"{len(rows)} message(s) not sent yet, {len(failing)} failed to send "
                                      f"(last error: {failing[-1]['last_error']})")
    return Check("outbox", True, f"{len(rows)} message(s) waiting to be sent")


def _line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
