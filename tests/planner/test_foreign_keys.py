"""Foreign keys kept and enforced by Heron (`planner.foreign_keys`): checked when a statement
ends, their ON DELETE / ON UPDATE actions, what DDL does to them, what the catalog shows. (The
differential suite, tests/oracle/test_ddl_statements.py, holds cases against PostgreSQL 15.)"""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from support.planning import rows, run

from heron.planner import foreign_keys
from heron.planner.errors import SqlError
from heron.planner.planner import Planner


def fails(planner: Planner, sql: str) -> SqlError:
    with pytest.raises(SqlError) as info:
        run(planner, sql)
    return info.value


@pytest.fixture
def shop(planner):
    for sql in ("CREATE TABLE users (id int PRIMARY KEY, email text UNIQUE, name text)",
                "CREATE TABLE orders (id int PRIMARY KEY, "
                "user_id int REFERENCES users ON DELETE CASCADE, note text)",
                "CREATE TABLE lines (id int PRIMARY KEY, "
                "order_id int CONSTRAINT lines_order REFERENCES orders (id) ON DELETE SET NULL)",
                "INSERT INTO users VALUES (1, 'a@x', 'Ann'), (2, 'b@x', 'Bob')",
                "INSERT INTO orders VALUES (10, 1, 'n'), (11, 2, 'm')",
                "INSERT INTO lines VALUES (100, 10), (101, 11)"):
        run(planner, sql)
    return planner


def test_a_missing_referenced_row_is_refused_and_the_statement_undone(shop):
    error = fails(shop, "INSERT INTO orders VALUES (12, 1, 'ok'), (13, 3, 'bad')")
    assert (error.sqlstate.value, error.message, error.detail) == (
        "23503", 'insert or update on table "orders" violates foreign key constraint '
                 '"orders_user_id_fkey"', 'Key (user_id)=(3) is not present in table "users".')
    assert rows(shop, "SELECT id FROM orders ORDER BY id") == [(10,), (11,)]
    assert fails(shop, "UPDATE orders SET user_id = 7").sqlstate.value == "23503"
    run(shop, "INSERT INTO orders VALUES (12, NULL, 'no user')")  # NULL references nothing


def test_referenced_rows_change_freely_where_their_key_stays(shop):
    # DuckDB's own keys refused this: it rewrites a row whose indexed column changes
    assert run(shop, "UPDATE users SET email = 'c@x', name = 'Cy' WHERE id = 1"
               ).command_tag == "UPDATE 1"
    error = fails(shop, "UPDATE users SET id = 5 WHERE id = 1")  # ON UPDATE NO ACTION
    assert (error.sqlstate.value, error.message, error.detail) == (
        "23503", 'update or delete on table "users" violates foreign key constraint '
                 '"orders_user_id_fkey" on table "orders"',
        'Key (id)=(1) is still referenced from table "orders".')
    run(shop, "UPDATE users SET id = 5 WHERE id = 5")  # no such row: nothing changes


def test_delete_cascades_and_sets_null_down_the_references(shop):
    assert run(shop, "DELETE FROM users WHERE id = 1").command_tag == "DELETE 1"
    assert rows(shop, "SELECT id, user_id FROM orders") == [(11, 2)]
    assert rows(shop, "SELECT id, order_id FROM lines ORDER BY id") == [(100, None), (101, 11)]


def test_children_and_their_parent_are_deleted_in_one_transaction(shop):
    # DuckDB's own keys refused the parent's delete (Django deletes so)
    shop.begin()
    run(shop, "DELETE FROM lines WHERE order_id = 11")
    run(shop, "DELETE FROM orders WHERE user_id = 2")
    run(shop, "DELETE FROM users WHERE id = 2")
    shop.commit()
    assert rows(shop, "SELECT id FROM users") == [(1,)]


def test_restrict_refuses_and_set_default_needs_a_referenced_default(planner):
    run(planner, "CREATE TABLE p (id int PRIMARY KEY)")
    run(planner, "CREATE TABLE r (p int REFERENCES p ON DELETE RESTRICT)")
    run(planner, "CREATE TABLE d (p int DEFAULT 1 REFERENCES p ON DELETE SET DEFAULT)")
    run(planner, "INSERT INTO p VALUES (1), (2), (3)")
    run(planner, "INSERT INTO r VALUES (3)")
    run(planner, "INSERT INTO d VALUES (2)")
    assert fails(planner, "DELETE FROM p WHERE id = 3").detail == (
        'Key (id)=(3) is still referenced from table "r".')
    run(planner, "DELETE FROM p WHERE id = 2")
    assert rows(planner, "SELECT p FROM d") == [(1,)]
    error = fails(planner, "DELETE FROM p WHERE id = 1")  # the default references nothing
    assert (error.sqlstate.value, error.message) == (
        "23503", 'update or delete on table "p" violates foreign key constraint "d_p_fkey" on '
                 'table "d"')
    assert rows(planner, "SELECT id FROM p ORDER BY id") == [(1,), (3,)]


def test_a_hierarchy_in_one_table_cascades_level_by_level(planner):
    run(planner, "CREATE TABLE cat (id int PRIMARY KEY, parent int REFERENCES cat "
                 "ON DELETE CASCADE)")
    run(planner, "INSERT INTO cat VALUES (1, NULL), (2, 1), (3, 2), (4, 3), (5, NULL), (6, 6)")
    run(planner, "DELETE FROM cat WHERE id = 1")
    assert rows(planner, "SELECT id FROM cat ORDER BY id") == [(5,), (6,)]
    assert fails(planner, "INSERT INTO cat VALUES (7, 8)").sqlstate.value == "23503"


def test_on_update_cascade_carries_the_new_key_down(planner):
    run(planner, "CREATE TABLE p (id int PRIMARY KEY, v int)")
    run(planner, "CREATE TABLE c (id int PRIMARY KEY, p int REFERENCES p ON UPDATE CASCADE)")
    run(planner, "CREATE TABLE g (c int REFERENCES c (id) ON UPDATE CASCADE)")
    run(planner, "INSERT INTO p VALUES (1, 0), (2, 0), (3, 5)")
    run(planner, "INSERT INTO c VALUES (10, 1), (11, 2), (12, 2)")
    run(planner, "INSERT INTO g VALUES (10), (11)")
    statement = planner.prepare("UPDATE p SET id = id + $1 WHERE v = $2")
    assert planner.execute(statement, (100, 0)).command_tag == "UPDATE 2"
    assert rows(planner, "SELECT id, p FROM c ORDER BY id") == [(10, 101), (11, 102), (12, 102)]
    run(planner, "UPDATE p SET id = CASE id WHEN 101 THEN 102 ELSE 101 END WHERE v = 0")  # swap
    assert rows(planner, "SELECT id, p FROM c ORDER BY id") == [(10, 102), (11, 101), (12, 101)]
    run(planner, "UPDATE c AS x SET id = x.id + 10 FROM p WHERE p.id = x.p AND p.id = 102")
    assert rows(planner, "SELECT c FROM g ORDER BY c") == [(11,), (20,)]


def test_declared_keys_are_validated(planner):
    run(planner, "CREATE TABLE p (id int PRIMARY KEY, k int, v int)")
    for sql, sqlstate, message in [
        ("CREATE TABLE c (p int REFERENCES nosuch)", "42P01", 'relation "nosuch" does not exist'),
        ("CREATE TABLE c (p int REFERENCES p (nosuch))", "42703",
         'column "nosuch" referenced in foreign key constraint does not exist'),
        ("CREATE TABLE c (p int REFERENCES p (v))", "42830",
         'there is no unique constraint matching given keys for referenced table "p"'),
        ("CREATE TABLE c (a int, b int, FOREIGN KEY (a, b) REFERENCES p (id))", "42830",
         "number of referencing and referenced columns for foreign key disagree")]:
        error = fails(planner, sql)
        assert (error.sqlstate.value, error.message) == (sqlstate, message)
    assert rows(planner, "SELECT count(*) FROM pg_class WHERE relname = 'c'") == [(0,)]
    run(planner, "CREATE TABLE c (id int, p int)")
    run(planner, "INSERT INTO c VALUES (1, 9)")
    error = fails(planner, "ALTER TABLE c ADD CONSTRAINT c_p FOREIGN KEY (p) REFERENCES p")
    assert (error.sqlstate.value, error.detail) == (
        "23503", 'Key (p)=(9) is not present in table "p".')
    run(planner, "DELETE FROM c")
    run(planner, "ALTER TABLE c ADD CONSTRAINT c_p FOREIGN KEY (p) REFERENCES p "
                 "ON DELETE CASCADE")
    assert fails(planner, "ALTER TABLE c ADD COLUMN q int REFERENCES c (id)"  # no key on c.id
                 ).sqlstate.value == "42830"


def test_keys_follow_a_renamed_referenced_table_and_column(shop):
    run(shop, "ALTER TABLE users RENAME TO people")
    run(shop, "ALTER TABLE people RENAME COLUMN id TO person_id")
    assert rows(shop, "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                      "WHERE conname = 'orders_user_id_fkey'") == [
        ("FOREIGN KEY (user_id) REFERENCES people(person_id) ON DELETE CASCADE",)]
    assert fails(shop, "INSERT INTO orders VALUES (12, 9, 'x')").detail == (
        'Key (user_id)=(9) is not present in table "people".')
    run(shop, "DELETE FROM people WHERE person_id = 2")
    assert rows(shop, "SELECT id FROM orders") == [(10,)]


def test_a_referenced_column_or_table_goes_only_with_cascade(shop):
    run(shop, "CREATE TABLE tagged (email text REFERENCES users (email))")
    error = fails(shop, "ALTER TABLE users DROP COLUMN email")
    assert (error.sqlstate.value, error.detail) == (
        "2BP01", "constraint tagged_email_fkey on table tagged depends on column email of "
                 "table users")
    run(shop, "ALTER TABLE users DROP COLUMN email CASCADE")
    run(shop, "INSERT INTO tagged VALUES ('nobody')")  # the key went with the column
    assert fails(shop, "DROP TABLE users").sqlstate.value == "2BP01"
    assert fails(shop, "TRUNCATE users").sqlstate.value == "0A000"
    run(shop, "TRUNCATE users CASCADE")
    assert rows(shop, "SELECT count(*) FROM orders") == [(0,)]


def test_the_catalog_shows_the_keys_and_their_actions(shop):
    assert rows(shop, "SELECT conname, contype, confupdtype, confdeltype, "
                      "confrelid::regclass::text, conkey, confkey FROM pg_constraint "
                      "WHERE contype = 'f' ORDER BY conname") == [
        ("lines_order", "f", "a", "n", "orders", [2], [1]),
        ("orders_user_id_fkey", "f", "a", "c", "users", [2], [1])]
    assert rows(shop, "SELECT constraint_name, update_rule, delete_rule "
                      "FROM information_schema.referential_constraints ORDER BY 1") == [
        ("lines_order", "NO ACTION", "SET NULL"), ("orders_user_id_fkey", "NO ACTION", "CASCADE")]


def test_rows_written_many_at_once_are_checked(shop):
    statement = shop.prepare("INSERT INTO orders VALUES ($1, $2, $3)")
    with pytest.raises(SqlError) as info:
        shop.insert_many(statement, [(20, 1, "a"), (21, 9, "b")])
    assert info.value.sqlstate.value == "23503"
    batch = pa.record_batch({"id": [30, 31], "user_id": [2, 8], "note": ["c", "d"]})
    copy = "INSERT INTO orders SELECT * FROM heron_copy"
    with pytest.raises(SqlError), shop.keys_checked(copy):  # (COPY's batches: checked at the end)
        shop.insert_rows(copy, "heron_copy", batch)
    assert rows(shop, "SELECT id FROM orders ORDER BY id") == [(10,), (11,)]


def test_a_write_reads_its_target_and_what_it_changes():
    update = "UPDATE s.t SET a = 1, \"B\" = b + 1 WHERE c = 2"
    assert foreign_keys.written(update) == foreign_keys.Write(
        "s", "t", adds=True, removes=True, columns=frozenset({"a", "b"}), sql=update)
    assert foreign_keys.written("DELETE FROM t WHERE x") == foreign_keys.Write(
        None, "t", adds=False, removes=True, deletes=True)
    upsert = foreign_keys.written("INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET v = 2")
    assert upsert is not None and upsert.removes and upsert.columns == frozenset({"v"})
    assert foreign_keys.written("SELECT 1") is None


def test_duckdb_numbers_a_transactions_own_rows_from_max_row_id():
    # A plain INSERT's keys are checked on the rows its transaction inserted alone: those whose
    # row id is at least DuckDB's MAX_ROW_ID, until the transaction commits.
    con = duckdb.connect()
    con.execute("CREATE TABLE t (v int)")
    con.execute("INSERT INTO t VALUES (1)")
    con.execute("BEGIN TRANSACTION")
    con.execute("INSERT INTO t VALUES (2), (3)")
    assert con.execute("SELECT v FROM t WHERE rowid >= ? ORDER BY v",
                       [foreign_keys.MAX_ROW_ID]).fetchall() == [(2,), (3,)]
    con.execute("COMMIT")
    assert con.execute("SELECT count(*) FROM t WHERE rowid >= ?",
                       [foreign_keys.MAX_ROW_ID]).fetchall() == [(0,)]


def test_an_insert_is_checked_on_its_own_rows_in_a_block(shop):
    shop.begin()
    run(shop, "INSERT INTO orders VALUES (20, 1, 'a')")
    assert fails(shop, "INSERT INTO orders VALUES (21, 2, 'b'), (22, 4, 'c')").detail == (
        'Key (user_id)=(4) is not present in table "users".')
    shop.rollback()


def test_deferred_keys_are_checked_at_commit_and_by_set_constraints(planner):
    run(planner, "CREATE TABLE p (id int PRIMARY KEY)")
    run(planner, "CREATE TABLE c (p int REFERENCES p DEFERRABLE INITIALLY DEFERRED)")
    planner.begin()
    run(planner, "INSERT INTO c VALUES (1)")  # before the row it references
    run(planner, "INSERT INTO p VALUES (1)")
    planner.commit()
    planner.begin()
    run(planner, "INSERT INTO c VALUES (2)")
    with pytest.raises(SqlError) as info:
        planner.set_constraints((), deferred=False)  # SET CONSTRAINTS ALL IMMEDIATE
    assert info.value.sqlstate.value == "23503"
    planner.rollback()
    planner.begin()
    run(planner, "DELETE FROM p")  # NO ACTION: deferred too
    with pytest.raises(SqlError) as info:
        planner.commit()
    assert info.value.message.startswith('update or delete on table "p"')
    assert rows(planner, "SELECT * FROM p") == [(1,)]


def test_an_unreadable_write_may_write_any_table():
    assert foreign_keys.written("DELETE FROM t WHERE (") == foreign_keys.Write(
        None, foreign_keys.ANY, adds=True, removes=True, deletes=True)
