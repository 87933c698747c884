"""`troubleshoot staff|db|serve`, and the CLI's diagnose path staying Flask-free."""
import os
import subprocess
import sys

from conftest import PASSWORD


def _run(args, db_url, stdin=None, tmp_path=None):
    env = {**os.environ, "DATABASE_URL": db_url, "SECRET_KEY": "x"}
    return subprocess.run([sys.executable, "-m", "gpu_troubleshooter", *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=120)


def test_db_upgrade_and_staff_lifecycle(db_url):
    r = _run(["db", "upgrade"], db_url)
    assert r.returncode == 0, r.stderr
    r = _run(["staff", "add", "carol", "--password-stdin"], db_url, stdin=PASSWORD + "\n")
    assert r.returncode == 0, r.stderr
    assert _run(["staff", "add", "carol", "--password-stdin"], db_url, stdin=PASSWORD + "\n").returncode != 0
    assert _run(["staff", "add", "dave", "--password-stdin"], db_url, stdin="short\n").returncode != 0
    r = _run(["staff", "token", "carol"], db_url)
    assert r.returncode == 0 and r.stdout.startswith("tst_")
    assert "carol\tactive" in _run(["staff", "list"], db_url).stdout
    assert _run(["staff", "disable", "carol"], db_url).returncode == 0
    assert "carol\tdisabled" in _run(["staff", "list"], db_url).stdout
    from sqlalchemy import create_engine, text
    engine = create_engine(db_url)
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT password_hash FROM staff_user")).scalar()
    engine.dispose()
    assert PASSWORD not in stored and stored.startswith(("scrypt:", "pbkdf2:"))


def test_diagnose_path_does_not_import_flask(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("hello\n")
    code = ("import sys, gpu_troubleshooter.cli as c; c.main([sys.argv[1]]);"
            "print('flask' in sys.modules, 'sqlalchemy' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip().endswith("False False"), r.stdout + r.stderr
