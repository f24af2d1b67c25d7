"""The JSON documents of the API as pydantic models (they are the schemas of ``/api/v1/openapi.json``).

Times are ISO 8601 strings with an offset (UTC). The status document is ``Service.status`` (what
``kdt-grade status --json`` prints); the list rows are ``db.all_submissions`` rows; the leaderboard rows
are ``db.leaderboard`` rows.
"""
from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field


class Accepted(BaseModel):
    """202 answer to an upload: the submission is stored and queued."""

    id: int
    status: str = Field(description="always `queued` here; follow `url` for the results")
    url: str


class Point(BaseModel):
    task: int
    point: int
    state: str = Field(description="queued, running or done")
    verdict: str | None
    cycles: int | None
    score: float | None
    utilisation: float | None = Field(description="MXM utilisation (0..1) of tasks 2-4")
    message: str
    attempts: int
    worker: str | None = Field(description="who graded the point (organisers only; null for contestants)")
    started_at: str | None
    finished_at: str | None
    wall_seconds: float | None


class TaskScore(BaseModel):
    name: str
    weight: float
    score: float | None


class Status(BaseModel):
    """One submission: per test point verdict, cycles, score, message, utilisation; per task and total."""

    id: int
    user: str
    file_name: str
    sha256: str
    created: str
    status: str = Field(description="queued, running, done or failed (a fault of the judge)")
    points: list[Point]
    tasks: dict[int, TaskScore]
    total: float | None


class SubmissionRow(BaseModel):
    submission_id: int
    user_id: int
    user_name: str
    file_name: str
    sha256: str
    created: str
    status: str
    task1: float | None
    task2: float | None
    task3: float | None
    task4: float | None
    total: float | None


class LeaderboardRow(BaseModel):
    rank: int
    user_id: int
    user_name: str
    display_name: str | None
    submission_id: int
    created: str
    task1: float | None
    task2: float | None
    task3: float | None
    task4: float | None
    total: float | None


class TaskInfo(BaseModel):
    name: str
    weight: float


class Leaderboard(BaseModel):
    """Each user's best submission, best first; while frozen, only submissions made before the freeze."""

    frozen: bool
    freeze_at: str | None
    tasks: dict[str, TaskInfo]
    rows: list[LeaderboardRow]


class Limits(BaseModel):
    min_interval_seconds: float | None
    max_per_hour: int | None
    max_pending: int | None
    max_bytes: int


class Allowance(BaseModel):
    """What the caller may do right now."""

    can_submit: bool
    reason: str | None
    retry_after: int | None
    pending: int
    submitted_last_hour: int
    remaining_this_hour: int | None


class GraderVersion(BaseModel):
    version: str
    code_sha256: str = Field(description="SHA-256 of kdt/ and judger/ (`kdt-grade version` prints yours)")


class Contest(BaseModel):
    name: str | None
    starts_at: str | None
    ends_at: str | None
    freeze_at: str | None
    frozen: bool
    limits: Limits
    user: str | None = Field(description="the caller (with a token)")
    allowance: Allowance | None = Field(description="the caller's remaining allowance (with a token)")
    server_time: str
    grader: GraderVersion


class Rules(BaseModel):
    """The contest rules as stored."""

    name: str | None
    starts_at: str | None
    ends_at: str | None
    freeze_at: str | None
    unfrozen: bool
    min_interval_seconds: float | None
    max_per_hour: int | None
    max_pending: int | None


class RulesChange(BaseModel):
    """Rules to change; a field left out stays, a field set to null is cleared (no limit). Unknown fields
    and non-finite numbers are refused (422); ranges are checked by ``grader.contest.set_rules`` (400)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str | None = Field(None, max_length=200)
    starts_at: AwareDatetime | None = None
    ends_at: AwareDatetime | None = None
    freeze_at: AwareDatetime | None = None
    min_interval_seconds: float | None = Field(None, ge=0)
    max_per_hour: int | None = Field(None, ge=1)
    max_pending: int | None = Field(None, ge=1)


class RejudgeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ids: list[Annotated[int, Field(ge=1, le=2**62)]] = Field(default_factory=list, max_length=100_000)
    user: str | None = None
    all: bool = False


class Rejudged(BaseModel):
    ids: list[int]
