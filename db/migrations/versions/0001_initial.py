"""Initial schema: users, submissions, test_point_results.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

VERDICTS = "'AC', 'WA', 'CE', 'RE', 'TLE', 'MLE', 'SV', 'IE'"


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("name", name=op.f("uq_users_name")),
    )
    op.create_table(
        "submissions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("file_name", sa.String(length=255), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("task1", sa.Float(), nullable=True),
        sa.Column("task2", sa.Float(), nullable=True),
        sa.Column("task3", sa.Float(), nullable=True),
        sa.Column("task4", sa.Float(), nullable=True),
        sa.Column("total", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_submissions_user_id_users")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_submissions")),
    )
    op.create_index(op.f("ix_submissions_sha256"), "submissions", ["sha256"])
    op.create_index(op.f("ix_submissions_total"), "submissions", ["total"])
    op.create_index(op.f("ix_submissions_user_id"), "submissions", ["user_id"])
    op.create_table(
        "test_point_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("task", sa.Integer(), nullable=False),
        sa.Column("point", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.String(length=3), nullable=True),
        sa.Column("cycles", sa.BigInteger(), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("worker", sa.String(length=255), nullable=True),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("wall_seconds", sa.Float(), nullable=True),
        sa.CheckConstraint(f"verdict IN ({VERDICTS})", name=op.f("ck_test_point_results_verdict")),
        sa.CheckConstraint("score >= 0 AND score <= 100", name=op.f("ck_test_point_results_score_range")),
        sa.CheckConstraint("attempts >= 0", name=op.f("ck_test_point_results_attempts_nonnegative")),
        sa.CheckConstraint("task >= 1 AND point >= 0", name=op.f("ck_test_point_results_task_point_range")),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_test_point_results_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_test_point_results")),
        sa.UniqueConstraint(
            "submission_id", "task", "point", name=op.f("uq_test_point_results_submission_id_task_point")
        ),
    )


def downgrade() -> None:
    op.drop_table("test_point_results")
    op.drop_index(op.f("ix_submissions_user_id"), table_name="submissions")
    op.drop_index(op.f("ix_submissions_total"), table_name="submissions")
    op.drop_index(op.f("ix_submissions_sha256"), table_name="submissions")
    op.drop_table("submissions")
    op.drop_table("users")
