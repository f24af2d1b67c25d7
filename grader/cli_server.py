"""``kdt-grade serve``: the contest server (``grader.web``) on uvicorn."""
import click


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: all).")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="TCP port.")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
def serve(host: str, port: int, log_level: str) -> None:
    """Serve the JSON API (/api/v1, OpenAPI at /api/v1/openapi.json) over the same database and grading.

    Without KDT_GRADE_BROKER_URL it grades in its own process pool (the embedded mode: one command runs a
    whole contest on one machine); with it, submissions go to the Celery workers (`kdt-grade worker`).
    Accepting a submission never waits for its grading."""
    from .config import load_settings
    from .web.server import serve as run

    run(load_settings(), host=host, port=port, log_level=log_level)
