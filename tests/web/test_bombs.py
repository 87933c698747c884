"""Decompression bombs: besides the decompressed-size limit, an expansion-ratio limit and a
processor-time budget per log (reader.LogReader max_ratio / cpu_seconds, set by the web).

Bombs are made of concatenated gzip members (the reader reads them all), so a 1 GiB bomb of
about 1 MB is built in milliseconds."""
import gzip
import io
import random
import re
import time

import pytest

from conftest import OOM_LOG, close_app, make_app


def _bomb(mib, unit=b"0"):
    """gzip of `mib` MiB of `unit` repeated, as 1 MiB members."""
    return gzip.compress(unit * ((1 << 20) // len(unit)), 9) * mib


def _diagnose(client, data):
    return client.post("/api/v1/diagnose", data=data, content_type="application/gzip")


def test_one_gib_of_zero_characters_is_refused_by_its_expansion(client):
    data = _bomb(1024)
    assert len(data) < 2 << 20
    r = _diagnose(client, data)
    assert r.status_code == 422, r.get_data(as_text=True)
    message = r.get_json()["message"]
    assert "expands more than 200 times" in message and "tail -c" in message
    read = int(re.search(r"became more than ([\d,]+)\)", message).group(1).replace(",", ""))
    assert read < 64 << 20  # stopped after tens of MiB, not after the 800 MiB size limit


def test_one_gib_of_nul_bytes_is_refused_at_once(client):
    r = _diagnose(client, _bomb(1024, b"\x00"))
    assert r.status_code == 422 and "NUL" in r.get_json()["message"]


def test_repeated_lines_bomb_is_refused(client, monkeypatch):
    from gpu_troubleshooter import reader
    monkeypatch.setattr(reader, "RATIO_FROM", 1 << 20)  # a few MiB are enough to see the ratio
    r = _diagnose(client, _bomb(8, b"step 1 loss 0.5\n"))
    assert r.status_code == 422 and "expands more than" in r.get_json()["message"]


def test_a_real_compressed_log_over_the_ratio_threshold_is_diagnosed(client, monkeypatch):
    from gpu_troubleshooter import reader
    monkeypatch.setattr(reader, "RATIO_FROM", 1 << 20)
    rnd = random.Random(3)
    body = "".join(f"[step {i}] loss={rnd.random():.4f} lr=3e-4 throughput={rnd.randint(900, 1200)} img/s\n"
                   for i in range(60_000)) + OOM_LOG
    data = gzip.compress(body.encode())
    assert len(body) > 2 * reader.RATIO_FROM and len(body) / len(data) > 2
    r = _diagnose(client, data)
    assert r.status_code == 200 and r.get_json()["findings"][0]["id"] == "demo-oom"


def test_processor_time_budget(db_url, tmp_path, web_kb, monkeypatch):
    from gpu_troubleshooter import reader
    monkeypatch.setattr(reader, "CHUNK_SIZE", 64 << 10)
    app = make_app(db_url, tmp_path, web_kb, SCAN_CPU_SECONDS=1e-6)
    try:
        r = app.test_client().post("/api/v1/diagnose", data=("x y z\n" * 100_000 + OOM_LOG).encode(),
                                   content_type="text/plain")
        assert r.status_code == 422 and "processor time" in r.get_json()["message"]
    finally:
        close_app(app)


def test_a_bomb_sent_for_a_background_scan_ends_as_a_failed_submission(client):
    r = client.post("/api/v1/submissions", data=_bomb(1024), content_type="application/gzip")
    assert r.status_code == 202  # 1 MB of gzip: scanned in the background
    token = r.get_json()["token"]
    deadline = time.time() + 120
    while time.time() < deadline:
        doc = client.get(f"/api/v1/submissions/{token}").get_json()
        if doc["state"] != "processing":
            break
        time.sleep(0.1)
    assert doc["state"] == "error" and "expands more than 200 times" in doc["error"]


@pytest.mark.parametrize("limits", [{}, {"max_ratio": 200, "cpu_seconds": 60}])
def test_the_cli_reader_is_unchanged_without_limits(limits):
    from gpu_troubleshooter import reader
    data = _bomb(4, b"ok line\n")
    got = b"".join(reader.LogReader(reader.open_log(io.BytesIO(data)), "x", **limits).chunks())
    assert got == b"ok line\n" * (4 << 17)  # 4 MiB < RATIO_FROM: never refused
