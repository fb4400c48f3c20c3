"""Statement kinds are decided in one place: `planner.statement.classify`."""

import duckdb
import pytest

from heron.planner.commands import SessionCommand, TransactionOptions
from heron.planner.errors import SqlError
from heron.planner.statement import (
    SPLIT_KEPT,
    SPLIT_KEPT_CHARS,
    Kind,
    classify,
    split,
    split_known,
)


@pytest.fixture(scope="module")
def con():
    connection = duckdb.connect()
    connection.execute("CREATE TABLE t (id INTEGER, body VARCHAR)")
    yield connection
    connection.close()


@pytest.mark.parametrize(
    ("sql", "kind", "verb", "returns_rows", "bindable", "command"),
    [
        ("SELECT * FROM t WHERE id = $1", Kind.SELECT, "SELECT", True, True, None),
        ("VALUES (1)", Kind.SELECT, "VALUES", True, True, None),
        ("EXPLAIN SELECT 1", Kind.UTILITY_ROWS, "EXPLAIN", True, False, None),
        ("CALL pragma_version()", Kind.UTILITY_ROWS, "CALL", True, False, None),
        ("INSERT INTO t VALUES (1, 'a')", Kind.INSERT, "INSERT", False, False, None),
        ("INSERT INTO t VALUES (1, 'a') RETURNING id", Kind.INSERT, "INSERT", True, True, None),
        ("UPDATE t SET id = 2", Kind.UPDATE, "UPDATE", False, False, None),
        ("DELETE FROM t", Kind.DELETE, "DELETE", False, False, None),
        ("CREATE TEMP TABLE u AS SELECT 1", Kind.CREATE, "CREATE TABLE", False, False, None),
        ("DROP TABLE IF EXISTS u", Kind.OTHER, "DROP TABLE", False, False, None),
        ("COPY t TO '/dev/null'", Kind.COPY, "COPY", False, False, None),
        ("BEGIN", Kind.BEGIN, "BEGIN", False, False, TransactionOptions()),
        ("start transaction read only", Kind.BEGIN, "START", False, False,
         TransactionOptions(read_only=True)),
        ("END", Kind.COMMIT, "END", False, False, None),
        ("ABORT", Kind.ROLLBACK, "ABORT", False, False, None),
        ("SET DateStyle = 'ISO, MDY'", Kind.SET, "SET", False, False,
         SessionCommand("DateStyle", "ISO, MDY")),
        ("SET TIME ZONE 'Europe/Paris'", Kind.SET, "SET", False, False,
         SessionCommand("TimeZone", "Europe/Paris")),
        ("SET search_path TO DEFAULT", Kind.SET, "SET", False, False,
         SessionCommand("search_path", None)),
        ("RESET ALL", Kind.RESET, "RESET", False, False, SessionCommand("ALL")),
        ("SHOW transaction isolation level", Kind.SHOW, "SHOW", True, False,
         SessionCommand("transaction isolation level")),
        ("SHOW TABLES", Kind.SHOW, "SHOW", True, True, SessionCommand("TABLES")),
        ("DEALLOCATE PREPARE Stmt1", Kind.DEALLOCATE, "DEALLOCATE", False, False,
         SessionCommand("stmt1")),
        ('DEALLOCATE "Stmt1"', Kind.DEALLOCATE, "DEALLOCATE", False, False,
         SessionCommand("Stmt1")),
        ("DEALLOCATE ALL", Kind.DEALLOCATE, "DEALLOCATE", False, False, SessionCommand("")),
        ("-- nothing but a comment", Kind.EMPTY, "", False, False, None),
    ],
)
def test_classify(con, sql, kind, verb, returns_rows, bindable, command):
    statement = classify(con, sql)
    assert (statement.kind, statement.verb, statement.returns_rows, statement.bindable,
            statement.command) == (kind, verb, returns_rows, bindable, command)


def test_parameters_are_counted(con):
    assert classify(con, "SELECT * FROM t WHERE id = $1 AND body = $2").param_count == 2


@pytest.mark.parametrize(("sql", "sqlstate"), [("SELEC 1", "42601"), ("SELECT 1; SELECT 2",
                                                                        "42601")])
def test_bad_statements_carry_a_sqlstate(con, sql, sqlstate):
    with pytest.raises(SqlError) as info:
        classify(con, sql)
    assert info.value.sqlstate == sqlstate


def test_split_respects_quotes_and_comments():
    sql = "SELECT ';' AS a; -- x; y\nSELECT $$;$$; ; SELECT \"a;b\" FROM t"
    assert split(sql) == ["SELECT ';' AS a", "SELECT $$;$$", 'SELECT "a;b" FROM t']


def test_short_texts_split_lately_are_known_without_tokenizing():
    sql = "SELECT 'known'; SELECT 2"
    assert split_known(sql) is None
    assert split(sql) == ["SELECT 'known'", "SELECT 2"]
    known = split_known(sql)
    assert known == ["SELECT 'known'", "SELECT 2"]
    known.append("changed")  # each caller gets its own list
    assert split_known(sql) == ["SELECT 'known'", "SELECT 2"]
    long = "SELECT " + "1 + " * SPLIT_KEPT_CHARS + "1"
    assert split(long) == [long] and split_known(long) is None
    with pytest.raises(SqlError):  # an error is not kept
        split("SELECT 'unterminated")
    for i in range(SPLIT_KEPT + 1):  # the oldest are forgotten past the limit
        split(f"SELECT {i}")
    assert split_known(sql) is None and split_known(f"SELECT {SPLIT_KEPT}") == [
        f"SELECT {SPLIT_KEPT}"]
