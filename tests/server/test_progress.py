"""Live progress of AI statements over the wire, on a server running a tiny random-weight Qwen3
with small chunks (a statement over `docs` lasts minutes unless cancelled): psycopg's notice
handler, psql and pgjdbc's getWarnings() show the NOTICEs while the statement still runs; a
second session watches it in pg_stat_activity and heron_stat_ai, with growing counts, then
cancels it with pg_cancel_backend; SET heron.progress = off leaves only the summary."""

from __future__ import annotations

import re
import selectors
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from support.jdbc import compile_probe
from support.polling import wait_for

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(120)

ROWS = 20000
LONG = "SELECT count(*) FROM docs WHERE AI.IF(('Is it about words? ', body))"
SHORT = "SELECT count(*) FROM docs WHERE id < 12 AND AI.IF(('Is it short? ', body))"
PROGRESS = re.compile(r"AI Filter \(AI\.IF\): \d+ of \d+ prompts answered, \d+ input tokens, "
                      r"\d+ fresh, (\d+ input tokens/s, )?[\d.]+ s elapsed, ")
PROBE = Path(__file__).parent / "java" / "ProgressProbe.java"


@pytest.fixture(scope="module")
def server(spawn_heron, tiny_qwen3, tmp_path_factory):
    server = spawn_heron(tmp_path_factory.mktemp("progress") / "data", "--model",
                         str(tiny_qwen3[0]), "--chunk-tokens", "64", "--prefix-block-tokens",
                         "16", timeout=180)
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE docs AS SELECT i AS id, 'Document ' || i || ' has ' || "
                     f"repeat('words and more words, ', 3) AS body FROM range({ROWS}) t(i)")
    return server


def connect(server, **kwargs):
    conn = psycopg.connect(server.dsn, autocommit=True, **kwargs)
    conn.execute("SET heron.reuse_answers = off")  # every run asks the engine
    return conn


def start(conn, sql):
    """Run `sql` on `conn` in a thread; the dict its outcome lands in."""
    outcome = {}

    def target():
        try:
            outcome["rows"] = conn.execute(sql).fetchall()
        except psycopg.Error as exc:
            outcome["error"] = exc
        outcome["ended"] = time.monotonic()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    outcome["thread"] = thread
    return outcome


def operators(conn, pid):
    cur = conn.execute("SELECT * FROM heron_stat_ai WHERE pid = %s", [pid])
    names = [c.name for c in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def test_notices_arrive_while_another_session_watches_and_cancels(server):
    with connect(server) as running, connect(server) as steering:
        notices = []
        running.add_notice_handler(
            lambda n: notices.append((time.monotonic(), n.severity, n.message_primary)))
        running.execute("SET heron.progress_interval = '200ms'")
        pid = running.info.backend_pid
        outcome = start(running, LONG)
        first = wait_for(lambda: (rows := operators(steering, pid)) and rows[0]["prompts_done"]
                         and rows[0])
        assert (first["operator"], first["function"], first["stage"]) == (
            "AI Filter", "AI.IF", "answering")
        assert (first["ordinal"], first["operators"], first["prompts_total"]) == (1, 1, ROWS)
        assert first["question"] == "Is it about words?"
        assert first["engine_requests"] == 1 and first["queue_position"] == 0
        later = wait_for(lambda: (rows := operators(steering, pid)) and rows[0]["prompts_done"]
                         > first["prompts_done"] and rows[0])
        assert later["input_tokens"] > first["input_tokens"]
        assert later["seconds"] > first["seconds"] and later["tokens_per_second"] > 0
        assert later["seconds_left"] > 0
        state, query, event = steering.execute(
            "SELECT state, query, wait_event FROM pg_stat_activity WHERE pid = %s",
            [pid]).fetchone()
        assert (state, query, event) == ("active", LONG, "AIEngine")
        wait_for(lambda: notices)
        assert "ended" not in outcome  # the NOTICE came while the statement runs
        assert notices[0][1] == "NOTICE" and PROGRESS.match(notices[0][2])
        assert " of 20000 prompts answered" in notices[0][2]
        asked = time.monotonic()
        assert steering.execute("SELECT pg_cancel_backend(%s)", [pid]).fetchone()[0] is True
        outcome["thread"].join(30)
        assert isinstance(outcome["error"], psycopg.errors.QueryCanceled)
        assert outcome["ended"] - asked < 2.0
        assert operators(steering, pid) == []  # the stopped operator is gone from the view
        assert steering.execute("SELECT state FROM pg_stat_activity WHERE pid = %s",
                                [pid]).fetchone()[0] == "idle"


def test_two_statements_share_the_engine(server):
    with connect(server) as first, connect(server) as second, connect(server) as watcher:
        outcomes = [start(first, LONG), start(second, LONG.replace("words", "more"))]
        pids = {first.info.backend_pid, second.info.backend_pid}

        def both_in_the_engine():
            rows = watcher.execute("SELECT pid, queue_position FROM heron_stat_ai "
                                   "WHERE engine_requests = 2").fetchall()
            return len(rows) == 2 and rows

        rows = wait_for(both_in_the_engine)
        assert {pid for pid, _ in rows} == pids
        assert all(position in (0, 1, 2) for _, position in rows)
        for pid in pids:
            watcher.execute("SELECT pg_cancel_backend(%s)", [pid])
        for outcome in outcomes:
            outcome["thread"].join(30)
            assert isinstance(outcome["error"], psycopg.errors.QueryCanceled)


def test_progress_off_leaves_the_summary(server):
    with connect(server) as conn:
        notices = []
        conn.add_notice_handler(lambda n: notices.append(n.message_primary))
        conn.execute("SET heron.progress_interval = 0")  # a NOTICE at every look
        conn.execute(SHORT)
        *progress, done, summary = notices
        assert all(PROGRESS.match(text) for text in progress)
        assert done.startswith("AI Filter (AI.IF) done: 12 of 12 prompts answered")
        assert summary.startswith("AI Filter (AI.IF): 12 prompts")
        notices.clear()
        conn.execute("SET heron.progress = off")
        conn.execute(SHORT)
        assert len(notices) == 1 and notices[0].startswith("AI Filter (AI.IF): 12 prompts")
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            conn.execute("SET heron.progress = sometimes")
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            conn.execute("SET heron.progress_interval = 'soon'")
        conn.execute("SET heron.progress_interval = 1500")
        assert conn.execute("SHOW heron.progress_interval").fetchone()[0] == "1500ms"


def test_psql_prints_notices_as_they_arrive(server):
    if shutil.which("psql") is None:
        pytest.skip("psql is not installed")
    script = f"SET heron.reuse_answers = off;\nSET heron.progress_interval = '200ms';\n{LONG};\n"
    psql = subprocess.Popen(["psql", "-X", "-h", server.host, "-p", str(server.port), "-U",
                             "heron", "-d", "heron", "-v", "ON_ERROR_STOP=1"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        psql.stdin.write(script)
        psql.stdin.close()
        selector = selectors.DefaultSelector()
        selector.register(psql.stderr, selectors.EVENT_READ)
        deadline = time.monotonic() + 60
        line = ""
        while "NOTICE" not in line and time.monotonic() < deadline:
            if selector.select(deadline - time.monotonic()):
                line = psql.stderr.readline()
        selector.close()
        assert line.startswith("NOTICE:  ") and PROGRESS.match(line.removeprefix("NOTICE:  "))
        assert psql.poll() is None  # still running its statement
        with connect(server) as steering:
            cancelled = steering.execute(
                "SELECT pg_cancel_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'psql' AND state = 'active'").fetchall()
        assert cancelled == [(True,)]
        assert psql.wait(30) != 0
        assert "ERROR:  canceling statement due to user request" in psql.stderr.read()
    finally:
        if psql.poll() is None:
            psql.kill()
            psql.wait()


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    return compile_probe(PROBE, tmp_path_factory.mktemp("progress-jdbc"))


def test_pgjdbc_shows_the_warnings_while_the_statement_runs(server, probe):
    done = subprocess.run(["java", "-cp", probe, "ProgressProbe", server.host,
                           str(server.port), LONG], capture_output=True, text=True, timeout=100)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert lines["warning while running"] == "true"
    assert PROGRESS.match(lines["warning"])
    assert lines["cancel sent"] == "true"
    assert lines["statement"] == "57014"
