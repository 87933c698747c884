"""Absolute links for users, built from the configured base URL (TROUBLESHOOT_BASE_URL),
never from the request's Host header, which any client can set."""
from flask import current_app, url_for


def public_url(endpoint, **values):
    base = current_app.config.get("BASE_URL", "")
    if base:
        return base + url_for(endpoint, **values)
    if current_app.config.get("SERVER_NAME"):  # a fixed name is not the client's to choose
        return url_for(endpoint, _external=True, **values)
    return url_for(endpoint, **values)  # a path: the page the user is on supplies the rest
