"""gunicorn entry point: `gunicorn gpu_troubleshooter.web.wsgi:app` (configured from the environment)."""
import sys

from . import MissingSecretKey, create_app

try:
    app = create_app()
except MissingSecretKey as exc:  # a clear message and exit, not a traceback per worker
    print(f"troubleshoot: {exc}", file=sys.stderr)
    raise SystemExit(3) from None
