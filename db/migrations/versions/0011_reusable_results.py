"""Reusable results (``db.reuse``): the store of results keyed by compiled kernel, point and judge version;
each result row says whether it was copied from it; a rejudge may ask for a fresh generation.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "reusable_results",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("judge_version", sa.String(length=64), nullable=False),
        sa.Column("task", sa.Integer(), nullable=False),
        sa.Column("point", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.String(length=3), nullable=False),
        sa.Column("cycles", sa.BigInteger(), nullable=True),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("utilisation", sa.Float(), nullable=True),
        sa.Column("simulate_seconds", sa.Float(), nullable=False),
        sa.Column("trace", sa.LargeBinary(), nullable=True),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_reusable_results")),
    )
    op.create_index(op.f("ix_reusable_results_judge_version"), "reusable_results", ["judge_version"])
    with op.batch_alter_table("test_point_results") as batch:
        batch.add_column(sa.Column("reused", sa.Boolean(), server_default=sa.false(), nullable=False))
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("fresh_generation", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("fresh_generation")
    with op.batch_alter_table("test_point_results") as batch:
        batch.drop_column("reused")
    op.drop_index(op.f("ix_reusable_results_judge_version"), table_name="reusable_results")
    op.drop_table("reusable_results")
