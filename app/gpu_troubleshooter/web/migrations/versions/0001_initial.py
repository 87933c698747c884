"""Initial tables: submissions, tickets, notes, staff users, API tokens.

Revision ID: 0001
Revises:
"""
from alembic import op
import sqlalchemy as sa

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade():
    op.create_table(
        "submission",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("token", sa.String(64), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("source", sa.String(255), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("progress_bytes", sa.BigInteger, nullable=False),
        sa.Column("total_bytes", sa.BigInteger, nullable=False),
        sa.Column("error", sa.Text, nullable=False),
        sa.Column("failure_class", sa.String(120), nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("diagnosis", sa.JSON, nullable=True),
        sa.Column("context", sa.JSON, nullable=True),
        sa.Column("tail", sa.Text, nullable=False),
        sa.Column("facts", sa.JSON, nullable=True),
        sa.Column("cluster", sa.String(120), nullable=False),
        sa.Column("partition", sa.String(120), nullable=False),
    )
    op.create_index("ix_submission_token", "submission", ["token"], unique=True)
    op.create_index("ix_submission_created_at", "submission", ["created_at"])
    op.create_index("ix_submission_failure_class", "submission", ["failure_class"])

    op.create_table(
        "staff_user",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(80), nullable=False, unique=True),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("active", sa.Boolean, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "api_token",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("staff_id", sa.Integer, sa.ForeignKey("staff_user.id", ondelete="CASCADE"), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("label", sa.String(80), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("last_used_at", TZ, nullable=True),
    )
    op.create_index("ix_api_token_token_hash", "api_token", ["token_hash"], unique=True)

    op.create_table(
        "ticket",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("submission_id", sa.Integer, sa.ForeignKey("submission.id", ondelete="CASCADE"),
                  nullable=False, unique=True),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
        sa.Column("status", sa.String(24), nullable=False),
        sa.Column("assignee_id", sa.Integer, sa.ForeignKey("staff_user.id", ondelete="SET NULL"), nullable=True),
        sa.Column("contact", sa.String(255), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
    )
    op.create_index("ix_ticket_created_at", "ticket", ["created_at"])
    op.create_index("ix_ticket_status", "ticket", ["status"])

    op.create_table(
        "note",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("ticket_id", sa.Integer, sa.ForeignKey("ticket.id", ondelete="CASCADE"), nullable=False),
        sa.Column("author_id", sa.Integer, sa.ForeignKey("staff_user.id", ondelete="SET NULL"), nullable=True),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
    )
    op.create_index("ix_note_ticket_id", "note", ["ticket_id"])


def downgrade():
    for table in ("note", "ticket", "api_token", "staff_user", "submission"):
        op.drop_table(table)
