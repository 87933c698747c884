"""Keep share tokens out of access logs: whoever reads the log must not get
everyone's private links. Used by gunicorn (`--logger-class`) and by the
development server's werkzeug logger."""
import logging
import re

_TOKEN_PATH = re.compile(r"(/(?:s|api/v1/submissions)/)[A-Za-z0-9_-]{16,64}")


def mask(text: str) -> str:
    return _TOKEN_PATH.sub(r"\1<token>", text)


class MaskTokens(logging.Filter):
    """A logging filter for werkzeug's request lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            record.args = tuple(mask(a) if isinstance(a, str) else a for a in record.args)
        record.msg = mask(str(record.msg))
        return True


try:  # gunicorn is in the [web] extra; the filter above needs nothing
    from gunicorn.glogging import Logger as _GunicornLogger
except ImportError:  # pragma: no cover
    _GunicornLogger = None

if _GunicornLogger is not None:
    class GunicornLogger(_GunicornLogger):
        """gunicorn's logger with share tokens masked in the request line, path and referer."""

        def atoms(self, resp, req, environ, request_time):
            atoms = super().atoms(resp, req, environ, request_time)
            for key in ("r", "U", "f", "{raw_uri}e"):
                if isinstance(atoms.get(key), str):
                    atoms[key] = mask(atoms[key])
            return atoms
