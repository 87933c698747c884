"""Extension objects shared by the blueprints (bound to an app in create_app)."""
from flask import current_app
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_wtf.csrf import CSRFProtect

csrf = CSRFProtect()
limiter = Limiter(key_func=get_remote_address, default_limits=[])


def submit_limit():
    return current_app.config["RATELIMIT_SUBMIT"]


def login_limit():
    return current_app.config["RATELIMIT_LOGIN"]
