"""Public pages: submit a log, read the diagnosis, send it to the helpdesk."""
from flask import Blueprint, abort, current_app, flash, jsonify, redirect, render_template, request, url_for
from sqlalchemy import text

from . import db
from .extensions import limiter, submit_limit
from .filters import msg
from .inputs import BadInput, facts_from_form, log_from_form
from .service import (Busy, answer_from_submitter, create_submission, find_submission, forget, record_feedback,
                      send_to_helpdesk)
from .urls import public_url

bp = Blueprint("public", __name__)



@bp.get("/")
def index():
    return render_template("index.html", max_bytes=current_app.config["MAX_CONTENT_LENGTH"])


@bp.post("/submit")
@limiter.limit(submit_limit)
def submit():
    try:
        facts = facts_from_form()
        log_input = log_from_form()
    except BadInput as exc:
        return render_template("index.html", error=_said(exc), form=request.form,
                               max_bytes=current_app.config["MAX_CONTENT_LENGTH"]), 400
    try:
        row = create_submission(log_input.raw, log_input.size, log_input.source, facts, log_input.gzip)
    except Busy as exc:
        log_input.raw.close()
        return render_template("index.html", error=_said(exc), form=request.form,
                               max_bytes=current_app.config["MAX_CONTENT_LENGTH"]), 503, {"Retry-After": str(exc.retry_after)}
    if row.state != "processing":
        log_input.raw.close()
    return redirect(url_for("public.result", token=row.share_token), code=303)


def _said(exc):
    """An input error in the reader's language (its English text when the catalog lacks it)."""
    key = getattr(exc, "key", "")
    return msg(key, **getattr(exc, "fields", {})) if key else str(exc)


def _submission(token, scanned=False):
    """The submission the token opens (the database holds its digest): 404 for
    anything else; with scanned=True, 409 while its log is still being scanned."""
    row = find_submission(token)
    if row is None:
        abort(404)
    if scanned and row.state == "processing":
        abort(409)
    return row


@bp.get("/s/<token>")
def result(token):
    row = _submission(token)
    if row.state == "processing":
        return render_template("progress.html", row=row), 200, {"Cache-Control": "no-store"}
    share_url = public_url("public.result", token=token)
    return render_template("result.html", row=row, d=row.diagnosis or {}, share_url=share_url), 200, {
        "Cache-Control": "no-store", "X-Robots-Tag": "noindex"}


@bp.post("/s/<token>/helpdesk")
@limiter.limit(submit_limit)
def helpdesk(token):
    row = _submission(token, scanned=True)
    send_to_helpdesk(row, request.form.get("contact", ""), request.form.get("message", ""))
    flash(msg("fl_sent"))
    return redirect(url_for("public.result", token=token, _anchor="helpdesk"), code=303)


@bp.post("/s/<token>/feedback")
@limiter.limit(submit_limit)
def feedback(token):
    row = _submission(token, scanned=True)
    fix = request.form.get("fix", "").strip()
    try:
        record_feedback(row, request.form.get("verdict", ""), request.form.get("comment", ""),
                        int(fix) if fix.isascii() and fix.isdigit() else None)
    except ValueError as exc:
        flash(msg("fl_fix") if str(exc).startswith("fix ") else msg("fl_verdict"))
        return redirect(url_for("public.result", token=token, _anchor="feedback"), code=303)
    flash(msg("fl_thanks"))
    return redirect(url_for("public.result", token=token, _anchor="feedback"), code=303)


@bp.post("/s/<token>/reply")
@limiter.limit(submit_limit)
def reply(token):
    row = _submission(token)
    text = request.form.get("text", "").strip()
    if row.ticket is None or not text:
        abort(400)
    answer_from_submitter(row, text)
    flash(msg("fl_answer"))
    return redirect(url_for("public.result", token=token, _anchor="helpdesk"), code=303)


@bp.post("/s/<token>/delete")
@limiter.limit(submit_limit)
def delete(token):
    row = _submission(token)
    if request.form.get("confirm") != "yes":
        abort(400)
    forget(db.session(), [row])
    flash(msg("fl_deleted"))
    return redirect(url_for("public.index"), code=303)


@bp.get("/healthz")
def healthz():
    try:
        db.session().execute(text("SELECT 1"))
    except Exception:
        return jsonify(status="error", database="unreachable"), 503
    return jsonify(status="ok")
