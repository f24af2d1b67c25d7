"""``kdt-grade serve``: the contest server (``grader.web``) on uvicorn."""
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
    from .config import load_settings
    from .doctor import SelfCheckFailed
    from .web.server import serve as run
    from .web.supervisor import HttpProcessesFailed

    try:
        run(load_settings(), host=host, port=port, log_level=log_level, http_workers=http_workers)
    except SelfCheckFailed as exc:
        raise click.ClickException(f"refusing to start the server: {exc}") from None
    except HttpProcessesFailed as exc:
        raise click.ClickException(f"the server stopped: {exc}") from None
    except OSError as exc:  # the address: in use (another server?), or not an address of this machine
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        raise click.ClickException(f"cannot listen on {where}: {exc.strerror or exc}") from None
