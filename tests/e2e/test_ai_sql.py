"""AI SQL over the wire: `heron serve` with the embedded model and its resident engine process,
driven by psql, psycopg 3, psycopg2 and asyncpg on the demo tables. The server's answer store is
shared by every connection, so a question asked before is answered from it.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess

import asyncpg
import psycopg
import psycopg2
import pytest

pytestmark = pytest.mark.timeout(300)

QUESTION = "Does this review discuss the ending? "
FILTER = ("SELECT r.id FROM demo.reviews r WHERE r.id <= 8 AND AI.IF(('" + QUESTION
          + "', r.body)) ORDER BY 1")


@pytest.fixture(scope="module")
def ai_server(tmp_path_factory, spawn_heron):
    """A server with the embedded model, its engine in a resident child process."""
    return spawn_heron(tmp_path_factory.mktemp("ai") / "data", "--model", "smollm2-135m",
                       timeout=240)


def psql(server, sql: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", server.host, "-p",
         str(server.port), "-U", "heron", "-d", "heron", "-c", sql],
        capture_output=True, text=True, timeout=240, env={"PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def expected_ids(ai_server) -> list[int]:
    with psycopg.connect(ai_server.dsn) as conn:
        return [row[0] for row in conn.execute(FILTER).fetchall()]


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")
def test_psql_runs_the_filter_and_reports_the_work(ai_server, expected_ids):
    result = psql(ai_server, FILTER)
    assert result.returncode == 0, result.stderr
    assert [int(line) for line in result.stdout.split()] == expected_ids
    # The work reaches the client as a NOTICE: another connection asked these prompts before,
    # so this time every answer comes from the server's answer store.
    assert "AI Filter (AI.IF): 0 prompts" in result.stderr
    assert "8 answers reused" in result.stderr
    # With reuse switched off for the session the engine answers again, from cached KV.
    again = psql(ai_server, "SET heron.reuse_answers = off; " + FILTER)
    assert [int(word) for word in again.stdout.split() if word != "SET"] == expected_ids
    assert "AI Filter (AI.IF): 8 prompts" in again.stderr and "from cached KV" in again.stderr


def work_of(notice: str) -> tuple[int, int]:
    """(prompts, answers reused) from an operator's summary NOTICE (progress NOTICEs before
    it say "n of N prompts answered")."""
    prompts = int(re.search(r"(\d+) prompts,", notice)[1])
    reused = re.search(r"(\d+) answers reused", notice)
    return prompts, int(reused[1]) if reused else 0


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")
def test_psql_runs_the_design_examples(ai_server):
    join = psql(ai_server, "SELECT a.aspect, count(*) FROM demo.reviews r JOIN demo.aspects a "
                           "ON AI_FILTER(PROMPT('Review: {0} Does it discuss {1}?', r.body, "
                           "a.aspect)) WHERE r.id <= 3 GROUP BY 1 ORDER BY 2 DESC, 1")
    assert join.returncode == 0, join.stderr
    assert "AI Join (AI_FILTER): 18 prompts" in join.stderr
    for line in join.stdout.split("\n"):
        if line:
            aspect, count = line.split("|")
            assert aspect.startswith("the ") and 1 <= int(count) <= 3
    explain = psql(ai_server, "EXPLAIN " + FILTER)
    assert explain.returncode == 0, explain.stderr
    lines = [line.split() for line in explain.stdout.splitlines()]
    assert "AI Filter #1" in explain.stdout and ["prompts", "8"] in lines
    analyze = psql(ai_server, "SET heron.reuse_answers = off; EXPLAIN ANALYZE " + FILTER)
    assert ["prompts", "8", "8"] in [line.split() for line in analyze.stdout.splitlines()]


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")
def test_design_filter_example_runs_verbatim_on_the_demo_table(ai_server, expected_ids):
    # DESIGN.md section 1, word for word: `reviews` resolves to demo.reviews (search path).
    result = psql(ai_server, "SELECT r.id FROM reviews r\n"
                             "  WHERE AI.IF(('Does this review discuss the ending? ', r.body));")
    assert result.returncode == 0, result.stderr
    assert sum(work_of(result.stderr)) == 300  # asked, or answered before for other tests
    ids = {int(line) for line in result.stdout.split()}
    assert set(expected_ids) == {i for i in ids if i <= 8}


def test_psycopg_string_parameter(ai_server, expected_ids):
    sql = "SELECT id FROM demo.reviews WHERE id <= %s AND AI.IF((%s, body)) ORDER BY id"
    with psycopg.connect(ai_server.dsn) as conn:
        assert [r[0] for r in conn.execute(sql, (8, QUESTION)).fetchall()] == expected_ids
        # The same statement prepared server-side, executed twice.
        for _ in range(2):
            rows = conn.execute(sql, (8, QUESTION), prepare=True).fetchall()
            assert [r[0] for r in rows] == expected_ids


def test_psycopg2(ai_server, expected_ids):
    conn = psycopg2.connect(ai_server.dsn)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id, AI.IF((%s, body)) FROM demo.reviews WHERE id <= 8 "
                        "ORDER BY id", (QUESTION,))
            rows = cur.fetchall()
    finally:
        conn.close()
    assert [i for i, answer in rows if answer] == expected_ids
    assert all(isinstance(answer, bool) for _, answer in rows)


def test_asyncpg_dollar_parameter(ai_server, expected_ids):
    async def main() -> list[int]:
        conn = await asyncpg.connect(host=ai_server.host, port=ai_server.port, user="heron",
                                     database="heron", timeout=10)
        try:
            rows = await conn.fetch("SELECT id FROM demo.reviews WHERE id <= 8 AND "
                                    "AI_FILTER(($1, body)) ORDER BY id", QUESTION, timeout=240)
            return [r["id"] for r in rows]
        finally:
            await conn.close()

    assert asyncio.run(main()) == expected_ids


def test_ai_errors_carry_sqlstates(ai_server):
    with psycopg.connect(ai_server.dsn) as conn:
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            conn.execute("SELECT AI_SENTIMENT(body) FROM demo.reviews")
        conn.rollback()
        with pytest.raises(psycopg.errors.InvalidParameterValue) as info:
            conn.execute("SELECT AI.CLASSIFY(body, ARRAY['a']) FROM demo.reviews")
        assert "at least two categories" in str(info.value)
        conn.rollback()
        with pytest.raises(psycopg.errors.UndefinedColumn):
            conn.execute("SELECT AI.IF(('x ', nope)) FROM demo.reviews")
        conn.rollback()
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_cancel_stops_an_ai_statement(ai_server):
    import threading
    import time

    with psycopg.connect(ai_server.dsn, autocommit=True) as conn:
        timer = threading.Timer(2.0, conn.cancel)
        timer.start()
        started = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled):
            # Every demo review with a fresh question: about half a minute of CPU work.
            conn.execute("SELECT count(*) FROM demo.reviews WHERE AI.IF(('Is this review "
                         "about a film from the 1950s? ', body))")
        timer.cancel()
        assert time.monotonic() - started < 25
        # The session and the engine are still good.
        assert conn.execute("SELECT count(*) FROM demo.reviews WHERE id <= 2 AND "
                            "AI.IF(('Is it long? ', body))").fetchone()[0] in (0, 1, 2)


def test_planner_settings_over_the_wire(ai_server):
    with psycopg.connect(ai_server.dsn, autocommit=True) as conn:
        assert conn.execute("SHOW heron.order").fetchone() == ("cost",)
        conn.execute("SET heron.order = as_written")
        assert conn.execute("SELECT current_setting('heron.order')").fetchone() == (
            "as_written",)
        with pytest.raises(psycopg.errors.InvalidParameterValue) as info:
            conn.execute("SET heron.order = fastest")
        assert info.value.diag.message_hint == "Available values: cost, as_written."
        conn.execute("SET heron.reuse_answers TO false")
        assert conn.execute("SHOW heron.reuse_answers").fetchone() == ("off",)
        conn.execute("RESET ALL")
        assert conn.execute("SHOW heron.reuse_answers").fetchone() == ("on",)


def test_subqueries_ctes_and_views_over_the_wire(ai_server):
    question = "AI.IF(('Does this review mention the music? ', r.body))"
    with psycopg.connect(ai_server.dsn, autocommit=True) as conn:
        plain = [r[0] for r in conn.execute(
            f"SELECT r.id FROM demo.reviews r WHERE r.id <= 4 AND {question} ORDER BY 1")]
        cte = [r[0] for r in conn.execute(
            f"WITH few AS (SELECT * FROM demo.reviews WHERE id <= 4) SELECT r.id FROM few r "
            f"WHERE EXISTS (SELECT 1 WHERE {question}) ORDER BY 1")]
        assert cte == plain
        conn.execute(f"CREATE VIEW music AS SELECT r.id, {question} AS music "
                     "FROM demo.reviews r WHERE r.id <= 4")
    with psycopg.connect(ai_server.dsn) as other:  # another session reads the stored view
        assert [r[0] for r in other.execute("SELECT id FROM music WHERE music ORDER BY 1")
                ] == plain
        assert other.execute("SELECT data_type FROM information_schema.columns WHERE "
                             "table_name = 'music' AND column_name = 'music'").fetchone() == (
            "boolean",)
