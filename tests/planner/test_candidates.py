"""`candidates.identified`: a candidate query's rows as ids and each distinct text once, run in a
real DuckDB."""

from __future__ import annotations

import duckdb
import pytest
from sqlglot import exp

from heron.planner import candidates, dialect

ARG0, ARG1 = candidates.arg(0), candidates.arg(1)


@pytest.fixture
def con():
    con = duckdb.connect()
    con.execute("CREATE TABLE reports AS SELECT range AS id, repeat('long report ', 500) || range"
                " AS body FROM range(3)")
    con.execute("CREATE TABLE terms AS SELECT range AS id, 'term ' || range AS term "
                "FROM range(40)")
    con.execute("CREATE MACRO same_id(text) AS 0::UBIGINT")
    yield con
    con.close()


def _query(sql: str) -> exp.Select:
    query = dialect.parse(sql)
    assert isinstance(query, exp.Select)
    return query


PAIRS = (f"SELECT DISTINCT {ARG0}, {ARG1} FROM (SELECT CAST(r.body AS VARCHAR) AS {ARG0}, "
         f"CAST(t.term AS VARCHAR) AS {ARG1} FROM reports AS r, terms AS t) AS c "
         f"WHERE NOT {ARG0} IS NULL AND NOT {ARG1} IS NULL")


def _read(con: duckdb.DuckDBPyConnection, query: exp.Select, function: str = "hash"):
    rows = con.sql(candidates.identified(query, function).sql(dialect="duckdb")).fetchall()
    candidate_rows = [r for r in rows if r[0] == 0]
    texts = [{r[1 + i]: (r[3], r[4]) for r in rows if r[0] == i + 1} for i in range(2)]
    return candidate_rows, texts


def test_each_distinct_text_comes_once_beside_its_id(con) -> None:
    candidate_rows, texts = _read(con, _query(PAIRS))
    assert len(candidate_rows) == 3 * 40 == len(set(r[1:3] for r in candidate_rows))
    assert len(texts[0]) == 3 and len(texts[1]) == 40
    assert all(exact for side in texts for _, exact in side.values())
    expected = set(con.sql(PAIRS).fetchall())
    assert {(texts[0][r[1]][0], texts[1][r[2]][0]) for r in candidate_rows} == expected


def test_two_values_sharing_an_id_are_not_exact(con) -> None:
    _, texts = _read(con, _query(PAIRS), "same_id")
    assert [len(side) for side in texts] == [1, 1]
    assert [exact for side in texts for _, exact in side.values()] == [False, False]


def test_ranked_candidates_keep_their_first_rank_and_ctes_their_place(con) -> None:
    ranked = _query(
        f"WITH chosen AS (SELECT * FROM terms WHERE id < 5) SELECT {ARG0}, "
        f"MIN({candidates.RANK}) AS {candidates.RANK} FROM (SELECT CAST(term AS VARCHAR) AS "
        f"{ARG0}, ROW_NUMBER() OVER (ORDER BY id DESC) AS {candidates.RANK} FROM chosen) AS c "
        f"WHERE NOT {ARG0} IS NULL GROUP BY {ARG0} ORDER BY {candidates.RANK}")
    rows = con.sql(candidates.identified(ranked, "hash").sql(dialect="duckdb")).fetchall()
    ranks = sorted(r[-1] for r in rows if r[0] == 0)
    assert ranks == [1, 2, 3, 4, 5]
    by_id = {r[1]: r[2] for r in rows if r[0] == 1}
    order = [by_id[r[1]] for r in sorted((r for r in rows if r[0] == 0), key=lambda r: r[-1])]
    assert order == [f"term {i}" for i in (4, 3, 2, 1, 0)]
