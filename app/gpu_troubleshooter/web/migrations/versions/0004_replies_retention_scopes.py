"""Replies to the submitter, retention counts, token scopes, shared login throttling.

- note.public / note.from_user: a staff reply the submitter sees (and is mailed),
  and the submitter's own answers at the private link;
- pruned_count: anonymous daily counts kept when retention deletes submissions;
- api_token.scope (staff | submit) and revoked_at;
- login_failure: failed logins per account and per address, shared by every
  worker and process (the in-memory limiter is per process).

Revision ID: 0004
Revises: 0003
"""
from alembic import op
import sqlalchemy as sa

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade():
    with op.batch_alter_table("note") as batch:
        batch.add_column(sa.Column("public", sa.Boolean, nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("from_user", sa.Boolean, nullable=False, server_default=sa.false()))
    with op.batch_alter_table("api_token") as batch:
        batch.add_column(sa.Column("scope", sa.String(16), nullable=False, server_default="staff"))
        batch.add_column(sa.Column("revoked_at", TZ, nullable=True))
    op.create_table(
        "pruned_count",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("day", sa.Date, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),          # submission | ticket
        sa.Column("failure_class", sa.String(120), nullable=False),
        sa.Column("count", sa.Integer, nullable=False),
    )
    op.create_index("ix_pruned_count_day", "pruned_count", ["day"])
    op.create_table(
        "login_failure",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("key", sa.String(200), nullable=False),           # "user:<name>" or "ip:<address>"
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_index("ix_login_failure_key_created", "login_failure", ["key", "created_at"])


def downgrade():
    op.drop_table("login_failure")
    op.drop_table("pruned_count")
    with op.batch_alter_table("api_token") as batch:
        batch.drop_column("revoked_at")
        batch.drop_column("scope")
    with op.batch_alter_table("note") as batch:
        batch.drop_column("from_user")
        batch.drop_column("public")
