"""Staff authentication: session login for pages, hashed bearer tokens for the API."""
import functools
import hashlib
import secrets
from datetime import timedelta

from flask import current_app, g, jsonify, redirect, request, session, url_for
from sqlalchemy import delete, func, select
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


TOKEN_SCOPES = ("staff", "submit")


def new_api_token(session_, user, label="", scope="staff"):
    """Create a token for `user`; the plain token is returned once and never stored.
    scope "submit" may only post submissions (the scheduler epilog's token)."""
    if scope not in TOKEN_SCOPES:
        raise ValueError(f"scope must be one of {', '.join(TOKEN_SCOPES)}")
    token = ("tss_" if scope == "submit" else "tst_") + secrets.token_urlsafe(32)
    session_.add(ApiToken(staff_id=user.id, token_hash=hash_token(token), label=label[:80], scope=scope))
    return token


def bearer_token():
    """The ApiToken of this request's `Authorization: Bearer`, or None (unknown, revoked, disabled staff)."""
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer "):
        return None
    row = db.session().scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(header[7:].strip())))
    if row is None or row.revoked_at is not None or not row.staff.active:
        return None
    return row


def token_required(view):
    """Staff endpoints: a staff-scope token; a submit-only token gets 403."""
    @functools.wraps(view)
    def wrapped(*args, **kwargs):
        row = bearer_token()
        if row is None:
            return _unauthorized()
        if row.scope != "staff":
            resp = jsonify(error="forbidden", message="this token may only post submissions")
            resp.status_code = 403
            return resp
        row.last_used_at = utcnow()
        db.session().commit()
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



THROTTLE_WINDOW = timedelta(minutes=15)


def _throttle_keys(name):
    return (f"user:{name.strip().lower()[:120]}", f"ip:{request.remote_addr or '-'}")


def login_throttled(name):
    """Seconds to wait when too many logins failed for this account or from this
    address in the last 15 minutes (counted in the database: every worker and
    process sees the same count); 0 when a try is allowed."""
    from .models import LoginFailure
    cfg = current_app.config
    since = utcnow() - THROTTLE_WINDOW
    user_key, ip_key = _throttle_keys(name)
    sess = db.session()
    for key, limit in ((user_key, cfg["LOGIN_MAX_FAILURES_ACCOUNT"]), (ip_key, cfg["LOGIN_MAX_FAILURES_ADDRESS"])):
        n = sess.scalar(select(func.count(LoginFailure.id)).where(LoginFailure.key == key, LoginFailure.created_at >= since))
        if n >= limit:
            return int(THROTTLE_WINDOW.total_seconds())
    return 0


def record_login_failure(name):
    from .models import LoginFailure
    sess = db.session()
    sess.execute(delete(LoginFailure).where(LoginFailure.created_at < utcnow() - THROTTLE_WINDOW))
    for key in _throttle_keys(name):
        sess.add(LoginFailure(key=key))
    sess.commit()


def clear_login_failures(name):
    from .models import LoginFailure
    sess = db.session()
    sess.execute(delete(LoginFailure).where(LoginFailure.key == _throttle_keys(name)[0]))
    sess.commit()
