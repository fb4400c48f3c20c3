"""The pg_catalog shim's rewrites, relations and functions, on an in-memory DuckDB connection.

The differential tests (tests/oracle) compare whole client answers with PostgreSQL 15's; these
pin the shim's own rules one by one.
"""

from __future__ import annotations

import duckdb
import pytest

from heron.planner import Planner, SqlError, pg_catalog, pg_types
from heron.planner.pg_catalog_rewrite import rewrite


@pytest.fixture
def catalog():
    con = duckdb.connect()
    catalog = pg_catalog.Catalog(con, "alice", "16.4 (Heron 0.1.0)")
    pg_catalog.publish_settings(con, {"jit": "off", "TimeZone": "UTC"})
    yield catalog
    con.close()


def query(catalog: pg_catalog.Catalog, sql: str) -> list[tuple]:
    """`sql` as the planner runs it: rewritten, on fresh snapshots of the catalog; a regclass or
    regtype result (the struct of its OID and name) as its text form, the name."""
    sql = rewrite(sql)
    catalog.refresh(sql)
    return [tuple(_text_form(v) for v in row) for row in catalog.con.sql(sql).fetchall()]


def _text_form(value):
    if isinstance(value, dict) and set(value) & set(pg_types.REG_FIELDS):
        return value["name"]
    return value


def columns(catalog: pg_catalog.Catalog, sql: str) -> list[str]:
    sql = rewrite(sql)
    catalog.refresh(sql)
    return catalog.con.sql(sql).columns


# -- rewrites ---------------------------------------------------------------------------------

def test_ordinary_statements_are_untouched():
    sql = "SELECT a ~ 'x', b::text FROM t  -- pg_class"
    assert rewrite(sql) == sql


def test_rewrites():
    out = rewrite(
        "SELECT pg_catalog.pg_get_userbyid(c.relowner), c.oid::pg_catalog.regclass"
        " FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$'"
        " COLLATE pg_catalog.default")
    assert "pg_catalog" not in out and "COLLATE" not in out
    assert "c.relname ~ '^(t)$'" in out  # (DuckDB's `~` is PostgreSQL's)
    assert "HERON_REGCLASS_VALUE(c.oid) AS oid" in out  # a result column: OID and name
    assert rewrite("SELECT table_name FROM information_schema.tables") == (
        "SELECT table_name FROM heron_information_schema_tables AS tables")


def test_unquoted_identifiers_fold_to_lower_case(catalog):
    assert columns(catalog, 'SELECT relname AS TABLE_NAME, relkind AS "Kind" '
                            "FROM pg_catalog.pg_class LIMIT 1") == ["table_name", "Kind"]


def test_format_with_a_constant_template(catalog):
    assert query(catalog, "SELECT pg_catalog.format('%I.%I is %L, %s%%', 'public', 'My T', "
                          "'it''s', NULL)") == [("public.\"My T\" is 'it''s', %",)]


def test_unqualified_format_cast_to_regclass_looks_the_name_up(catalog):
    """Metabase's spelling: sqlglot reads an unqualified FORMAT as its own node."""
    catalog.con.execute("CREATE TABLE \"My T\" (a INTEGER)")
    assert query(catalog, "SELECT CAST(CAST(FORMAT('%I.%I', 'main', 'My T') AS REGCLASS) AS OID)"
                          " = 'main.\"My T\"'::regclass::oid, format('%s!', 'x')") == [
        (True, "x!")]


def test_int2vector_subscripts_count_from_zero(catalog):
    catalog.con.execute("CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER, PRIMARY KEY (c, a))")
    assert query(catalog, "SELECT i.indkey[0], i.indkey[1], x.opts[0] FROM pg_catalog.pg_index i,"
                          " (SELECT indoption AS opts FROM pg_catalog.pg_index) x") == [
        (3, 1, 0)]
    assert query(catalog, "SELECT generate_subscripts(indkey, 1) FROM pg_catalog.pg_index") == [
        (0,), (1,)]
    # Returned, an int2vector is its text: numbers separated by spaces.
    assert query(catalog, "SELECT indkey, indoption FROM pg_catalog.pg_index") == [("3 1", "0 0")]


def test_tableoid_is_the_catalog_table_s_oid(catalog):
    assert query(catalog, "SELECT DISTINCT c.tableoid FROM pg_catalog.pg_class c") == [(1259,)]


def test_keywords_as_column_labels(catalog):
    assert columns(catalog, "SELECT 1 AS select, 2 AS table FROM pg_catalog.pg_am LIMIT 1") == [
        "select", "table"]


def test_partition_ancestors_of_a_relation_are_itself(catalog):
    assert query(catalog, "SELECT a.relid, a.depth FROM pg_catalog.pg_am m, "
                          "pg_catalog.pg_partition_ancestors(m.oid) WITH ORDINALITY AS a(relid, "
                          "depth) WHERE m.amname = 'btree'") == [(403, 1)]


# -- relations --------------------------------------------------------------------------------

def test_relations_columns_constraints_and_indexes(catalog):
    con = catalog.con
    con.execute("CREATE TABLE authors (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL UNIQUE)")
    con.execute("CREATE TABLE books (id BIGINT PRIMARY KEY, author INTEGER REFERENCES "
                "authors (id), price DECIMAL(10,2) CHECK (price > 0), tags VARCHAR[])")
    con.execute("CREATE INDEX books_price ON books (price)")
    assert query(catalog, "SELECT relname, relkind, relnatts, relchecks, relhasindex "
                          "FROM pg_catalog.pg_class WHERE relnamespace <> 11 "
                          "AND relname NOT IN (SELECT table_name FROM "
                          "information_schema.tables WHERE table_schema = 'information_schema')"
                          " ORDER BY relname") == [
        ("authors", "r", 2, 0, True), ("authors_name_key", "i", 1, 0, False),
        ("authors_pkey", "i", 1, 0, False), ("books", "r", 4, 1, True),
        ("books_pkey", "i", 1, 0, False), ("books_price", "i", 1, 0, False)]
    assert query(catalog, "SELECT attname, format_type(atttypid, atttypmod), attnotnull, attndims"
                          " FROM pg_catalog.pg_attribute WHERE attrelid = 'books'::regclass "
                          "AND attnum > 0 ORDER BY attnum") == [
        ("id", "bigint", True, 0), ("author", "integer", False, 0),
        ("price", "numeric(10,2)", False, 0), ("tags", "text[]", False, 1)]
    assert query(catalog, "SELECT conname, contype, pg_get_constraintdef(oid) "
                          "FROM pg_catalog.pg_constraint ORDER BY conname") == [
        ("authors_name_key", "u", "UNIQUE (name)"), ("authors_pkey", "p", "PRIMARY KEY (id)"),
        ("books_author_fkey", "f", "FOREIGN KEY (author) REFERENCES authors(id)"),
        ("books_pkey", "p", "PRIMARY KEY (id)"), ("books_price_check", "c", "CHECK ((price > 0))")]
    assert query(catalog, "SELECT indexrelid::regclass, indisprimary, indisunique, indkey, "
                          "pg_get_indexdef(indexrelid) FROM pg_catalog.pg_index "
                          "WHERE indrelid = 'books'::regclass ORDER BY indisprimary DESC") == [
        ("books_pkey", True, True, "1",
         "CREATE UNIQUE INDEX books_pkey ON main.books USING btree (id)"),
        ("books_price", False, False, "3",
         "CREATE INDEX books_price ON main.books USING btree (price)")]
    # The foreign key's index is the referenced primary key's.
    assert query(catalog, "SELECT i.relname FROM pg_catalog.pg_constraint c JOIN "
                          "pg_catalog.pg_class i ON i.oid = c.conindid WHERE c.contype = 'f'") == [
        ("authors_pkey",)]


def test_index_keys_named_as_keywords_quoted_or_computed(catalog):
    """DuckDB lists an index's keys as text, quoting some; each is a column or an expression."""
    catalog.con.execute('CREATE TABLE t (name VARCHAR, "Upper" INTEGER, "a,b" INTEGER, '
                        'v INTEGER); CREATE INDEX k1 ON t (name); '
                        'CREATE INDEX k2 ON t ("Upper", "a,b"); '
                        'CREATE INDEX k3 ON t (lower(name)); '
                        "CREATE INDEX k4 ON t ((v + 1)); CREATE INDEX k5 ON t ((name || 'it''s'))")
    assert query(catalog, "SELECT indexrelid::regclass, indkey, pg_get_indexdef(indexrelid), "
                          "pg_get_indexdef(indexrelid, 1, true) FROM pg_catalog.pg_index "
                          "WHERE indrelid = 't'::regclass ORDER BY 1") == [
        ("k1", "1", "CREATE INDEX k1 ON main.t USING btree (name)", "name"),
        ("k2", "2 3", 'CREATE INDEX k2 ON main.t USING btree ("Upper", "a,b")', '"Upper"'),
        # (an expression as DuckDB prints it: PostgreSQL's leaves name unquoted)
        ("k3", "0", 'CREATE INDEX k3 ON main.t USING btree (lower("name"))', 'lower("name")'),
        ("k4", "0", "CREATE INDEX k4 ON main.t USING btree (((v + 1)))", "((v + 1))"),
        ("k5", "0", """CREATE INDEX k5 ON main.t USING btree ((("name" || 'it''s')))""",
         """(("name" || 'it''s'))""")]


def test_varchar_length_kept_as_a_check_is_varchar_n(catalog):
    catalog.con.execute("CREATE TABLE t (title VARCHAR CHECK (length(title) <= 200), "
                        "body VARCHAR CHECK (length(body) > 2))")
    assert query(catalog, "SELECT attname, format_type(atttypid, atttypmod) FROM "
                          "pg_catalog.pg_attribute WHERE attrelid = 't'::regclass "
                          "ORDER BY attnum") == [("title", "character varying(200)"),
                                                 ("body", "text")]
    # The length CHECK is the type's, not a constraint of its own; the other CHECK is one.
    assert query(catalog, "SELECT pg_get_constraintdef(oid) FROM pg_catalog.pg_constraint") == [
        ("CHECK ((length(body) > 2))",)]
    assert query(catalog, "SELECT data_type, character_maximum_length FROM "
                          "information_schema.columns WHERE table_name = 't' "
                          "ORDER BY ordinal_position") == [("character varying", 200),
                                                           ("text", None)]


def test_defaults_as_postgresql_prints_them(catalog):
    catalog.con.execute("CREATE SEQUENCE s; CREATE TABLE t (a INTEGER DEFAULT 5, "
                        "b VARCHAR DEFAULT 'it''s', c DATE DEFAULT '2020-01-02', "
                        "d INTEGER DEFAULT nextval('s'), e TIMESTAMP DEFAULT now())")
    assert query(catalog, "SELECT a.attname, pg_get_expr(d.adbin, d.adrelid) FROM "
                          "pg_catalog.pg_attrdef d JOIN pg_catalog.pg_attribute a ON "
                          "a.attrelid = d.adrelid AND a.attnum = d.adnum ORDER BY a.attnum") == [
        ("a", "5"), ("b", "'it''s'::text"), ("c", "'2020-01-02'::date"),
        ("d", "nextval('s'::regclass)"), ("e", "now()")]


def test_types_arrays_enums_and_row_types(catalog):
    catalog.con.execute("CREATE TYPE mood AS ENUM ('sad', 'happy'); CREATE TABLE t (m mood)")
    assert query(catalog, "SELECT oid, typname, typelem, typarray, typcategory FROM "
                          "pg_catalog.pg_type WHERE typname IN ('int4', '_int4', 'text', "
                          "'_text') ORDER BY oid") == [
        (23, "int4", 0, 1007, "N"), (25, "text", 0, 1009, "S"), (1007, "_int4", 23, 0, "A"),
        (1009, "_text", 25, 0, "A")]
    assert query(catalog, "SELECT t.typtype, e.enumlabel, e.enumsortorder FROM "
                          "pg_catalog.pg_type t JOIN pg_catalog.pg_enum e ON e.enumtypid = t.oid "
                          "WHERE t.typname = 'mood' ORDER BY 3") == [("e", "sad", 1.0),
                                                                     ("e", "happy", 2.0)]
    assert query(catalog, "SELECT format_type(a.atttypid, NULL), t.typtype, t.typrelid = c.oid "
                          "FROM pg_catalog.pg_attribute a, pg_catalog.pg_class c JOIN "
                          "pg_catalog.pg_type t ON t.oid = c.reltype WHERE c.relname = 't' "
                          "AND a.attrelid = c.oid") == [("mood", "c", True)]


def test_comments_are_descriptions(catalog):
    con = catalog.con
    con.execute("CREATE TABLE t (a INTEGER); COMMENT ON TABLE t IS 'the table'; "
                "COMMENT ON COLUMN t.a IS 'the column'")
    assert query(catalog, "SELECT obj_description('t'::regclass, 'pg_class'), "
                          "col_description('t'::regclass, 1)") == [("the table", "the column")]


def test_temporary_relations_and_sequences(catalog):
    catalog.con.execute("CREATE TEMP TABLE scratch (a INTEGER); CREATE SEQUENCE s")
    assert query(catalog, "SELECT n.nspname, c.relname, c.relkind, c.relpersistence, "
                          "pg_table_is_visible(c.oid) FROM pg_catalog.pg_class c "
                          "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                          "WHERE c.relname IN ('scratch', 's') ORDER BY 2") == [
        ("main", "s", "S", "p", True), ("pg_temp_1", "scratch", "r", "t", True)]


def test_regclass_looks_names_up_on_the_search_path(catalog):
    con = catalog.con
    con.execute('CREATE SCHEMA s; CREATE TABLE t (a INTEGER); CREATE TABLE s.t (b INTEGER); '
                'CREATE TABLE s."Odd Name" (c INTEGER)')
    main_t, s_t = (query(catalog, f"SELECT '{name}'::regclass::oid")[0][0]
                   for name in ("t", "s.t"))
    assert main_t != s_t
    assert query(catalog, "SELECT attname FROM pg_catalog.pg_attribute "
                          "WHERE attrelid = 's.\"Odd Name\"'::regclass") == [("c",)]
    assert query(catalog, f"SELECT '{s_t}'::regclass, 't'::regclass, 'pg_class'::regclass") == [
        ("s.t", "t", "pg_class")]
    with pytest.raises(duckdb.Error, match='relation "nope" does not exist'):
        query(catalog, "SELECT 'nope'::regclass")


def test_to_reg_functions_and_regtype(catalog):
    catalog.con.execute("CREATE TYPE mood AS ENUM ('a'); CREATE TABLE t (m mood)")
    assert query(catalog, "SELECT to_regtype('int4[]')::oid, to_regtype('integer')::oid, "
                          "to_regtype('pg_catalog.varchar(10)')::oid, to_regtype('mood') IS NOT "
                          "NULL, to_regtype('no_such'), to_regclass('no_such'), "
                          "to_regclass('t') = 't'::regclass") == [
        (1007, 23, 1043, True, None, None, True)]
    assert query(catalog, "SELECT 'double precision'::regtype, 'text[]'::regtype") == [
        ("double precision", "text[]")]
    with pytest.raises(duckdb.Error, match='type "no_such" does not exist'):
        query(catalog, "SELECT 'no_such'::regtype")


def test_pg_typeof_names_types_as_postgresql_does(catalog):
    assert query(catalog, "SELECT pg_typeof(1), pg_typeof('a'::text), pg_typeof(1.5), "
                          "pg_typeof(now()), pg_typeof(ARRAY[1, 2]), pg_typeof(2::bigint) AS b "
                          "WHERE pg_typeof(true) = 'boolean'") == [
        ("integer", "text", "numeric", "timestamp with time zone", "integer[]", "bigint")]


def test_pg_typeof_names_declared_types_and_needs_no_subquery(catalog):
    from heron.planner.column_origins import Relations

    con = catalog.con
    con.execute("CREATE TABLE typed (j JSON CHECK (json_valid(j)), k JSON, "
                "v VARCHAR CHECK (length(v) <= 3))")
    relations = Relations.load(con)

    def typed(sql: str) -> list[tuple]:
        sql = rewrite(sql, relations)
        catalog.refresh(sql)
        return [tuple(_text_form(v) for v in row) for row in con.sql(sql).fetchall()]

    assert typed("SELECT pg_typeof(j), pg_typeof(k), pg_typeof(v), pg_typeof(j -> 'a'), "
                 "pg_typeof(v || 'x'), pg_typeof('a'::varchar(2)) FROM (SELECT * FROM typed "
                 "UNION ALL SELECT '{}', '[]', 'abc') t") == [
        ("jsonb", "json", "character varying", "jsonb", "text", "character varying")]
    # DuckDB takes no subquery in RETURNING: pg_typeof's names are looked up without one
    assert typed("INSERT INTO typed VALUES ('{}', '1', 'a') RETURNING pg_typeof(j), "
                 "pg_typeof(k), pg_typeof(v) AS t, pg_typeof(1.5)") == [
        ("jsonb", "json", "character varying", "numeric")]


def test_snapshots_follow_ddl_and_rollback(catalog):
    con = catalog.con
    names = "SELECT relname FROM pg_catalog.pg_class WHERE relname LIKE 'snap%' ORDER BY 1"
    con.execute("CREATE TABLE snap_a (x INTEGER)")
    assert query(catalog, names) == [("snap_a",)]
    con.execute("BEGIN")
    con.execute("CREATE TABLE snap_b (x INTEGER)")
    assert query(catalog, names) == [("snap_a",), ("snap_b",)]
    con.execute("ROLLBACK")  # the snapshot taken inside the transaction goes with it
    assert query(catalog, names) == [("snap_a",)]
    con.execute("DROP TABLE snap_a")
    assert query(catalog, names) == []


def test_snapshots_found_fresh_serve_while_the_catalog_generation_lasts(catalog, monkeypatch):
    con = catalog.con
    compared = []
    snapshot = catalog._snapshot
    monkeypatch.setattr(catalog, "_snapshot", lambda: compared.append(1) or snapshot())
    names = "SELECT relname FROM pg_catalog.pg_class WHERE relname LIKE 'gen%' ORDER BY 1"

    def read(generation: int | None) -> list[tuple]:
        sql = rewrite(names)
        catalog.refresh(sql, generation)
        return con.sql(sql).fetchall()

    con.execute("CREATE TABLE gen_a (x INTEGER)")
    assert read(1) == [("gen_a",)] and len(compared) == 1
    assert read(1) == [("gen_a",)] and len(compared) == 1  # not compared again
    con.execute("CREATE TABLE gen_b (x INTEGER)")  # the server advances the generation
    assert read(2) == [("gen_a",), ("gen_b",)] and len(compared) == 2
    con.execute("BEGIN")  # in a block, compared every time
    con.execute("DROP TABLE gen_b")
    assert read(None) == [("gen_a",)] and read(None) == [("gen_a",)] and len(compared) == 4
    con.execute("ROLLBACK")
    catalog.rolled_back()  # (as the planner does): the block's snapshots are undone
    assert read(2) == [("gen_a",), ("gen_b",)] and len(compared) == 5


def test_information_schema(catalog):
    con = catalog.con
    con.execute("CREATE TABLE a (id INTEGER PRIMARY KEY); CREATE TABLE b (id INTEGER, "
                "a_id INTEGER NOT NULL REFERENCES a (id), n DECIMAL(8,3), d DATE, f DOUBLE)")
    assert query(catalog, "SELECT column_name, data_type, udt_name, is_nullable, "
                          "numeric_precision, numeric_scale, datetime_precision FROM "
                          "information_schema.columns WHERE table_name = 'b' "
                          "ORDER BY ordinal_position") == [
        ("id", "integer", "int4", "YES", 32, 0, None),
        ("a_id", "integer", "int4", "NO", 32, 0, None),
        ("n", "numeric", "numeric", "YES", 8, 3, None),
        ("d", "date", "date", "YES", None, None, 0),
        ("f", "double precision", "float8", "YES", 53, None, None)]
    assert query(catalog, "SELECT tc.constraint_type, kc.column_name, rc.unique_constraint_name"
                          " FROM information_schema.table_constraints tc JOIN "
                          "information_schema.key_column_usage kc USING (constraint_name) "
                          "LEFT JOIN information_schema.referential_constraints rc USING "
                          "(constraint_name) ORDER BY 1, 2") == [
        ("FOREIGN KEY", "a_id", "a_pkey"), ("PRIMARY KEY", "id", None)]


# -- functions --------------------------------------------------------------------------------

def test_session_functions(catalog):
    con = catalog.con
    assert con.sql("SELECT version()").fetchall()[0][0].startswith("PostgreSQL 16.4 (Heron")
    assert con.sql("SELECT current_setting('JIT'), current_setting('timezone')").fetchall() == [
        ("off", "UTC")]
    with pytest.raises(duckdb.Error, match="unrecognized configuration parameter"):
        con.sql("SELECT current_setting('nope')").fetchall()
    assert query(catalog, "SELECT name, setting FROM pg_catalog.pg_settings WHERE name IN "
                          "('TimeZone', 'max_index_keys') ORDER BY 1") == [
        ("TimeZone", "UTC"), ("max_index_keys", "32")]
    assert query(catalog, "SELECT quote_ident('a'), quote_ident('A'), quote_ident('user'), "
                          "pg_size_pretty(10239), pg_size_pretty(10240), "
                          "pg_size_pretty(123456789)") == [
        ("a", '"A"', '"user"', "10239 bytes", "10 kB", "118 MB")]


def test_catalog_functions(catalog):
    con = catalog.con
    con.execute("CREATE SCHEMA s; CREATE TABLE s.t (a DECIMAL(12,3), b VARCHAR, c INTEGER[])")
    assert query(catalog, "SELECT pg_catalog.format_type(a.atttypid, a.atttypmod), "
                          "pg_get_userbyid(10) FROM pg_catalog.pg_attribute a "
                          "WHERE a.attrelid = 's.t'::regclass ORDER BY attnum") == [
        ("numeric(12,3)", "alice"), ("text", "alice"), ("integer[]", "alice")]
    assert query(catalog, "SELECT pg_catalog.pg_table_is_visible(oid) FROM pg_catalog.pg_class"
                          " WHERE relname = 't'") == [(False,)]  # s is not on the search path
    assert query(catalog, "SELECT format_type(0, NULL), format_type(99999, NULL), "
                          "pg_has_role('alice', 'pg_database_owner', 'MEMBER')") == [
        ("-", "???", True)]


# -- when the shim is created ----------------------------------------------------------------

def test_the_relations_are_created_by_the_first_statement_that_may_read_them():
    """A session that never reads the catalog does not pay for it; one whose first catalog
    statement ran in a transaction that rolled back gets the relations again."""
    con = duckdb.connect()
    planner = Planner(con)
    temp_views = ("SELECT count(*) FROM duckdb_views() WHERE temporary "
                  "AND view_name = 'heron_system_relations'")  # the shim's own
    assert planner.execute(planner.prepare("SELECT 1 AS one")).rows.read_all().to_pylist() == [
        {"one": 1}]
    assert con.execute(temp_views).fetchall() == [(0,)]
    planner.begin()
    counted = "SELECT count(*) AS n FROM pg_catalog.pg_class WHERE relname = 'pg_class'"
    assert planner.execute(planner.prepare(counted)).rows.read_all().to_pylist() == [{"n": 1}]
    planner.rollback()
    assert con.execute(temp_views).fetchall() == [(0,)]  # gone with the transaction
    assert planner.execute(planner.prepare(counted)).rows.read_all().to_pylist() == [{"n": 1}]
    assert con.execute(temp_views).fetchall() == [(1,)]
    con.close()


def test_prefix_root_operators_are_double_precision_of_what_follows_up_to_a_comparison():
    planner = Planner(duckdb.connect())
    try:
        # `1::numeric` makes the statement parse (`pg_semantics` rewrites it): sqlglot's reading
        # of `|/ 16 + 1` was sqrt(16) + 1, PostgreSQL's is the root of 17
        for sql in ("SELECT |/ 16 + 1, ||/ 27 * 2 < 4, |/ x AS r FROM (VALUES (2)) t(x)",
                    "SELECT |/ 16 + 1, ||/ 27 * 2 < 4, |/ x AS r, 1::numeric AS n "
                    "FROM (VALUES (2)) t(x)"):
            result = planner.execute(planner.prepare(sql))
            assert [(c.name, str(c.type)) for c in result.columns][:3] == [
                ("?column?", "double"), ("?column?", "bool"), ("r", "double")]
            assert result.rows is not None
            row = [column[0].as_py() for column in result.rows.read_all().columns]
            assert row[:3] == [17 ** 0.5, True, 2 ** 0.5]
    finally:
        planner.close()


def test_upper_keeps_sharp_s_as_postgresql_s_towupper_does():
    planner = Planner(duckdb.connect())
    try:
        result = planner.execute(planner.prepare(
            "SELECT upper('straße'), upper('ẞ'), upper('ßßaßẞ'), upper(''), upper(NULL), "
            "initcap('ßtraße groß'), lower('ẞ')"))
        assert result.rows is not None
        assert [column[0].as_py() for column in result.rows.read_all().columns] == [
            "STRAßE", "ẞ", "ßßAßẞ", "", None, "ßtraße Groß", "ß"]
        with pytest.raises(SqlError, match=r"upper\(integer\)"):
            planner.execute(planner.prepare("SELECT upper(5)"))
    finally:
        planner.close()
