"""ALTER TABLE on a table other tables' foreign keys reference (`planner.foreign_keys_aside`),
which DuckDB refuses ("Cannot alter entry ... because there are entries that depend on it"),
through the planner facade."""

from __future__ import annotations

import pytest
from support.planning import rows, run

from heron.planner import foreign_keys_aside, pg_semantics
from heron.planner.errors import SqlError


def keys(planner) -> list[tuple]:
    return rows(planner, "SELECT conrelid::regclass::text, pg_get_constraintdef(oid) "
                         "FROM pg_constraint WHERE contype = 'f' ORDER BY 1, 2")


@pytest.fixture
def shop(planner):
    for sql in ("CREATE TABLE users (id int PRIMARY KEY, name text)",
                "CREATE TABLE orders (id int PRIMARY KEY, user_id int REFERENCES users (id))",
                "CREATE TABLE items (id int, order_id int REFERENCES orders (id), "
                "user_id int REFERENCES users (id))",
                "INSERT INTO users VALUES (1, 'a')", "INSERT INTO orders VALUES (10, 1)",
                "INSERT INTO items VALUES (100, 10, 1)"):
        run(planner, sql)
    return planner


def test_what_duckdb_refuses_on_a_referenced_table_runs_and_the_keys_hold(shop):
    for sql in ("ALTER TABLE users ADD COLUMN email varchar(100)",
                "ALTER TABLE users ALTER COLUMN name SET NOT NULL",
                "ALTER TABLE users ALTER COLUMN name DROP NOT NULL",
                "ALTER TABLE users ALTER COLUMN name TYPE varchar(20)",
                "ALTER TABLE users ADD CONSTRAINT users_name_key UNIQUE (name)",
                "ALTER TABLE orders ADD COLUMN total int"):  # (referenced, and referencing)
        assert run(shop, sql).command_tag == "ALTER TABLE", sql
    assert rows(shop, "SELECT * FROM users") == [(1, "a", None)]
    assert rows(shop, "SELECT * FROM items") == [(100, 10, 1)]
    assert keys(shop) == [("items", "FOREIGN KEY (order_id) REFERENCES orders(id)"),
                          ("items", "FOREIGN KEY (user_id) REFERENCES users(id)"),
                          ("orders", "FOREIGN KEY (user_id) REFERENCES users(id)")]
    for sql in ("INSERT INTO orders VALUES (11, 99, 0)", "INSERT INTO items VALUES (1, 99, 1)",
                "DELETE FROM users"):
        with pytest.raises(SqlError) as info:
            run(shop, sql)
        assert info.value.sqlstate == "23503", sql


def test_keys_follow_renamed_tables_and_columns(shop):
    run(shop, "ALTER TABLE users RENAME COLUMN id TO user_key")
    run(shop, "ALTER TABLE orders RENAME COLUMN user_id TO owner")  # its own key's column
    run(shop, "ALTER TABLE users RENAME TO people")
    assert keys(shop) == [("items", "FOREIGN KEY (order_id) REFERENCES orders(id)"),
                          ("items", "FOREIGN KEY (user_id) REFERENCES people(user_key)"),
                          ("orders", "FOREIGN KEY (owner) REFERENCES people(user_key)")]
    with pytest.raises(SqlError) as info:
        run(shop, "INSERT INTO orders VALUES (11, 99)")
    assert info.value.sqlstate == "23503"
    run(shop, "DROP TABLE items, orders, people")


def test_in_a_transaction_block_it_rolls_back_with_it(shop):
    shop.begin()
    run(shop, "ALTER TABLE users ADD COLUMN age int")
    shop.rollback()
    assert rows(shop, "SELECT * FROM users") == [(1, "a")]
    assert len(keys(shop)) == 3


def test_a_table_referencing_itself(planner):
    run(planner, "CREATE TABLE emp (id int PRIMARY KEY, boss int REFERENCES emp (id))")
    run(planner, "INSERT INTO emp VALUES (1, NULL)")
    run(planner, "INSERT INTO emp VALUES (2, 1)")
    run(planner, "INSERT INTO emp VALUES (3, 2)")
    run(planner, "ALTER TABLE emp ADD COLUMN title varchar(10)")  # a rebuild, level by level
    run(planner, "ALTER TABLE emp RENAME COLUMN boss TO manager")
    run(planner, "ALTER TABLE emp RENAME COLUMN id TO emp_id")
    assert keys(planner) == [("emp", "FOREIGN KEY (manager) REFERENCES emp(emp_id)")]
    assert rows(planner, "SELECT * FROM emp ORDER BY emp_id") == [
        (1, None, None), (2, 1, None), (3, 2, None)]
    with pytest.raises(SqlError) as info:
        run(planner, "INSERT INTO emp VALUES (4, 99, NULL)")
    assert info.value.sqlstate == "23503"


def test_only_what_duckdb_refuses_sets_keys_aside(shop):
    def read(sql: str):
        return foreign_keys_aside.read(shop.con, pg_semantics.rewrite(sql))

    assert read("ALTER TABLE users ALTER COLUMN name SET DEFAULT 'x'") is None
    assert read("ALTER TABLE users ALTER name DROP DEFAULT") is None
    assert read("ALTER TABLE items ADD COLUMN n int") is None  # nothing references it
    assert read("ALTER TABLE nowhere ADD COLUMN n int") is None
    aside = read("ALTER TABLE users ADD COLUMN n int")
    assert aside is not None and {(k.table.name, k.columns) for k in aside.keys} == {
        ("orders", ("user_id",)), ("items", ("user_id",))}
