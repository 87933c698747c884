"""Share tokens are stored as their sha256 digest, so a copy of the database
opens no submission. Existing tokens are hashed in place (their links keep working).

Revision ID: 0003
Revises: 0002
"""
import hashlib

from alembic import op
import sqlalchemy as sa

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade():
    conn = op.get_bind()
    submission = sa.table("submission", sa.column("id", sa.Integer), sa.column("token", sa.String))
    rows = conn.execute(sa.select(submission.c.id, submission.c.token)).all()
    for row_id, token in rows:
        digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()
        conn.execute(submission.update().where(submission.c.id == row_id).values(token=digest))


def downgrade():
    raise RuntimeError("share tokens cannot be un-hashed: restore the database from a backup instead")
