"""The JSON API and its OpenAPI description."""
import gzip
import io

import jsonschema
from conftest import needs_engine_facts, OOM_LOG, add_staff, submit


def _schema(client, name):
    spec = client.get("/api/v1/openapi.json").get_json()
    return {**spec["components"]["schemas"][name], "components": spec["components"]}


def _validate(client, name, doc):
    spec = client.get("/api/v1/openapi.json").get_json()
    schema = {"$ref": f"#/components/schemas/{name}", "components": spec["components"]}
    jsonschema.validate(doc, schema)


def test_openapi_is_served(client):
    spec = client.get("/api/v1/openapi.json").get_json()
    assert spec["openapi"].startswith("3.") and "/diagnose" in spec["paths"]


def test_diagnose_text_body_matches_engine_json(client, web_kb):
    from gpu_troubleshooter.engine import diagnose_text
    r = client.post("/api/v1/diagnose", data=OOM_LOG, content_type="text/plain")
    assert r.status_code == 200
    doc = r.get_json()
    _validate(client, "Diagnosis", doc)
    expected = diagnose_text(OOM_LOG, web_kb).to_dict()
    assert [f["id"] for f in doc["findings"]] == [f["id"] for f in expected["findings"]]
    assert doc["findings"][0]["fixes"] == expected["findings"][0]["fixes"]
    assert doc["lines"] == expected["lines"]


def test_diagnose_multipart_gzip_and_json(client):
    needs_engine_facts()
    r = client.post("/api/v1/diagnose", data={"log": (io.BytesIO(gzip.compress(OOM_LOG.encode())), "x.gz")},
                    content_type="multipart/form-data")
    assert r.get_json()["findings"][0]["id"] == "demo-oom"
    r = client.post("/api/v1/diagnose", json={"log": OOM_LOG, "facts": {"scheduler": {"partition": "gpu"}}})
    assert r.get_json()["facts"] == {"scheduler": {"partition": "gpu"}}
    assert client.post("/api/v1/diagnose", json={"nolog": 1}).status_code == 400


def test_submission_create_and_read(client):
    needs_engine_facts()
    r = client.post("/api/v1/submissions", json={"log": OOM_LOG, "facts": {"scheduler": {"cluster": "c1"}}})
    assert r.status_code == 201
    doc = r.get_json()
    _validate(client, "Submission", doc)
    again = client.get(r.headers["Location"]).get_json()
    assert again["diagnosis"]["findings"][0]["id"] == "demo-oom" and again["cluster"] == "c1"
    assert client.get("/api/v1/submissions/nope").status_code == 404
    t = client.post(f"/api/v1/submissions/{doc['token']}/ticket", json={"message": "hi"})
    assert t.status_code == 201 and t.get_json()["status"] == "new"


def test_staff_endpoints_need_a_valid_token(app, client):
    token_page = submit(client)
    client.post(f"/s/{token_page}/helpdesk", data={"message": "m"})
    assert client.get("/api/v1/tickets").status_code == 401
    assert client.get("/api/v1/tickets", headers={"Authorization": "Bearer wrong"}).status_code == 401
    from gpu_troubleshooter.web import db
    from gpu_troubleshooter.web.auth import new_api_token
    from gpu_troubleshooter.web.models import ApiToken, StaffUser
    uid = add_staff(app)
    with db.new_session(app) as s:
        token = new_api_token(s, s.get(StaffUser, uid), "test")
        s.commit()
        assert token not in [t.token_hash for t in s.query(ApiToken)]  # stored hashed
    auth = {"Authorization": f"Bearer {token}"}
    tickets = client.get("/api/v1/tickets", headers=auth).get_json()["tickets"]
    assert len(tickets) == 1
    tid = tickets[0]["id"]
    r = client.patch(f"/api/v1/tickets/{tid}", headers=auth, json={"status": "in_progress", "assignee_id": uid})
    assert r.get_json()["status"] == "in_progress" and r.get_json()["assignee"] == "alice"
    assert client.patch(f"/api/v1/tickets/{tid}", headers=auth, json={"status": "bogus"}).status_code == 400
    r = client.post(f"/api/v1/tickets/{tid}/notes", headers=auth, json={"text": "called the user"})
    assert r.status_code == 201 and r.get_json()["notes"][0]["text"] == "called the user"
    _validate(client, "Ticket", client.get(f"/api/v1/tickets/{tid}", headers=auth).get_json())
