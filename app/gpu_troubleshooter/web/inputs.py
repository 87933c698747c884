"""Reading a log and facts out of a request, for the pages and the API alike."""
import io
import json
import os
import tempfile

from flask import current_app, request

from gpu_troubleshooter import reader

MAX_FACTS = 2 * 1024 * 1024
BODY_IN_MEMORY = 1 << 20  # a raw body up to this size is held in memory, not spooled


class BadInput(Exception):
    """The request does not hold a usable log or facts; the message is for the user (English, as
    the API returns it); `key` and `fields` name it in the web catalog (web/messages.py)."""

    def __init__(self, message, key="", **fields):
        super().__init__(message)
        self.key, self.fields = key, fields


class LogInput:
    """An open binary stream the caller owns (close it), its size and a display name."""

    def __init__(self, raw, size, source):
        self.raw, self.size, self.source = raw, size, source
        head = raw.read(8)
        raw.seek(0)
        self.gzip = reader.compression_of(head) is not None  # any compressed log: a larger scan than its size says


def _own_copy(fileobj):
    """A second handle on an upload's spool file that outlives the request (for background scans)."""
    raw = os.fdopen(os.dup(fileobj.fileno()), "rb")
    raw.seek(0)
    return raw


def log_from_form(field="logfile", text_field="log"):
    upload = request.files.get(field)
    if upload is not None and upload.filename:
        raw = _own_copy(upload.stream)
        size = os.fstat(raw.fileno()).st_size
        if size == 0:
            raw.close()
            raise BadInput("the uploaded file is empty", "err_empty_file")
        from .intake import display_name
        return LogInput(raw, size, display_name(upload.filename))
    text = request.form.get(text_field, "")
    if text.strip():
        data = text.encode("utf-8")
        return LogInput(io.BytesIO(data), len(data), "pasted log")
    raise BadInput("paste a log or choose a file to upload", "err_no_log")


def log_from_body():
    """A raw request body (text/plain, application/gzip, ...): in memory up to
    BODY_IN_MEMORY, else spooled to an unlinked file."""
    held, spool, size = [], None, 0
    while True:
        chunk = request.stream.read(1 << 20)
        if not chunk:
            break
        size += len(chunk)
        if spool is None and size > BODY_IN_MEMORY:
            spool = tempfile.TemporaryFile("w+b", dir=current_app.config["UPLOAD_DIR"])
            spool.writelines(held)
            held = []
        if spool is None:
            held.append(chunk)
        else:
            spool.write(chunk)
    if size == 0:
        raise BadInput("the request body is empty: send the log as the body or as multipart field 'log'")
    if spool is None:
        return LogInput(io.BytesIO(b"".join(held)), size, "request body")
    spool.seek(0)
    return LogInput(spool, size, "request body")


def facts_from_form(field="facts", file_field="facts_file"):
    upload = request.files.get(file_field)
    if upload is not None and upload.filename:
        data = upload.stream.read(MAX_FACTS + 1)
    else:
        data = request.form.get(field, "").encode("utf-8")
    return parse_facts(data)


def parse_facts(data):
    if isinstance(data, (dict, type(None))):
        return data
    if not data or not data.strip():
        return None
    if len(data) > MAX_FACTS:
        raise BadInput("the facts document is larger than 2 MiB", "err_facts_big")
    try:
        facts = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadInput(f"the facts are not valid JSON: {exc}", "err_facts_json", detail=str(exc)) from None
    if not isinstance(facts, dict):
        raise BadInput("the facts must be a JSON object (the probe's output)", "err_facts_object")
    return facts
