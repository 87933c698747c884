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


def _staff_token(app):
    from gpu_troubleshooter.web import db
    from gpu_troubleshooter.web.auth import new_api_token
    from gpu_troubleshooter.web.models import StaffUser
    staff_id = add_staff(app, name="crafty")
    with db.new_session(app) as s:
        token = new_api_token(s, s.get(StaffUser, staff_id))
        s.commit()
        return token


def test_crafted_inputs_get_400_never_500(app, client):
    """The web review's list of inputs that gave 500s (§2, table '500s from crafted input')."""
    token = client.post("/api/v1/submissions", json={"log": OOM_LOG}).get_json()["token"]
    client.post(f"/api/v1/submissions/{token}/ticket", json={"message": "help"})
    auth = {"Authorization": "Bearer " + _staff_token(app)}
    cases = [
        ("get", "/api/v1/tickets?limit=abc", None, 400),
        ("get", "/api/v1/tickets?limit=-1", None, 400),
        ("get", "/api/v1/tickets?limit=%C2%B2", None, 400),
        ("get", "/api/v1/tickets?limit=99999999999999999999", None, 400),
        ("get", "/api/v1/tickets/99999999999999999999", None, 404),
        ("patch", "/api/v1/tickets/1", {"assignee_id": 99999999999999999999}, 400),
        ("patch", "/api/v1/tickets/1", {"note": 12345}, 400),
        ("patch", "/api/v1/tickets/1", [1, 2], 400),
        ("post", "/api/v1/tickets/1/notes", [1], 400),
        ("post", "/api/v1/diagnose", {"log": OOM_LOG, "facts": [1]}, 400),
        ("post", "/api/v1/submissions", {"log": OOM_LOG, "facts": "x"}, 400),
        ("post", f"/api/v1/submissions/{token}/ticket", [1], 400),
        ("post", f"/api/v1/submissions/{token}/ticket", {"contact": 5}, 400),
    ]
    for method, path, body, status in cases:
        r = getattr(client, method)(path, json=body, headers=auth)
        assert r.status_code == status, (method, path, body, r.status_code, r.get_data(as_text=True)[:200])


def test_crafted_staff_form_inputs(app, client):
    from conftest import PASSWORD
    add_staff(app)
    client.post("/staff/login", data={"name": "alice", "password": PASSWORD})
    token = client.post("/api/v1/submissions", json={"log": OOM_LOG}).get_json()["token"]
    client.post(f"/api/v1/submissions/{token}/ticket", json={})
    assert client.post("/staff/tickets/1", data={"assignee": "²"}).status_code == 400
    assert client.post("/staff/tickets/1", data={"assignee": "99999999999999999999"}).status_code == 400
    assert client.get("/staff/tickets/99999999999999999999").status_code == 404


def test_login_next_accepts_only_local_paths(app, client):
    from conftest import PASSWORD
    add_staff(app)
    for bad in ("//evil.example/", "/%09/evil.example", "/\t/evil.example", "/%0d%0aSet-Cookie:x=1", "https://evil.example",
                "/\\evil.example", "javascript:alert(1)"):
        client.post("/staff/logout")
        r = client.post(f"/staff/login?next={bad}", data={"name": "alice", "password": PASSWORD})
        assert r.status_code == 303 and r.headers["Location"].endswith("/staff/"), (bad, r.headers.get("Location"))
