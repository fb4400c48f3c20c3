"""AI views: stored with their calls intact, planned when read (by any session), typed for
clients, and never evaluated behind the planner's back."""

import pytest
from support.hash_engine import HashEngine

from heron.catalog import Database
from heron.planner import Planner, SqlError

POSITIVE = "AI.IF(('Is it positive? ', body))"


@pytest.fixture
def database(tmp_path):
    database = Database(tmp_path, load_demo=False)
    con = database.connect()
    con.execute("CREATE TABLE reviews AS SELECT i AS id, i % 3 AS stars, "
                "'review number ' || i AS body FROM range(24) t(i)")
    yield database
    database.close()


def rows(planner: Planner, sql: str):
    result = planner.execute(planner.prepare(sql))
    return [tuple(r.values()) for r in result.rows.read_all().to_pylist()], result.work


def test_a_view_reads_like_its_query(database):
    engine = HashEngine()
    planner = Planner(database.connect(), engine)
    planner.execute(planner.prepare(
        f"CREATE VIEW positive AS SELECT id, body, {POSITIVE} AS p FROM reviews"))
    assert engine.prompts == 0  # creating a view asks nothing
    through_view, _ = rows(planner, "SELECT id FROM positive WHERE p AND id > 3 ORDER BY id")
    inline, _ = rows(planner, f"SELECT id FROM (SELECT id, body, {POSITIVE} AS p FROM reviews) "
                              "positive WHERE p AND id > 3 ORDER BY id")
    assert through_view == inline and through_view


def test_views_over_views_and_column_lists(database):
    planner = Planner(database.connect(), HashEngine())
    for sql in [f"CREATE VIEW v1 AS SELECT id, body, stars FROM reviews WHERE {POSITIVE}",
                "CREATE VIEW v2 (i, b) AS SELECT id, body FROM v1 WHERE stars > 0 AND "
                "AI.IF(('Is it long? ', body))",
                "CREATE VIEW v3 AS SELECT * FROM v2"]:
        assert planner.execute(planner.prepare(sql)).command_tag == "CREATE VIEW"
    got, work = rows(planner, "SELECT i FROM v3 ORDER BY i")
    expected, _ = rows(planner, f"SELECT id FROM reviews WHERE {POSITIVE} AND stars > 0 AND "
                                "AI.IF(('Is it long? ', body)) ORDER BY id")
    assert got == expected
    assert {w.operator.label for w in work} == {"AI Filter"}
    # Another session (a new connection) reads the stored views too.
    other = Planner(database.connect(), HashEngine())
    assert rows(other, "SELECT i FROM v3 ORDER BY i")[0] == expected


def test_view_columns_are_typed_and_the_calls_never_run_behind_the_planner(database):
    con = database.connect()
    planner = Planner(con, HashEngine())
    planner.execute(planner.prepare(
        "CREATE VIEW labelled AS SELECT id, AI.CLASSIFY(body, ['a', 'b']) AS label, "
        "AI.SCORE(('How long? ', body)) AS score FROM reviews"))
    types = con.execute("SELECT column_name, data_type FROM information_schema.columns "
                        "WHERE table_name = 'labelled' ORDER BY ordinal_position").fetchall()
    assert types == [("id", "BIGINT"), ("label", "VARCHAR"), ("score", "DOUBLE")]
    with pytest.raises(Exception, match="only Heron's planner evaluates"):
        con.execute("SELECT * FROM labelled").fetchall()  # DuckDB alone cannot answer it


def test_a_cte_shadows_a_view_and_drop_view_works(database):
    planner = Planner(database.connect(), HashEngine())
    planner.execute(planner.prepare(f"CREATE VIEW v AS SELECT id FROM reviews WHERE {POSITIVE}"))
    assert rows(planner, "WITH v AS (SELECT 7 AS id) SELECT id FROM v")[0] == [(7,)]
    assert planner.execute(planner.prepare("DROP VIEW v")).command_tag == "DROP VIEW"


def test_a_bad_view_is_refused_and_not_stored(database):
    con = database.connect()
    planner = Planner(con, HashEngine())
    with pytest.raises(SqlError) as info:
        planner.prepare("CREATE VIEW bad AS SELECT AI.IF(('x ', nope)) FROM reviews")
    assert info.value.sqlstate == "42703"
    assert con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = 'bad'"
                       ).fetchone() == (0,)


def test_a_limit_over_a_view_asks_only_what_it_returns(database):
    engine = HashEngine()
    planner = Planner(database.connect(), engine)
    planner.execute(planner.prepare(
        "CREATE VIEW summaries AS SELECT id, AI_COMPLETE(('Summarize: ', body), 4) AS summary "
        f"FROM reviews WHERE {POSITIVE}"))
    got, work = rows(planner, "SELECT * FROM summaries LIMIT 3")
    assert len(got) == 3 and all(summary for _, summary in got)
    complete = next(w for w in work if w.operator.label == "AI Complete")
    assert complete.metrics.prompts == 3  # not one per positive review
