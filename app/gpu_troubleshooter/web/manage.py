"""`troubleshoot serve | staff | db`: the web service's commands.

cli.py only registers these subcommands and imports this module when one of
them runs, so `troubleshoot FILE` never imports Flask.
"""
import argparse
import getpass
import os
import sys


def add_subcommands(subparsers):
    """Register serve/staff/db on the CLI's argparse subparsers."""
    serve = subparsers.add_parser("serve", help="run the web service locally (werkzeug; use gunicorn in production)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8000)))
    serve.add_argument("--debug", action="store_true")
    serve.set_defaults(web_command=cmd_serve)

    staff = subparsers.add_parser("staff", help="manage helpdesk staff accounts and API tokens")
    sub = staff.add_subparsers(dest="staff_command", required=True)
    add = sub.add_parser("add", help="create a staff account (password prompted, or read from stdin)")
    add.add_argument("name")
    add.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    add.set_defaults(web_command=cmd_staff_add)
    pw = sub.add_parser("passwd", help="set a staff member's password")
    pw.add_argument("name")
    pw.add_argument("--password-stdin", action="store_true")
    pw.set_defaults(web_command=cmd_staff_passwd)
    ls = sub.add_parser("list", help="list staff accounts")
    ls.set_defaults(web_command=cmd_staff_list)
    for name, active in (("disable", False), ("enable", True)):
        p = sub.add_parser(name, help=f"{name} a staff account")
        p.add_argument("name")
        p.set_defaults(web_command=cmd_staff_active, active=active)
    tok = sub.add_parser("token", help="create an API token for a staff member (printed once)")
    tok.add_argument("name")
    tok.add_argument("--label", default="")
    tok.add_argument("--scope", choices=("staff", "submit"), default="staff",
                     help="submit: may only post submissions (for the scheduler epilog); staff: the whole staff API")
    tok.set_defaults(web_command=cmd_staff_token)
    toks = sub.add_parser("tokens", help="list API tokens (id, owner, scope, label, last used)")
    toks.set_defaults(web_command=cmd_staff_tokens)
    rev = sub.add_parser("revoke", help="revoke an API token by its id (see `staff tokens`)")
    rev.add_argument("token_id", type=int)
    rev.set_defaults(web_command=cmd_staff_revoke)

    dbp = subparsers.add_parser("db", help="database migrations")
    dsub = dbp.add_subparsers(dest="db_command", required=True)
    up = dsub.add_parser("upgrade", help="apply the migrations (DATABASE_URL, default SQLite in the instance folder)")
    up.add_argument("revision", nargs="?", default="head")
    up.set_defaults(web_command=cmd_db_upgrade)
    prune = dsub.add_parser("prune", help="delete submissions older than the retention period "
                                          "(anonymous counts and feedback are kept)")
    prune.add_argument("--days", type=int, default=None, help="default: TROUBLESHOOT_RETENTION_DAYS (90)")
    prune.set_defaults(web_command=cmd_db_prune)
    again = dsub.add_parser("rediagnose", help="diagnose again the submissions with no known failure "
                                                "(after promoting a draft entry or upgrading)")
    again.set_defaults(web_command=cmd_db_rediagnose)


def run(args):
    """Run the subcommand parsed by add_subcommands; returns an exit code."""
    return args.web_command(args) or 0


def _app(config=None):
    """The app for a command. Commands other than `serve` sign no cookies, so
    a throw-away key is enough when SECRET_KEY is unset."""
    import secrets
    from . import create_app
    return create_app({"SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_hex(32), **(config or {})})


def cmd_serve(args):
    import secrets
    key = os.environ.get("SECRET_KEY")
    if not key:
        key = secrets.token_hex(32)
        print("troubleshoot: SECRET_KEY is not set; using a random key for this run "
              "(logins end when it stops; set SECRET_KEY for a lasting service)", file=sys.stderr)
    base = os.environ.get("TROUBLESHOOT_BASE_URL") or f"http://{args.host}:{args.port}"
    app = _app({"SECRET_KEY": key, "BASE_URL": base.rstrip("/")})
    import logging
    from .accesslog import MaskTokens
    logging.getLogger("werkzeug").addFilter(MaskTokens())
    print(f"serving on {base}/ (Ctrl-C stops)", file=sys.stderr)
    app.run(host=args.host, port=args.port, debug=args.debug, threaded=True, use_reloader=False)


def _read_password(args, confirm=True):
    if args.password_stdin or not sys.stdin.isatty():
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass("Password: ")
        if confirm and getpass.getpass("Repeat: ") != password:
            raise SystemExit("troubleshoot: the passwords differ")
    if len(password) < 10:
        raise SystemExit("troubleshoot: the password must have at least 10 characters")
    return password


def _user(sess, name):
    from sqlalchemy import select
    from .models import StaffUser
    user = sess.scalar(select(StaffUser).where(StaffUser.name == name))
    if user is None:
        raise SystemExit(f"troubleshoot: no staff account named {name!r}")
    return user


def cmd_staff_add(args):
    from sqlalchemy import select
    from . import db
    from .auth import hash_password
    from .models import StaffUser
    app = _app()
    with db.new_session(app) as sess:
        if sess.scalar(select(StaffUser).where(StaffUser.name == args.name)) is not None:
            raise SystemExit(f"troubleshoot: staff account {args.name!r} exists (use `staff passwd`)")
        sess.add(StaffUser(name=args.name, password_hash=hash_password(_read_password(args)), active=True))
        sess.commit()
    print(f"staff account {args.name!r} created")


def cmd_staff_passwd(args):
    from . import db
    from .auth import hash_password
    app = _app()
    with db.new_session(app) as sess:
        _user(sess, args.name).password_hash = hash_password(_read_password(args))
        sess.commit()
    print(f"password of {args.name!r} changed")


def cmd_staff_list(_args):
    from sqlalchemy import select
    from . import db
    from .models import StaffUser
    app = _app()
    with db.new_session(app) as sess:
        for u in sess.scalars(select(StaffUser).order_by(StaffUser.name)):
            print(f"{u.name}\t{'active' if u.active else 'disabled'}\t{u.created_at:%Y-%m-%d}")


def cmd_staff_active(args):
    from . import db
    app = _app()
    with db.new_session(app) as sess:
        _user(sess, args.name).active = args.active
        sess.commit()
    print(f"{args.name!r} {'enabled' if args.active else 'disabled'}")


def cmd_staff_token(args):
    from . import db
    from .auth import new_api_token
    app = _app()
    with db.new_session(app) as sess:
        token = new_api_token(sess, _user(sess, args.name), args.label, args.scope)
        sess.commit()
    print(token)
    print(f"({args.scope} token, shown once: only its hash is stored)", file=sys.stderr)


def cmd_staff_tokens(args):
    from sqlalchemy import select
    from . import db
    from .models import ApiToken
    app = _app()
    with db.new_session(app) as sess:
        for t in sess.scalars(select(ApiToken).order_by(ApiToken.id)):
            state = "revoked" if t.revoked_at else "active"
            used = t.last_used_at.strftime("%Y-%m-%d %H:%M") if t.last_used_at else "never"
            print(f"{t.id}\t{t.staff.name}\t{t.scope}\t{state}\t{t.label or '-'}\tlast used {used}")


def cmd_staff_revoke(args):
    from . import db
    from .models import ApiToken, utcnow
    app = _app()
    with db.new_session(app) as sess:
        token = sess.get(ApiToken, args.token_id)
        if token is None:
            raise SystemExit(f"troubleshoot: no API token with id {args.token_id}")
        token.revoked_at = token.revoked_at or utcnow()
        sess.commit()
    print(f"token {args.token_id} revoked")


def cmd_db_upgrade(args):
    from . import config, db
    from flask import Flask
    url = os.environ.get("DATABASE_URL") or config.from_environment(Flask(__name__.split(".")[0] + ".web",
                                                                         instance_relative_config=True).instance_path)["DATABASE_URL"]
    db.upgrade(url, args.revision)
    print(f"database at {url.split('@')[-1]} is at revision {args.revision}")


def main(argv=None):
    """Stand-alone entry (python -m gpu_troubleshooter.web.manage ...), same as the CLI's subcommands."""
    parser = argparse.ArgumentParser(prog="troubleshoot")
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())


def cmd_db_rediagnose(args):
    from . import db
    from .service import rediagnose_unknown
    app = _app()
    with app.app_context():
        session = db.new_session(app)
        try:
            changed = rediagnose_unknown(app, session)
        finally:
            session.close()
    print(f"{changed} submission(s) with no known failure now have an answer.")
    return 0


def cmd_db_prune(args):
    from . import db
    from .service import prune
    app = _app()
    days = args.days if args.days is not None else app.config["RETENTION_DAYS"]
    if days < 1:
        raise SystemExit("troubleshoot: --days must be at least 1")
    session = db.new_session(app)
    try:
        removed = prune(session, days)
    finally:
        session.close()
    print(f"{removed} submission(s) older than {days} days deleted; their anonymous counts were kept.")
    return 0
