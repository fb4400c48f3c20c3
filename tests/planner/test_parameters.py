"""Parameter types as PostgreSQL infers them, and DuckDB's prepared statements with literal
values (the fast path) against binding the values (the reference)."""

from __future__ import annotations

import datetime as dt
import random
import uuid
from decimal import Decimal

import duckdb
import pytest
from duckdb import _seam

from heron.planner import pg_semantics
from heron.planner.parameters import cast_parameter_types, parameter_types, with_jsonb
from heron.planner.statement import Kind, PreparedStatements, Statement, literal, run


@pytest.fixture(scope="module")
def con():
    connection = duckdb.connect()
    pg_semantics.configure(connection)
    connection.execute("CREATE TABLE t (id INTEGER, name VARCHAR, tags BIGINT[], seen TIMESTAMP, "
                       "price DECIMAL(10,2), u UUID)")
    yield connection
    connection.close()


def test_cast_parameter_types():
    assert cast_parameter_types(
        "SELECT $1::int, CAST($2 AS double precision), $3::int[], $4::timestamp with time zone,"
        " $5::oid[]") == {1: 23, 2: 701, 3: 1007, 4: 1184, 5: 1028}


def test_parameters_cast_to_jsonb_are_jsonb(con):
    # DuckDB binds both as JSON, from the rewritten text; the client's text tells them apart.
    client = "SELECT $1::jsonb, $2::json, CAST($3 AS jsonb), $4"
    bound = parameter_types(con, pg_semantics.rewrite(client), 4)
    assert bound == (114, 114, 114, 0)
    assert with_jsonb(client, bound) == (3802, 114, 3802, 0)


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT * FROM t WHERE id = $1 AND name = $2", (23, 25)),
    ("INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6)", (23, 25, 1016, 1114, 1700, 2950)),
    ("SELECT id FROM t ORDER BY id LIMIT $1 OFFSET $2", (20, 20)),
    ("SELECT $1 + 1", (23,)),  # the other operand's type, as PostgreSQL infers it
    ("SELECT $1 + 1.5", (1700,)),
    ("SELECT $1 || 'x'", (25,)),
    ("SELECT id + $1 FROM t", (23,)),
    ("UPDATE t SET price = price * $1", (1700,)),
    ("SELECT * FROM t WHERE id = ANY($1)", (1007,)),
    ("SELECT $1", (0,)),  # nothing implies a type: the client's, else text
    ("SELECT $1 || $2", (0, 0)),
    ("SELECT * FROM no_such_table WHERE x = $1::date", (1082,)),  # unbindable: casts only
    # oid[] as the catalog rewrite spells it (asyncpg's type introspection binds one).
    ("SELECT $1::UINTEGER[]", (1028,)),
    ("SELECT * FROM no_such_table WHERE x = ANY($1::UINTEGER[])", (1028,)),
])
def test_parameter_types(con, sql, expected):
    assert parameter_types(con, sql, len(expected)) == expected


def _random_value(rng: random.Random):
    kind = rng.randrange(12)
    if kind == 0:
        return rng.choice([0, 1, -1, 2**31 - 1, -2**31, 2**31, 2**63 - 1, -2**63, 2**63,
                           2**100, -2**100, rng.randrange(-10**9, 10**9)])
    if kind == 1:
        return rng.choice([0.0, -0.0, 1.5, 1e300, -2.5e-300, float("inf"), rng.uniform(-1e6, 1e6)])
    if kind == 2:
        digits = rng.randrange(1, 30)
        return Decimal(rng.randrange(-10**digits, 10**digits)).scaleb(-rng.randrange(0, digits))
    if kind == 3:
        return "".join(rng.choice("ab'\\\"é ,\n\t{}[]%_") for _ in range(rng.randrange(0, 12)))
    if kind == 4:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 10)))
    if kind == 5:
        return rng.choice([True, False, None])
    if kind == 6:
        return dt.date(rng.randrange(1, 9999), rng.randrange(1, 13), rng.randrange(1, 29))
    if kind == 7:
        return dt.datetime(rng.randrange(1, 9999), rng.randrange(1, 13), rng.randrange(1, 29),
                           rng.randrange(24), rng.randrange(60), rng.randrange(60),
                           rng.randrange(10**6), tzinfo=rng.choice([None, dt.UTC]))
    if kind == 8:
        return dt.time(rng.randrange(24), rng.randrange(60), rng.randrange(60),
                       rng.randrange(10**6))
    if kind == 9:
        return dt.timedelta(days=rng.randrange(-9999, 9999), microseconds=rng.randrange(-10**11,
                                                                                       10**11))
    if kind == 10:
        return uuid.UUID(int=rng.getrandbits(128))
    return [rng.randrange(-100, 100) if rng.random() < 0.8 else None
            for _ in range(rng.randrange(0, 5))] or [1]


def test_literals_bind_like_the_values_they_write(con):
    """The fast path (EXECUTE with literals) against the reference (values bound) on random
    values of every kind a decoded parameter can be: same types, same values."""
    rng = random.Random(20261130)
    con.execute("PREPARE literal_probe AS SELECT $1 AS v")
    for _ in range(600):
        value = _random_value(rng)
        expected = _seam.submit(con, "SELECT $1 AS v", [value], "arrow").arrow_table()
        got = _seam.submit(con, f"EXECUTE literal_probe({literal(value)})", None,
                           "arrow").arrow_table()
        assert got.schema == expected.schema, value
        assert got.to_pylist() == expected.to_pylist(), value


def test_integer_literals_type_like_bound_integers_in_expressions(con):
    """A bare number (the literal of an int in INTEGER's range) is an INTEGER value once EXECUTE
    evaluated it, not DuckDB's integer-literal type that adapts to its neighbours: expressions
    around the parameter give the same types, values and errors as with the value bound."""
    bodies = ["typeof($1)", "$1 + 1", "$1 * 2147483647", "$1 / 2", "[$1, 2.5]", "$1 || 'x'",
              "$1 = 5.5", "coalesce($1, 1.5)", "greatest($1, 2::bigint)"]
    for i, body in enumerate(bodies):
        con.execute(f"PREPARE integer_probe_{i} AS SELECT {body} AS v")
        for value in (0, 5, -5, 2**31 - 1, -2**31 + 1):
            try:
                expected = _seam.submit(con, f"SELECT {body} AS v", [value], "arrow").arrow_table()
            except duckdb.Error as exc:
                with pytest.raises(type(exc)):
                    _seam.submit(con, f"EXECUTE integer_probe_{i}({literal(value)})", None,
                                 "arrow").arrow_table()
                continue
            got = _seam.submit(con, f"EXECUTE integer_probe_{i}({literal(value)})", None,
                               "arrow").arrow_table()
            assert (got.schema, got.to_pylist()) == (expected.schema, expected.to_pylist()), (
                body, value)


def test_prepared_statements_run_like_bound_values(con):
    prepared = PreparedStatements(capacity=2)
    statement = Statement("SELECT name, id * 2 AS twice FROM t WHERE id = $1", Kind.SELECT,
                          "SELECT", 1, (23,), returns_rows=True, bindable=True)
    con.execute("INSERT INTO t (id, name) VALUES (1, 'one'), (2, 'two')")
    for value in (1, 2, 3, 1):
        fast = run(con, statement, [value], prepared=prepared)
        reference = run(con, statement, [value])
        assert fast.rows.read_all() == reference.rows.read_all()
        assert fast.command_tag == reference.command_tag
    for other in ("SELECT $1::int + 1", "SELECT $1::text || 'x'"):  # evicts the first
        run(con, Statement(other, Kind.SELECT, "SELECT", 1, returns_rows=True), [1],
            prepared=prepared)
    assert run(con, statement, [2], prepared=prepared).rows.read_all().to_pylist() == [
        {"name": "two", "twice": 4}]


def test_repeated_statements_without_parameters_run_like_their_text(con):
    """From its second run on, a statement without parameters runs as EXECUTE of a prepared
    statement: the same rows and tags as running its text (the reference), on random queries,
    and still after DDL changed what it reads."""
    rng = random.Random(20261201)
    prepared = PreparedStatements(capacity=4)
    con.execute("CREATE TABLE p (id INTEGER, name VARCHAR)")
    con.execute("INSERT INTO p VALUES (1, 'one'), (2, 'two'), (3, NULL)")
    texts = ["SELECT 1", "SELECT * FROM p ORDER BY id", "SELECT count(*), max(name) FROM p",
             "SELECT id, name || '!' AS loud FROM p WHERE id > 1 ORDER BY id",
             "SELECT now() IS NOT NULL", "SELECT [id, id * 2] FROM p ORDER BY 1"]
    for round_ in range(60):
        sql = rng.choice(texts)
        statement = Statement(sql, Kind.SELECT, "SELECT", returns_rows=True, bindable=True)
        fast = run(con, statement, prepared=prepared)
        reference = run(con, statement)
        assert fast.rows.read_all() == reference.rows.read_all(), sql
        assert fast.command_tag == reference.command_tag
        if round_ == 30:
            con.execute("ALTER TABLE p ADD COLUMN extra INTEGER DEFAULT 7")
    update = Statement("UPDATE p SET name = 'x' WHERE id = 3", Kind.UPDATE, "UPDATE")
    assert [run(con, update, prepared=prepared).command_tag for _ in range(3)] == [
        "UPDATE 1"] * 3
    con.execute("DROP TABLE p")
