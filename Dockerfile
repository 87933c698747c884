# The web service under gunicorn, as a non-root user. Build: docker build -t troubleshoot .
# Run:  docker run -p 8000:8000 -e SECRET_KEY=... -v troubleshoot-data:/data troubleshoot
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
COPY knowledge ./knowledge
RUN pip install '.[web]' && useradd --system --uid 10001 --home /data troubleshoot \
    && mkdir -p /data && chown troubleshoot /data
USER troubleshoot
WORKDIR /data
# SQLite in the volume by default; set DATABASE_URL=postgresql+psycopg://... for PostgreSQL.
ENV DATABASE_URL=sqlite:////data/troubleshoot.sqlite3 TROUBLESHOOT_UPLOAD_DIR=/data/uploads
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz').status != 200)"
# Migrations once, then gthread workers (settings, and why: gpu_troubleshooter/web/gunicorn_conf.py;
# 0.0.0.0:8000, 2 workers x 4 threads, at most 16 connections per worker; WEB_CONCURRENCY=N for N workers).
# No SECRET_KEY: refuse to start with a clear message (a random key per worker breaks logins and CSRF).
# The access log masks share tokens (GunicornLogger).
CMD ["sh", "-c", ": \"${SECRET_KEY:?set SECRET_KEY to a long random value (and TROUBLESHOOT_BASE_URL to the public address)}\" && troubleshoot db upgrade && exec gunicorn -c python:gpu_troubleshooter.web.gunicorn_conf 'gpu_troubleshooter.web.wsgi:app'"]
