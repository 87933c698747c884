"""The web service reads a log through the command line's reader, once."""
import bz2
import gzip
import io
import lzma
import threading

import pytest

from conftest import OOM_LOG


def _ids(doc):
    return [f["id"] for f in doc["findings"]]


@pytest.mark.parametrize("encode", [
    lambda b: gzip.compress(b), lambda b: bz2.compress(b), lambda b: lzma.compress(b),
    lambda b: b.decode().encode("utf-16"), lambda b: b"\x00" * 4096 + b"\n" + b,
], ids=["gzip", "bzip2", "xz", "utf-16", "nul-block"])
def test_web_reads_what_the_cli_reads(client, web_kb, encode):
    from gpu_troubleshooter.engine import diagnose_text
    expected = diagnose_text(OOM_LOG, web_kb).to_dict()
    r = client.post("/api/v1/diagnose", data={"log": (io.BytesIO(encode(OOM_LOG.encode())), "slurm-1.out")},
                    content_type="multipart/form-data")
    assert r.status_code == 200, r.get_data(as_text=True)
    assert _ids(r.get_json()) == _ids(expected) and _ids(expected)


def test_truncated_gzip_upload_is_diagnosed_with_a_warning(client):
    data = gzip.compress((OOM_LOG + "step 1 loss 0.5\n" * 300_000).encode())
    r = client.post("/api/v1/diagnose", data=data[: len(data) // 2], content_type="application/gzip")
    assert r.status_code == 200
    doc = r.get_json()
    assert _ids(doc)[:1] == ["demo-oom"] and "damaged" in doc["warnings"][0]


def test_binary_upload_is_refused_with_the_readers_message(client):
    r = client.post("/api/v1/diagnose", data=b"\x7fELF" + b"\x00" * 200, content_type="application/octet-stream")
    assert r.status_code == 422 and "executable" in r.get_json()["message"]


def test_the_upload_is_read_once_and_not_read_back(app, web_kb, monkeypatch):
    from gpu_troubleshooter import engine
    from gpu_troubleshooter.web.service import diagnose_raw

    class Counting(io.BytesIO):
        reads = 0

        def read(self, *a):
            data = super().read(*a)
            Counting.reads += len(data)
            return data

        def readinto(self, b):
            n = super().readinto(b)
            Counting.reads += n
            return n

    monkeypatch.setattr(engine, "diagnose_path", lambda *a, **k: pytest.fail("the redacted copy was read back whole"))
    raw = Counting((OOM_LOG * 50).encode())
    result, context, tail, hints, nbytes = diagnose_raw(app, raw, source="x.log")
    assert nbytes == len((OOM_LOG * 50).encode()) <= Counting.reads < 1.1 * nbytes  # once, not twice
    assert result["findings"][0]["id"] == "demo-oom" and context[0][0]["lines"]
    assert tail.splitlines()[-1] == OOM_LOG.rstrip("\n").splitlines()[-1]


def test_concurrent_requests_share_one_compiled_kb(app):
    """One Hyperscan scratch per thread: gunicorn gthread workers scan at once."""
    errors, statuses = [], []
    log = (OOM_LOG + "step 1 loss 0.5\n" * 2000) * 3

    def work():
        client = app.test_client()
        try:
            for _ in range(6):
                r = client.post("/api/v1/diagnose", data=log, content_type="text/plain")
                statuses.append((r.status_code, _ids(r.get_json())[:1]))
        except Exception as e:  # noqa: BLE001 - asserted below
            errors.append(repr(e))

    threads = [threading.Thread(target=work) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and statuses == [(200, ["demo-oom"])] * 60
