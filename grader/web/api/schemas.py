"""The JSON documents of the API as pydantic models (they are the schemas of ``/api/v1/openapi.json``).

Times are ISO 8601 strings with an offset (UTC). The status document is ``Service.status`` (what
``kdt-grade status --json`` prints); the list rows are ``db.all_submissions`` rows; the leaderboard rows
are ``db.leaderboard`` rows.
"""
from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StrictBool, StrictInt


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
    reused: bool = Field(description="the result was copied from an identical kernel's earlier simulation "
                                     "(same IR, point and judge version), not simulated again")
    cycles_for_100: int = Field(description="the point's threshold: at most this many cycles score 100")
    cycles_for_plus_10: int | None = Field(
        description="the most cycles that score 10 points more than now (100 at most); null unless AC below 100")


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


class ComparedSubmission(BaseModel):
    id: int
    user: str
    file_name: str
    sha256: str
    created: str
    status: str
    total: float | None


class ComparedPoint(BaseModel):
    """One test point of both submissions; every change is B - A (null until both are known)."""

    task: int
    point: int
    verdict_a: str | None = Field(description="null while the point is not graded")
    verdict_b: str | None
    verdict_changed: bool
    cycles_a: int | None
    cycles_b: int | None
    cycles_delta: int | None = Field(description="cycles of B minus cycles of A (negative: B is faster)")
    cycles_ratio: float | None = Field(description="cycles of B / cycles of A, 4 decimals")
    score_a: float | None
    score_b: float | None
    score_delta: float | None = Field(description="score of B minus score of A")
    reused_a: bool = Field(description="A's result was copied from an identical kernel's earlier simulation")
    reused_b: bool
    change: str = Field(description="better or worse (by the score; equal scores of two AC: by the cycles), "
                                    "same, or pending (not both graded)")


class ComparedTask(BaseModel):
    task: int
    name: str
    weight: float
    score_a: float | None
    score_b: float | None
    delta: float | None


class Comparison(BaseModel):
    """Two submissions side by side (`kdt-grade diff A B --json`): per test point, per task and in total."""

    a: ComparedSubmission
    b: ComparedSubmission
    same_file: bool = Field(description="both uploaded the same bytes (equal sha256)")
    points: list[ComparedPoint]
    tasks: list[ComparedTask]
    total_a: float | None
    total_b: float | None
    total_delta: float | None
    counts: dict[str, int] = Field(description="how many test points are better, worse, same, pending")


class SubmissionRow(BaseModel):
    submission_id: int
    user_id: int
    user_name: str
    display_name: str | None = None
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


class ProgressStep(BaseModel):
    """A submission at which a user's best total rose (``grader.service.progress.best_steps``)."""

    at: str = Field(description="the submission's time, ISO 8601 with its offset")
    submission_id: int
    total: float


class ProgressUser(BaseModel):
    rank: int
    user_name: str
    display_name: str | None
    total: float | None = Field(description="the user's total on the leaderboard (the last step's)")
    steps: list[ProgressStep]


class ScoreboardProgress(BaseModel):
    """The leaderboard's top 10 and how their best total rose over contest time; while frozen, only
    submissions made before the freeze count and the time axis ends there."""

    frozen: bool
    freeze_at: str | None
    start: str = Field(description="the time axis' start: the contest's, else the first step's")
    end: str = Field(description="the time axis' end: the freeze in force, else now (the contest's end once past)")
    users: list[ProgressUser]


class OwnSubmissionScore(BaseModel):
    submission_id: int
    created: str
    task1: float | None = Field(description="points of task 1 (at most its weight); null: not scored")
    task2: float | None
    task3: float | None
    task4: float | None
    total: float
    best: float = Field(description="the best total up to and including this submission")


class OwnProgress(BaseModel):
    """The caller's scored submissions over time, oldest first (their own results in full, frozen or not)."""

    user: str
    submissions: list[OwnSubmissionScore]


class Limits(BaseModel):
    min_interval_seconds: float | None
    max_per_hour: int | None
    max_pending: int | None
    max_questions_per_hour: int | None
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


class RulesContest(BaseModel):
    """The contest's name, times (ISO 8601) and limits, as the rules tell them."""

    name: str | None
    starts_at: str | None
    ends_at: str | None
    freeze_at: str | None
    frozen: bool
    limits: Limits


class Contest(RulesContest):
    """The contest's times and limits (``RulesContest``) with the caller and the server's time."""

    user: str | None = Field(description="the caller (with a token)")
    allowance: Allowance | None = Field(description="the caller's remaining allowance (with a token)")
    server_time: str
    grader: GraderVersion


class RuleLine(BaseModel):
    key: str = Field(description="the contest setting it tells (`starts_at`, `max_per_hour`, ...)")
    label: str
    text: str = Field(description="its value in words; `no limit` when unset")


class RulesExample(BaseModel):
    """A point with threshold `threshold` run at `cycles` (= `ratio` * threshold) scores `score`."""

    task: int
    point: int
    threshold: int
    cycles: int
    ratio: float
    score: float
    text: str


class RulesPoint(BaseModel):
    index: int
    args: dict[str, int] = Field(description="the point's task_args, e.g. {\"N\": 16384}")
    args_text: str
    threshold: int = Field(description="T in cycles: at most T scores 100")
    cycles_for: dict[str, int] = Field(description="score -> the most cycles that score at least it")


class RulesTolerances(BaseModel):
    """What a trial's output must meet to be correct (`kdt.utils.check_is_allclose`): every element within
    `abs` or `rel`, and the cosine difference at most `cos_diff`."""

    abs: float
    rel: float
    cos_diff: float


class RulesVerdict(BaseModel):
    verdict: str
    description: str
    text: str = Field(description="the verdict and what it means, in one line")


class RulesTask(BaseModel):
    id: int
    name: str
    weight: int
    num_sms: int
    load_store_latency: int
    spm_size: int = Field(description="bytes")
    tolerances: RulesTolerances
    points: list[RulesPoint]


class RulesScoring(BaseModel):
    point: str
    trials: str
    time_limit: str
    correct: str
    task: str
    total: str
    leaderboard: str
    ties: str
    freeze: str
    thresholds: str


class ContestantRules(BaseModel):
    """The rules as a contestant reads them (`grader.service.rules_text.contestant_rules`): the scoring,
    the trials, tolerances, time limit and verdicts, the ranking, every task and test point with its threshold, the contest's times and limits."""

    contest: RulesContest
    lines: list[RuleLine]
    formula: str
    scoring: RulesScoring
    verdicts: list[RulesVerdict]
    score_levels: list[int]
    step: int
    example: RulesExample
    tasks: list[RulesTask]


class Rules(BaseModel):
    """The contest rules as stored."""

    name: str | None
    starts_at: str | None
    ends_at: str | None
    freeze_at: str | None = Field(description="the scheduled freeze (the last hour's)")
    unfrozen: bool = Field(description="the scheduled freeze was lifted")
    frozen_since: str | None = Field(description="the start of a freeze an organiser began by hand, if one is on")
    min_interval_seconds: float | None
    max_per_hour: int | None
    max_pending: int | None
    max_questions_per_hour: int | None


class RulesChange(BaseModel):
    """Rules to change; a field left out stays, a field set to null is cleared (no limit). Unknown fields
    and non-finite numbers are refused (422); ranges are checked by ``grader.service.contest.set_rules`` (400)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str | None = Field(None, max_length=200)
    starts_at: AwareDatetime | None = None
    ends_at: AwareDatetime | None = None
    freeze_at: AwareDatetime | None = None
    min_interval_seconds: float | None = Field(None, ge=0)
    max_per_hour: StrictInt | None = Field(None, ge=1)  # strict: JSON true is not 1
    max_pending: StrictInt | None = Field(None, ge=1)
    max_questions_per_hour: StrictInt | None = Field(None, ge=1)


class RejudgeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ids: list[Annotated[StrictInt, Field(ge=1, le=2**62)]] = Field(default_factory=list, max_length=100_000)
    user: str | None = None
    all: StrictBool = False


class Rejudged(BaseModel):
    ids: list[int]


class RunningPoint(BaseModel):
    """A test point a worker has claimed and not finished (``grader.service.queries.grading_queue``)."""
    submission_id: int
    task: int
    point: int
    attempts: int
    started_at: str | None = Field(description="ISO 8601 with its offset")
    worker: str | None
    age_seconds: float = Field(description="seconds since it was claimed")
    stuck: bool = Field(description="it has run longer than stuck_after")


class GradingQueue(BaseModel):
    """The grading queue now: test points nobody claimed yet, and those running."""
    queued: int
    running: list[RunningPoint]
    stuck_after: float = Field(description="seconds after which a running point counts as stuck "
                                           "(KDT_GRADE_STUCK_AFTER_SECONDS)")


class WorkerSeen(BaseModel):
    """A worker that claimed or finished a test point lately (``grader.service.queries.recent_workers``)."""
    name: str
    last_seen: str = Field(description="ISO 8601 with its offset")
    age_seconds: float
    graded: int = Field(description="test points it finished in the window")
    running: int = Field(description="test points it has claimed and not finished")


class ActivityMinute(BaseModel):
    """One minute of the grading activity (``grader.service.progress.activity_minutes``)."""
    start: str
    end: str
    queue: int = Field(description="test points queued or running at the minute's end")
    graded: int = Field(description="test points finished in [start, end)")
    verdicts: dict[str, int] = Field(description="those points by verdict (every verdict, 0 included)")


class GradingActivity(BaseModel):
    """The last hour, minute by minute: the queue's length, the points graded and their verdicts."""
    start: str
    end: str
    minutes: list[ActivityMinute]
    graded: int
    verdicts: dict[str, int]


# ---- contest communication (grader.service.messages) -----------------------------------------------

class AskRequest(BaseModel):
    """A clarification request. The server checks the text (at most 2000 characters on 30 lines, no control
    characters but newlines and tabs: 400 ``bad_text``) and the task (one of the contest's, or left out for
    a general question: 400 ``bad_task``)."""

    model_config = ConfigDict(extra="forbid")

    text: str
    task: StrictInt | None = Field(None, description="the task the question is about; null or left out: general "
                                                     "(an integer: JSON true is refused, not read as 1)")


class Question(BaseModel):
    """A question as a contestant reads it: their own (``mine``), or another user's published one (then
    in the organisers' wording, and without its author)."""

    id: int
    task: int | None
    text: str
    created: str
    state: str = Field(description="open, answered or ignored")
    answer: str | None
    published: bool = Field(description="the answer is shown to everyone")
    answered_at: str | None
    mine: bool


class OrganiserQuestion(BaseModel):
    """A question as the organisers see it: every field, with the author's and the answerer's names."""

    id: int
    author_id: int
    author: str | None
    task: int | None
    text: str
    created: str
    state: str
    answer: str | None
    public_text: str | None = Field(description="the wording shown to everyone instead of `text`, if any")
    published: bool
    handled_by: int | None
    handled_by_name: str | None
    handled_at: str | None


class AnswerRequest(BaseModel):
    """An answer (at most 4000 characters on 60 lines): to the author only, or to everyone (``publish``),
    then optionally with ``public_text`` shown in place of the author's words."""

    model_config = ConfigDict(extra="forbid")

    text: str
    publish: StrictBool = False
    public_text: str | None = None


class AnnounceRequest(BaseModel):
    """An announcement to everyone (at most 4000 characters on 60 lines); ``pinned`` ones are listed first."""

    model_config = ConfigDict(extra="forbid")

    text: str
    pinned: StrictBool = False


class Announcement(BaseModel):
    id: int
    text: str
    created: str
    pinned: bool
