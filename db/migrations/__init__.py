"""Alembic migrations of the `db` package (a package so that regular installs ship them)."""
