"""The service layer: the only layer the entry points (the CLI, the web app, the workers) call.

``from grader.service import Service`` is a process's handle on it (``facade``). The modules, one concern
each: ``database`` (sessions, schema), ``intake``, ``compiling``, ``steps`` and ``results`` (the grading
steps), ``next_point`` (which point a free worker judges: fair across users),
``embedded`` (grading in this process), ``scheduling`` (where a committed submission goes), ``rejudge``,
``healing`` (manual sweeps), ``queries`` (status, tables, the admin queue, traces), ``rows`` (rows as
JSON), ``accounts``, ``contest`` (the rules), ``rules_text`` (the rules as a contestant reads them:
scoring, thresholds, limits; the cycles a point needs), ``messages`` (clarifications and announcements),
``visibility`` (who sees what), ``login_sessions`` (the pages' server-side sessions), ``doctor`` (checks
of a deployment).
"""
from grader.errors import ServiceUnavailable

from .database import ensure_schema
from .facade import Service
from .next_point import PointAbandoned

__all__ = ["PointAbandoned", "Service", "ServiceUnavailable", "ensure_schema"]
