"""gunicorn settings of the Docker image, the load benchmark and the tests:

    gunicorn -c python:gpu_troubleshooter.web.gunicorn_conf 'gpu_troubleshooter.web.wsgi:app'

Command-line options and GUNICORN_CMD_ARGS override these (`--workers 4`).

Why these numbers (docs/web.md, "Load", has the measurements): a submission is
CPU work in Python (reading, redacting, scanning, rendering JSON), so one
worker process per core does the work and threads only overlap the waits (a
PostgreSQL commit, the socket). More threads than that make every request
wait its turn for the interpreter lock many times over, which is what made
the slowest 1 % of requests 3 to 7 times slower than the median at 32 clients.
`worker_connections` caps the connections one worker holds, so kept-alive
clients are shared between the workers instead of piling onto the one that
accepted first. Slow clients are nginx's job (deploy/nginx.conf): it hands
gunicorn only complete requests, so few threads are enough.
"""
import os

bind = os.environ.get("TROUBLESHOOT_BIND", "0.0.0.0:8000")
worker_class = "gthread"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = 4
worker_connections = 16
timeout = 60
keepalive = 5
# The access log masks share tokens.
accesslog = "-"
logger_class = "gpu_troubleshooter.web.accesslog.GunicornLogger"

