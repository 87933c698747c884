"""The submit path: one redactor per upload, the evidence read back from the redacted copy,
and the database work of one small submission (one INSERT, one COMMIT, no other query)."""
import random

import pytest
from sqlalchemy import event

from conftest import OOM_LOG

KEY = ["-----BEGIN RSA PRIVATE KEY-----\n"] + [
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt%04d\n" % i for i in range(40)] + [
    "-----END RSA PRIVATE KEY-----\n"]


def _chunk_text(lines, size):
    """The text cut as the reader cuts it (chunks of at most `size` bytes ending at a newline)."""
    out, cur = [], ""
    for line in lines:
        if cur and len(cur) + len(line) > size:
            out.append(cur)
            cur = ""
        cur += line
    return out + [cur]


def test_redact_chunk_equals_line_by_line_and_keeps_key_state_across_chunks():
    from gpu_troubleshooter.redact import StreamRedactor, redact_lines
    rnd = random.Random(11)
    for trial in range(20):
        lines = [f"[step {i}] loss={rnd.random():.4f} img/s\n" for i in range(rnd.randint(1, 900))]
        for _ in range(rnd.randint(0, 3)):
            at = rnd.randint(0, len(lines))
            lines[at:at] = rnd.choice([KEY, ["export AWS_SECRET_ACCESS_KEY=abcdEFGHijklMNOPqrstUVWXyz0123456789ABCD\n"],
                                       ["mail alice@example.org\n"]])
        expected = "".join(redact_lines(iter(lines)))
        redactor = StreamRedactor()
        got = "".join(redactor.redact_chunk(c) for c in _chunk_text(lines, rnd.choice([300, 2000, 1 << 20])))
        assert got == expected, trial


def test_a_private_key_cut_by_a_chunk_boundary_is_redacted(app, monkeypatch):
    from gpu_troubleshooter import reader
    from gpu_troubleshooter.web.service import diagnose_raw
    import io
    monkeypatch.setattr(reader, "CHUNK_SIZE", 4096)
    filler = "".join(f"[step {i}] training\n" for i in range(180))  # the key starts near the 4 KiB boundary
    log = filler + "".join(KEY) + OOM_LOG
    result, context, tail, hints, nbytes = diagnose_raw(app, io.BytesIO(log.encode()), source="x.log")
    assert "MIIEowIBAAKCAQEA" not in tail and "MIIEowIBAAKCAQEA" not in str(result)
    assert result["findings"][0]["id"] == "demo-oom"


@pytest.mark.parametrize("chunk", [4096, 1 << 22])
def test_evidence_context_is_read_back_from_the_right_chunk(app, monkeypatch, chunk):
    from gpu_troubleshooter import reader
    from gpu_troubleshooter.web.service import diagnose_raw
    import io
    monkeypatch.setattr(reader, "CHUNK_SIZE", chunk)
    lines = [f"[step {i}] loss 0.{i:04d}\n" for i in range(3000)] + OOM_LOG.splitlines(keepends=True)
    result, context, tail, hints, nbytes = diagnose_raw(app, io.BytesIO("".join(lines).encode()), source="x.log")
    shown = [ln for block in context[0] for ln in block["lines"]]
    assert shown and any(ln["hit"] for ln in shown)
    for ln in shown:  # every line shown is the log's line of that number
        assert ln["text"] == lines[ln["n"] - 1].rstrip("\n"), ln


def test_a_small_submission_is_one_insert_and_one_commit(app, client):
    engine = app.extensions["db_engine"]
    statements, commits = [], []

    def on_execute(conn, cursor, statement, *args):
        statements.append(statement.split()[0].upper())

    def on_commit(conn):
        commits.append(1)

    client.get("/healthz")
    event.listen(engine, "before_cursor_execute", on_execute)
    event.listen(engine, "commit", on_commit)
    try:
        r = client.post("/api/v1/submissions", data=OOM_LOG, content_type="text/plain")
    finally:
        event.remove(engine, "before_cursor_execute", on_execute)
        event.remove(engine, "commit", on_commit)
    assert r.status_code == 201 and r.get_json()["ticket"] is None
    assert statements == ["INSERT"] and commits == [1], (statements, commits)
