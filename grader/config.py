"""Service configuration from environment variables, validated by pydantic.

Every setting is a field of ``Settings``: the variable is ``KDT_GRADE_`` + the field's name in upper case,
and the field's ``description`` says what it means. The README's configuration table is generated from
them (``settings_table``; ``python -m grader.config --readme README.md`` rewrites it, and
``tests/test_settings_table.py`` keeps the two in step). ``SandboxLimits`` are the limits of one
sandboxed run (``grader.judging.sandbox``), made from the ``compile_*`` settings.
"""
from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "KDT_GRADE_"


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one sandboxed run.

    Per process (rlimits): ``cpu_seconds`` (RLIMIT_CPU, SIGXCPU), ``memory_bytes`` (RLIMIT_AS: address
    space), ``file_bytes`` (RLIMIT_FSIZE), ``open_files``, ``processes`` (RLIMIT_NPROC, per user id).
    For the whole run when contained (its cgroup): ``memory_bytes`` (resident memory of all its
    processes, tmpfs pages included; no swap), ``processes`` (``pids.max``: processes and threads),
    ``cpu_seconds`` + 1 (the CPU time of all processes together), ``cpus`` (CPU bandwidth, in CPUs),
    ``disk_bytes`` and ``inodes`` (the work directory's tmpfs: everything the child can write).
    Enforced by the sandbox itself: ``wall_seconds``, ``output_bytes`` (stdout + stderr kept; more kills
    the child), ``result_bytes`` (the result pipe). ``nice``: CPU niceness added (a compile must not slow
    a server on the same machine). ``allow_uncontained``: as root without PID namespaces and cgroups,
    run anyway with per-process limits only (``KDT_GRADE_ALLOW_UNCONTAINED``; otherwise such a run is
    ``unavailable``). ``warm``: a contained compile forks from the judge process's warm template
    (``grader.judging.warm``: the imports done once) instead of starting a fresh interpreter."""

    cpu_seconds: int = 10
    wall_seconds: float = 30.0
    memory_bytes: int = 2 * 1024 ** 3
    file_bytes: int = 16 * 1024 ** 2
    open_files: int = 256
    processes: int = 512
    output_bytes: int = 1024 ** 2
    result_bytes: int = 64 * 1024 ** 2
    nice: int = 0
    disk_bytes: int = 32 * 1024 ** 2
    inodes: int = 1024
    cpus: float = 1.0
    allow_uncontained: bool = False
    warm: bool = True


def _shown(text: str) -> dict:
    """A field's default as the README shows it, where the value itself would not say it."""
    return {"json_schema_extra": {"shown_default": text}}


class Settings(BaseSettings):
    """All settings of one service process (``KDT_GRADE_<NAME>``; each field's description says what it
    means)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    data_dir: Path = Field(Path("var"), description="stored submissions and the SQLite database",
                           **_shown("`./var`"))
    database_url: str | None = Field(None, description="or `postgresql://...`",
                                     **_shown("`sqlite:///<data dir>/kdt-grade.sqlite3`"))
    broker_url: str | None = Field(None, description="`redis://host:6379/0` sends work to Celery workers",
                                   **_shown("none: embedded mode"))
    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1,
                         description="processes of the embedded mode's pool", **_shown("CPU count"))
    submission_max_bytes: int = Field(1024 * 1024, gt=0, description="intake size limit")
    compile_cpu_seconds: int = Field(10, gt=0, description="CPU seconds of the sandboxed compile child (all its "
                                                           "processes together)")
    compile_wall_seconds: float = Field(60.0, gt=0, description="its wall-clock limit")
    compile_memory_mb: int = Field(2048, ge=256, description="its memory limit (all its processes together)")
    sim_timeout_seconds: float = Field(20.0, gt=0, description="per launch, in CPU seconds of the grading process "
                                                               "(`TLE`): a busy machine does not make it shorter")
    sim_backstop_seconds: float = Field(120.0, gt=0, description="per launch, in wall-clock seconds: a launch "
                                                                 "that has not used its CPU time by then ends "
                                                                 "as `IE` (the machine is overloaded) and is "
                                                                 "graded again")
    sim_budget_seconds: float = Field(100.0, ge=0, description="per submission: once its finished points took "
                                                               "this many seconds of simulation, the rest are "
                                                               "`TLE` unsimulated (0: no budget)")
    reuse_results: bool = Field(True, description="1: a test point whose compiled kernel this judge version "
                                                  "already simulated takes that stored result (marked "
                                                  "reused) and an identical file's compile is copied; 0: "
                                                  "simulate everything (fresh results are stored either way)")
    grade_memory_mb: int = Field(4096, ge=512, description="per grading process (`MLE`)")
    grade_nice: int = Field(10, ge=0, le=19, description="CPU niceness of the pool's grading processes and the "
                                                          "compile children: a server on the same machine keeps "
                                                          "answering")
    max_attempts: int = Field(3, ge=1, description="a point whose worker died this often ends as `IE`")
    stuck_after_seconds: int = Field(900, gt=0, description="`admin sweep` without `--older-than`: the silence "
                                                            "that counts as stuck")
    heartbeat_seconds: float = Field(5.0, gt=0, description="a worker judging a point writes its heartbeat "
                                                            "this often")
    heartbeat_stale_seconds: float = Field(30.0, gt=0, description="a heartbeat older than this means its "
                                                                   "worker is gone")
    sweep_interval_seconds: float = Field(15.0, gt=0, description="how often the automatic sweeper runs (one at "
                                                                  "a time: a database lease)")
    dispatch_interval_seconds: float = Field(2.0, gt=0, description="how often unsent outbox rows are sent again")
    transient_retry_seconds: float = Field(600.0, gt=0, description="how long a task retries an unreachable "
                                                                    "database before giving the task back")
    compile_warm: bool = Field(True, description="1: a contained compile is forked from a warm template that "
                                                 "imported numpy, torch, kdt and the judger once (0: a fresh "
                                                 "interpreter per compile; the sandbox is the same)")
    allow_uncontained: bool = Field(False, description="1: a root judge on a host without PID namespaces or "
                                                       "cgroups grades anyway, with per-process limits only "
                                                       "(unsafe; logged, shown by `doctor`)")
    http_workers: int = Field(2, ge=1, le=64, description="HTTP processes of `kdt-grade serve` "
                                                          "(`--http-workers`)")
    # The contest server's HTTP limits (grader.web.http.limits), enforced before authentication.
    http_max_body_bytes: int = Field(2 * 1024 * 1024, ge=1024,
                                     description="`serve`: the largest request body of every route but the "
                                                 "upload (which has the intake's limit); larger is 413 before "
                                                 "authentication and before the body is read")
    http_contestant_max_body_bytes: int = Field(
        64 * 1024, ge=1024, description="`serve`: the largest JSON body a contestant's token may send to the API "
                                        "(a question is at most 2000 characters); larger is 413 before it is read")
    http_body_timeout_seconds: float = Field(30.0, gt=0, description="`serve`: a request body must arrive within "
                                                                     "this many seconds ...")
    http_body_min_bytes_per_second: int = Field(8192, gt=0, description="... plus 1 s per this many bytes "
                                                                        "received, else 408 and the connection "
                                                                        "is closed")
    http_form_max_body_bytes: int = Field(64 * 1024, ge=1024, description="`serve`: the largest body of a page "
                                                                         "form (every route outside /api/v1/ "
                                                                         "but the upload), which must declare "
                                                                         "its length (else 411); larger is 413 "
                                                                         "before it is read")
    http_form_max_fields: int = Field(16, ge=1, description="`serve`: fields of a page form (login, admin "
                                                            "buttons; no files), else 400")
    http_form_max_field_bytes: int = Field(16 * 1024, ge=256, description="`serve`: bytes of one such field, "
                                                                          "else 400")
    http_header_timeout_seconds: float = Field(10.0, gt=0, description="`serve`: a request's headers must "
                                                                       "arrive within this, else the connection "
                                                                       "is closed (before authentication)")
    http_max_connections: int = Field(1000, ge=10, description="`serve`: connections of one HTTP process at "
                                                               "once; more get 503")
    trusted_proxies: str = Field("", description="`serve`: addresses or networks (comma-separated, `*` for any) "
                                                 "of the TLS proxies in front; only from them `X-Forwarded-Proto` "
                                                 "/ `-For` count (the session cookie's Secure flag, the log's "
                                                 "client address)", **_shown("none"))

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, value: str) -> str:
        """Every entry must be an IP address, a network (``10.0.0.0/8``) or ``*``: uvicorn would take a
        misspelt one as a literal that never matches, and the Secure flag would silently stay off."""
        entries = [entry.strip() for entry in value.split(",") if entry.strip()]
        for entry in entries:
            if entry == "*":
                continue
            try:
                ipaddress.ip_network(entry, strict=False) if "/" in entry else ipaddress.ip_address(entry)
            except ValueError:
                raise ValueError(f"KDT_GRADE_TRUSTED_PROXIES: {entry!r} is not an IP address or network "
                                 "(e.g. 127.0.0.1, 10.0.0.0/8, or * for any)") from None
        return ",".join(entries)

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
        """The limits of a sandboxed compile run (``KDT_GRADE_COMPILE_*``, ``GRADE_NICE``,
        ``ALLOW_UNCONTAINED``)."""
        if self.allow_uncontained:
            logging.getLogger(__name__).warning(
                "KDT_GRADE_ALLOW_UNCONTAINED is set: where this host cannot contain sandboxed runs (PID "
                "namespace, cgroup), submissions run with per-process limits only")
        return SandboxLimits(cpu_seconds=self.compile_cpu_seconds, wall_seconds=self.compile_wall_seconds,
                             memory_bytes=self.compile_memory_mb * 2**20, nice=self.grade_nice,
                             allow_uncontained=self.allow_uncontained, warm=self.compile_warm)


def load_settings(**overrides) -> Settings:
    """Settings from the environment, with keyword overrides (CLI options, tests)."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})


# ---- the README's configuration table -------------------------------------------------------------

TABLE_START = "<!-- settings table: generated from grader/config.py (python -m grader.config --readme README.md) -->"
TABLE_END = "<!-- end of the settings table -->"


def settings_table() -> str:
    """The markdown table of every setting: variable, default, meaning (one row per ``Settings`` field)."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        extra = field.json_schema_extra or {}
        default = extra.get("shown_default") or _default_text(field.default)
        rows.append(f"| `{ENV_PREFIX}{name.upper()}` | {default} | {field.description} |")
    return "\n".join(rows)


def _default_text(value) -> str:
    """A default as it is written in the environment (``1``/``0`` for booleans, ``60`` for ``60.0``)."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def with_settings_table(text: str) -> str:
    """``text`` (the README) with the block between ``TABLE_START`` and ``TABLE_END`` replaced by
    ``settings_table()``. Raises ``ValueError`` when the markers are missing."""
    pattern = re.compile(re.escape(TABLE_START) + r".*?" + re.escape(TABLE_END), re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"no settings table between {TABLE_START!r} and {TABLE_END!r}")
    return pattern.sub(lambda _m: f"{TABLE_START}\n{settings_table()}\n{TABLE_END}", text, count=1)


def main(argv: list[str] | None = None) -> None:
    """``python -m grader.config``: print the settings table, or (``--readme FILE``) rewrite it in FILE."""
    parser = argparse.ArgumentParser(prog="python -m grader.config", description=main.__doc__)
    parser.add_argument("--readme", type=Path, help="rewrite the table between the markers in this file")
    args = parser.parse_args(argv)
    if args.readme is None:
        print(settings_table())
        return
    args.readme.write_text(with_settings_table(args.readme.read_text()))


if __name__ == "__main__":
    main()
