"""Submissions: run the engine on a redacted log and store the result.

Thin by design: matching is the engine's; this module only feeds it the
redacted text and records what it said.
"""
import logging
import re
from concurrent.futures import ThreadPoolExecutor

from flask import current_app

from . import db
from .helpdesk import apply_learning_fields
from .intake import LogTooLarge, diagnose_upload, facts_location, new_token, token_digest
from .models import NO_MATCH, Submission, Ticket, utcnow
from .redaction import redact_json, redact_str

log = logging.getLogger(__name__)


class BadLog(Exception):
    """The input cannot be diagnosed; the message is for the user."""


class Busy(Exception):
    """The background queue is full: the client should retry later (503 + Retry-After)."""

    retry_after = 30
    key = "err_busy"  # its message in the web catalog (web/messages.py)


INTERRUPTED = "the scan was interrupted (the service restarted or failed); please submit the log again"
INTERNAL_ERRORS = ("internal error while scanning the log; please submit it again", "internal error while scanning the log")


def knowledge_base(app=None):
    app = app or current_app
    kb = app.extensions.get("kb")
    if kb is None:
        from gpu_troubleshooter.knowledge import load_knowledge_base
        kb = app.extensions["kb"] = load_knowledge_base(extra_dirs=app.config["KB_DIRS"],
                                                       bundled=app.config.get("KB_BUNDLED", True))
    return kb


def diagnose_raw(app, raw, facts=None, source="upload", progress=None):
    """Read `raw` once (redacted, diagnosed); returns (dict, context, tail, hints, bytes)."""
    from gpu_troubleshooter.errors import LogInputError
    try:
        limits = {"max_ratio": app.config["MAX_EXPANSION"] or None, "cpu_seconds": app.config["SCAN_CPU_SECONDS"] or None}
        return diagnose_upload(raw, knowledge_base(app), app.config["UPLOAD_DIR"], app.config["MAX_LOG_BYTES"],
                               source=source, facts=facts, progress=progress, limits=limits)
    except LogTooLarge as exc:
        raise BadLog(str(exc).split(": ", 1)[-1]) from None
    except LogInputError as exc:
        raise BadLog(str(exc)) from None


def _record(row, result, context, tail, hints, nbytes):
    findings = result.get("findings") or []
    row.diagnosis, row.context, row.tail = result, context, tail
    row.failure_class = findings[0]["id"] if findings else NO_MATCH
    row.confidence = float(findings[0].get("confidence", 0)) if findings else 0.0
    where = {**hints, **facts_location(row.facts)}
    row.cluster, row.partition = where.get("cluster", ""), where.get("partition", "")
    row.state, row.error, row.progress_bytes = "done", "", nbytes
    apply_learning_fields(row, result)


def create_submission(raw, size, source, facts=None, gzip_hint=False):
    """Store a new submission; small logs are diagnosed now, large ones in the background."""
    app = current_app._get_current_object()
    facts = redact_json(facts) if facts is not None else None
    share_token = new_token()
    row = Submission(token=token_digest(share_token), source=redact_str(source)[:255], facts=facts,
                     total_bytes=size or 0, state="processing", progress_bytes=0,
                     error="", tail="", failure_class=NO_MATCH, confidence=0.0,
                     cluster="", partition="", ticket=None)  # new: no ticket, and no query to find that out
    threshold = app.config["BACKGROUND_BYTES"]
    background = size is not None and (size > threshold or (gzip_hint and size * 8 > threshold))
    slots = _slots(app)
    if background and not slots.acquire(blocking=False):
        raise Busy("the service is busy scanning other large logs; try again in a minute")
    row.share_token = share_token  # not stored: only its digest is; the caller shows it once
    session = db.session()
    if background:
        session.add(row)
        session.commit()  # the page polls this row while the scan runs
        try:
            _executor(app).submit(_scan_in_background, app, row.id, raw, facts, row.source)
        except BaseException:  # the pool is shutting down: say so rather than wait forever
            slots.release()
            row.state, row.error = "error", INTERRUPTED
            session.commit()
            raise
        return row
    # A small log: scanned before the row is written, then one commit. Nothing is stored
    # "processing", so a worker killed mid-scan leaves nothing stuck behind.
    try:
        _record(row, *diagnose_raw(app, raw, facts, row.source))
    except BadLog as exc:
        row.state, row.error = "error", str(exc)
    except Exception:  # stored as failed, with a reason the user sees
        log.exception("scan of a new submission failed")
        row.state, row.error = "error", INTERNAL_ERRORS[0]
    session.add(row)
    session.commit()
    return row


def _slots(app):
    """At most BACKGROUND_QUEUE large logs waiting or scanning per process."""
    import threading
    slots = app.extensions.get("scan_slots")
    if slots is None:
        slots = app.extensions["scan_slots"] = threading.BoundedSemaphore(app.config["BACKGROUND_QUEUE"])
    return slots


def fail_stale_scans(session, older_than_minutes, now=None):
    """Scans still "processing" long after they began were lost (a worker was
    killed or restarted): mark them failed so their page stops waiting."""
    from datetime import timedelta
    from sqlalchemy import update
    cutoff = (now or utcnow()) - timedelta(minutes=older_than_minutes)
    result = session.execute(update(Submission).where(Submission.state == "processing", Submission.created_at < cutoff)
                             .values(state="error", error=INTERRUPTED)
                             .execution_options(synchronize_session=False))
    session.commit()
    return result.rowcount


def _executor(app):
    pool = app.extensions.get("scan_pool")
    if pool is None:  # two scans at a time per process; more wait their turn
        pool = app.extensions["scan_pool"] = ThreadPoolExecutor(max_workers=2, thread_name_prefix="scan")
    return pool


def _scan_in_background(app, submission_id, raw, facts, source):
    session = db.new_session(app)
    try:
        row = session.get(Submission, submission_id)

        def progress(done):
            row.progress_bytes = done
            session.commit()

        try:
            _record(row, *diagnose_raw(app, raw, facts, source, progress))
        except BadLog as exc:
            row.state, row.error = "error", str(exc)
        except Exception:  # never leave it "processing" forever
            log.exception("background scan of submission %s failed", submission_id)
            row.state, row.error = "error", INTERNAL_ERRORS[1]
        session.commit()
    finally:
        raw.close()
        session.close()
        _slots(app).release()


def find_submission(token):
    """The submission a share token opens, or None; the token is kept on the row for links."""
    from sqlalchemy import select
    if not token or len(token) > 64:
        return None
    session = db.session()
    row = session.scalar(select(Submission).where(Submission.token == token_digest(token)))
    if row is None:
        return None
    if row.state == "processing" and fail_stale_scans(session, current_app.config["STALE_SCAN_MINUTES"]):
        session.refresh(row)
    row.share_token = token
    return row


def send_to_helpdesk(row, contact="", message=""):
    """The submission's ticket (created once; later sends add to its message)."""
    session = db.session()
    contact, message = _contact(contact), redact_str(message.strip())[:10000]
    ticket = row.ticket
    if ticket is None:
        ticket = Ticket(submission=row, contact=contact, message=message, status="new")
        session.add(ticket)
    else:
        ticket.contact = ticket.contact or contact
        if message:
            ticket.message = (ticket.message + "\n\n" + message).strip()
        ticket.updated_at = utcnow()
    session.commit()
    return ticket


def record_feedback(row, verdict, comment="", fix_taken=None):
    """Store "did this fix it?" for the answer shown at the submission's link."""
    from .models import FEEDBACK_VERDICTS, Feedback
    if verdict not in FEEDBACK_VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(FEEDBACK_VERDICTS)}")
    if fix_taken is not None and not (isinstance(fix_taken, int) and 1 <= fix_taken <= 100):
        raise ValueError("fix must be the number of the fix you applied (1, 2, ...)")
    session = db.session()
    item = Feedback(submission_id=row.id, entry_id=row.failure_class, verdict=verdict,
                    fix_taken=fix_taken, comment=redact_str(comment.strip())[:5000])
    session.add(item)
    session.commit()
    return item


def rediagnose_unknown(app, session, limit=10000):
    """Diagnose again, with the current knowledge base, the submissions that had
    no known failure (after an entry was promoted or a new version installed).
    Only the redacted last lines were kept, so that is what is read; evidence
    line numbers are shifted back to the whole log's. Returns how many now
    have an answer, which their submitters see at their link."""
    from sqlalchemy import select

    from gpu_troubleshooter.engine import diagnose_text
    app.extensions.pop("kb", None)  # read the entries as they are now
    kb = knowledge_base(app)
    changed = 0
    rows = session.scalars(select(Submission).where(Submission.failure_class == NO_MATCH, Submission.state == "done",
                                                    Submission.tail != "").limit(limit)).all()
    for row in rows:
        result = diagnose_text(row.tail, kb, source=row.source, facts=row.facts).to_dict()
        if not result["findings"]:
            continue
        shift = max(0, int((row.diagnosis or {}).get("lines") or 0) - len(row.tail.splitlines()))
        for finding in result["findings"]:
            for ev in finding.get("evidence", []):
                ev["line"] = ev["line"] + shift if ev.get("line") else ev.get("line")
        result.update(lines=(row.diagnosis or {}).get("lines"), bytes=(row.diagnosis or {}).get("bytes"),
                      rediagnosed="from the last lines kept, with the knowledge base of " + utcnow().strftime("%Y-%m-%d"))
        row.diagnosis, row.failure_class = result, result["findings"][0]["id"]
        row.confidence = float(result["findings"][0].get("confidence", 0))
        apply_learning_fields(row, result)
        changed += 1
        if row.ticket is not None:  # they asked the helpdesk: tell them there is an answer now
            from . import mailer
            mailer.send(app.config, row.ticket.contact, f"Your GPU job: a diagnosis is ready (ticket #{row.ticket.id})",
                        mailer.rediagnosed_body(row.ticket.id, result["findings"][0].get("title", ""),
                                                app.config.get("SITE_NAME") or "GPU"))
    session.commit()
    return changed


_PLAIN_CONTACT = re.compile(r"^[A-Za-z0-9._%+-]{1,64}(?:@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+)?$")


def _contact(contact):
    """The submitter's e-mail or user name, kept as typed so the helpdesk can answer
    (it is shown to staff only); anything else in the field is redacted like a log."""
    contact = contact.strip()[:255]
    return contact if _PLAIN_CONTACT.match(contact) else redact_str(contact)


def reply_to_submitter(app, ticket, text, author):
    """A staff reply: stored as a public note, shown at the private link, mailed when possible.
    Returns True when a mail went out."""
    from . import mailer
    from .models import Note
    session = db.session()
    text = redact_str(text.strip())[:20000]
    session.add(Note(ticket_id=ticket.id, author_id=author.id if author else None, text=text, public=True))
    ticket.status = "waiting_for_user"
    ticket.updated_at = utcnow()
    session.commit()
    return mailer.send(app.config, ticket.contact, f"Re: your GPU job (helpdesk ticket #{ticket.id})",
                       mailer.reply_body(ticket.id, text, app.config.get("SITE_NAME") or "GPU"))


def answer_from_submitter(row, text):
    """The submitter answers a reply at the private link; the ticket comes back to the queue."""
    from .models import Note
    session = db.session()
    ticket = row.ticket
    session.add(Note(ticket_id=ticket.id, text=redact_str(text.strip())[:20000], public=True, from_user=True))
    if ticket.status in ("waiting_for_user", "resolved"):
        ticket.status = "in_progress"
    ticket.updated_at = utcnow()
    session.commit()


def forget(session, rows):
    """Delete submissions with their tickets and notes, keeping anonymous daily
    counts (figures survive) and feedback without its link to the submission."""
    from sqlalchemy import delete, select, update

    from .models import Feedback, Note, PrunedCount, Ticket
    counts = {}
    for row in rows:
        day = row.created_at.date()
        counts[(day, "submission", row.failure_class)] = counts.get((day, "submission", row.failure_class), 0) + 1
        if row.ticket is not None:
            tday = row.ticket.created_at.date()
            counts[(tday, "ticket", row.failure_class)] = counts.get((tday, "ticket", row.failure_class), 0) + 1
    ids = [row.id for row in rows]
    for (day, kind, cls), n in counts.items():
        session.add(PrunedCount(day=day, kind=kind, failure_class=cls, count=n))
    if ids:
        ticket_ids = session.scalars(select(Ticket.id).where(Ticket.submission_id.in_(ids))).all()
        if ticket_ids:
            session.execute(delete(Note).where(Note.ticket_id.in_(ticket_ids)))
            session.execute(delete(Ticket).where(Ticket.id.in_(ticket_ids)))
        session.execute(update(Feedback).where(Feedback.submission_id.in_(ids)).values(submission_id=None))
        session.execute(delete(Submission).where(Submission.id.in_(ids)))
    session.commit()
    return len(ids)


def prune(session, days, now=None, batch=500):
    """Retention: forget submissions older than `days` days; returns how many."""
    from datetime import timedelta
    from sqlalchemy import select
    cutoff = (now or utcnow()) - timedelta(days=days)
    total = 0
    while True:
        rows = session.scalars(select(Submission).where(Submission.created_at < cutoff).limit(batch)).all()
        if not rows:
            return total
        total += forget(session, rows)
