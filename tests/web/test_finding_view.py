"""The web pages render the same finding view as the terminal and the JSON:
who must act, the broader entry, and fixes that do not fit this job."""
from dataclasses import replace

import pytest
from conftest import make_app

SITE_ENTRY = """id: {id}
title: Node {id}
summary: a node fault
tags: [node]
severity: error
{extra}signatures:
  - literal: "NODE_FAULT_{id}"
    weight: 1.0
causes: [hardware]
fixes:
  - {{title: Drain the node, text: "scontrol update nodename=x state=drain", scheduler: slurm}}
  - {{title: Offline the node, text: "pbsnodes -o x", scheduler: pbs}}
"""


@pytest.fixture
def site_app(tmp_path):
    from gpu_troubleshooter.knowledge import load_knowledge_base
    from gpu_troubleshooter.cache import Cache
    site = tmp_path / "site"
    site.mkdir()
    (site / "node-fault.yaml").write_text(SITE_ENTRY.format(id="node-fault", extra=""))
    (site / "node-ecc.yaml").write_text(SITE_ENTRY.format(id="node-ecc", extra="actor: site\nrefines: node-fault\n"))
    kb = load_knowledge_base([site], strict=True, bundled=False, cache=Cache(None))
    app = make_app(f"sqlite:///{tmp_path}/web.sqlite3", tmp_path, kb)
    yield app, kb
    app.extensions["db_engine"].dispose()


def test_result_page_says_who_acts_and_marks_fixes_for_another_scheduler(site_app):
    from flask import render_template
    from gpu_troubleshooter.engine import diagnose_text
    app, kb = site_app
    d = replace(diagnose_text("NODE_FAULT_node-ecc\n", kb), scheduler="pbs").to_dict()
    assert [(f["title"], f["held"]) for f in d["findings"][0]["fixes"]] == [("Offline the node", True),
                                                                            ("Drain the node", False)]
    with app.test_request_context():
        html = render_template("_diagnosis.html", d=d, row={"state": "done", "context": None}, kb_size=2)
    assert "Your site&#39;s admins must fix this" in html or "Your site's admins must fix this" in html
    assert 'href="/kb/node-fault"' in html and html.index("Offline the node") < html.index("Drain the node")
    assert "probably not for this job" in html


def test_entry_page_says_who_acts(site_app):
    app, _ = site_app
    html = app.test_client().get("/kb/node-ecc").get_data(as_text=True)
    assert "admins must fix this" in html and "A finer case of" in html and "node-fault" in html
