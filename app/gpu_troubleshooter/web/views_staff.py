"""Helpdesk staff: login, the triage queue, tickets, figures."""
from datetime import datetime, time, timedelta, timezone

from flask import Blueprint, abort, current_app, flash, redirect, render_template, request, session, url_for
from sqlalchemy import select

from . import db
from .auth import (check_login, clear_login_failures, current_staff, login, login_required, login_throttled,
                   record_login_failure, safe_next)
from .charts import daily_counts, stacked_bars
from .helpdesk import feedback_by_entry, outages
from .params import BadParam, parse_int, valid_id
from .extensions import limiter, login_limit
from .models import NO_MATCH, TICKET_STATUSES, Note, PrunedCount, StaffUser, Submission, Ticket, utcnow
from .redaction import redact_str
from .service import reply_to_submitter

bp = Blueprint("staff", __name__, url_prefix="/staff")


@bp.route("/login", methods=["GET", "POST"], endpoint="login")
@limiter.limit(login_limit, methods=["POST"])
def login_view():
    error = None
    if request.method == "POST":
        name = request.form.get("name", "")
        wait = login_throttled(name)
        if wait:
            return render_template("staff_login.html", error="Too many failed logins for this account or from "
                                   "this address: try again in 15 minutes."), 429, {"Retry-After": str(wait)}
        user = check_login(name, request.form.get("password", ""))
        if user is not None:
            clear_login_failures(name)
            login(user)
            return redirect(safe_next(request.args.get("next")), code=303)
        record_login_failure(name)
        error = "Unknown name or wrong password."
    return render_template("staff_login.html", error=error), 401 if error else 200



@bp.post("/logout")
def logout():
    session.clear()
    return redirect(url_for("public.index"), code=303)


def _date(value, end=False):
    try:
        d = datetime.strptime(value, "%Y-%m-%d").date()
    except (TypeError, ValueError):
        return None
    return datetime.combine(d, time.max if end else time.min, tzinfo=timezone.utc)


@bp.get("/")
@login_required
def queue():
    f = {k: request.args.get(k, "").strip()[:120] for k in ("cls", "status", "since", "until", "cluster", "partition")}
    q = select(Ticket).join(Submission).order_by(Ticket.created_at.desc())
    if f["cls"]:
        q = q.where(Submission.failure_class == ("" if f["cls"] == "none" else f["cls"]))
    if f["status"] in TICKET_STATUSES:
        q = q.where(Ticket.status == f["status"])
    elif not f["status"]:
        q = q.where(Ticket.status != "resolved")  # open tickets by default
    if _date(f["since"]):
        q = q.where(Ticket.created_at >= _date(f["since"]))
    if _date(f["until"], end=True):
        q = q.where(Ticket.created_at <= _date(f["until"], end=True))
    for key, col in (("cluster", Submission.cluster), ("partition", Submission.partition)):
        if f[key]:
            q = q.where(col == f[key])
    tickets = db.session().scalars(q.limit(1000)).all()
    groups, unknown = {}, {}
    for t in tickets:
        if t.submission.failure_class == NO_MATCH:
            unknown.setdefault(t.submission.key_template or "", []).append(t)
        else:
            groups.setdefault(t.submission.failure_class, []).append(t)
    sess = db.session()
    options = {
        "classes": sorted(c for c in sess.scalars(select(Submission.failure_class).distinct()) if c),
        "clusters": sorted(c for c in sess.scalars(select(Submission.cluster).distinct()) if c),
        "partitions": sorted(c for c in sess.scalars(select(Submission.partition).distinct()) if c),
    }
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    unknown_groups = sorted(unknown.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    cfg = current_app.config
    banner = outages(sess, cfg["OUTAGE_WINDOW_HOURS"], cfg["OUTAGE_MIN_JOBS"], cfg["OUTAGE_MIN_NODE_LEVEL"])
    return render_template("staff_queue.html", groups=ordered, unknown=unknown_groups, f=f, outages=banner,
                           window=cfg["OUTAGE_WINDOW_HOURS"], options=options, statuses=TICKET_STATUSES,
                           count=len(tickets))


def _ticket(ticket_id):
    t = db.session().get(Ticket, ticket_id) if valid_id(ticket_id) else None
    if t is None:
        abort(404)
    return t


@bp.get("/tickets/<int:ticket_id>")
@login_required
def ticket(ticket_id):
    t = _ticket(ticket_id)
    staff = db.session().scalars(select(StaffUser).where(StaffUser.active.is_(True)).order_by(StaffUser.name)).all()
    return render_template("staff_ticket.html", t=t, row=t.submission, d=t.submission.diagnosis or {},
                           staff=staff, statuses=TICKET_STATUSES)


def update_ticket(t, status=None, assignee_id=None, note=None, author=None):
    """Shared by the page and the API; returns an error message or None."""
    sess = db.session()
    if status is not None:
        if status not in TICKET_STATUSES:
            return f"unknown status {status!r}"
        t.status = status
    if assignee_id is not None:
        if assignee_id in ("", 0, "0"):
            t.assignee_id = None
        else:
            user = sess.get(StaffUser, int(assignee_id))
            if user is None:
                return "unknown assignee"
            t.assignee_id = user.id
    if note:
        sess.add(Note(ticket_id=t.id, author_id=author.id if author else None, text=redact_str(note)[:20000]))
    t.updated_at = utcnow()
    sess.commit()
    return None


@bp.post("/tickets/<int:ticket_id>")
@login_required
def ticket_update(ticket_id):
    t = _ticket(ticket_id)
    assignee = request.form.get("assignee")
    try:
        parse_int(assignee, "assignee")
    except BadParam:
        abort(400)
    error = update_ticket(t, status=request.form.get("status") or None, assignee_id=assignee,
                          note=request.form.get("note", "").strip() or None, author=current_staff())
    flash(error or "Ticket updated.")
    return redirect(url_for("staff.ticket", ticket_id=t.id), code=303)


@bp.post("/tickets/<int:ticket_id>/reply")
@login_required
def ticket_reply(ticket_id):
    t = _ticket(ticket_id)
    text = request.form.get("reply", "").strip()
    if not text:
        flash("The reply is empty.")
    else:
        mailed = reply_to_submitter(current_app._get_current_object(), t, text, current_staff())
        flash("Reply sent; the user sees it at their private link" + (
            "; a copy went by mail." if mailed else
            "; no mail was sent (no SMTP server configured, no e-mail address, or the server refused: see the log)."))
    return redirect(url_for("staff.ticket", ticket_id=t.id), code=303)


@bp.get("/figures")
@login_required
def figures():
    try:
        days = max(7, min(int(request.args.get("days", 30)), 365))
    except ValueError:
        days = 30
    start = (utcnow() - timedelta(days=days - 1)).date()
    since = datetime.combine(start, time.min, tzinfo=timezone.utc)
    sess = db.session()
    subs = sess.execute(select(Submission.created_at, Submission.failure_class)
                        .where(Submission.created_at >= since)).all()
    tix = sess.execute(select(Ticket.created_at, Submission.failure_class).join(Submission)
                       .where(Ticket.created_at >= since)).all()
    kept = sess.execute(select(PrunedCount.day, PrunedCount.kind, PrunedCount.failure_class, PrunedCount.count)
                        .where(PrunedCount.day >= start)).all()  # what retention deleted, counted
    subs = list(subs) + [(day, cls, n) for day, kind, cls, n in kept if kind == "submission"]
    tix = list(tix) + [(day, cls, n) for day, kind, cls, n in kept if kind == "ticket"]
    charts = []
    for title, rows in (("Submissions per failure class", subs), ("Tickets per failure class", tix)):
        dates, series, totals = daily_counts(rows, start, days)
        charts.append({"title": title, "svg": stacked_bars(title, dates, series), "totals": totals})
    return render_template("staff_figures.html", charts=charts, days=days, feedback=feedback_by_entry(sess, since))
