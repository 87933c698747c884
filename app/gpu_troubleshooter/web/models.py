"""Database tables. Everything stored here has been redacted first (see intake.py)."""
from datetime import date, datetime, timezone

from sqlalchemy import JSON, Boolean, Date, DateTime, ForeignKey, Integer, String, Text, BigInteger
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow():
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    pass


TICKET_STATUSES = ("new", "in_progress", "waiting_for_user", "resolved")
STATUS_LABELS = {"new": "New", "in_progress": "In progress",
                 "waiting_for_user": "Waiting for user", "resolved": "Resolved"}
NO_MATCH = ""  # failure_class of a submission where nothing known was found


class Submission(Base):
    __tablename__ = "submission"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # The only way to reach a submission: secrets.token_urlsafe(32).
    token: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    source: Mapped[str] = mapped_column(String(255), default="paste")
    state: Mapped[str] = mapped_column(String(16), default="done")  # processing | done | error
    progress_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    total_bytes: Mapped[int] = mapped_column(BigInteger, default=0)  # 0 = unknown
    error: Mapped[str] = mapped_column(Text, default="")
    failure_class: Mapped[str] = mapped_column(String(120), default=NO_MATCH, index=True)
    confidence: Mapped[float] = mapped_column(default=0.0)
    diagnosis: Mapped[dict] = mapped_column(JSON, nullable=True)
    context: Mapped[list] = mapped_column(JSON, nullable=True)   # evidence lines with neighbours
    tail: Mapped[str] = mapped_column(Text, default="")          # last lines, for the helpdesk
    facts: Mapped[dict] = mapped_column(JSON, nullable=True)
    cluster: Mapped[str] = mapped_column(String(120), default="")
    partition: Mapped[str] = mapped_column(String(120), default="")
    # No known failure: the line that most likely ended the job, and its masked
    # template, so one unknown error groups by equality across workers.
    key_line: Mapped[str] = mapped_column(Text, default="")
    key_template: Mapped[str] = mapped_column(String(400), default="")
    template_key: Mapped[str] = mapped_column(String(16), default="", index=True)
    # Where it failed and for whom, for the outage banner (both redacted like the log).
    node: Mapped[str] = mapped_column(String(120), default="", index=True)
    job_user: Mapped[str] = mapped_column(String(120), default="")
    node_level: Mapped[bool] = mapped_column(Boolean, default=False)  # the top finding is the site's to fix
    ticket: Mapped["Ticket"] = relationship(back_populates="submission", uselist=False)


FEEDBACK_VERDICTS = ("fixed", "not_fixed", "wrong_diagnosis")


class Feedback(Base):
    """"Did this fix it?" on one answer. Kept (with the entry id) when the
    submission itself is pruned, so the per-entry figures survive retention."""
    __tablename__ = "feedback"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submission.id", ondelete="SET NULL"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    entry_id: Mapped[str] = mapped_column(String(120), index=True)   # "" when no known failure was shown
    verdict: Mapped[str] = mapped_column(String(16))
    fix_taken: Mapped[int] = mapped_column(Integer, nullable=True)   # 1-based index of the fix the user applied
    comment: Mapped[str] = mapped_column(Text, default="")


class StaffUser(Base):
    __tablename__ = "staff_user"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ApiToken(Base):
    __tablename__ = "api_token"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    staff_id: Mapped[int] = mapped_column(ForeignKey("staff_user.id", ondelete="CASCADE"))
    # sha256 of the token: the token is random and long, so a slow hash adds nothing.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    label: Mapped[str] = mapped_column(String(80), default="")
    # "staff": the whole API as that staff member; "submit": only POST /api/v1/submissions
    # (what a scheduler epilog needs, so a token on every compute node opens no ticket).
    scope: Mapped[str] = mapped_column(String(16), default="staff")
    revoked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_used_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=True)
    staff: Mapped[StaffUser] = relationship()


class Ticket(Base):
    __tablename__ = "ticket"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submission.id", ondelete="CASCADE"), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)
    status: Mapped[str] = mapped_column(String(24), default="new", index=True)
    assignee_id: Mapped[int] = mapped_column(ForeignKey("staff_user.id", ondelete="SET NULL"), nullable=True)
    contact: Mapped[str] = mapped_column(String(255), default="")
    message: Mapped[str] = mapped_column(Text, default="")
    submission: Mapped[Submission] = relationship(back_populates="ticket")
    assignee: Mapped[StaffUser] = relationship()
    notes: Mapped[list["Note"]] = relationship(order_by="Note.created_at", cascade="all, delete-orphan")


class Note(Base):
    __tablename__ = "note"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    ticket_id: Mapped[int] = mapped_column(ForeignKey("ticket.id", ondelete="CASCADE"), index=True)
    author_id: Mapped[int] = mapped_column(ForeignKey("staff_user.id", ondelete="SET NULL"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    text: Mapped[str] = mapped_column(Text)
    public: Mapped[bool] = mapped_column(Boolean, default=False)     # a reply: the submitter sees it (and is mailed)
    from_user: Mapped[bool] = mapped_column(Boolean, default=False)  # the submitter's answer at the private link
    author: Mapped[StaffUser] = relationship()


class PrunedCount(Base):
    """What retention keeps of deleted submissions: anonymous counts per day and class."""
    __tablename__ = "pruned_count"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    day: Mapped[date] = mapped_column(Date, index=True)
    kind: Mapped[str] = mapped_column(String(16))
    failure_class: Mapped[str] = mapped_column(String(120))
    count: Mapped[int] = mapped_column(Integer)


class LoginFailure(Base):
    """A failed staff login, keyed by account and by address: throttling shared by all workers."""
    __tablename__ = "login_failure"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
