"""Submissions: run the engine on a redacted log and store the result.

Thin by design: matching is the engine's; this module only feeds it the
redacted text and records what it said.
"""
import logging
import os
from concurrent.futures import ThreadPoolExecutor

from flask import current_app

from . import db
from .intake import LogTooLarge, evidence_context, facts_location, new_token, redact_to_file
from .models import NO_MATCH, Submission, Ticket, utcnow
from .redaction import redact_json, redact_str

log = logging.getLogger(__name__)


class BadLog(Exception):
    """The input cannot be diagnosed; the message is for the user."""


def knowledge_base(app=None):
    app = app or current_app
    kb = app.extensions.get("kb")
    if kb is None:
        from gpu_troubleshooter.knowledge import load_knowledge_base
        kb = app.extensions["kb"] = load_knowledge_base(extra_dirs=app.config["KB_DIRS"],
                                                       bundled=app.config.get("KB_BUNDLED", True))
    return kb


def diagnose_raw(app, raw, facts=None, source="upload", progress=None):
    """Redact `raw` into a temp file, diagnose it; returns (dict, context, tail, hints, bytes)."""
    from gpu_troubleshooter.engine import diagnose_path
    from gpu_troubleshooter.errors import LogInputError
    try:
        path, nbytes, hints = redact_to_file(raw, app.config["UPLOAD_DIR"], app.config["MAX_LOG_BYTES"], progress)
    except LogTooLarge as exc:
        raise BadLog(str(exc)) from None
    except (OSError, EOFError) as exc:  # truncated or corrupt gzip
        raise BadLog(f"the file could not be read: {exc.__class__.__name__}") from None
    try:
        try:
            diagnosis = diagnose_path(path, knowledge_base(app), facts=facts)
        except LogInputError as exc:
            raise BadLog(str(exc).replace(path, source)) from None
        result = diagnosis.to_dict()
        result["source"] = source
        context, tail = evidence_context(path, result)
    finally:
        os.unlink(path)
    return result, context, tail, hints, nbytes


def _record(row, result, context, tail, hints, nbytes):
    findings = result.get("findings") or []
    row.diagnosis, row.context, row.tail = result, context, tail
    row.failure_class = findings[0]["id"] if findings else NO_MATCH
    row.confidence = float(findings[0].get("confidence", 0)) if findings else 0.0
    where = {**hints, **facts_location(row.facts)}
    row.cluster, row.partition = where.get("cluster", ""), where.get("partition", "")
    row.state, row.error, row.progress_bytes = "done", "", nbytes


def create_submission(raw, size, source, facts=None, gzip_hint=False):
    """Store a new submission; small logs are diagnosed now, large ones in the background."""
    app = current_app._get_current_object()
    facts = redact_json(facts) if facts is not None else None
    row = Submission(token=new_token(), source=redact_str(source)[:255], facts=facts,
                     total_bytes=size or 0, state="processing", progress_bytes=0,
                     error="", tail="", failure_class=NO_MATCH, confidence=0.0,
                     cluster="", partition="")
    threshold = app.config["BACKGROUND_BYTES"]
    background = size is not None and (size > threshold or (gzip_hint and size * 8 > threshold))
    session = db.session()
    session.add(row)
    session.commit()
    if background:
        _executor(app).submit(_scan_in_background, app, row.id, raw, facts, row.source)
        return row
    try:
        _record(row, *diagnose_raw(app, raw, facts, row.source))
    except BadLog as exc:
        row.state, row.error = "error", str(exc)
    session.commit()
    return row


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
            row.state, row.error = "error", "internal error while scanning the log"
        session.commit()
    finally:
        raw.close()
        session.close()


def send_to_helpdesk(row, contact="", message=""):
    """The submission's ticket (created once; later sends add to its message)."""
    session = db.session()
    contact, message = redact_str(contact.strip())[:255], redact_str(message.strip())[:10000]
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
