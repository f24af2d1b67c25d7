"""The grading service's database layer: models, sessions, migrations, idempotent writes, queries.

Modules (one concept each): `base` (declarative base, naming convention, UTC timestamps), `users`,
`submissions`, `compiled` (compiled test points, between compile and judge), `outbox` (messages
to send, written in the transaction they follow from), `locks` (leases: one sweeper at a time),
`traces` (each graded point's compressed trace, for the timeline pictures), `reuse` (results any
identical kernel may copy), `results` (per test point
rows; `record_result`, `claim_attempt`), `status` (derived submission status), `totals`
(`finalize_submission`), `pending` (sweeper query), `queue` (what the fair scheduler chooses from),
`rejudge` (reset for a rejudge), `leaderboard`, `messages` (clarifications, announcements, read marks),
`session` (engines, `session_scope`), `migrate` (Alembic, programmatic), `models` (all metadata).

The database URL is always passed in by the caller. The service's default is
`$KDT_GRADE_DATABASE_URL`, else `sqlite:///<$KDT_GRADE_DATA_DIR>/kdt-grade.sqlite3`; PostgreSQL
(`postgresql://...`) is supported as well.

Every function returns plain data (dicts, ints, enums), never ORM objects, so results can cross
process boundaries (Celery tasks get ids and re-fetch).
"""
from db.compiled import compiled_of_source, compiled_points, delete_compiled, get_compiled, store_compiled
from db.leaderboard import all_submissions, best_submissions, leaderboard
from db.locks import acquire_lease, live_leases, release_lease
from db.outbox import add_outbox, delete_outbox, list_outbox, note_outbox_failure, outbox_key, outbox_keys
from db.pending import pending_points, running_points, unscored_complete
from db.queue import ready_points, running_rows, spent_seconds, user_activity
from db.rejudge import reset_submission, start_rejudge, submission_ids
from db.results import VERDICTS, beat, claim_attempt, get_result, list_results, record_result
from db.session import make_engine, make_session_factory, resolve_url, session_scope
from db.status import SubmissionStatus, submission_status, verdict_counts
from db.submissions import create_submission, get_submission, is_fresh
from db.totals import finalize_submission
from db.traces import delete_traces, get_trace, get_traces, store_trace, traced_points
from db.users import get_or_create_user, get_user

__all__ = [
    "VERDICTS",
    "acquire_lease",
    "add_outbox",
    "beat",
    "best_submissions",
    "delete_outbox",
    "list_outbox",
    "live_leases",
    "note_outbox_failure",
    "outbox_key",
    "outbox_keys",
    "release_lease",
    "start_rejudge",
    "running_points",
    "unscored_complete",
    "SubmissionStatus",
    "all_submissions",
    "claim_attempt",
    "compiled_of_source",
    "compiled_points",
    "create_submission",
    "delete_compiled",
    "delete_traces",
    "finalize_submission",
    "get_compiled",
    "get_or_create_user",
    "get_result",
    "get_submission",
    "get_trace",
    "get_traces",
    "get_user",
    "is_fresh",
    "leaderboard",
    "list_results",
    "make_engine",
    "make_session_factory",
    "pending_points",
    "record_result",
    "ready_points",
    "reset_submission",
    "running_rows",
    "spent_seconds",
    "user_activity",
    "resolve_url",
    "session_scope",
    "store_compiled",
    "store_trace",
    "submission_ids",
    "submission_status",
    "verdict_counts",
    "traced_points",
]
