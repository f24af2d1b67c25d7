"""Self-healing grading: the outbox, heartbeats, generations (rejudge) and leases.

- `outbox`: messages for the broker, written in the transaction they follow from (`db.outbox`).
- `leases`: named locks with an expiry (one sweeper at a time, `db.locks`).
- `test_point_results.heartbeat_at` (liveness) and `.generation`; `submissions.generation` and
  `.scored_generation` (a rejudge keeps the old totals until the new ones land, `db.rejudge`).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "outbox",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("task", sa.Integer(), nullable=True),
        sa.Column("point", sa.Integer(), nullable=True),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"],
                                name=op.f("fk_outbox_submission_id_submissions"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbox")),
        sa.UniqueConstraint("key", name=op.f("uq_outbox_key")),
    )
    op.create_index(op.f("ix_outbox_submission_id"), "outbox", ["submission_id"])
    op.create_table(
        "leases",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("holder", sa.String(length=255), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_leases")),
    )
    op.add_column("test_point_results", sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("test_point_results", sa.Column("generation", sa.Integer(), server_default="0", nullable=False))
    op.add_column("submissions", sa.Column("generation", sa.Integer(), server_default="0", nullable=False))
    op.add_column("submissions", sa.Column("scored_generation", sa.Integer(), nullable=True))
    op.execute("UPDATE submissions SET scored_generation = 0 WHERE total IS NOT NULL")


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("scored_generation")
        batch.drop_column("generation")
    with op.batch_alter_table("test_point_results") as batch:
        batch.drop_column("generation")
        batch.drop_column("heartbeat_at")
    op.drop_table("leases")
    op.drop_index(op.f("ix_outbox_submission_id"), table_name="outbox")
    op.drop_table("outbox")
