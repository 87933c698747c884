"""Slow clients behind the shipped nginx config (deploy/nginx.conf).

gunicorn as in the Dockerfile (gunicorn_conf.py: gthread, 2 workers x 4 threads) on a loopback
port, Debian's nginx in front of it, run as the test user with its pid, logs
and temp files in tmp. 40 connections send their request headers one line a
second; /healthz through nginx must keep answering quickly. Bounded: about
10 s, loopback only, everything stopped at the end.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import required

ROOT = Path(__file__).resolve().parents[2]
NGINX_CONF = ROOT / "deploy" / "nginx.conf"


def _nginx():
    path = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if not path:
        if required("nginx"):
            pytest.fail("REQUIRE_NGINX=1 but nginx is not installed")
        pytest.skip("nginx not installed")
    return path


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url, timeout):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status


def _wait_up(url, deadline_s, proc=None):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            if _get(url, 2) == 200:
                return True
        except OSError:
            time.sleep(0.2)
    return False


def _wrapped_conf(tmp, app_port, proxy_port):
    """The shipped server block, on loopback ports, inside an http block whose paths are all in tmp."""
    server = NGINX_CONF.read_text()
    assert "127.0.0.1:8000" in server and "listen 80;" in server
    server = server.replace("127.0.0.1:8000", f"127.0.0.1:{app_port}")
    server = server.replace("listen 80;", f"listen 127.0.0.1:{proxy_port};")
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers may not drop to nobody: tmp is ours
    temps = "\n".join(f"    {kind}_temp_path {tmp}/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return (f"{user}worker_processes 1;\npid {tmp}/nginx.pid;\nerror_log {tmp}/error.log;\n"
            f"events {{ worker_connections 256; }}\n"
            f"http {{\n    access_log off;\n{temps}\n{server}\n}}\n")


def test_config_limits_match_the_app():
    """client_max_body_size equals the app's default upload limit; request buffering is on."""
    from gpu_troubleshooter.web import config
    text = NGINX_CONF.read_text()
    limit_mb = int(re.search(r"client_max_body_size\s+(\d+)m;", text).group(1))
    assert limit_mb * 1024 * 1024 == config.from_environment("/nonexistent")["MAX_CONTENT_LENGTH"]
    assert re.search(r"proxy_request_buffering\s+on;", text)
    assert re.search(r"client_header_timeout\s+\d+s;", text) and re.search(r"client_body_timeout\s+\d+s;", text)


def test_slow_header_clients_do_not_starve_gunicorn(tmp_path):
    nginx = _nginx()
    pytest.importorskip("gunicorn")
    app_port, proxy_port = _free_port(), _free_port()
    env = dict(os.environ, SECRET_KEY="test-" + "x" * 40, DATABASE_URL=f"sqlite:///{tmp_path}/slow.sqlite3",
               TROUBLESHOOT_UPLOAD_DIR=str(tmp_path / "uploads"), TROUBLESHOOT_PROXY_COUNT="1")
    # As the Dockerfile: migrate once, then start the workers (two workers migrating one SQLite file race).
    subprocess.run([sys.executable, "-m", "gpu_troubleshooter", "db", "upgrade"], env=env, cwd=tmp_path, check=True,
                   capture_output=True, timeout=120)
    gunicorn = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "python:gpu_troubleshooter.web.gunicorn_conf",
         "--bind", f"127.0.0.1:{app_port}", "gpu_troubleshooter.web.wsgi:app"],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "gunicorn.log", "wb"),
        start_new_session=True)
    ngx = None
    clients = []
    try:
        assert _wait_up(f"http://127.0.0.1:{app_port}/healthz", 60, gunicorn), \
            (tmp_path / "gunicorn.log").read_text()[-2000:]
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (tmp_path / kind).mkdir()
        conf = tmp_path / "nginx.conf"
        conf.write_text(_wrapped_conf(tmp_path, app_port, proxy_port))
        ngx = subprocess.Popen([nginx, "-p", str(tmp_path), "-c", str(conf), "-g", "daemon off;"],
                               stdout=subprocess.DEVNULL, stderr=open(tmp_path / "nginx.stderr", "wb"))
        proxied = f"http://127.0.0.1:{proxy_port}/healthz"
        assert _wait_up(proxied, 10, ngx), (tmp_path / "nginx.stderr").read_text() + (tmp_path / "error.log").read_text()

        # 40 slow-loris connections: a partial request, then one more header line a second.
        for _ in range(40):
            c = socket.create_connection(("127.0.0.1", proxy_port), timeout=5)
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
            clients.append(c)
        probes = []
        end = time.monotonic() + 6
        n = 0
        while time.monotonic() < end:
            for c in clients:
                try:
                    c.sendall(b"X-Slow-%d: a\r\n" % n)
                except OSError:
                    pass  # nginx may close it; that is its job
            n += 1
            t0 = time.monotonic()
            try:
                status = _get(proxied, 3)
            except OSError as exc:
                status = repr(exc)
            probes.append((status, round(time.monotonic() - t0, 2)))
            time.sleep(max(0.0, 1 - (time.monotonic() - t0)))
        assert len(probes) >= 4
        assert all(status == 200 and took < 3 for status, took in probes), probes
    finally:
        for c in clients:
            c.close()
        if ngx is not None:
            ngx.terminate()
            ngx.wait(10)
        os.killpg(gunicorn.pid, signal.SIGTERM)
        gunicorn.wait(30)
