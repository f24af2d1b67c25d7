"""Contest communication: clarification requests and answers, announcements, per-user read marks.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "clarifications",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("author_id", sa.Integer(), nullable=False),
        sa.Column("task", sa.Integer(), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("state", sa.String(length=16), server_default="open", nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("public_text", sa.Text(), nullable=True),
        sa.Column("published", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("handled_by", sa.Integer(), nullable=True),
        sa.Column("handled_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("state IN ('open', 'answered', 'ignored')", name=op.f("ck_clarifications_state_known")),
        sa.CheckConstraint("task >= 1", name=op.f("ck_clarifications_task_positive")),
        sa.ForeignKeyConstraint(["author_id"], ["users.id"], name=op.f("fk_clarifications_author_id_users"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["handled_by"], ["users.id"], name=op.f("fk_clarifications_handled_by_users"),
                                ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_clarifications")),
    )
    op.create_index(op.f("ix_clarifications_author_id"), "clarifications", ["author_id"])
    op.create_index(op.f("ix_clarifications_created"), "clarifications", ["created"])
    op.create_index(op.f("ix_clarifications_state"), "clarifications", ["state"])
    op.create_table(
        "announcements",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("author_id", sa.Integer(), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("pinned", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.ForeignKeyConstraint(["author_id"], ["users.id"], name=op.f("fk_announcements_author_id_users"),
                                ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_announcements")),
    )
    op.create_index(op.f("ix_announcements_created"), "announcements", ["created"])
    op.create_table(
        "message_marks",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("read_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_message_marks_user_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_message_marks")),
    )


def downgrade() -> None:
    op.drop_table("message_marks")
    op.drop_index(op.f("ix_announcements_created"), table_name="announcements")
    op.drop_table("announcements")
    op.drop_index(op.f("ix_clarifications_state"), table_name="clarifications")
    op.drop_index(op.f("ix_clarifications_created"), table_name="clarifications")
    op.drop_index(op.f("ix_clarifications_author_id"), table_name="clarifications")
    op.drop_table("clarifications")
