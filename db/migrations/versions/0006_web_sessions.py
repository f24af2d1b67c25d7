"""Web sessions: the server-side sessions of the pages' cookie (the cookie carries a random session id,
never the token; logging out and a token reset revoke it).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_web_sessions_user_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_web_sessions")),
        sa.UniqueConstraint("id_hash", name=op.f("uq_web_sessions_id_hash")),
    )
    op.create_index(op.f("ix_web_sessions_user_id"), "web_sessions", ["user_id"])
    op.create_index(op.f("ix_web_sessions_expires"), "web_sessions", ["expires"])


def downgrade() -> None:
    op.drop_index(op.f("ix_web_sessions_expires"), table_name="web_sessions")
    op.drop_index(op.f("ix_web_sessions_user_id"), table_name="web_sessions")
    op.drop_table("web_sessions")
