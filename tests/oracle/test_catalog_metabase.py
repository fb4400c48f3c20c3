"""Metabase's sync of a PostgreSQL database, replayed against Heron and PostgreSQL 15.

The statements are those Metabase's PostgreSQL driver (`metabase.driver.postgres`: describe
database, fields, foreign keys, indexes, enum types, table privileges, the default time zone)
and its JDBC sync (`sql-jdbc.sync`: the connection test, schemas through pgjdbc, the SELECT probe,
row counts, field values and sample rows) send while syncing a database, with the values they
bind, as honeysql prints them for the :ansi quote style, on a connection set to the report time
zone UTC as Metabase sets it. Each answer — result column names and
rows — is compared; statements known to differ are strict xfails listed in EXPECTED_FAILURES
with the reason, so the list measures progress.
"""

from __future__ import annotations

import pytest
from support.catalog_schema import with_expected_failures

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(120)

_NOT_SYSTEM = "'^information_schema|catalog_history|pg_'"
# Metabase's set-timezone-sql, run on each connection of a database with a report time zone.
SESSION_SETUP = "SET SESSION TIMEZONE TO 'UTC';"

STATEMENTS: dict[str, tuple[str, tuple[object, ...]]] = {
    "can_connect": ("SELECT 1", ()),
    "default_timezone": ("show timezone;", ()),
    "transaction_isolation": ("SHOW TRANSACTION ISOLATION LEVEL", ()),
    "current_database": ("SELECT current_database()", ()),
    "schemas": (
        "SELECT nspname AS TABLE_SCHEM, NULL AS TABLE_CATALOG FROM pg_catalog.pg_namespace"
        "  WHERE nspname <> 'pg_toast' AND (nspname !~ '^pg_temp_'  OR nspname ="
        " (pg_catalog.current_schemas(true))[1]) AND (nspname !~ '^pg_toast_temp_'  OR nspname"
        " = replace((pg_catalog.current_schemas(true))[1], 'pg_temp_', 'pg_toast_temp_'))"
        "  ORDER BY TABLE_SCHEM", ()),
    "table_privileges": (
        "with table_privileges as (\n select\n   NULL as role,\n   t.schemaname as schema,\n"
        "   t.objectname as table,\n"
        "   pg_catalog.has_any_column_privilege(current_user, '\"' || replace(t.schemaname, '\"',"
        " '\"\"') || '\"' || '.' || '\"' || replace(t.objectname, '\"', '\"\"') || '\"',"
        "  'update') as update,\n"
        "   pg_catalog.has_any_column_privilege(current_user, '\"' || replace(t.schemaname, '\"',"
        " '\"\"') || '\"' || '.' || '\"' || replace(t.objectname, '\"', '\"\"') || '\"',"
        "  'select') as select,\n"
        "   pg_catalog.has_any_column_privilege(current_user, '\"' || replace(t.schemaname, '\"',"
        " '\"\"') || '\"' || '.' || '\"' || replace(t.objectname, '\"', '\"\"') || '\"',"
        "  'insert') as insert,\n"
        "   pg_catalog.has_table_privilege(     current_user, '\"' || replace(t.schemaname, '\"',"
        " '\"\"') || '\"' || '.' || '\"' || replace(t.objectname, '\"', '\"\"') || '\"',"
        "  'delete') as delete\n from (\n"
        "   select schemaname, tablename as objectname from pg_catalog.pg_tables\n   union\n"
        "   select schemaname, viewname as objectname from pg_catalog.pg_views\n   union\n"
        "   select schemaname, matviewname as objectname from pg_catalog.pg_matviews\n ) t\n"
        " where t.schemaname !~ '^pg_'\n   and t.schemaname <> 'information_schema'\n"
        "   and pg_catalog.has_schema_privilege(current_user, t.schemaname, 'usage')\n)\n"
        "select t.*\nfrom table_privileges t ORDER BY 2, 3", ()),
    "tables": (
        'SELECT "n"."nspname" AS "schema", "c"."relname" AS "name", CASE "c"."relkind"'
        " WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'PARTITIONED TABLE' WHEN 'v' THEN 'VIEW'"
        " WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE NULL END AS"
        ' "type", "d"."description" AS "description", "stat"."n_live_tup" AS'
        ' "estimated_row_count" FROM "pg_catalog"."pg_class" AS "c" INNER JOIN'
        ' "pg_catalog"."pg_namespace" AS "n" ON "c"."relnamespace" = "n"."oid" LEFT JOIN'
        ' "pg_catalog"."pg_description" AS "d" ON ("c"."oid" = "d"."objoid") AND'
        " (\"d\".\"objsubid\" = 0) AND (\"d\".\"classoid\" = 'pg_class'::regclass) LEFT JOIN"
        ' "pg_stat_user_tables" AS "stat" ON ("n"."nspname" = "stat"."schemaname") AND'
        ' ("c"."relname" = "stat"."relname") WHERE ("c"."relnamespace" = "n"."oid") AND'
        " (\"n\".\"nspname\" !~ '^pg_') AND (\"n\".\"nspname\" <> 'information_schema') AND"
        " c.relkind in ('r', 'p', 'v', 'f', 'm') AND (\"n\".\"nspname\" IN (%s))"
        ' ORDER BY "type" ASC, "schema" ASC, "name" ASC', ("public",)),
    "fields": (
        'SELECT "c"."column_name" AS "name", CASE WHEN "c"."udt_schema" IN (\'public\','
        " 'pg_catalog') THEN FORMAT('%%s', \"c\".\"udt_name\") ELSE FORMAT('\"%%s\".\"%%s\"',"
        ' "c"."udt_schema", "c"."udt_name") END AS "database-type", "c"."ordinal_position" - 1'
        ' AS "database-position", "c"."table_schema" AS "table-schema", "c"."table_name" AS'
        ' "table-name", "pk"."column_name" IS NOT NULL AS "pk?", COL_DESCRIPTION(CAST(CAST('
        "FORMAT('%%I.%%I', CAST(\"c\".\"table_schema\" AS TEXT), CAST(\"c\".\"table_name\" AS"
        ' TEXT)) AS REGCLASS) AS OID), "c"."ordinal_position") AS "field-comment",'
        ' (("column_default" IS NULL) OR (LOWER("column_default") = \'null\')) AND'
        " (\"is_nullable\" = 'NO') AND NOT (((\"column_default\" IS NOT NULL) AND"
        " (\"column_default\" LIKE '%%nextval(%%')) OR (\"is_identity\" <> 'NO')) AS"
        ' "database-required", (("column_default" IS NOT NULL) AND ("column_default" LIKE'
        " '%%nextval(%%')) OR (\"is_identity\" <> 'NO') AS \"database-is-auto-increment\""
        ' FROM "information_schema"."columns" AS "c" LEFT JOIN (SELECT "tc"."table_schema",'
        ' "tc"."table_name", "kc"."column_name" FROM "information_schema"."table_constraints"'
        ' AS "tc" INNER JOIN "information_schema"."key_column_usage" AS "kc" ON'
        ' ("tc"."constraint_name" = "kc"."constraint_name") AND ("tc"."table_schema" ='
        ' "kc"."table_schema") AND ("tc"."table_name" = "kc"."table_name") WHERE'
        " \"tc\".\"constraint_type\" = 'PRIMARY KEY') AS \"pk\" ON (\"c\".\"table_schema\" ="
        ' "pk"."table_schema") AND ("c"."table_name" = "pk"."table_name") AND'
        ' ("c"."column_name" = "pk"."column_name") WHERE c.table_schema !~'
        f" {_NOT_SYSTEM} AND (\"c\".\"table_schema\" IN (%s)) AND (\"c\".\"table_name\" IN (%s))"
        ' UNION ALL SELECT "pa"."attname" AS "name", CASE WHEN "ptn"."nspname" IN (\'public\','
        " 'pg_catalog') THEN FORMAT('%%s', \"pt\".\"typname\") ELSE FORMAT('\"%%s\".\"%%s\"',"
        ' "ptn"."nspname", "pt"."typname") END AS "database-type", "pa"."attnum" - 1 AS'
        ' "database-position", "pn"."nspname" AS "table-schema", "pc"."relname" AS'
        ' "table-name", FALSE AS "pk?", NULL AS "field-comment", FALSE AS "database-required",'
        ' FALSE AS "database-is-auto-increment" FROM "pg_catalog"."pg_class" AS "pc" INNER JOIN'
        ' "pg_catalog"."pg_namespace" AS "pn" ON "pn"."oid" = "pc"."relnamespace" INNER JOIN'
        ' "pg_catalog"."pg_attribute" AS "pa" ON "pa"."attrelid" = "pc"."oid" INNER JOIN'
        ' "pg_catalog"."pg_type" AS "pt" ON "pt"."oid" = "pa"."atttypid" INNER JOIN'
        ' "pg_catalog"."pg_namespace" AS "ptn" ON "ptn"."oid" = "pt"."typnamespace" WHERE'
        " (\"pc\".\"relkind\" = 'm') AND (\"pa\".\"attnum\" >= 1) AND (\"pn\".\"nspname\" IN"
        ' (%s)) AND ("pc"."relname" IN (%s)) ORDER BY "table-schema" ASC, "table-name" ASC,'
        ' "database-position" ASC', ("public", "cat_books", "public", "cat_books")),
    "fks": (
        'SELECT "fk_ns"."nspname" AS "fk-table-schema", "fk_table"."relname" AS'
        ' "fk-table-name", "fk_column"."attname" AS "fk-column-name", "pk_ns"."nspname" AS'
        ' "pk-table-schema", "pk_table"."relname" AS "pk-table-name", "pk_column"."attname" AS'
        ' "pk-column-name" FROM "pg_constraint" AS "c" INNER JOIN "pg_class" AS "fk_table" ON'
        ' "c"."conrelid" = "fk_table"."oid" INNER JOIN "pg_namespace" AS "fk_ns" ON'
        ' "c"."connamespace" = "fk_ns"."oid" INNER JOIN "pg_attribute" AS "fk_column" ON'
        ' "c"."conrelid" = "fk_column"."attrelid" INNER JOIN "pg_class" AS "pk_table" ON'
        ' "c"."confrelid" = "pk_table"."oid" INNER JOIN "pg_namespace" AS "pk_ns" ON'
        ' "pk_table"."relnamespace" = "pk_ns"."oid" INNER JOIN "pg_attribute" AS "pk_column" ON'
        f' "c"."confrelid" = "pk_column"."attrelid" WHERE fk_ns.nspname !~ {_NOT_SYSTEM} AND'
        " (\"c\".\"contype\" = 'f'::char) AND (\"fk_column\".\"attnum\" = ANY(c.conkey)) AND"
        ' ("pk_column"."attnum" = ANY(c.confkey)) AND ("fk_table"."relname" IN (%s)) AND'
        ' ("fk_ns"."nspname" IN (%s)) ORDER BY "fk-table-schema" ASC, "fk-table-name" ASC',
        ("cat_books", "public")),
    "indexes": (
        'SELECT "tmp"."table-schema", "tmp"."table-name", TRIM(BOTH \'"\' FROM'
        ' PG_CATALOG.PG_GET_INDEXDEF("tmp"."ci_oid", "tmp"."pos", FALSE)) AS "field-name" FROM'
        ' (SELECT "n"."nspname" AS "table-schema", "ct"."relname" AS "table-name", "ci"."oid"'
        ' AS "ci_oid", (INFORMATION_SCHEMA._PG_EXPANDARRAY("i"."indkey"))."n" AS "pos" FROM'
        ' "pg_catalog"."pg_class" AS "ct" INNER JOIN "pg_catalog"."pg_namespace" AS "n" ON'
        ' "ct"."relnamespace" = "n"."oid" INNER JOIN "pg_catalog"."pg_index" AS "i" ON'
        ' "ct"."oid" = "i"."indrelid" INNER JOIN "pg_catalog"."pg_class" AS "ci" ON "ci"."oid"'
        ' = "i"."indexrelid" WHERE (PG_CATALOG.PG_GET_EXPR("i"."indpred", "i"."indrelid") IS'
        f' NULL) AND n.nspname !~ {_NOT_SYSTEM} AND ("n"."nspname" IN (%s)) AND'
        ' ("ct"."relname" IN (%s))) AS "tmp" WHERE "tmp"."pos" = 1 ORDER BY 3',
        ("public", "cat_books")),
    "enum_types": (
        "SELECT nspname, typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace"
        " WHERE t.oid IN (SELECT DISTINCT enumtypid FROM pg_enum e)", ()),
    "select_probe": ('SELECT TRUE AS "_" FROM "public"."cat_books" WHERE 1 <> 1 LIMIT 0', ()),
    "row_count": ('SELECT COUNT(*) AS "count" FROM "public"."cat_books"', ()),
    "field_values": (
        'SELECT "public"."cat_authors"."name" AS "name" FROM "public"."cat_authors" GROUP BY'
        ' "public"."cat_authors"."name" ORDER BY "public"."cat_authors"."name" ASC LIMIT 1000',
        ()),
    "sample_rows": (
        'SELECT "public"."cat_books"."id" AS "id", "public"."cat_books"."title" AS "title",'
        ' "public"."cat_books"."author_id" AS "author_id", "public"."cat_books"."price" AS'
        ' "price", "public"."cat_books"."published" AS "published" FROM "public"."cat_books"'
        ' ORDER BY "id" LIMIT 10000', ()),
}
EXPECTED_FAILURES = {
    "transaction_isolation": "Heron's transactions are DuckDB's snapshot isolation, which it "
                             "reports as PostgreSQL's repeatable read (PostgreSQL's default is "
                             "read committed, which waits on a concurrent update where snapshot "
                             "isolation raises 40001)",
}


def _answer(server, name: str) -> tuple[list[str], list[tuple]]:
    sql, params = STATEMENTS[name]
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(SESSION_SETUP)
        cursor = conn.execute(sql, params or None)
        return [c.name for c in cursor.description], cursor.fetchall()


@pytest.mark.parametrize("name", with_expected_failures(STATEMENTS, EXPECTED_FAILURES))
def test_metabase_sync_answers_as_postgresql(servers, name):
    heron, postgres = servers
    assert _answer(heron, name) == _answer(postgres, name)
