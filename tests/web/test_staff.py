"""Staff login, the triage queue, tickets and figures."""
from conftest import needs_engine_facts, PASSWORD, add_staff, submit


def test_staff_pages_need_login(client):
    for path in ("/staff/", "/staff/figures", "/staff/tickets/1"):
        r = client.get(path)
        assert r.status_code == 302 and "/staff/login" in r.headers["Location"]
    assert client.post("/staff/tickets/1", data={"status": "resolved"}).status_code == 302


def test_wrong_password_and_no_default_account(app, client):
    r = client.post("/staff/login", data={"name": "admin", "password": "admin"})
    assert r.status_code == 401
    add_staff(app)
    assert client.post("/staff/login", data={"name": "alice", "password": "nope"}).status_code == 401


def test_login_sets_safe_cookie_and_logout_clears(app, client):
    add_staff(app)
    r = client.post("/staff/login", data={"name": "alice", "password": PASSWORD})
    cookie = r.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert client.get("/staff/").status_code == 200
    client.post("/staff/logout")
    assert client.get("/staff/").status_code == 302


def test_open_redirect_refused(app, client):
    add_staff(app)
    r = client.post("/staff/login?next=//evil.example/x", data={"name": "alice", "password": PASSWORD})
    assert r.headers["Location"].endswith("/staff/")


def _ticket(client, log=None, **data):
    token = submit(client, **({"log": log} if log else {}), **data)
    client.post(f"/s/{token}/helpdesk", data={"contact": "u@example.org", "message": "help"})
    return token


def test_queue_groups_by_class_and_lists_unknown_apart(staff_client):
    _ticket(staff_client)
    _ticket(staff_client, log="nothing to see here\n")
    html = staff_client.get("/staff/").get_data(as_text=True)
    assert 'id="g-demo-oom"' in html
    unknown = html[html.index('id="g-none"'):]
    assert "(1)" in unknown
    assert "2 tickets" in html


def test_filters(staff_client):
    needs_engine_facts()
    _ticket(staff_client, facts='{"scheduler": {"cluster": "alpha", "partition": "p1"}}')
    _ticket(staff_client, log="clean run\n")
    html = staff_client.get("/staff/?cls=none").get_data(as_text=True)
    assert "1 ticket." in html
    assert "1 ticket." in staff_client.get("/staff/?cluster=alpha").get_data(as_text=True)
    assert "0 tickets" in staff_client.get("/staff/?status=resolved").get_data(as_text=True)
    assert "0 tickets" in staff_client.get("/staff/?since=2999-01-01").get_data(as_text=True)
    assert "2 tickets" in staff_client.get("/staff/?status=all&until=2999-01-01").get_data(as_text=True)


def test_triage_ticket_status_assignee_note(app, staff_client):
    _ticket(staff_client)
    from gpu_troubleshooter.web import db
    from gpu_troubleshooter.web.models import Ticket
    with db.new_session(app) as s:
        tid = s.query(Ticket).one().id
    html = staff_client.get(f"/staff/tickets/{tid}").get_data(as_text=True)
    assert "Demo GPU out of memory" in html and "Last lines of the log" in html
    r = staff_client.post(f"/staff/tickets/{tid}", data={"status": "waiting_for_user", "assignee": "1",
                                                          "note": "asked for the job script"})
    assert r.status_code == 303
    html = staff_client.get(f"/staff/tickets/{tid}").get_data(as_text=True)
    assert "asked for the job script" in html and 'value="waiting_for_user" selected' in html
    html = staff_client.get("/staff/?status=waiting_for_user").get_data(as_text=True)
    assert "Waiting for user" in html and "alice" in html


def test_figures_render_svg(staff_client):
    _ticket(staff_client)
    submit(staff_client, log="all fine\n")
    html = staff_client.get("/staff/figures?days=7").get_data(as_text=True)
    assert html.count("<svg") == 2 and "<rect" in html
    assert "demo-oom (1)" in html and "no known failure (1)" in html
