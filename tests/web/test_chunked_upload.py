"""A chunked upload (Transfer-Encoding: chunked, no Content-Length) is refused by the app itself,
with 413, as soon as it passes the upload limit: a real server (gunicorn as in the Dockerfile, and
the Werkzeug development server of `troubleshoot serve`), a raw request on a socket, a limit of
4 MiB and a client that would send 96 MiB. No nginx in front: this is the app's own limit.
Bounded: a few seconds per server, loopback only."""
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

LIMIT_MB = 4
OFFER_MB = 96
BOUNDARY = "XyZbOuNdArY"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_up(port, proc, deadline_s=60):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            time.sleep(0.2)
    return False


def _chunked_upload(port, path, multipart):
    """Send up to OFFER_MB in chunks, reading the answer as soon as there is one.
    Returns (status line, MiB sent when the answer came)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    ctype = f"multipart/form-data; boundary={BOUNDARY}" if multipart else "text/plain"
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {ctype}\r\n"
              "Transfer-Encoding: chunked\r\n\r\n".encode())

    def chunk(data):
        s.sendall(b"%x\r\n" % len(data) + data + b"\r\n")

    if multipart:
        chunk(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="log"; filename="big.log"\r\n'
              "Content-Type: text/plain\r\n\r\n".encode())
    piece = b"[step 1] loss=0.5 lr=3e-4 throughput=1000 img/s\n" * 1300  # about 64 KiB
    sent, answer = 0, b""
    try:
        while sent < OFFER_MB << 20:
            s.setblocking(False)
            try:
                answer = s.recv(4096)
            except BlockingIOError:
                pass
            s.setblocking(True)
            if answer:
                break
            chunk(piece)
            sent += len(piece)
        else:
            if multipart:
                chunk(f"\r\n--{BOUNDARY}--\r\n".encode())
            s.sendall(b"0\r\n\r\n")
    except OSError:  # the server closed while we were still sending: its answer is still there to read
        pass
    s.setblocking(True)
    try:
        while b"\r\n" not in answer:
            data = s.recv(4096)
            if not data:
                break
            answer += data
    except OSError:
        pass
    s.close()
    return answer.split(b"\r\n", 1)[0].decode(errors="replace"), sent / (1 << 20)


def _open_upload_files(pids, upload_dir):
    """Files under upload_dir the server processes still hold open (spool files are unlinked ones)."""
    held = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith(str(upload_dir)):
                held.append(target)
    return held


def _children(pid):
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [int(p) for p in out.split()]


@pytest.mark.parametrize("server", ["gunicorn", "werkzeug"])
def test_chunked_upload_is_refused_when_it_passes_the_limit(tmp_path, server):
    pytest.importorskip("gunicorn")
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc")
    port = _free_port()
    env = dict(os.environ, SECRET_KEY="chunked-test-" + "k" * 32, DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
               TROUBLESHOOT_UPLOAD_DIR=str(tmp_path / "uploads"), TROUBLESHOOT_MAX_UPLOAD_MB=str(LIMIT_MB),
               RATELIMIT_ENABLED="0")
    subprocess.run([sys.executable, "-m", "gpu_troubleshooter", "db", "upgrade"], env=env, cwd=tmp_path, check=True,
                   capture_output=True, timeout=120)
    if server == "gunicorn":
        cmd = [sys.executable, "-m", "gunicorn", "-c", "python:gpu_troubleshooter.web.gunicorn_conf",
               "--bind", f"127.0.0.1:{port}", "--access-logfile", "/dev/null", "gpu_troubleshooter.web.wsgi:app"]
    else:
        cmd = [sys.executable, "-c", "from gpu_troubleshooter.web import create_app; "
               f"create_app().run(host='127.0.0.1', port={port}, threaded=True, use_reloader=False)"]
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / "server.log", "wb"), start_new_session=True)
    try:
        assert _wait_up(port, proc), (tmp_path / "server.log").read_text()[-2000:]
        for path, multipart in (("/api/v1/submissions", True), ("/api/v1/diagnose", True),
                                ("/api/v1/submissions", False)):
            status, sent_mb = _chunked_upload(port, path, multipart)
            assert " 413 " in status + " ", (path, multipart, status)
            # Refused once the limit was passed: what was sent is the limit plus what the
            # loopback socket buffers hold, far from the 96 MiB offered.
            assert LIMIT_MB <= sent_mb < LIMIT_MB + 24, (path, multipart, sent_mb)
        time.sleep(0.5)
        pids = [proc.pid] + _children(proc.pid)
        assert _open_upload_files(pids, tmp_path / "uploads") == []  # the spool files are closed: nothing kept on disk
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
            assert r.status == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
