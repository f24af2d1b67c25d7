"""Accounts and contest rules: users' display name, token hash, disabled and admin flags; contest_settings.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:  # SQLite: copy-and-move for the unique constraint
        batch.add_column(sa.Column("display_name", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("token_hash", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("disabled", sa.Boolean(), server_default=sa.false(), nullable=False))
        batch.add_column(sa.Column("is_admin", sa.Boolean(), server_default=sa.false(), nullable=False))
        batch.create_unique_constraint(op.f("uq_users_token_hash"), ["token_hash"])
    op.create_table(
        "contest_settings",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("starts_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ends_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("freeze_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("unfrozen", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("min_interval_seconds", sa.Float(), nullable=True),
        sa.Column("max_per_hour", sa.Integer(), nullable=True),
        sa.Column("max_pending", sa.Integer(), nullable=True),
        sa.Column("updated", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("id = 1", name=op.f("ck_contest_settings_single_row")),
        sa.CheckConstraint("min_interval_seconds >= 0", name=op.f("ck_contest_settings_min_interval_nonnegative")),
        sa.CheckConstraint("max_per_hour >= 1", name=op.f("ck_contest_settings_max_per_hour_positive")),
        sa.CheckConstraint("max_pending >= 1", name=op.f("ck_contest_settings_max_pending_positive")),
        sa.CheckConstraint("ends_at > starts_at", name=op.f("ck_contest_settings_window_order")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_contest_settings")),
    )


def downgrade() -> None:
    op.drop_table("contest_settings")
    with op.batch_alter_table("users") as batch:
        batch.drop_constraint(op.f("uq_users_token_hash"), type_="unique")
        batch.drop_column("is_admin")
        batch.drop_column("disabled")
        batch.drop_column("token_hash")
        batch.drop_column("display_name")
