"""The helpdesk learns: key lines and their templates on submissions (grouping
unknown failures), the node a failure happened on (outages), and feedback.

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade():
    with op.batch_alter_table("submission") as batch:
        batch.add_column(sa.Column("key_line", sa.Text, nullable=False, server_default=""))
        batch.add_column(sa.Column("key_template", sa.String(400), nullable=False, server_default=""))
        batch.add_column(sa.Column("template_key", sa.String(16), nullable=False, server_default=""))
        batch.add_column(sa.Column("node", sa.String(120), nullable=False, server_default=""))
        batch.add_column(sa.Column("job_user", sa.String(120), nullable=False, server_default=""))
        batch.add_column(sa.Column("node_level", sa.Boolean, nullable=False, server_default=sa.false()))
    op.create_index("ix_submission_template_key", "submission", ["template_key"])
    op.create_index("ix_submission_node", "submission", ["node"])
    op.create_table(
        "feedback",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("submission_id", sa.Integer, sa.ForeignKey("submission.id", ondelete="SET NULL"), nullable=True),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("entry_id", sa.String(120), nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("fix_taken", sa.Integer, nullable=True),
        sa.Column("comment", sa.Text, nullable=False),
    )
    op.create_index("ix_feedback_entry_id", "feedback", ["entry_id"])
    op.create_index("ix_feedback_created_at", "feedback", ["created_at"])


def downgrade():
    op.drop_table("feedback")
    op.drop_index("ix_submission_node", "submission")
    op.drop_index("ix_submission_template_key", "submission")
    with op.batch_alter_table("submission") as batch:
        for col in ("node_level", "job_user", "node", "template_key", "key_template", "key_line"):
            batch.drop_column(col)
