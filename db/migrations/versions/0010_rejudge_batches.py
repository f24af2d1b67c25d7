"""Rejudges of a set of submissions asked for on the admin page, with each one's total before the rejudge
(``db.rejudge_batches``).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "rejudge_batches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("requested_by", sa.Integer(), nullable=True),
        sa.Column("description", sa.String(length=500), nullable=False),
        sa.ForeignKeyConstraint(["requested_by"], ["users.id"], name=op.f("fk_rejudge_batches_requested_by_users"),
                                ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rejudge_batches")),
    )
    op.create_table(
        "rejudge_batch_items",
        sa.Column("batch_id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("total_before", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["batch_id"], ["rejudge_batches.id"],
                                name=op.f("fk_rejudge_batch_items_batch_id_rejudge_batches"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"],
                                name=op.f("fk_rejudge_batch_items_submission_id_submissions"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("batch_id", "submission_id", name=op.f("pk_rejudge_batch_items")),
    )


def downgrade() -> None:
    op.drop_table("rejudge_batch_items")
    op.drop_table("rejudge_batches")
