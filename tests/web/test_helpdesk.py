"""The helpdesk learns: unknown failures grouped, drafts from a group, feedback, outages."""
import json
import random
import re
import string
from pathlib import Path

import yaml
from conftest import OOM_LOG, submit

from gpu_troubleshooter.web import db
from gpu_troubleshooter.web.models import Feedback, Submission


def _word(rng, n=7):
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))


def unknown_log(rng, exception, node=None):
    """A job that dies of an error no entry knows, with numbers, paths and hosts that vary."""
    node = node or f"gpu-{rng.choice('abc')}{rng.randint(100, 999)}"
    return "\n".join([
        f"job {rng.randint(10**5, 10**6)} on {node}",
        *(f"step {i} loss={rng.random():.3f}" for i in range(30)),
        "Traceback (most recent call last):",
        f'  File "/home/u{rng.randint(1, 99)}/proj/train.py", line {rng.randint(10, 500)}, in main',
        "    load()",
        f"{exception}: shard /scratch/u{rng.randint(1, 99)}/data/part-{rng.randint(0, 9999)}.bin has {rng.randint(1, 10**6)} bad records",
        f"srun: error: {node}: task {rng.randint(0, 7)}: Exited with exit code 1",
        "",
    ])


def test_ten_of_one_unknown_error_form_one_group_and_three_errors_three(app, staff_client):
    rng = random.Random(42)
    errors = ["".join(_word(rng, 1).upper() + _word(rng)) + "Error" for _ in range(3)]
    for _ in range(10):
        submit(staff_client, log=unknown_log(rng, errors[0]))
    for exc in errors[1:]:
        submit(staff_client, log=unknown_log(rng, exc))
    with db.new_session(app) as s:
        keys = [r.template_key for r in s.query(Submission).all()]
    assert all(keys), "every unknown failure gets a key line and a template"
    assert sorted(keys.count(k) for k in set(keys)) == [1, 1, 10]
    html = staff_client.get("/staff/unknown/").get_data(as_text=True)
    assert len(re.findall(r'href="/staff/unknown/[0-9a-f]{16}"', html)) == 3
    assert errors[0] in html and "&lt;NUM&gt;" in html and "&lt;PATH&gt;" in html


def test_draft_from_a_group_validates_and_matches_its_logs(app, staff_client, tmp_path):
    from gpu_troubleshooter.knowledge import parse_entry
    from gpu_troubleshooter.web.helpdesk import signature_of
    rng = random.Random(5)
    exc = "ShardChecksum" + _word(rng) + "Error"
    logs = [unknown_log(rng, exc) for _ in range(3)]
    for log in logs:
        submit(staff_client, log=log)
    with db.new_session(app) as s:
        row = s.query(Submission).first()
        key, template = row.template_key, row.key_template
    r = staff_client.post(f"/staff/unknown/{key}/draft")
    assert r.status_code == 303
    folder = app.config["DRAFT_KB_DIR"]
    drafts = list(Path(folder).rglob("draft-*.yaml"))
    assert len(drafts) == 1
    entry = yaml.safe_load(drafts[0].read_text())
    assert entry["draft"] is True and entry["id"] == drafts[0].stem
    rx = re.compile(signature_of(template), re.IGNORECASE)
    for log in logs:  # the signature matches every log of the group
        assert any(rx.search(line) for line in log.splitlines())
    examples = list((drafts[0].parent / drafts[0].stem / "must-match").glob("*.log"))
    assert len(examples) == 3
    entry, problems = parse_entry(drafts[0])
    assert problems == [] and entry is not None, problems
    # kb validate: the draft's examples run, and its missing near misses are warnings, not errors
    from gpu_troubleshooter.validate import validate
    found, summary = validate(folder)
    assert not [p for p in found if not p.warning and drafts[0].stem in str(p)], found
    assert any(p.warning and "near misses" in p.message and "draft" in p.message for p in found)
    # and a draft never diagnoses until it is promoted
    from gpu_troubleshooter.engine import diagnose_text
    from gpu_troubleshooter.knowledge import load_knowledge_base
    kb = load_knowledge_base(extra_dirs=(folder,), bundled=False)
    assert entry.id in {d.id for d in kb.drafts} and entry.id not in {e.id for e in kb.entries}
    assert entry.id not in {f.id for f in diagnose_text(logs[0], kb).findings}


def test_feedback_is_stored_redacted_and_counted_per_entry(app, staff_client):
    token = submit(staff_client, log=OOM_LOG)
    secret = "hf_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7"
    r = staff_client.post(f"/s/{token}/feedback", data={"verdict": "fixed", "fix": "2", "comment": f"worked, token {secret}"})
    assert r.status_code == 303
    r = staff_client.post(f"/api/v1/submissions/{token}/feedback", json={"verdict": "wrong_diagnosis", "comment": "no"})
    assert r.status_code == 201
    assert staff_client.post(f"/api/v1/submissions/{token}/feedback", json={"verdict": "maybe"}).status_code == 400
    assert staff_client.post(f"/api/v1/submissions/{token}/feedback", json=[1]).status_code == 400
    with db.new_session(app) as s:
        rows = s.query(Feedback).all()
        assert {f.verdict for f in rows} == {"fixed", "wrong_diagnosis"}
        assert all(secret not in f.comment for f in rows)
        assert {f.entry_id for f in rows} == {"demo-oom"}
        assert [f.fix_taken for f in rows if f.verdict == "fixed"] == [2]
    html = staff_client.get("/staff/figures").get_data(as_text=True)
    row = html[html.index('>demo-oom</a>'):][:400]
    assert "<td>1</td><td>1</td><td>0</td><td>1</td>" in row and "#2: 1" in row


def test_burst_on_one_node_raises_the_outage_banner(app, staff_client):
    rng = random.Random(11)
    for i in range(4):
        submit(staff_client, log=unknown_log(rng, f"Thing{i}Error", node="gpu-a017"))
    html = staff_client.get("/staff/").get_data(as_text=True)
    assert "Possible outage on node gpu-a017" in html
    assert "scontrol update NodeName=gpu-a017 State=DRAIN" in html
    outages = staff_client.get("/api/v1/outages").status_code  # staff token required
    assert outages == 401


def test_failures_spread_over_many_nodes_raise_no_banner(app, staff_client):
    rng = random.Random(12)
    for i in range(12):
        submit(staff_client, log=unknown_log(rng, "SameError", node=f"node{100 + i}"))
    html = staff_client.get("/staff/").get_data(as_text=True)
    assert "Possible outage" not in html


def test_node_comes_from_facts_before_the_log(app, staff_client):
    rng = random.Random(13)
    facts = {"facts": {"host": {"hostname": "gpu-z999"}}}
    submit(staff_client, log=unknown_log(rng, "XError", node="gpu-a001"), facts=json.dumps(facts))
    with db.new_session(app) as s:
        assert s.query(Submission).one().node == "gpu-z999"


def test_promoted_entry_answers_past_submissions(app, staff_client, tmp_path):
    """A new entry (here: a site folder added after the fact) gives past unknowns their answer."""
    rng = random.Random(21)
    token = submit(staff_client, log=unknown_log(rng, "QuotaShardError"))
    with db.new_session(app) as s:
        assert s.query(Submission).one().failure_class == ""
    site = tmp_path / "site"
    (site / "storage").mkdir(parents=True)
    (site / "storage" / "quota-shard.yaml").write_text("""id: quota-shard
title: A data shard failed its checksum
summary: the shard file is damaged
tags: [storage]
severity: error
signatures:
  - regex: 'QuotaShardError: shard'
    weight: 1.0
causes: [a damaged file]
fixes:
  - title: Copy the shard again
    text: Copy it again from the source.
""")
    from gpu_troubleshooter.web.service import rediagnose_unknown
    app.config["KB_DIRS"] = (str(site),)
    app.config["KB_BUNDLED"] = False
    with app.app_context():
        with db.new_session(app) as s:
            assert rediagnose_unknown(app, s) == 1
    html = staff_client.get(f"/s/{token}").get_data(as_text=True)
    assert "A data shard failed its checksum" in html
    with db.new_session(app) as s:
        row = s.query(Submission).one()
        assert row.failure_class == "quota-shard" and row.diagnosis["findings"][0]["evidence"][0]["line"] == 35  # the line in the whole log
