"""Staff authentication: session login for pages, hashed bearer tokens for the API."""
import functools
import hashlib
import secrets

from flask import g, jsonify, redirect, request, session, url_for
from sqlalchemy import select
from werkzeug.security import check_password_hash, generate_password_hash

from . import db
from .models import ApiToken, StaffUser, utcnow

# Compared against when the name is unknown, so timing does not tell names apart.
_DUMMY_HASH = generate_password_hash(secrets.token_hex(16))


def hash_password(password):
    return generate_password_hash(password)


def check_login(name, password):
    user = db.session().scalar(select(StaffUser).where(StaffUser.name == name))
    if user is None or not user.active:
        check_password_hash(_DUMMY_HASH, password)
        return None
    return user if check_password_hash(user.password_hash, password) else None


def login(user):
    session.clear()  # no fixation: a fresh session (and CSRF token) for the staff member
    session["staff_id"] = user.id
    session.permanent = True


def current_staff():
    if "staff" not in g:
        staff_id = session.get("staff_id")
        user = db.session().get(StaffUser, staff_id) if staff_id else None
        g.staff = user if user is not None and user.active else None
    return g.staff


def login_required(view):
    @functools.wraps(view)
    def wrapped(*args, **kwargs):
        if current_staff() is None:
            return redirect(url_for("staff.login", next=request.full_path))
        return view(*args, **kwargs)
    return wrapped


def hash_token(token):
    return hashlib.sha256(token.encode()).hexdigest()


def new_api_token(session_, user, label=""):
    """Create a token for `user`; the plain token is returned once and never stored."""
    token = "tst_" + secrets.token_urlsafe(32)
    session_.add(ApiToken(staff_id=user.id, token_hash=hash_token(token), label=label[:80]))
    return token


def token_required(view):
    @functools.wraps(view)
    def wrapped(*args, **kwargs):
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer "):
            return _unauthorized()
        sess = db.session()
        row = sess.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(header[7:].strip())))
        if row is None or not row.staff.active:
            return _unauthorized()
        row.last_used_at = utcnow()
        sess.commit()
        g.staff = row.staff
        return view(*args, **kwargs)
    return wrapped


def _unauthorized():
    resp = jsonify(error="unauthorized", message="a staff API token is required (Authorization: Bearer ...)")
    resp.status_code = 401
    resp.headers["WWW-Authenticate"] = 'Bearer realm="troubleshoot"'
    return resp


def safe_next(target):
    """Only same-site relative paths are followed after login."""
    # Browsers and werkzeug drop tabs and newlines from a Location, so
    # "/\t/evil.example" would become "//evil.example": refuse any control
    # character, any backslash, and anything that is not a plain local path.
    if (target and target.startswith("/") and not target.startswith("//") and "\\" not in target
            and all(ch.isprintable() and not ch.isspace() for ch in target)):
        return target
    return url_for("staff.queue")

