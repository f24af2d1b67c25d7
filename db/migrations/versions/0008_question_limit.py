"""Contest rule: how many clarification requests a user may make in any hour (``max_questions_per_hour``).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("contest_settings") as batch:  # SQLite: copy-and-move for the check constraint
        batch.add_column(sa.Column("max_questions_per_hour", sa.Integer(), nullable=True))
        batch.create_check_constraint(op.f("ck_contest_settings_max_questions_per_hour_positive"),
                                      "max_questions_per_hour >= 1")


def downgrade() -> None:
    with op.batch_alter_table("contest_settings") as batch:
        batch.drop_constraint(op.f("ck_contest_settings_max_questions_per_hour_positive"), type_="check")
        batch.drop_column("max_questions_per_hour")
