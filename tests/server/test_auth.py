"""Authentication and TLS against `heron serve`: SCRAM-SHA-256 (with channel binding over TLS),
trust on loopback, roles created in SQL, and what non-superusers may not do (42501)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess

import pytest
from support.heron_process import start_heron

from heron.catalog.roles import Verifier

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(120)
PASSWORD = "correct horse"


@pytest.fixture(scope="module")
def scram_server(tmp_path_factory, tls_files):
    cert, key = tls_files
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HERON_PASSWORD", PASSWORD)  # inherited by the server process
        server = start_heron(tmp_path_factory.mktemp("scram") / "data", "--auth",
                             "scram-sha-256", "--tls-cert", str(cert), "--tls-key", str(key))
    yield server
    server.stop()


def dsn(server, user="heron", password=PASSWORD, **options: str) -> str:
    extra = " ".join(f"{k}={v}" for k, v in options.items())
    return (f"host={server.host} port={server.port} user={user} password='{password}' "
            f"dbname=heron connect_timeout=10 {extra}")


def sqlstate_of_connect(conninfo: str) -> str:
    with pytest.raises(psycopg.OperationalError) as exc:
        psycopg.connect(conninfo)
    text = str(exc.value)
    return "28P01" if "password authentication failed" in text else text


def test_scram_accepts_the_password_and_refuses_others(scram_server):
    with psycopg.connect(dsn(scram_server, sslmode="disable"), autocommit=True) as conn:
        assert conn.execute("SELECT current_user, current_schema()").fetchone() == (
            "heron", "public")
        assert conn.info.parameter_status("is_superuser") == "on"
    assert sqlstate_of_connect(dsn(scram_server, password="wrong", sslmode="disable")) == "28P01"
    # A role that does not exist fails the same way: the server does not say which it was.
    assert sqlstate_of_connect(dsn(scram_server, user="nobody", sslmode="disable")) == "28P01"


def test_tls_with_channel_binding(scram_server):
    with psycopg.connect(dsn(scram_server, sslmode="require", channel_binding="require"),
                         autocommit=True) as conn:
        assert conn.pgconn.ssl_in_use
        assert conn.execute("SELECT 1").fetchone() == (1,)


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")
def test_psql_over_tls(scram_server):
    result = subprocess.run(
        ["psql", "-X", "-At", dsn(scram_server, sslmode="require"), "-c", "SELECT 'tls ok'"],
        capture_output=True, text=True, timeout=30, env={"PATH": os.environ["PATH"]})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "tls ok"


def test_asyncpg_and_pg8000_authenticate(scram_server):
    asyncpg = pytest.importorskip("asyncpg")
    pg8000 = pytest.importorskip("pg8000.native")

    async def main() -> int:
        conn = await asyncpg.connect(host=scram_server.host, port=scram_server.port,
                                     user="heron", password=PASSWORD, database="heron",
                                     ssl="require", timeout=10)
        try:
            return await conn.fetchval("SELECT 7")
        finally:
            await conn.close()

    assert asyncio.run(asyncio.wait_for(main(), 30)) == 7
    conn = pg8000.Connection("heron", host=scram_server.host, port=scram_server.port,
                             password=PASSWORD, database="heron", timeout=10)
    assert conn.run("SELECT 8") == [[8]]
    conn.close()


def test_roles_made_in_sql_log_in_and_lack_server_privileges(scram_server, tmp_path):
    csv = tmp_path / "secret.csv"
    csv.write_text("a\n42\n")
    with psycopg.connect(dsn(scram_server), autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS alice, bob")
        admin.execute("CREATE ROLE alice LOGIN PASSWORD 'alice-pw'")
        admin.execute("CREATE ROLE bob PASSWORD 'bob-pw'")  # no LOGIN
        verifier = Verifier.from_password("carol-pw").text()  # as psql's \password sends it
        admin.execute(f"CREATE USER carol PASSWORD '{verifier}'")
        rows = admin.execute("SELECT rolname, rolsuper, rolcanlogin FROM pg_roles WHERE rolname"
                             " IN ('alice', 'bob', 'carol') ORDER BY 1").fetchall()
        assert rows == [("alice", False, True), ("bob", False, False), ("carol", False, True)]
    with psycopg.connect(dsn(scram_server, user="carol", password="carol-pw")) as carol:
        assert carol.execute("SELECT current_user").fetchone() == ("carol",)
    with pytest.raises(psycopg.OperationalError, match='role "bob" is not permitted to log in'):
        psycopg.connect(dsn(scram_server, user="bob", password="bob-pw"))

    with psycopg.connect(dsn(scram_server, user="alice", password="alice-pw"),
                         autocommit=True) as alice:
        assert alice.info.parameter_status("is_superuser") == "off"
        alice.execute("CREATE TABLE alice_t AS SELECT 1 AS a")  # tables are everyone's
        # so a privilege or an owner given adds nothing (accepted, with a notice saying so);
        # one taken away could not be honoured
        notices = []
        alice.add_notice_handler(lambda d: notices.append(d.message_primary))
        for sql in ("GRANT SELECT ON alice_t TO bob", "ALTER TABLE alice_t OWNER TO bob"):
            alice.execute(sql)
        assert len(notices) == 2 and "every role may read and write every table" in notices[0]
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            alice.execute("REVOKE SELECT ON alice_t FROM bob")
        refused = [
            f"SELECT * FROM read_csv('{csv}')",
            f"SELECT * FROM '{csv}'",
            f"COPY alice_t TO '{tmp_path / 'out.csv'}'",
            f"COPY alice_t FROM '{csv}'",
            f"EXPORT DATABASE '{tmp_path / 'export'}'",
            "ATTACH ':memory:' AS elsewhere",
            "INSTALL httpfs",
            "SET GLOBAL threads = 1",
            "SET threads = 1",
            "SELECT * FROM query('SELECT 1')",
            "CREATE ROLE mallory SUPERUSER",
            "ALTER ROLE alice SUPERUSER",
            "GRANT pg_read_server_files TO alice",
        ]
        for sql in refused:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                alice.execute(sql)
        assert not (tmp_path / "out.csv").exists()
        alice.execute("ALTER ROLE alice PASSWORD 'alice-pw2'")  # one's own password: allowed
    with psycopg.connect(dsn(scram_server), autocommit=True) as admin:
        admin.execute("GRANT pg_read_server_files TO alice")
    with psycopg.connect(dsn(scram_server, user="alice", password="alice-pw2"),
                         autocommit=True) as alice:
        assert alice.execute(f"SELECT a FROM read_csv('{csv}')").fetchone() == (42,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            alice.execute(f"COPY alice_t TO '{tmp_path / 'out.csv'}'")
        alice.execute("DROP TABLE alice_t")


def test_nobody_detaches_the_served_database(scram_server):
    with psycopg.connect(dsn(scram_server), autocommit=True) as admin:
        admin.execute("ATTACH ':memory:' AS scratch")
        admin.execute("USE scratch")
        with pytest.raises(psycopg.errors.ObjectInUse):
            admin.execute("DETACH heron")
        admin.execute("USE heron")
        admin.execute("DETACH scratch")
    with psycopg.connect(dsn(scram_server), autocommit=True) as other:  # others are unaffected
        assert other.execute("SELECT count(*) FROM demo.aspects").fetchone() == (6,)


def test_trust_knows_only_existing_roles(heron_server):
    with psycopg.connect(heron_server.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("heron",)
    with pytest.raises(psycopg.OperationalError, match='role "nobody" does not exist'):
        psycopg.connect(heron_server.dsn.replace("user=heron", "user=nobody"))


def test_scram_without_any_password_refuses_to_start(tmp_path, monkeypatch):
    monkeypatch.delenv("HERON_PASSWORD", raising=False)
    with pytest.raises(RuntimeError, match="no role can log in with a password"):
        start_heron(tmp_path / "data", "--auth", "scram-sha-256", timeout=20)
