"""Showing service URLs without their passwords (CLI output, ``admin doctor``)."""


def safe_url(url: str | None) -> str:
    """``url`` with any password masked; only the scheme if it does not parse as a URL."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy parses
        return (url or "").split(":", 1)[0] + "://..."
