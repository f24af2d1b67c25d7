"""Contest rule: a freeze an organiser started by hand (``frozen_since``), kept apart from the scheduled
``freeze_at`` so that freezing now and unfreezing again leaves the scheduled freeze in place.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("contest_settings") as batch:
        batch.add_column(sa.Column("frozen_since", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("contest_settings") as batch:
        batch.drop_column("frozen_since")
