"""Differential tests: the planner's rows equal DuckDB's, evaluating the same SQL as written.

Every statement shape runs through the planner with the deterministic `HashEngine`, under both
`heron.order` settings, and again with the answers reused from the answer store; the oracle
(`support.ai_oracle`) runs the same SQL in DuckDB with each AI call replaced by a function giving
the same answers row by row. Both must return the same rows (in order where the statement
orders them totally; as a bag otherwise; under a bare LIMIT, any rows of the full answer).
"""

from __future__ import annotations

import enum
import random
from collections import Counter

import duckdb
import pytest
from support.ai_oracle import oracle_sql, unregister
from support.hash_engine import HashEngine, answer_of

from heron.engine.api import AnswerKind
from heron.engine.prompts import filter_prompt
from heron.planner import Planner


class Compare(enum.Enum):
    ORDERED = "ordered"  # the statement orders its rows totally
    BAG = "bag"
    LIMITED = "limited"  # LIMIT without a total order: any rows of the answer, that many


BODIES = [
    "The ending is perfect and left me in tears.",
    "The acting is wooden and the plot drags.",
    "Gorgeous music, dull story.",
    "The final twist ruins everything that came before.",
    "A warm film about family, with a great score.",
    "I laughed, I cried, I want my money back.",
    "Slow, beautiful, and the ending lands.",
    "The cast is superb; the script is not.",
    "Nothing happens for two hours.",
    "The soundtrack alone is worth the ticket.",
    "A sequel nobody asked for.",
    "Brilliant performances all round.",
]


@pytest.fixture(scope="module")
def con():
    con = duckdb.connect()
    con.execute("CREATE TABLE movies (id INTEGER, title VARCHAR, plot VARCHAR)")
    con.execute("""INSERT INTO movies VALUES
        (1, 'Tears', 'A family reunites after years apart.'),
        (2, 'Wood', 'A detective investigates a forest.'),
        (3, 'Score', 'A composer loses his hearing.'),
        (4, 'Twist', 'Nothing is what it seems.'),
        (5, 'Money', 'A heist goes wrong.'),
        (6, 'Sequel', NULL)""")
    con.execute("CREATE TABLE reviews (id INTEGER, movie_id INTEGER, stars INTEGER, "
                "title VARCHAR, body VARCHAR)")
    rows = []
    for i in range(1, 31):
        body = None if i in (7, 19) else BODIES[(i * 5) % len(BODIES)]
        rows.append((i, i % 6 + 1, i % 5 + 1, f"Review {i % 9}", body))
    con.executemany("INSERT INTO reviews VALUES (?, ?, ?, ?, ?)", rows)
    con.execute("CREATE TABLE aspects (id INTEGER, aspect VARCHAR)")
    con.execute("INSERT INTO aspects VALUES (1, 'the ending'), (2, 'the music'), "
                "(3, 'the acting'), (4, NULL)")
    con.execute("CREATE TABLE tags (id INTEGER, review_id INTEGER, tag VARCHAR)")
    con.execute("INSERT INTO tags SELECT i, (i * 7) % 30 + 1, CASE i % 4 WHEN 0 THEN 'moving' "
                "WHEN 1 THEN 'boring' WHEN 2 THEN 'loud' ELSE 'funny' END FROM range(20) t(i)")
    yield con
    con.close()


IF = "AI.IF(('Is this review positive? ', {body}))"
JOIN = "AI_FILTER(PROMPT('Does the review {{0}} discuss {{1}}?', {body}, {aspect}))"
LABELS = "['positive', 'negative', 'mixed']"


def _if(body: str = "body", question: str = "Is this review positive? ") -> str:
    return f"AI.IF(('{question}', {body}))"


def _join(body: str = "r.body", aspect: str = "a.aspect") -> str:
    return JOIN.format(body=body, aspect=aspect)


ORDERED, BAG, LIMITED = Compare.ORDERED, Compare.BAG, Compare.LIMITED
SHAPES: list[tuple[str, Compare]] = [
    # Filters, chains, boolean logic, NULL documents, the three spellings.
    (f"SELECT id FROM reviews WHERE {_if()}", BAG),
    (f"SELECT id FROM reviews WHERE stars >= 3 AND {_if()}", BAG),
    (f"SELECT id FROM reviews WHERE {_if()} AND {_if(question='Does it mention music? ')} "
     f"AND {_if('title', 'Is this a title? ')}", BAG),
    (f"SELECT id FROM reviews WHERE {_if()} OR {_if(question='Is it about acting? ')}", BAG),
    (f"SELECT id FROM reviews WHERE NOT {_if()} AND stars < 4", BAG),
    (f"SELECT id, CASE WHEN {_if()} THEN 'up' ELSE 'down' END AS verdict FROM reviews "
     "ORDER BY id", ORDERED),
    (f"SELECT id, {_if()} AS positive FROM reviews ORDER BY id", ORDERED),
    ("SELECT id FROM reviews WHERE AI_FILTER(PROMPT('Is {0} positive?', body))", BAG),
    ("SELECT id FROM reviews WHERE AI.IF('Is this review positive? ' || body)", BAG),
    ("SELECT id FROM reviews WHERE AI.IF(PROMPT('Is {0} the title of {1}?', title, body))", BAG),
    (f"SELECT id FROM reviews WHERE {_if()} IS NOT TRUE", BAG),
    (f"SELECT id, COALESCE({_if()}, false) AS p FROM reviews ORDER BY id", ORDERED),
    # Joins: with filters, equality conditions, three tables, self-aliases, comma joins.
    (f"SELECT r.id, a.id FROM reviews r JOIN aspects a ON {_join()} WHERE r.stars > 2", BAG),
    ("SELECT r.id, m.id FROM reviews r JOIN movies m ON r.movie_id = m.id AND "
     "AI_FILTER(PROMPT('Is {0} a fair review of a film about {1}?', r.body, m.plot))", BAG),
    (f"SELECT r.id, a.id, m.id FROM reviews r JOIN aspects a ON {_join()} JOIN movies m "
     "ON r.movie_id = m.id AND AI_FILTER(PROMPT('Is {0} about {1}?', m.plot, a.aspect)) "
     "WHERE r.id < 20", BAG),
    ("SELECT r1.id, r2.id FROM reviews r1 JOIN reviews r2 ON r1.id < r2.id AND "
     "AI_FILTER(PROMPT('Do {0} and {1} agree?', r1.body, r2.body)) "
     "WHERE r1.id < 9 AND r2.id < 9", BAG),
    (f"SELECT r.id, a.aspect FROM reviews r, aspects a WHERE {_join()} AND r.id % 2 = 0", BAG),
    (f"SELECT r.id, a.id FROM reviews r JOIN aspects a ON {_join()} WHERE {_if('r.body')} "
     "AND AI.IF(('Is this a real topic? ', a.aspect))", BAG),
    # Outer joins keep their unmatched rows.
    (f"SELECT r.id, a.id FROM reviews r LEFT JOIN aspects a ON {_join()} WHERE a.id IS NULL",
     BAG),
    (f"SELECT r.id, a.id FROM aspects a RIGHT JOIN reviews r ON {_join()} WHERE a.id IS NULL",
     BAG),
    (f"SELECT r.id, a.id FROM reviews r FULL JOIN aspects a ON {_join()} AND r.id < 6", BAG),
    (f"SELECT r.id, a.id FROM reviews r LEFT JOIN aspects a ON a.id = 1 AND {_if('r.body')}",
     BAG),
    (f"SELECT r.id, a.id FROM reviews r LEFT JOIN aspects a ON {_join()} "
     "WHERE r.stars > 3", BAG),
    (f"SELECT r.id, a.id, m.id FROM reviews r LEFT JOIN aspects a ON {_join()} "
     "LEFT JOIN movies m ON m.id = a.id AND AI.IF(('Is it a drama? ', m.plot))", BAG),
    # Classification.
    (f"SELECT id, AI.CLASSIFY(body, {LABELS}) AS label FROM reviews ORDER BY id", ORDERED),
    ("SELECT AI_CLASSIFY(body, ARRAY['good', 'bad']) AS label, count(*) FROM reviews "
     "GROUP BY 1", BAG),
    (f"SELECT id FROM reviews WHERE AI.CLASSIFY(body, {LABELS}) = 'positive'", BAG),
    ("SELECT id, AI.CLASSIFY(body, [('up', 'the reviewer liked it'), ('down', 'they did "
     "not')]) AS l FROM reviews ORDER BY id", ORDERED),
    ("SELECT id, AI_CLASSIFY(PROMPT('Which aspect does {0} praise?', body), "
     "ARRAY['music', 'acting', 'story']) AS l FROM reviews WHERE stars > 2 ORDER BY id", ORDERED),
    # Scores: ORDER BY ... LIMIT, conditions, aggregates.
    ("SELECT id FROM reviews ORDER BY AI.SCORE(('How positive is it? ', body)) DESC NULLS "
     "LAST, id LIMIT 3", ORDERED),
    ("SELECT id FROM reviews ORDER BY stars DESC, AI.SCORE(('How positive is it? ', body)) "
     "DESC NULLS LAST, id LIMIT 4", ORDERED),
    ("SELECT id FROM reviews WHERE AI.SCORE(('How positive is it? ', body)) > 0.5", BAG),
    ("SELECT stars, avg(AI.SCORE(('How positive is it? ', body))) AS s FROM reviews "
     "GROUP BY stars", BAG),
    # Completions.
    ("SELECT id, AI_COMPLETE(('Summarize: ', body), 8) AS s FROM reviews ORDER BY id LIMIT 3",
     ORDERED),
    ("WITH s AS (SELECT id, AI.GENERATE(('One word for: ', body)) AS w FROM reviews "
     "WHERE id < 10) SELECT id FROM s WHERE AI.IF(('Is this word happy? ', w))", BAG),
    # Subqueries: EXISTS, NOT EXISTS, IN, scalar, uncorrelated, nested, derived tables.
    (f"SELECT id FROM reviews r WHERE EXISTS (SELECT 1 FROM aspects a WHERE {_join()})", BAG),
    (f"SELECT id FROM reviews r WHERE stars > 1 AND NOT EXISTS (SELECT 1 FROM aspects a "
     f"WHERE {_join()})", BAG),
    ("SELECT id FROM reviews WHERE id IN (SELECT review_id FROM tags WHERE "
     "AI.IF(('Is this tag positive? ', tag)))", BAG),
    (f"SELECT r.id, (SELECT count(*) FROM aspects a WHERE {_join()}) AS n FROM reviews r "
     "ORDER BY r.id", ORDERED),
    (f"SELECT id FROM reviews WHERE stars >= (SELECT avg(stars) FROM reviews WHERE {_if()})",
     BAG),
    (f"SELECT s.id FROM (SELECT id, stars, {_if()} AS pos FROM reviews) s "
     "WHERE s.pos AND s.stars > 2", BAG),
    ("SELECT r.id FROM reviews r WHERE EXISTS (SELECT 1 FROM tags t WHERE t.review_id = r.id "
     f"AND EXISTS (SELECT 1 FROM aspects a WHERE {_join('r.body', 'a.aspect')} "
     "AND AI.IF(('Is this tag about it? ', t.tag))))", BAG),
    (f"SELECT r.id, x.aspect FROM reviews r, LATERAL (SELECT a.aspect FROM aspects a WHERE "
     f"{_join()} ORDER BY a.id LIMIT 1) x", BAG),
    # CTEs: plain, shadowing a table name, read twice.
    (f"WITH s AS (SELECT * FROM reviews WHERE {_if()}) SELECT id FROM s "
     "WHERE AI.IF(('Is this a good title? ', s.title))", BAG),
    (f"WITH reviews AS (SELECT * FROM reviews WHERE stars > 2) SELECT id FROM reviews "
     f"WHERE {_if()}", BAG),
    (f"WITH p AS (SELECT id, body FROM reviews WHERE {_if()}) SELECT p1.id, p2.id FROM p p1 "
     "JOIN p p2 ON p1.id < p2.id AND p1.body = p2.body", BAG),
    # Set operations.
    (f"SELECT id FROM reviews WHERE {_if()} UNION SELECT id FROM reviews WHERE "
     f"{_if(question='Is it about music? ')}", BAG),
    (f"SELECT count(*) FROM (SELECT id FROM reviews WHERE {_if()} EXCEPT SELECT review_id "
     "FROM tags WHERE AI.IF(('Is it loud? ', tag))) u", BAG),
    # Grouping, HAVING, aggregates' FILTER, windows, QUALIFY, DISTINCT.
    (f"SELECT {_if()} AS positive, count(*) FROM reviews GROUP BY {_if()}", BAG),
    (f"SELECT AI.CLASSIFY(body, {LABELS}) AS l, count(*) FROM reviews GROUP BY 1 HAVING "
     "count(*) > 1", BAG),
    ("SELECT movie_id FROM reviews GROUP BY movie_id HAVING AI.IF(('Are these reviews "
     "positive? ', string_agg(body, ' | ' ORDER BY id)))", BAG),
    (f"SELECT stars, count(*) FILTER (WHERE {_if()}) AS n FROM reviews GROUP BY stars", BAG),
    (f"SELECT id, sum(CASE WHEN {_if()} THEN 1 ELSE 0 END) OVER (ORDER BY id) AS running "
     "FROM reviews ORDER BY id", ORDERED),
    ("SELECT id FROM reviews QUALIFY row_number() OVER (PARTITION BY stars ORDER BY "
     "AI.SCORE(('How positive is it? ', body)) DESC NULLS LAST, id) = 1", BAG),
    (f"SELECT DISTINCT AI.CLASSIFY(body, {LABELS}) AS l FROM reviews", BAG),
    # LIMIT goals.
    (f"SELECT id FROM reviews WHERE {_if()} LIMIT 3", LIMITED),
    (f"SELECT id FROM reviews WHERE {_if()} ORDER BY id LIMIT 3 OFFSET 1", ORDERED),
    (f"SELECT r.id, a.id FROM reviews r JOIN aspects a ON {_join()} LIMIT 2", LIMITED),
    (f"SELECT r.id, a.id FROM reviews r JOIN aspects a ON {_join()} ORDER BY r.id DESC, a.id "
     "LIMIT 2", ORDERED),
    (f"SELECT id, AI_COMPLETE(('Summarize: ', body), 8) AS s, AI.CLASSIFY(body, {LABELS}) "
     "AS l FROM reviews WHERE stars > 2 LIMIT 4", LIMITED),
    ("SELECT id, AI.SCORE(('How positive is it? ', body)) AS s FROM reviews ORDER BY stars, "
     "id DESC LIMIT 3 OFFSET 2", ORDERED),
    # Calls inside calls, constants.
    ("SELECT id, AI.IF(('Is this summary positive? ', AI_COMPLETE(('Summarize: ', body), 4))) "
     "AS p FROM reviews WHERE id < 12 ORDER BY id", ORDERED),
    ("SELECT AI.IF('Is the sky blue?') AS sky, AI.CLASSIFY('A cat', ['animal', 'plant']) AS k",
     ORDERED),
    (f"SELECT id FROM reviews WHERE {_if()} AND AI.IF('Is water wet?')", BAG),
]


def planner_rows(planner: Planner, sql: str, params=()):
    result = planner.execute(planner.prepare(sql), params)
    columns = [c.to_pylist() for c in result.table.columns]
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
    ("CREATE TABLE {t}_made AS SELECT id, " + _if() + " AS p FROM {t}", "SELECT * FROM {t}_made"),
    ("INSERT INTO {t} SELECT id + 100, movie_id, stars, title, body FROM {t} WHERE " + _if(),
     "SELECT * FROM {t}"),
    ("UPDATE {t} SET title = AI.CLASSIFY(body, " + LABELS + ") WHERE " + _if(),
     "SELECT * FROM {t}"),
    ("DELETE FROM {t} WHERE " + _if() + " OR AI.IF(('Is it short? ', title))",
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
    got, _ = planner_rows(planner, f"SELECT id, body FROM {source} WHERE {_if()}")
    passing = passing_ids(many)
    assert {i for i, _ in got} <= passing
    assert 0.38 * len(passing) < len(got) < 0.62 * len(passing)


def test_random_in_where_is_evaluated_once(many):
    planner = Planner(many.cursor(), HashEngine())
    many.execute("SELECT setseed(0.25)")
    got, _ = planner_rows(planner, f"SELECT id FROM many WHERE random() < 0.5 AND {_if()}")
    passing = passing_ids(many)
    assert {i for (i,) in got} <= passing
    assert 0.38 * len(passing) < len(got) < 0.62 * len(passing)


# -- random statements ---------------------------------------------------------------------

QUESTIONS = ["Is it positive? ", "Does it mention music? ", "Is it short? "]


def random_statement(rng) -> tuple[str, Compare]:
    """A random statement over reviews r, aspects a and movies m: AI filters and joins mixed
    with ordinary conditions under AND / OR / NOT, inner or outer joins, optional grouping,
    ordering and limits."""
    def condition(tables: list[str]) -> str:
        kind = rng.choice(["filter", "filter", "plain", "join", "not", "or"])
        if kind == "plain":
            return rng.choice([f"{t}.id % {rng.randint(2, 4)} = {rng.randint(0, 1)}"
                               for t in tables])
        if kind == "join" and "a" in tables:
            return _join()
        if kind == "join" and "m" in tables:
            return "AI_FILTER(PROMPT('Is {0} about {1}?', r.body, m.plot))"
        if kind in ("not", "or"):
            left, right = condition(tables), condition(tables)
            return f"NOT ({left})" if kind == "not" else f"({left} OR {right})"
        if rng.random() < 0.15:
            return rng.choice([
                "EXISTS (SELECT 1 FROM tags t WHERE t.review_id = r.id AND "
                "AI.IF(('Is this tag positive? ', t.tag)))",
                "r.id IN (SELECT review_id FROM tags WHERE AI.IF(('Is it loud? ', tag)))",
                "(SELECT count(*) FROM aspects x WHERE "
                "AI_FILTER(PROMPT('Does {0} discuss {1}?', r.body, x.aspect))) > 1"])
        table = rng.choice(tables)
        column = {"r": "r.body", "a": "a.aspect", "m": "m.plot"}[table]
        if rng.random() < 0.15:
            return f"AI.CLASSIFY({column}, ['x', 'y', 'z']) = 'x'"
        return _if(column, rng.choice(QUESTIONS))

    tables = ["r"]
    source = "reviews r"
    for name, item, key in [("a", "aspects a", None), ("m", "movies m", "r.movie_id = m.id")]:
        if rng.random() < 0.5:
            continue
        side = rng.choice(["", "", "LEFT ", "RIGHT "])
        on = [condition([*tables, name])] + ([key] if key else [])
        tables.append(name)
        source += f" {side}JOIN {item} ON {' AND '.join(on)}"
    where = " AND ".join(condition(tables) for _ in range(rng.randint(0, 3)))
    select = ", ".join(f"{t}.id AS {t}_id" for t in tables)
    if rng.random() < 0.2:
        select += ", AI.SCORE(('How long is it? ', r.body)) AS score"
    sql = f"SELECT {select} FROM {source}" + (f" WHERE {where}" if where else "")
    if rng.random() < 0.2:
        return (f"WITH s AS ({sql.replace(' FROM ', ', r.body AS r_body FROM ', 1)}) "
                f"SELECT * FROM s WHERE {_if('r_body', 'Is it short? ')}"), BAG
    if rng.random() < 0.25:
        return (f"SELECT {_if('r.body')} AS p, count(*) FROM {source}"
                + (f" WHERE {where}" if where else "") + " GROUP BY 1"), BAG
    if rng.random() < 0.3:
        keys = ", ".join(f"{t}.id NULLS FIRST" for t in tables)
        return f"{sql} ORDER BY {keys} LIMIT {rng.randint(1, 6)}", ORDERED
    return sql, BAG


@pytest.mark.parametrize("seed", range(60))
def test_random_statements_match_the_oracle(con, seed):
    sql, compare = random_statement(random.Random(seed))
    for order in ("cost", "as_written"):
        planner = Planner(con.cursor(), HashEngine())
        planner.publish_settings({"heron.order": order})
        got, work = planner_rows(planner, sql)
        check(got, oracle_rows(con, sql, work), compare, sql)
