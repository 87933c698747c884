"""Error pages: JSON under /api, HTML elsewhere; never a traceback. The JSON keeps its English
messages (clients and scripts read them); the HTML page is in the reader's language."""
from flask import jsonify, render_template, request
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException

MESSAGES = {
    400: "The request could not be understood.",
    401: "Please log in.",
    404: "Nothing here. Submission links are private: check that the link is complete.",
    405: "This address does not accept that method.",
    409: "The log is still being scanned; try again in a moment.",
    413: "That is larger than this service accepts.",
    429: "Too many submissions from your address; please wait a minute.",
}
CSRF_MESSAGE = "The form expired or was not sent from this site; reload the page and try again."


def init_app(app):
    @app.errorhandler(HTTPException)
    def _http(exc):
        code = exc.code or 500
        if request.path.startswith("/api/"):
            message = MESSAGES.get(code, exc.description)
            if isinstance(exc, CSRFError):
                message = CSRF_MESSAGE
            if code == 413:
                message += " " + _size_limit_message(app.config)
            resp = jsonify(error=exc.name.lower().replace(" ", "_"), message=message)
            resp.status_code = code
            return resp
        from .filters import msg
        title, message = exc.name, exc.description
        if code in MESSAGES:  # the catalog holds these (web/messages.py e400_t, e400, ...)
            title, message = msg(f"e{code}_t"), msg(f"e{code}")
        if isinstance(exc, CSRFError):
            message = msg("e_csrf")
        if code == 413:
            message += " " + _size_limit_message(app.config, msg)
        return render_template("error.html", code=code, title=title, message=message), code


def _mib(n):
    return f"{n / (1 << 20):.3g} MiB"


def _size_limit_message(config, msg=None):
    """Name the limit this request ran into: the upload, the paste (a form field) or a JSON body.
    With `msg` (filters.msg), in the reader's language; the JSON body's case is API-only (English)."""
    upload = config["MAX_CONTENT_LENGTH"]
    length = request.content_length
    if request.mimetype == "application/json":
        return (f"A JSON body can be at most {_mib(config['MAX_JSON_BYTES'])}; "
                f"send a larger log as the request body (text/plain or multipart), up to {_mib(upload)}.")
    if length is not None and length <= upload and request.mimetype in (
            "multipart/form-data", "application/x-www-form-urlencoded"):
        # Within the upload limit, so a form field (the pasted log) passed the paste limit.
        if msg is not None:
            return msg("sz_paste", paste=_mib(config["MAX_FORM_MEMORY_SIZE"]), upload=_mib(upload))
        return (f"A pasted log can be at most {_mib(config['MAX_FORM_MEMORY_SIZE'])}; "
                f"choose it as a file to upload instead (up to {_mib(upload)}).")
    if msg is not None:
        return msg("sz_upload", upload=_mib(upload))
    return f"The upload limit is {_mib(upload)}."
