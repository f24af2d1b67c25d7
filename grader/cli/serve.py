"""The organisers' processes: ``kdt-grade serve`` (the contest server, ``grader.serve``) and ``kdt-grade
worker`` (a Celery worker, ``worker/``). Each starts only after the sandbox self-check passed."""
import os
import sys

import click


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: all).")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="TCP port.")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@click.option("--http-workers", type=click.IntRange(1, 64), default=None,
              help="HTTP processes (default KDT_GRADE_HTTP_WORKERS, 2); grading runs in the main process.")
def serve(host: str, port: int, log_level: str, http_workers: int | None) -> None:
    """Serve the JSON API (/api/v1, OpenAPI at /api/v1/openapi.json) over the same database and grading.

    Without KDT_GRADE_BROKER_URL it grades in its own process pool (the embedded mode: one command runs a
    whole contest on one machine); with it, submissions go to the Celery workers (`kdt-grade worker`).
    Accepting a submission never waits for its grading."""
    from grader.config import load_settings
    from grader.serve.server import serve as run
    from grader.serve.supervisor import HttpProcessesFailed
    from grader.service.doctor import SelfCheckFailed

    try:
        run(load_settings(), host=host, port=port, log_level=log_level, http_workers=http_workers)
    except SelfCheckFailed as exc:
        raise click.ClickException(f"refusing to start the server: {exc}") from None
    except HttpProcessesFailed as exc:
        raise click.ClickException(f"the server stopped: {exc}") from None
    except OSError as exc:  # the address: in use (another server?), or not an address of this machine
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        raise click.ClickException(f"cannot listen on {where}: {exc.strerror or exc}") from None


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.option("--concurrency", "-c", type=int, help="Pool processes (default: KDT_GRADE_WORKERS, the CPU count).")
@click.option("--loglevel", "-l", default="INFO", show_default=True)
@click.pass_context
def worker(ctx: click.Context, concurrency: int | None, loglevel: str) -> None:
    """Start a Celery worker with the project's settings (needs KDT_GRADE_BROKER_URL).

    Further options go to `celery worker` unchanged, e.g. `kdt-grade worker -c 4 -n grader1@%h`."""
    from grader.config import load_settings
    from grader.judging.sandbox import containment
    from grader.service.doctor import SelfCheckFailed, self_check

    from .output import err

    settings = load_settings()
    if settings.embedded:
        raise click.ClickException("KDT_GRADE_BROKER_URL is not set: a worker needs a broker (redis://...); "
                                   "without one, `kdt-grade submit` grades in-process")
    try:
        seconds = self_check(settings)
    except SelfCheckFailed as exc:
        raise click.ClickException(f"refusing to start the worker: {exc}") from None
    err.print(f"sandbox self-check passed ({seconds:.1f} s); {containment().describe()}")
    argv = [sys.executable, "-m", "celery", "-A", "worker.app", "worker", "--pool", "prefork",
            "--concurrency", str(concurrency or settings.workers), "--loglevel", loglevel, *ctx.args]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)
