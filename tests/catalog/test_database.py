"""The data directory: DuckDB file, demo tables on first start only, persistence across opens."""

from heron.catalog import Database, demo


def test_first_start_creates_the_demo_tables_once(tmp_path):
    with Database(tmp_path) as database:
        con = database.connect()
        assert con.sql("SELECT count(*) FROM demo.reviews").fetchall() == [(demo.REVIEW_COUNT,)]
        assert con.sql("SELECT count(*) FROM demo.aspects").fetchall() == [(6,)]
        con.execute("DELETE FROM demo.reviews WHERE id > 10")
        # The demo schema is on the search path, behind the user's own tables.
        assert con.sql("SELECT count(*) FROM reviews").fetchall() == [(10,)]
        con.execute("CREATE TABLE reviews (id INTEGER)")
        assert con.sql("SELECT count(*) FROM reviews").fetchall() == [(0,)]
        con.execute("DROP TABLE main.reviews")
    # A later start keeps what the user did instead of reloading the demo.
    with Database(tmp_path) as database:
        assert database.connect().sql("SELECT count(*) FROM demo.reviews").fetchall() == [(10,)]


def test_tables_survive_reopening(tmp_path):
    with Database(tmp_path, load_demo=False) as database:
        con = database.connect()
        con.execute("CREATE TABLE t (id INTEGER, body VARCHAR)")
        con.execute("INSERT INTO t VALUES (1, 'a'), (2, NULL)")
    with Database(tmp_path, load_demo=False) as database:
        rows = database.connect().sql("SELECT * FROM t ORDER BY id").fetchall()
    assert rows == [(1, "a"), (2, None)]


def test_demo_reviews_are_deterministic_and_plant_their_labels():
    first, second = demo.reviews(), demo.reviews()
    assert first.equals(second)
    for body, sentiment, aspects in zip(first.column("body").to_pylist(),
                                        first.column("sentiment").to_pylist(),
                                        first.column("aspects").to_pylist(), strict=True):
        assert sentiment in {"positive", "negative"}
        assert aspects and body.endswith(".")
