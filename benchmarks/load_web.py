"""Load benchmark: gunicorn on loopback, a threaded Python client POSTing a 50 KB log to /api/v1/diagnose.

    .venv/bin/python benchmarks/load_web.py [--seconds 15] [--concurrency 8] [--workers 2]

Bounded in time, talks only to 127.0.0.1. Prints requests/s and p50/p99 latency.
"""
import argparse
import http.client
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OOM = (ROOT / "tests" / "web" / "data" / "slurm-oom.out").read_text()


def make_log(size=50_000):
    rnd = random.Random(1)
    lines = []
    while sum(map(len, lines)) < size - len(OOM):
        lines.append(f"[step {len(lines)}] loss={rnd.random():.4f} lr=3e-4 throughput={rnd.randint(900, 1200)} img/s\n")
    return ("".join(lines) + OOM).encode()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, deadline):
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/healthz")
            if c.getresponse().status == 200:
                return True
        except OSError:
            time.sleep(0.2)
    return False


def client(port, body, stop_at, latencies, errors):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while time.time() < stop_at:
        t0 = time.perf_counter()
        try:
            conn.request("POST", "/api/v1/diagnose", body=body, headers={"Content-Type": "text/plain"})
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                errors.append(resp.status)
                continue
        except OSError as exc:
            errors.append(str(exc))
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            continue
        latencies.append(time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    body, port = make_log(), free_port()
    tmp = tempfile.mkdtemp(prefix="load-web-")
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3", "TROUBLESHOOT_UPLOAD_DIR": f"{tmp}/up",
           "SECRET_KEY": "bench", "RATELIMIT_ENABLED": "0"}
    gunicorn = Path(sys.executable).with_name("gunicorn")
    proc = subprocess.Popen([str(gunicorn), "--bind", f"127.0.0.1:{port}", "--workers", str(args.workers),
                             "--threads", "4", "--worker-class", "gthread", "--preload", "--log-level", "warning",
                             "gpu_troubleshooter.web.wsgi:app"], env=env, cwd=tmp)
    try:
        if not wait_ready(port, time.time() + 60):
            sys.exit("gunicorn did not start")
        warm = []
        client(port, body, time.time() + 1, warm, [])  # compile the KB, fill caches
        latencies, errors = [], []
        stop_at = time.time() + args.seconds
        threads = [threading.Thread(target=client, args=(port, body, stop_at, latencies, errors))
                   for _ in range(args.concurrency)]
        t0 = time.time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.time() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    latencies.sort()
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0] * 99
    print(f"log {len(body)} bytes, {args.workers} gunicorn workers x 4 threads, {args.concurrency} clients, "
          f"{elapsed:.1f} s on {os.cpu_count()} CPUs")
    print(f"requests: {len(latencies)} ok, {len(errors)} errors")
    print(f"throughput: {len(latencies) / elapsed:.1f} requests/s")
    print(f"latency: p50 {q[49] * 1000:.1f} ms, p99 {q[98] * 1000:.1f} ms")


if __name__ == "__main__":
    main()
