"""Alembic revisions, one module per revision, applied in `down_revision` order."""
