"""Differential tests: the planner's rows equal DuckDB's, evaluating the same SQL as written.

Every statement shape runs through the planner with the deterministic `HashEngine`, under both
`heron.order` settings, and again with the answers reused from the answer store; the oracle
(`support.ai_oracle`) runs the same SQL in DuckDB with each AI call replaced by a function giving
the same answers row by row. Both must return the same rows (in order where the statement
orders them totally; as a bag otherwise; under a bare LIMIT, any rows of the full answer).
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from support.ai_oracle import oracle_sql, unregister
from support.hash_engine import HashEngine, answer_of
from support.shapes import LABELS, LIMITED, SHAPES, Compare, ai_if, random_statement

from heron.engine.api import AnswerKind
from heron.engine.prompts import filter_prompt
from heron.planner import Planner


def planner_rows(planner: Planner, sql: str, params=()):
    result = planner.execute(planner.prepare(sql), params)
    columns = [c.to_pylist() for c in result.rows.read_all().columns]
    return list(zip(*columns, strict=True)), result.work


def oracle_rows(con, sql: str, work, params=()):
    anchors = {w.operator.marker: w.anchor for w in work}
    text, names = oracle_sql(con, sql, anchors)
    try:
        return con.execute(text, list(params) or None).fetchall()
    finally:
        unregister(con, names)


def check(got, expected, compare: Compare, sql: str) -> None:
    if compare is Compare.ORDERED:
        assert got == expected, sql
    elif compare is Compare.BAG:
        assert Counter(got) == Counter(expected), sql
    else:
        limit = int(sql.rsplit("LIMIT", 1)[1].split()[0])
        everything = Counter(expected)
        assert len(got) == min(limit, len(expected)), sql
        assert not Counter(got) - everything, sql


@pytest.mark.parametrize("order", ["cost", "as_written"])
@pytest.mark.parametrize(("sql", "compare"), SHAPES)
def test_planner_matches_the_as_written_oracle(con, sql, compare, order):
    engine = HashEngine()
    planner = Planner(con.cursor(), engine)
    planner.publish_settings({"heron.order": order})
    got, work = planner_rows(planner, sql)
    # Under a bare LIMIT any rows of the whole answer will do.
    expected = oracle_rows(con, sql.rsplit(" LIMIT", 1)[0] if compare is LIMITED else sql, work)
    check(got, expected, compare, sql)
    # Again with what the first run taught the statistics and the answer store: the same rows
    # (the order may change, the prompts may not); as written, no prompt is asked again.
    asked = engine.prompts
    again, work = planner_rows(planner, sql)
    check(again, expected, compare, sql)
    if order == "as_written":
        assert engine.prompts == asked


def test_there_are_at_least_fifty_shapes():
    assert len(SHAPES) >= 50


@pytest.mark.parametrize("order", ["cost", "as_written"])
def test_parameters(con, order):
    sql = "SELECT id FROM reviews WHERE id <= $1 AND AI.IF(($2 || ' ', body)) ORDER BY id"
    planner = Planner(con.cursor(), HashEngine())
    planner.publish_settings({"heron.order": order})
    got, work = planner_rows(planner, sql, [20, "Is it positive?"])
    assert got == oracle_rows(con, sql, work, [20, "Is it positive?"])


DML = [
    ("CREATE TABLE {t}_made AS SELECT id, " + ai_if() + " AS p FROM {t}", "SELECT * FROM {t}_made"),
    ("INSERT INTO {t} SELECT id + 100, movie_id, stars, title, body FROM {t} WHERE " + ai_if(),
     "SELECT * FROM {t}"),
    ("UPDATE {t} SET title = AI.CLASSIFY(body, " + LABELS + ") WHERE " + ai_if(),
     "SELECT * FROM {t}"),
    ("DELETE FROM {t} WHERE " + ai_if() + " OR AI.IF(('Is it short? ', title))",
     "SELECT * FROM {t}"),
    ("INSERT INTO {t} VALUES (99, 1, 1, AI.CLASSIFY('A cat', ['animal', 'plant']), "
     "AI_COMPLETE('Say hi', 3))", "SELECT * FROM {t}"),
]


@pytest.mark.parametrize(("statement", "check_sql"), DML)
def test_statements_that_write(con, statement, check_sql):
    con.execute("CREATE OR REPLACE TABLE heron_copy AS SELECT * FROM reviews")
    con.execute("CREATE OR REPLACE TABLE oracle_copy AS SELECT * FROM reviews")
    con.execute("DROP TABLE IF EXISTS heron_copy_made; DROP TABLE IF EXISTS oracle_copy_made")
    planner = Planner(con.cursor(), HashEngine())
    result = planner.execute(planner.prepare(statement.format(t="heron_copy")))
    text, names = oracle_sql(con, statement.format(t="oracle_copy"),
                             {w.operator.marker: w.anchor for w in result.work})
    con.execute(text)
    unregister(con, names)
    got = con.execute(check_sql.format(t="heron_copy") + " ORDER BY ALL").fetchall()
    assert got == con.execute(check_sql.format(t="oracle_copy") + " ORDER BY ALL").fetchall()


@pytest.fixture(scope="module")
def many(con):
    con.execute("CREATE OR REPLACE TABLE many AS SELECT i AS id, 'Review ' || i || ': ' || "
                "CASE i % 3 WHEN 0 THEN 'great' WHEN 1 THEN 'dull' ELSE 'fine' END AS body "
                "FROM range(400) t(i)")
    return con


def passing_ids(con) -> set[int]:
    return {i for i, body in con.execute("SELECT id, body FROM many").fetchall()
            if answer_of(AnswerKind.BOOLEAN, filter_prompt(body, "Is this review positive?"))[0]}


@pytest.mark.parametrize("source", ["many TABLESAMPLE BERNOULLI (50) REPEATABLE (7)",
                                    "(SELECT * FROM many ORDER BY random() LIMIT 200) s"])
def test_a_sample_is_drawn_once(many, source):
    """The prompts and the final statement see the same sample: every row returned passes, and
    about half of the passing rows come back (drawing twice would return about a quarter)."""
    planner = Planner(many.cursor(), HashEngine())
    got, _ = planner_rows(planner, f"SELECT id, body FROM {source} WHERE {ai_if()}")
    passing = passing_ids(many)
    assert {i for i, _ in got} <= passing
    assert 0.38 * len(passing) < len(got) < 0.62 * len(passing)


def test_random_in_where_is_evaluated_once(many):
    # (seeded on the planner's own connection: a cursor has random state of its own, and an
    # unseeded run fell outside the bounds below once in a CI run)
    cursor = many.cursor()
    cursor.execute("SELECT setseed(0.25)")
    planner = Planner(cursor, HashEngine())
    got, _ = planner_rows(planner, f"SELECT id FROM many WHERE random() < 0.5 AND {ai_if()}")
    passing = passing_ids(many)
    assert {i for (i,) in got} <= passing
    assert 0.38 * len(passing) < len(got) < 0.62 * len(passing)


# -- random statements ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(60))
def test_random_statements_match_the_oracle(con, seed):
    sql, compare = random_statement(random.Random(seed))
    for order in ("cost", "as_written"):
        planner = Planner(con.cursor(), HashEngine())
        planner.publish_settings({"heron.order": order})
        got, work = planner_rows(planner, sql)
        check(got, oracle_rows(con, sql, work), compare, sql)
