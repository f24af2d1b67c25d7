"""Running the app on uvicorn (``kdt-grade serve``), with the service's own logger next to uvicorn's.

One grading process and ``http_workers`` HTTP processes. This process binds the listening sockets, grades
(its scheduler, ``grader.service.scheduling.scheduler_for(..., server=True)``, and a
``grader.runtime.relay.RelayListener`` for the ids the HTTP processes accept; in broker mode the
background loop of the outbox and the sweeper instead) and supervises the HTTP processes
(``supervisor.HttpProcesses``: forked from the fork server, which imported the app once, each running
uvicorn over ``grader.web.app.create_http_app`` on a socket of its own, a dead one replaced). Requests
never share a Python interpreter lock with grading, and several HTTP processes use several cores: a burst
of uploads is parsed and stored in parallel. SIGINT/SIGTERM stop the HTTP processes (their requests
finish first), then grading (what was running is graded again at the next start).

uvicorn's access log shows the client, the request line and the status; tokens travel only in the
``Authorization`` header, which is never logged. Query strings are not logged either, nor token-shaped path
segments (``QueryRedacted``): a client that puts its token there by mistake must not leave it in the log. Proxy headers count only
from ``Settings.trusted_proxies`` (``run_http_process``).
"""
from __future__ import annotations

import copy
import functools
import logging
import logging.config
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path
from urllib.parse import unquote

import uvicorn
from setproctitle import setproctitle
from uvicorn.config import LOGGING_CONFIG

from grader.config import Settings
from grader.runtime.pool import exit_with, start_forkserver
from grader.runtime.relay import RELAY_ENV, RelayListener
from grader.service import Service
from grader.service.accounts import TOKEN_PREFIX
from grader.service.scheduling import scheduler_for
from grader.web.http.connections import header_timeout_protocol

from .supervisor import HttpProcesses, listening_sockets, port_lock

log = logging.getLogger("kdt_grade.web.server")
READY_LINE = "serving on"
RUN_DIR_PREFIX = "kdt-grade-serve-"


TOKEN_SHAPED = re.compile(re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_-]{8,}")


class QueryRedacted(logging.Filter):
    """Replaces the query string of an access-log record's path with ``?…``, and anything shaped like a
    token in the path (``kdt_`` and 8 or more URL-safe characters, e.g. pasted into the address bar) with
    ``kdt_…`` (uvicorn passes ``(client, method, path, http_version, status)`` as the record's arguments)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            path = args[2].split("?", 1)[0] + "?…" if "?" in args[2] else args[2]
            if TOKEN_SHAPED.search(unquote(path)):  # %-encoded too (`kdt%5F...`): the decoded path, redacted
                path = TOKEN_SHAPED.sub(TOKEN_PREFIX + "…", unquote(path))
            record.args = (*args[:2], path, *args[3:])
        return True


def log_config(level: str = "INFO") -> dict:
    """uvicorn's logging configuration plus the ``kdt_grade`` loggers on its default handler, and the
    access log without query strings."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["kdt_grade"] = {"handlers": ["default"], "level": level.upper(), "propagate": False}
    config.setdefault("filters", {})["query_redacted"] = {"()": QueryRedacted}
    config["handlers"]["access"]["filters"] = ["query_redacted"]
    return config


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info",
          http_workers: int | None = None) -> None:
    """Serve until interrupted (SIGINT/SIGTERM end it cleanly): this process grades, ``http_workers``
    (default ``settings.http_workers``) HTTP processes answer (see the module docstring).

    First the sandbox self-check (``grader.service.doctor.self_check``: a known-good kernel through the real
    sandbox with the configured limits): the server refuses to start, with ``SelfCheckFailed``'s message,
    rather than give every contestant a judge fault. The HTTP processes read the same ``KDT_GRADE_*``
    environment as this one, so ``settings`` must be ``load_settings()`` of it. Raises ``OSError`` when the
    address cannot be bound, ``HttpProcessesFailed`` when the HTTP processes cannot start."""
    from grader.service.doctor import self_check

    sockets = listening_sockets(host, port, http_workers or settings.http_workers)  # first: a taken port fails at once
    try:
        lock = port_lock(sockets[0].getsockname()[1])  # held until this process ends
        # The HTTP processes (and the grading pool's) are forked from a fork server that imports the
        # app once, in parallel with the self-check, instead of once per HTTP process. Not the simulator:
        # the app does not need torch, whose import would hold the HTTP processes back; the grading
        # pool's processes import it when they start (``prepare_grading_process``).
        start_forkserver(["grader.web.app"])
        self_check(settings)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    logging.config.dictConfig(log_config(log_level))
    service = Service(settings)
    service.factory  # noqa: B018  (the schema, created or upgraded once, before any HTTP process starts)
    service.scheduler = scheduler_for(service, server=True)
    # A private directory (0700) for the relay socket: only this user's processes can reach it.
    _remove_stale_run_dirs()
    with tempfile.TemporaryDirectory(prefix=f"{RUN_DIR_PREFIX}{os.getpid()}-") as run_dir:
        url = f"http://{f'[{host}]' if ':' in host else host}:{sockets[0].getsockname()[1]}"
        listener = RelayListener(service.scheduler, str(Path(run_dir) / "relay.sock"), _ReadyLog(url, len(sockets)))
        loops = None
        try:
            service.scheduler.start()
            listener.start()
            loops = service.start_background(sweep=True) if not settings.embedded else None
            log.info("starting %d HTTP process(es) on %s", len(sockets), url)
            HttpProcesses(functools.partial(run_http_process, log_level, os.getpid(), listener.path,
                                            settings.trusted_proxies, settings.http_header_timeout_seconds,
                                            settings.http_body_timeout_seconds, settings.http_max_connections),
                            sockets).run()
        finally:
            for sock in sockets:
                sock.close()
            if loops is not None:
                loops.stop()
            listener.close()
            service.close()
            os.close(lock)


def _remove_stale_run_dirs() -> None:
    """Remove the relay directories (``RUN_DIR_PREFIX<pid>-*`` in the temporary directory) of servers of
    this user that are gone without cleaning up (killed)."""
    for path in Path(tempfile.gettempdir()).glob(f"{RUN_DIR_PREFIX}*-*"):
        pid = path.name[len(RUN_DIR_PREFIX):].split("-", 1)[0]
        try:
            if not pid.isdigit() or path.stat().st_uid != os.geteuid() or Path(f"/proc/{pid}").exists():
                continue
            shutil.rmtree(path)
        except OSError:
            continue


class _ReadyLog:
    """``RelayListener``'s ``on_ready``: logs each HTTP process that has started, and ``READY_LINE`` once
    all of them have (organisers and tests wait for that line)."""

    def __init__(self, url: str, count: int):
        self.url, self.count, self.ready = url, count, set()

    def __call__(self, pid: int) -> None:
        self.ready.add(pid)
        if len(self.ready) == self.count:
            log.info("%s %s with %d HTTP process(es) (Ctrl-C to stop)", READY_LINE, self.url, self.count)
        elif len(self.ready) > self.count:
            log.info("HTTP process %d started (a replacement)", pid)


def run_http_process(log_level: str, parent: int, relay: str, trusted_proxies: str, header_timeout: float,
                     write_stall_timeout: float, max_connections: int, sock: socket.socket) -> None:
    """One HTTP process (forked from the fork server by ``HttpProcesses``): uvicorn serving
    ``app.create_http_app`` on ``sock``, relaying accepted ids to the socket ``relay``, until SIGINT/SIGTERM
    or until the grading process ``parent`` is gone (killed: this process must not go on accepting
    uploads that nobody grades).

    ``trusted_proxies`` (``Settings.trusted_proxies``: addresses or networks, comma-separated; empty: none)
    are the peers whose ``X-Forwarded-Proto`` and ``X-Forwarded-For`` uvicorn believes: behind a TLS
    proxy the request's scheme is then ``https`` and the session cookie gets its Secure flag. From any
    other peer the headers are ignored (anyone can send them). A connection whose request headers take
    over ``header_timeout`` seconds is closed (``grader.web.http.connections``), one whose client takes
    nothing of an answer for ``write_stall_timeout`` seconds (``Settings.http_body_timeout_seconds``: the
    same patience as for a request body) is aborted; past ``max_connections`` at once uvicorn answers 503."""
    exit_with(parent)
    setproctitle(f"kdt-grade serve: HTTP process on port {sock.getsockname()[1]}")  # for ps and top
    os.environ[RELAY_ENV] = relay  # the fork server's environment is the one it started with
    config = uvicorn.Config("grader.web.app:create_http_app", factory=True, log_level=log_level,
                            log_config=log_config(log_level), server_header=False,
                            proxy_headers=bool(trusted_proxies), forwarded_allow_ips=trusted_proxies or None,
                            http=header_timeout_protocol(header_timeout, write_stall_timeout),
                            limit_concurrency=max_connections)
    uvicorn.Server(config).run(sockets=[sock])
