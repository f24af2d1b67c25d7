"""Every model of the `db` package, imported in one place so that `metadata` describes the whole schema.

Alembic's `env.py` and the tests use `metadata`; application code imports the models from their own
modules.
"""
from db.base import Base
from db.compiled import CompiledPoint
from db.contest import ContestSettings
from db.locks import Lease
from db.messages import Announcement, Clarification, MessageMark
from db.outbox import OutboxRow
from db.rejudge_batches import RejudgeBatch, RejudgeBatchItem
from db.results import TestPointResult
from db.reuse import ReusableResult
from db.submissions import Submission
from db.traces import PointTrace
from db.users import User
from db.web_sessions import WebSession

metadata = Base.metadata

__all__ = ["Announcement", "Base", "Clarification", "CompiledPoint", "ContestSettings", "Lease", "MessageMark", "OutboxRow", "PointTrace",
           "RejudgeBatch", "RejudgeBatchItem", "ReusableResult", "Submission",
           "TestPointResult", "User", "WebSession", "metadata"]
