"""The commands Heron answers itself, read into values: cursors, savepoints, transaction modes,
PREPARE / EXECUTE / DISCARD, and COPY's two option syntaxes."""

from __future__ import annotations

import pytest

from heron.planner.commands import (
    CloseCommand,
    DeclareCommand,
    Direction,
    DiscardCommand,
    ExecuteCommand,
    FetchCommand,
    Isolation,
    PrepareCommand,
    SavepointCommand,
    SessionCommand,
    TransactionOptions,
    read_begin,
    read_close,
    read_declare,
    read_discard,
    read_execute,
    read_fetch,
    read_prepare,
    read_release,
    read_rollback_to,
    read_savepoint,
    read_transaction_settings,
    split_items,
)
from heron.planner.copy_statement import CopyCommand, CopyFormat, CopyOptions, read_copy
from heron.planner.errors import SqlError


@pytest.mark.parametrize(("sql", "expected"), [
    ("FETCH c", FetchCommand("c", Direction.FORWARD, 1)),
    ("fetch next from C", FetchCommand("c", Direction.FORWARD, 1)),
    ('FETCH 5 IN "Mixed"', FetchCommand("Mixed", Direction.FORWARD, 5)),
    ("FETCH -2 FROM c", FetchCommand("c", Direction.BACKWARD, 2)),
    ("FETCH ALL FROM c", FetchCommand("c", Direction.FORWARD, None)),
    ("FETCH BACKWARD ALL FROM c", FetchCommand("c", Direction.BACKWARD, None)),
    ("FETCH FORWARD -3 FROM c", FetchCommand("c", Direction.BACKWARD, 3)),
    ("FETCH PRIOR FROM c", FetchCommand("c", Direction.BACKWARD, 1)),
    ("FETCH FIRST FROM c", FetchCommand("c", Direction.ABSOLUTE, 1)),
    ("FETCH LAST FROM c", FetchCommand("c", Direction.ABSOLUTE, -1)),
    ("FETCH ABSOLUTE -4 FROM c", FetchCommand("c", Direction.ABSOLUTE, -4)),
    ("FETCH RELATIVE 0 FROM c", FetchCommand("c", Direction.RELATIVE, 0)),
    ("MOVE FORWARD 2 IN c", FetchCommand("c", Direction.FORWARD, 2, move=True)),
])
def test_fetch_and_move(sql, expected):
    assert read_fetch(sql) == expected


def test_bad_fetch_is_a_syntax_error():
    with pytest.raises(SqlError) as info:
        read_fetch("FETCH SIDEWAYS 2 FROM c")
    assert info.value.sqlstate == "42601"


@pytest.mark.parametrize(("sql", "expected"), [
    ("DECLARE c CURSOR FOR SELECT 1", DeclareCommand("c", "SELECT 1")),
    ("declare C scroll cursor with hold for select x from t",
     DeclareCommand("c", "select x from t", scroll=True, hold=True)),
    ('DECLARE "Q" BINARY NO SCROLL CURSOR WITHOUT HOLD FOR VALUES (1);',
     DeclareCommand("Q", "VALUES (1)", binary=True)),
])
def test_declare(sql, expected):
    assert read_declare(sql) == expected


def test_close_and_savepoints():
    assert read_close("CLOSE c") == CloseCommand("c")
    assert read_close("close all") == CloseCommand(None)
    assert read_savepoint('SAVEPOINT "Sp1"') == SavepointCommand("Sp1")
    assert read_release("RELEASE sp") == read_release("RELEASE SAVEPOINT sp") == \
        SavepointCommand("sp")
    assert read_rollback_to("ROLLBACK WORK TO SAVEPOINT sp") == SavepointCommand("sp")
    assert read_rollback_to("ROLLBACK") is None


def test_transaction_modes():
    assert read_begin("BEGIN") == TransactionOptions()
    assert read_begin("START TRANSACTION ISOLATION LEVEL READ COMMITTED, READ ONLY") == \
        TransactionOptions(Isolation.READ_COMMITTED, read_only=True)
    assert read_begin("BEGIN WORK NOT DEFERRABLE") == TransactionOptions(deferrable=False)
    assert read_transaction_settings(
        "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE READ WRITE"
    ) == (SessionCommand("default_transaction_isolation", "serializable"),
          SessionCommand("default_transaction_read_only", "off"))
    with pytest.raises(SqlError):
        read_begin("BEGIN ISOLATION LEVEL SOMETIMES")


@pytest.mark.parametrize(("sql", "expected"), [
    ("COPY t FROM STDIN", CopyCommand(True, ("t",))),
    ('copy "S".t (a, "B") to stdout with (format csv, header true, delimiter \';\', '
     "force_quote *)",
     CopyCommand(False, ("S", "t"), ("a", "B"), options=CopyOptions(
         CopyFormat.CSV, ";", "", True, force_quote=None))),
    ("COPY t FROM stdin WITH DELIMITER AS '|' NULL AS 'none' CSV HEADER",
     CopyCommand(True, ("t",), options=CopyOptions(CopyFormat.CSV, "|", "none", True))),
    ("COPY (SELECT 1, ';') TO STDOUT (FORMAT binary)",
     CopyCommand(False, query="SELECT 1, ';'", options=CopyOptions(CopyFormat.BINARY))),
    ("COPY t FROM STDIN WITH DELIMITER E'\\t'", CopyCommand(True, ("t",))),
    ("COPY t FROM STDIN (FORMAT csv) WHERE a > 1",
     CopyCommand(True, ("t",), where="a > 1", options=CopyOptions(CopyFormat.CSV, ",", ""))),
])
def test_copy_statements(sql, expected):
    assert read_copy(sql) == expected


def test_copy_to_and_from_files_are_not_the_clients():
    assert read_copy("COPY t FROM '/tmp/x.csv'") is None
    assert read_copy("COPY t TO '/tmp/x.csv' (FORMAT csv)") is None
    assert read_copy("SELECT 1") is None


@pytest.mark.parametrize(("sql", "sqlstate"), [
    ("COPY t FROM STDIN (FORMAT text, QUOTE 'x')", "0A000"),
    ("COPY t FROM STDIN (FORMAT binary, DELIMITER ',')", "42601"),
    ("COPY t FROM STDIN (FORMAT xml)", "22023"),
    ("COPY t FROM STDIN (DELIMITER '||')", "0A000"),
    ("COPY t FROM STDIN (FORMAT csv, DELIMITER ',', QUOTE ',')", "22023"),
    ("COPY t FROM STDIN (FORMAT csv, FORMAT csv)", "42601"),
    ("COPY t FROM STDIN (COLOUR red)", "42601"),
    ("COPY (SELECT 1) FROM STDIN", "42601"),
    ("COPY t TO STDOUT WHERE x > 1", "0A000"),
])
def test_bad_copy_options(sql, sqlstate):
    with pytest.raises(SqlError) as info:
        read_copy(sql)
    assert info.value.sqlstate == sqlstate


def test_prepare_execute_and_discard():
    assert read_prepare("PREPARE q (int, numeric(10, 2)) AS SELECT $1, $2") == PrepareCommand(
        "q", ("int", "numeric(10, 2)"), "SELECT $1, $2")
    assert read_prepare('prepare "Q" as insert into t values ($1);') == PrepareCommand(
        "Q", (), "insert into t values ($1)")
    assert read_execute("EXECUTE q(41, 'a,b', f(1, 2))") == ExecuteCommand(
        "q", ("41", "'a,b'", "f(1, 2)"))
    assert read_execute("execute Q") == ExecuteCommand("q", ())
    assert read_discard("DISCARD temporary") == DiscardCommand("TEMP")
    assert read_discard("discard all;") == DiscardCommand("ALL")
    with pytest.raises(SqlError) as caught:
        read_discard("DISCARD everything")
    assert caught.value.sqlstate == "42601"
    assert read_prepare("PREPARED q AS SELECT 1") is None
    assert read_execute("EXECUTE IMMEDIATE") == ExecuteCommand("immediate", ())


def test_list_items_split_at_top_level_commas_only():
    assert split_items("1, 'x, y', \"a,b\", f(1, (2, 3)), a[1,2]") == [
        "1", "'x, y'", '"a,b"', "f(1, (2, 3))", "a[1,2]"]
    assert split_items("  ") == []
