"""gunicorn entry point: `gunicorn gpu_troubleshooter.web.wsgi:app` (configured from the environment)."""
from . import create_app

app = create_app()
