"""JSON API under /api/v1 (described by /api/v1/openapi.json)."""
import io
import json

from flask import Blueprint, current_app, g, jsonify, request, url_for
from sqlalchemy import select

from . import db
from .auth import bearer_token, token_required
from .extensions import limiter, submit_limit
from .inputs import BadInput, LogInput, log_from_body, log_from_form, parse_facts
from .kbview import search
from .models import NO_MATCH, Submission, Ticket
from .openapi import spec
from .params import BadParam, parse_int, valid_id
from .helpdesk import outages, unknown_groups
from .service import (BadLog, Busy, create_submission, diagnose_raw, find_submission, forget, record_feedback,
                      send_to_helpdesk)
from .urls import public_url
from .views_kb import entries
from .views_staff import update_ticket

bp = Blueprint("api", __name__, url_prefix="/api/v1")


def error(status, code, message):
    resp = jsonify(error=code, message=message)
    resp.status_code = status
    return resp


def _read_input():
    """(LogInput, facts) from multipart, a JSON object or a raw body."""
    if request.mimetype == "multipart/form-data":
        facts_upload = request.files.get("facts")
        facts = parse_facts(facts_upload.stream.read(2 * 1024 * 1024 + 1) if facts_upload
                            else request.form.get("facts", "").encode())
        return log_from_form(field="log", text_field="log"), facts
    if request.mimetype == "application/json":
        body = request.get_json(silent=True)
        if not isinstance(body, dict) or not isinstance(body.get("log"), str) or not body["log"].strip():
            raise BadInput('expected a JSON object {"log": "...", "facts": {...}}')
        if not isinstance(body.get("facts"), (dict, type(None))):
            raise BadInput("facts must be a JSON object (the probe's output) or null")
        data = body["log"].encode("utf-8")
        return LogInput(io.BytesIO(data), len(data), "request body"), parse_facts(body.get("facts"))
    return log_from_body(), parse_facts(request.args.get("facts", "").encode() or None)


@bp.post("/diagnose")
@limiter.limit(submit_limit)
def diagnose():
    try:
        log_input, facts = _read_input()
    except BadInput as exc:
        return error(400, "bad_input", str(exc))
    try:
        result = diagnose_raw(current_app._get_current_object(), log_input.raw, facts, log_input.source)[0]
    except BadLog as exc:
        return error(422, "unreadable_log", str(exc))
    finally:
        log_input.raw.close()
    return jsonify(result)


def submission_json(row, full=True):
    """A submission as JSON; its links only where the caller holds the share token."""
    token = getattr(row, "share_token", None)
    out = {
        "token": token,
        "url": public_url("public.result", token=token) if token else None,
        "api_url": public_url("api.get_submission", token=token) if token else None,
        "created_at": row.created_at.isoformat(),
        "state": row.state,
        "source": row.source,
        "failure_class": row.failure_class or None,
        "confidence": row.confidence,
        "cluster": row.cluster or None,
        "partition": row.partition or None,
        "ticket": {"id": row.ticket.id, "status": row.ticket.status} if row.ticket else None,
    }
    if row.state == "processing":
        out["progress"] = {"bytes_read": row.progress_bytes, "bytes_total": row.total_bytes}
    if row.state == "error":
        out["error"] = row.error
    if full:
        out.update(diagnosis=row.diagnosis, facts=row.facts, evidence_context=row.context)
    return out


@bp.post("/submissions")
@limiter.limit(submit_limit, exempt_when=lambda: bearer_token() is not None)  # the epilog's token: no rate limit
def create():
    try:
        log_input, facts = _read_input()
    except BadInput as exc:
        return error(400, "bad_input", str(exc))
    try:
        row = create_submission(log_input.raw, log_input.size, log_input.source, facts, log_input.gzip)
    except Busy as exc:
        log_input.raw.close()
        resp = error(503, "busy", str(exc))
        resp.headers["Retry-After"] = str(exc.retry_after)
        return resp
    if row.state != "processing":
        log_input.raw.close()
    resp = jsonify(submission_json(row))
    resp.status_code = 202 if row.state == "processing" else 201
    resp.headers["Location"] = url_for("api.get_submission", token=row.share_token)
    return resp


def _by_token(token):
    return find_submission(token)


@bp.get("/submissions/<token>")
def get_submission(token):
    row = _by_token(token)
    if row is None:
        return error(404, "not_found", "no such submission")
    return jsonify(submission_json(row))


def _scanned(token):
    """(the submission, None), or (None, the error answer): 404 unknown token, 409 still scanning."""
    row = _by_token(token)
    if row is None:
        return None, error(404, "not_found", "no such submission")
    if row.state == "processing":
        return None, error(409, "processing", "the log is still being scanned")
    return row, None


@bp.delete("/submissions/<token>")
def delete_submission(token):
    row = _by_token(token)
    if row is None:
        return error(404, "not_found", "no such submission")
    forget(db.session(), [row])
    return "", 204


@bp.post("/submissions/<token>/ticket")
@limiter.limit(submit_limit)
def create_ticket(token):
    row, problem = _scanned(token)
    if problem is not None:
        return problem
    body = request.get_json(silent=True)
    if body is None:
        body = {}
    if not isinstance(body, dict) or not all(isinstance(body.get(k, ""), str) for k in ("contact", "message")):
        return error(400, "bad_input", 'expected a JSON object {"contact": "...", "message": "..."}')
    t = send_to_helpdesk(row, body.get("contact", ""), body.get("message", ""))
    return jsonify(id=t.id, status=t.status), 201


@bp.post("/submissions/<token>/feedback")
@limiter.limit(submit_limit)
def create_feedback(token):
    row, problem = _scanned(token)
    if problem is not None:
        return problem
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return error(400, "bad_input", 'expected {"verdict": "fixed|not_fixed|wrong_diagnosis", "fix": 1, "comment": "..."}')
    try:
        item = record_feedback(row, str(body.get("verdict", "")), str(body.get("comment", "")), body.get("fix"))
    except ValueError as exc:
        return error(400, "bad_input", str(exc))
    return jsonify(id=item.id, entry_id=item.entry_id or None, verdict=item.verdict), 201


@bp.get("/unknown")
@token_required
def unknown():
    return jsonify(groups=[{"key": g.key, "template": g.template, "count": g.count, "first_seen": g.first_seen.isoformat(),
                            "last_seen": g.last_seen.isoformat(), "trend": g.trend} for g in unknown_groups(db.session())])


@bp.get("/outages")
@token_required
def outage_list():
    cfg = current_app.config
    found = outages(db.session(), cfg["OUTAGE_WINDOW_HOURS"], cfg["OUTAGE_MIN_JOBS"], cfg["OUTAGE_MIN_NODE_LEVEL"])
    return jsonify(outages=[{"node": o.node, "jobs": o.jobs, "users": o.users, "since": o.since.isoformat(),
                             "node_level": o.node_level, "classes": list(o.classes), "action": o.action} for o in found])


@bp.get("/kb")
def kb_list():
    query = request.args.get("q", "").strip()[:200]
    found = search(entries(), query) if query else [(None, d) for d in entries()]
    return jsonify(entries=[dict(d, score=s) if s is not None else d for s, d in found])


@bp.get("/kb/<entry_id>")
def kb_entry(entry_id):
    for d in entries():
        if d["id"] == entry_id:
            return jsonify(d)
    return error(404, "not_found", "no such entry")


def ticket_json(t, full=False):
    out = {"id": t.id, "status": t.status, "created_at": t.created_at.isoformat(),
           "updated_at": t.updated_at.isoformat() if t.updated_at else None,
           "assignee": t.assignee.name if t.assignee else None, "contact": t.contact,
           "message": t.message, "submission": submission_json(t.submission, full=full)}
    if full:
        out["notes"] = [{"author": n.author.name if n.author else None, "created_at": n.created_at.isoformat(),
                         "text": n.text} for n in t.notes]
    return out


@bp.get("/tickets")
@token_required
def tickets():
    q = select(Ticket).join(Submission).order_by(Ticket.created_at.desc())
    if request.args.get("status"):
        q = q.where(Ticket.status == request.args["status"])
    if request.args.get("class"):
        cls = request.args["class"]
        q = q.where(Submission.failure_class == (NO_MATCH if cls == "none" else cls))
    try:
        limit = parse_int(request.args.get("limit"), "limit", lo=1, hi=1000, default=200)
    except BadParam as exc:
        return error(400, "bad_input", str(exc))
    rows = db.session().scalars(q.limit(limit)).all()
    return jsonify(tickets=[ticket_json(t) for t in rows])


@bp.get("/tickets/<int:ticket_id>")
@token_required
def ticket(ticket_id):
    t = db.session().get(Ticket, ticket_id) if valid_id(ticket_id) else None
    return jsonify(ticket_json(t, full=True)) if t else error(404, "not_found", "no such ticket")


@bp.patch("/tickets/<int:ticket_id>")
@token_required
def ticket_patch(ticket_id):
    t = db.session().get(Ticket, ticket_id) if valid_id(ticket_id) else None
    if t is None:
        return error(404, "not_found", "no such ticket")
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return error(400, "bad_input", 'expected a JSON object {"status": ..., "assignee_id": ..., "note": ...}')
    assignee = body.get("assignee_id")
    if assignee is not None and (not isinstance(assignee, int) or isinstance(assignee, bool)
                                 or not 0 <= assignee <= 2**31 - 1):
        return error(400, "bad_input", "assignee_id must be an integer (0 = nobody)")
    for key in ("status", "note"):
        if body.get(key) is not None and not isinstance(body[key], str):
            return error(400, "bad_input", f"{key} must be a string")
    problem = update_ticket(t, status=body.get("status"), assignee_id=assignee,
                            note=body.get("note"), author=g.staff)
    if problem:
        return error(400, "bad_input", problem)
    return jsonify(ticket_json(t, full=True))


@bp.post("/tickets/<int:ticket_id>/notes")
@token_required
def ticket_note(ticket_id):
    t = db.session().get(Ticket, ticket_id) if valid_id(ticket_id) else None
    if t is None:
        return error(404, "not_found", "no such ticket")
    body = request.get_json(silent=True)
    text = body.get("text") if isinstance(body, dict) else None
    text = text.strip() if isinstance(text, str) else ""
    if not text:
        return error(400, "bad_input", 'expected {"text": "..."}')
    update_ticket(t, note=text, author=g.staff)
    return jsonify(ticket_json(t, full=True)), 201


@bp.get("/openapi.json")
def openapi():
    return current_app.response_class(json.dumps(spec(), indent=1), mimetype="application/json")
