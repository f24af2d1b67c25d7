"""Service configuration from environment variables (issue 4, "Configuration"), validated by pydantic.

| variable | default | meaning |
|---|---|---|
| ``KDT_GRADE_DATA_DIR`` | ``./var`` | stored submissions, the SQLite database |
| ``KDT_GRADE_DATABASE_URL`` | ``sqlite:///<data dir>/kdt-grade.sqlite3`` | SQLAlchemy URL (PostgreSQL too) |
| ``KDT_GRADE_BROKER_URL`` | none: embedded mode | ``redis://...`` sends work to Celery workers |
| ``KDT_GRADE_SUBMISSION_MAX_BYTES`` | 1048576 | larger files are refused at intake |
| ``KDT_GRADE_COMPILE_CPU_SECONDS`` | 10 | CPU limit of the sandboxed compile child |
| ``KDT_GRADE_COMPILE_WALL_SECONDS`` | 60 | its wall-clock limit |
| ``KDT_GRADE_COMPILE_MEMORY_MB`` | 2048 | its address-space limit |
| ``KDT_GRADE_SIM_TIMEOUT_SECONDS`` | 20 | wall-clock limit of one simulated launch (``TLE``) |
| ``KDT_GRADE_GRADE_MEMORY_MB`` | 4096 | address-space limit of a grading process (``MLE``) |
| ``KDT_GRADE_GRADE_NICE`` | 10 | CPU niceness added to grading processes and compile children (a server stays responsive) |
| ``KDT_GRADE_MAX_ATTEMPTS`` | 3 | a test point whose worker died this often ends as ``IE`` |
| ``KDT_GRADE_STUCK_AFTER_SECONDS`` | 900 | ``admin sweep`` without ``--older-than``: the silence that counts |
| ``KDT_GRADE_HEARTBEAT_SECONDS`` | 5 | a worker judging a point writes its heartbeat this often |
| ``KDT_GRADE_HEARTBEAT_STALE_SECONDS`` | 30 | a heartbeat older than this means its worker is gone |
| ``KDT_GRADE_SWEEP_INTERVAL_SECONDS`` | 15 | how often the automatic sweeper looks (one at a time, database lock) |
| ``KDT_GRADE_DISPATCH_INTERVAL_SECONDS`` | 2 | how often the outbox dispatcher retries unsent tasks |
| ``KDT_GRADE_TRANSIENT_RETRY_SECONDS`` | 600 | a task retries an unreachable database this long |
| ``KDT_GRADE_WORKERS`` | CPU count | processes of the embedded mode's pool |
| ``KDT_GRADE_HTTP_WORKERS`` | 2 | HTTP processes of ``kdt-grade serve`` (``--http-workers``) |
"""
import os
from functools import cached_property
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from .sandbox import SandboxLimits


class Settings(BaseSettings):
    """All settings of one service process (see the module docstring for the variables)."""

    model_config = SettingsConfigDict(env_prefix="KDT_GRADE_", extra="ignore", frozen=True)

    data_dir: Path = Path("var")
    database_url: str | None = None
    broker_url: str | None = None
    submission_max_bytes: int = Field(1024 * 1024, gt=0)
    compile_cpu_seconds: int = Field(10, gt=0)
    compile_wall_seconds: float = Field(60.0, gt=0)
    compile_memory_mb: int = Field(2048, ge=256)
    sim_timeout_seconds: float = Field(20.0, gt=0)
    grade_memory_mb: int = Field(4096, ge=512)
    grade_nice: int = Field(10, ge=0, le=19)
    max_attempts: int = Field(3, ge=1)
    stuck_after_seconds: int = Field(900, gt=0)
    heartbeat_seconds: float = Field(5.0, gt=0)
    heartbeat_stale_seconds: float = Field(30.0, gt=0)
    sweep_interval_seconds: float = Field(15.0, gt=0)
    dispatch_interval_seconds: float = Field(2.0, gt=0)
    transient_retry_seconds: float = Field(600.0, gt=0)
    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1)
    http_workers: int = Field(2, ge=1, le=64)

    @property
    def db_url(self) -> str:
        """The database URL: ``database_url`` or a SQLite file in the data directory."""
        return self.database_url or f"sqlite:///{(self.data_dir / 'kdt-grade.sqlite3').resolve()}"

    @property
    def embedded(self) -> bool:
        """True when no broker is configured: grading runs in this process's pool."""
        return not self.broker_url

    @cached_property
    def sandbox_limits(self) -> SandboxLimits:
        return SandboxLimits(cpu_seconds=self.compile_cpu_seconds, wall_seconds=self.compile_wall_seconds,
                             memory_bytes=self.compile_memory_mb * 2**20, nice=self.grade_nice)


def load_settings(**overrides) -> Settings:
    """Settings from the environment, with keyword overrides (CLI options, tests)."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
