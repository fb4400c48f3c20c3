"""Privileges: what a statement needs is found once per text and catalog generation."""

import duckdb
import pytest

from heron.catalog.roles import Role
from heron.planner.access import Privileges
from heron.planner.errors import SqlError

APP = Role("app", 20000, login=True)
CHECKED = "SELECT count(*) FROM range(3) r JOIN t USING (i) WHERE upper('a') = 'A'"


@pytest.fixture
def con():
    con = duckdb.connect()
    con.execute("CREATE TABLE t (i BIGINT)")
    yield con
    con.close()


def _listing(con, calls: list[int]):
    def table_functions():
        calls.append(1)
        return frozenset(name for (name,) in con.execute(
            "SELECT DISTINCT function_name FROM duckdb_functions() "
            "WHERE function_type = 'table'").fetchall())
    return table_functions


def test_a_text_is_judged_once_per_generation(con):
    calls: list[int] = []
    privileges = Privileges(_listing(con, calls))
    for _ in range(3):
        privileges.check(con, CHECKED, APP, main_database="memory", generation=1)
    assert len(calls) == 1
    privileges.check(con, CHECKED, APP, main_database="memory", generation=2)
    assert len(calls) == 2  # the catalog changed: judged again


def test_a_kept_judgement_still_refuses_and_asks_the_role_each_time(con):
    privileges = Privileges(_listing(con, []))
    sql = "SELECT * FROM query('SELECT 1')"
    for _ in range(2):
        with pytest.raises(SqlError) as refused:
            privileges.check(con, sql, APP, main_database="memory", generation=1)
        assert refused.value.sqlstate == "42501"
    privileges.check(con, sql, Role("root", 20001, superuser=True), main_database="memory",
                     generation=1)


def test_nobody_detaches_the_served_database_from_a_kept_judgement(con):
    privileges = Privileges(_listing(con, []))
    for role in (APP, Role("root", 20001, superuser=True)):
        with pytest.raises(SqlError) as refused:
            privileges.check(con, "DETACH memory", role, main_database="memory", generation=1)
        assert refused.value.sqlstate == "55006"


def test_statements_without_calls_never_list_the_functions(con):
    calls: list[int] = []
    Privileges(_listing(con, calls)).check(con, "SELECT i FROM t", APP, main_database="memory",
                                           generation=1)
    assert calls == []
