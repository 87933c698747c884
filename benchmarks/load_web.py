"""Load benchmark: gunicorn as in the Dockerfile on loopback, threaded clients on the same machine.

    .venv/bin/python benchmarks/load_web.py [--endpoint submissions|diagnose] [--seconds 20]
        [--concurrency 8 32] [--database URL]

gunicorn: as the Dockerfile runs it (gpu_troubleshooter/web/gunicorn_conf.py; --workers and
--threads override it), migrations run once before it starts. Every client POSTs a 50 KB failing log (a Slurm CUDA OOM at the end). Counts as
an error: any status but 200/201/202 (429, 503 and 5xx included) and any connection error.
Afterwards: submissions still "processing" in the database (stuck), and a sample of the created
links read back (GET /api/v1/submissions/<token> must be 200 with a diagnosis). Bounded in
time, talks only to 127.0.0.1. --database takes a PostgreSQL URL (an empty database; its
tables are created); SQLite in a temp folder by default.
"""
import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OOM = (ROOT / "tests" / "web" / "data" / "slurm-oom.out").read_text()
OK = {200, 201, 202}


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


def client(port, path, body, stop_at, latencies, errors, tokens):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while time.time() < stop_at:
        t0 = time.perf_counter()
        try:
            conn.request("POST", path, body=body, headers={"Content-Type": "text/plain"})
            resp = conn.getresponse()
            data = resp.read()
        except OSError as exc:
            errors.append(type(exc).__name__)
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            continue
        if resp.status not in OK:
            errors.append(resp.status)
            continue
        took = time.perf_counter() - t0
        if path.endswith("/submissions"):
            doc = json.loads(data)
            if doc["state"] == "error":  # stored, but the user got no diagnosis: an error too
                errors.append("scan error")
                continue
            tokens.append(doc["token"])
        latencies.append(took)
    conn.close()


def pct(sorted_values, p):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(round(p / 100 * (len(sorted_values) - 1))))]


def read_back(port, tokens, n=200):
    """GET a sample of the created links: each must be 200 and hold a finished diagnosis."""
    bad = 0
    sample = random.Random(2).sample(tokens, min(n, len(tokens)))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for tok in sample:
        conn.request("GET", f"/api/v1/submissions/{tok}")
        resp = conn.getresponse()
        data = resp.read()
        if resp.status != 200 or json.loads(data).get("state") != "done" or not json.loads(data).get("diagnosis"):
            bad += 1
    return len(sample), bad


def stuck_count(db_url):
    from sqlalchemy import create_engine, text
    engine = create_engine(db_url)
    with engine.connect() as c:
        counts = dict(c.execute(text("SELECT state, COUNT(*) FROM submission GROUP BY state")).all())
    engine.dispose()
    return counts


def server_cpu(pid):
    """CPU seconds (user + system) used so far by gunicorn `pid` and its workers (Linux /proc), or None."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    try:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(entry) == pid or int(fields[1]) == pid:  # fields[1]: the parent's pid
                total += int(fields[11]) + int(fields[12])
    except OSError:
        return None
    return total / tick


def run_one(args, port, body, concurrency, db_url, server_pid=None):
    path = f"/api/v1/{args.endpoint}"
    client(port, path, body, time.time() + 1, [], [], [])  # warm both workers' caches
    latencies, errors, tokens = [], [], []
    cpu0 = server_cpu(server_pid) if server_pid else None
    stop_at = time.time() + args.seconds
    threads = [threading.Thread(target=client, args=(port, path, body, stop_at, latencies, errors, tokens))
               for _ in range(concurrency)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.time() - t0
    cpu1 = server_cpu(server_pid) if server_pid else None
    latencies.sort()
    load = os.getloadavg()
    print(f"{args.endpoint}, {concurrency} clients, {elapsed:.1f} s, {db_url.split(':')[0]}, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    codes = {}
    for e in errors:
        codes[e] = codes.get(e, 0) + 1
    print(f"  ok {len(latencies)}, errors {len(errors)} {codes or ''}")
    print(f"  throughput {len(latencies) / elapsed:.1f}/s, latency p50 {pct(latencies, 50) * 1000:.0f} ms, "
          f"p99 {pct(latencies, 99) * 1000:.0f} ms, max {pct(latencies, 100) * 1000:.0f} ms")
    if cpu0 is not None and cpu1 is not None and latencies:
        # Processor time of gunicorn per answer: unlike the rates, hardly moved by other load on the machine.
        print(f"  gunicorn CPU {cpu1 - cpu0:.1f} s, {(cpu1 - cpu0) / (len(latencies) + len(errors)) * 1000:.2f} ms per request")
    if args.endpoint == "submissions":
        time.sleep(1)
        states = stuck_count(db_url)
        sampled, bad = read_back(port, tokens)
        print(f"  submissions by state {states}; stuck processing: {states.get('processing', 0)}; "
              f"links read back: {sampled}, failing {bad}")


def bomb(port):
    """A 1 GiB-of-zeros gzip: how long until its link says it was refused."""
    import gzip
    data = gzip.compress(b"0" * (1 << 20), 9) * 1024  # 1024 members of 1 MiB: 1 GiB once decompressed
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.perf_counter()
    conn.request("POST", "/api/v1/submissions", body=data, headers={"Content-Type": "application/gzip"})
    resp = conn.getresponse()
    doc = json.loads(resp.read())
    while doc.get("state") == "processing":
        time.sleep(0.05)
        conn.request("GET", f"/api/v1/submissions/{doc['token']}")
        doc = json.loads(conn.getresponse().read())
    print(f"bomb: {len(data):,} bytes of gzip (1 GiB of '0'), HTTP {resp.status}, state {doc.get('state')} "
          f"after {time.perf_counter() - t0:.2f} s: {doc.get('error') or doc.get('message')}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", choices=["submissions", "diagnose", "bomb"], default="submissions",
                    help="bomb: one 1 GiB-of-'0' gzip (1 MB) to /submissions, timed until it is refused")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--workers", type=int, help="override the configuration's (gunicorn_conf.py)")
    ap.add_argument("--threads", type=int, help="override the configuration's (gunicorn_conf.py)")
    ap.add_argument("--legacy-settings", action="store_true",
                    help="gunicorn as the Dockerfile ran it before gunicorn_conf.py: 2 workers x 8 threads, no "
                         "connection cap (to measure a before/after with PYTHONPATH=<old checkout>/app)")
    ap.add_argument("--database", help="postgresql+psycopg://... (default: SQLite in a temp folder)")
    args = ap.parse_args()
    body, port = make_log(), free_port()
    tmp = tempfile.mkdtemp(prefix="load-web-")
    db_url = args.database or f"sqlite:///{tmp}/db.sqlite3"
    env = {**os.environ, "DATABASE_URL": db_url, "TROUBLESHOOT_UPLOAD_DIR": f"{tmp}/up",
           "SECRET_KEY": "bench-" + "x" * 32, "RATELIMIT_ENABLED": "0"}
    bindir = Path(sys.executable).parent
    subprocess.run([str(bindir / "troubleshoot"), "db", "upgrade"], env=env, check=True, capture_output=True)
    if args.legacy_settings:
        settings = ["--workers", "2", "--threads", "8", "--worker-class", "gthread", "--timeout", "60"]
    else:  # the Dockerfile's: the settings module of the package
        settings = ["-c", "python:gpu_troubleshooter.web.gunicorn_conf"]
    for name in ("workers", "threads"):
        if getattr(args, name):
            settings += [f"--{name}", str(getattr(args, name))]
    # The access log is written (as in production) but to /dev/null.
    proc = subprocess.Popen([str(bindir / "gunicorn"), *settings, "--bind", f"127.0.0.1:{port}",
                             "--access-logfile", "/dev/null",
                             "--logger-class", "gpu_troubleshooter.web.accesslog.GunicornLogger",
                             "--log-level", "warning", "gpu_troubleshooter.web.wsgi:app"], env=env, cwd=tmp)
    try:
        if not wait_ready(port, time.time() + 90):
            sys.exit("gunicorn did not start")
        print(f"log {len(body)} bytes; gunicorn {' '.join(settings)}")
        if args.endpoint == "bomb":
            bomb(port)
            return
        for n in args.concurrency:
            run_one(args, port, body, n, db_url, proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
