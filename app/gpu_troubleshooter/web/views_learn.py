"""Staff pages where the helpdesk learns: unknown failures grouped, drafts made from a group."""
from pathlib import Path

from flask import Blueprint, abort, current_app, flash, redirect, render_template, url_for

from . import db
from .auth import login_required
from .helpdesk import group_submissions, unknown_groups, write_draft
from .service import rediagnose_unknown

bp = Blueprint("learn", __name__, url_prefix="/staff/unknown")


@bp.get("/")
@login_required
def groups():
    return render_template("staff_unknown.html", groups=unknown_groups(db.session()))


@bp.get("/<key>")
@login_required
def group(key):
    rows = group_submissions(db.session(), key[:16])
    if not rows:
        abort(404)
    return render_template("staff_unknown_group.html", key=key, rows=rows, template=rows[0].key_template)


@bp.post("/<key>/draft")
@login_required
def draft(key):
    rows = group_submissions(db.session(), key[:16])
    if not rows:
        abort(404)
    path = write_draft(Path(current_app.config["DRAFT_KB_DIR"]), rows[0].key_template, rows)
    flash(f"Draft entry written to {path}. It is not used for diagnosis until you complete it and remove 'draft: true'.")
    return redirect(url_for("learn.group", key=key), code=303)


@bp.post("/rediagnose")
@login_required
def rediagnose():
    changed = rediagnose_unknown(current_app._get_current_object(), db.session())
    flash(f"{changed} submission(s) with no known failure now have an answer; their submitters see it at their link.")
    return redirect(url_for("learn.groups"), code=303)
