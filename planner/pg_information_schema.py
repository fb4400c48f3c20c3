"""PostgreSQL 15's information_schema views, answered from the pg_catalog shim.

Contract: `RELATIONS` lists the information_schema views the shim answers (tables, columns, views,
schemata, sequences, table_constraints, key_column_usage, referential_constraints,
constraint_column_usage, check_constraints, routines), each a `Relation` with PostgreSQL 15's
columns in PostgreSQL's order, built over the catalog views of
`heron.planner.pg_catalog_relations` as PostgreSQL builds them over its catalogs: data_type in the
standard's spelling ('integer', 'character varying', 'ARRAY', 'USER-DEFINED'), udt_name the
pg_type name, the precision/length/scale columns from the type and its typmod, NOT NULL columns
listed as CHECK constraints named `<schema oid>_<table oid>_<column number>_not_null`.
`view_name(name)` is the name of the TEMP view answering `information_schema.<name>`.
`expandarray` is the rewrite target of `information_schema._pg_expandarray`.
"""

from __future__ import annotations

from heron.planner import foreign_keys
from heron.planner.pg_catalog_relations import Relation

PREFIX = "heron_information_schema_"


def view_name(name: str) -> str:
    return PREFIX + name


_CATALOG = "current_database()"


def _rule(letter: str) -> str:
    """SQL: a foreign key's action (pg_constraint's letter) as referential_constraints names it."""
    whens = " ".join(f"WHEN '{code}' THEN '{name}'"
                     for code, name in foreign_keys.ACTION_NAMES.items())
    return f"CASE {letter} {whens} END"


# The standard's name of a type (information_schema.columns.data_type).
_DATA_TYPE = """CASE WHEN t.typtype = 'd' THEN 'USER-DEFINED'
                     WHEN t.typelem <> 0 AND t.typlen = -1 THEN 'ARRAY'
                     WHEN t.typnamespace = 11 THEN format_type(t.oid, NULL)
                     ELSE 'USER-DEFINED' END"""
# Bytes a character may take in UTF8; text without a length holds up to 1 GB.
_OCTETS = """CASE WHEN a.atttypid IN (1042, 1043) AND a.atttypmod >= 4 THEN (a.atttypmod - 4) * 4
                  WHEN a.atttypid IN (25, 1042, 1043) THEN 1073741824 END"""
_PRECISION = """CASE a.atttypid WHEN 21 THEN 16 WHEN 23 THEN 32 WHEN 20 THEN 64 WHEN 700 THEN 24
                     WHEN 701 THEN 53 WHEN 26 THEN 32
                     WHEN 1700 THEN CASE WHEN a.atttypmod >= 4
                                         THEN ((a.atttypmod - 4) >> 16) & 65535 END END"""
_RADIX = """CASE WHEN a.atttypid IN (21, 23, 20, 700, 701, 26) THEN 2
                 WHEN a.atttypid = 1700 THEN 10 END"""
_SCALE = """CASE WHEN a.atttypid IN (21, 23, 20, 26) THEN 0
                 WHEN a.atttypid = 1700 AND a.atttypmod >= 4 THEN (a.atttypmod - 4) & 65535 END"""
_DATETIME_PRECISION = """CASE WHEN a.atttypid = 1082 THEN 0
                              WHEN a.atttypid IN (1083, 1114, 1184, 1186, 1266)
                              THEN CASE WHEN a.atttypmod >= 0 THEN a.atttypmod ELSE 6 END END"""

_COLUMNS = """
    pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_type t ON t.oid = a.atttypid
    JOIN pg_namespace tn ON tn.oid = t.typnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'v', 'f', 'p', 'm')"""

# Constraints with their table, and NOT NULL columns as PostgreSQL lists them (CHECK).
_TABLE_CONSTRAINTS = """(
    SELECT k.conname AS name, n.nspname AS schema, c.relname AS table_name,
           CASE k.contype WHEN 'p' THEN 'PRIMARY KEY' WHEN 'u' THEN 'UNIQUE'
                WHEN 'f' THEN 'FOREIGN KEY' ELSE 'CHECK' END AS type,
           c.oid AS relid, k.oid AS conoid, k.contype, pg_get_constraintdef(k.oid) AS definition,
           k.condeferrable, k.condeferred
    FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    UNION ALL
    SELECT n.oid || '_' || c.oid || '_' || a.attnum || '_not_null', n.nspname, c.relname,
           'CHECK', c.oid, NULL, 'n', 'CHECK ' || quote_ident(a.attname) || ' IS NOT NULL',
           false, false
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE a.attnotnull AND a.attnum > 0 AND c.relkind IN ('r', 'p')) tc"""

_KEY_COLUMNS = """(
    SELECT k.conname, n.nspname, c.relname, a.attname, p.position, k.contype, k.confrelid,
           k.confkey[p.position] AS referenced_attnum, k.oid
    FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace,
    unnest(k.conkey) WITH ORDINALITY AS p(attnum, position)
    JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = p.attnum
    WHERE k.contype IN ('p', 'u', 'f')) kc"""

# Heron has no routines of its own; the view is PostgreSQL's, empty. Its columns' domains:
# i sql_identifier, d character_data, n cardinal_number, y yes_or_no, t time_stamp.
_DOMAINS = {"i": "sql_identifier", "d": "character_data", "n": "cardinal_number",
            "y": "yes_or_no", "t": "time_stamp"}
_ROUTINE_SPEC = """
    specific_catalog:i specific_schema:i specific_name:i routine_catalog:i routine_schema:i
    routine_name:i routine_type:d module_catalog:i module_schema:i module_name:i udt_catalog:i
    udt_schema:i udt_name:i data_type:d character_maximum_length:n character_octet_length:n
    character_set_catalog:i character_set_schema:i character_set_name:i collation_catalog:i
    collation_schema:i collation_name:i numeric_precision:n numeric_precision_radix:n
    numeric_scale:n datetime_precision:n interval_type:d interval_precision:n type_udt_catalog:i
    type_udt_schema:i type_udt_name:i scope_catalog:i scope_schema:i scope_name:i
    maximum_cardinality:n dtd_identifier:i routine_body:d routine_definition:d external_name:d
    external_language:d parameter_style:d is_deterministic:y sql_data_access:d is_null_call:y
    sql_path:d schema_level_routine:y max_dynamic_result_sets:n is_user_defined_cast:y
    is_implicitly_invocable:y security_type:d to_sql_specific_catalog:i to_sql_specific_schema:i
    to_sql_specific_name:i as_locator:y created:t last_altered:t new_savepoint_level:y
    is_udt_dependent:y result_cast_from_data_type:d result_cast_as_locator:y
    result_cast_char_max_length:n result_cast_char_octet_length:n result_cast_char_set_catalog:i
    result_cast_char_set_schema:i result_cast_char_set_name:i result_cast_collation_catalog:i
    result_cast_collation_schema:i result_cast_collation_name:i result_cast_numeric_precision:n
    result_cast_numeric_precision_radix:n result_cast_numeric_scale:n
    result_cast_datetime_precision:n result_cast_interval_type:d result_cast_interval_precision:n
    result_cast_type_udt_catalog:i result_cast_type_udt_schema:i result_cast_type_udt_name:i
    result_cast_scope_catalog:i result_cast_scope_schema:i result_cast_scope_name:i
    result_cast_maximum_cardinality:n result_cast_dtd_identifier:i"""
_ROUTINE_COLUMNS = " ".join(f"{name}:{_DOMAINS[kind]}"
                            for name, kind in (item.split(":") for item in _ROUTINE_SPEC.split()))

RELATIONS: tuple[Relation, ...] = (
    Relation(
        "schemata",
        "catalog_name:sql_identifier schema_name:sql_identifier schema_owner:sql_identifier "
        "default_character_set_catalog:sql_identifier default_character_set_schema:sql_identifier "
        "default_character_set_name:sql_identifier sql_path:character_data",
        {"catalog_name": _CATALOG, "schema_name": "n.nspname",
         "schema_owner": "pg_get_userbyid(n.nspowner)"},
        "pg_namespace n"),
    Relation(
        "tables",
        "table_catalog:sql_identifier table_schema:sql_identifier table_name:sql_identifier "
        "table_type:character_data self_referencing_column_name:sql_identifier "
        "reference_generation:character_data user_defined_type_catalog:sql_identifier "
        "user_defined_type_schema:sql_identifier user_defined_type_name:sql_identifier "
        "is_insertable_into:yes_or_no is_typed:yes_or_no commit_action:character_data",
        {"table_catalog": _CATALOG, "table_schema": "n.nspname", "table_name": "c.relname",
         "table_type": """CASE WHEN n.nspname LIKE 'pg\\_temp\\_%' ESCAPE '\\'
                               THEN 'LOCAL TEMPORARY' WHEN c.relkind IN ('r', 'p')
                               THEN 'BASE TABLE' WHEN c.relkind = 'v' THEN 'VIEW'
                               ELSE 'FOREIGN' END""",
         "is_insertable_into": "CASE WHEN c.relkind IN ('r', 'p') THEN 'YES' ELSE 'NO' END",
         "is_typed": "'NO'",
         "commit_action": "CASE WHEN c.relpersistence = 't' THEN 'PRESERVE' END"},
        "pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relkind IN ('r', 'v', 'f', 'p')"),
    Relation(
        "columns",
        "table_catalog:sql_identifier table_schema:sql_identifier table_name:sql_identifier "
        "column_name:sql_identifier ordinal_position:cardinal_number "
        "column_default:character_data is_nullable:yes_or_no data_type:character_data "
        "character_maximum_length:cardinal_number character_octet_length:cardinal_number "
        "numeric_precision:cardinal_number numeric_precision_radix:cardinal_number "
        "numeric_scale:cardinal_number datetime_precision:cardinal_number "
        "interval_type:character_data interval_precision:cardinal_number "
        "character_set_catalog:sql_identifier character_set_schema:sql_identifier "
        "character_set_name:sql_identifier collation_catalog:sql_identifier "
        "collation_schema:sql_identifier collation_name:sql_identifier "
        "domain_catalog:sql_identifier domain_schema:sql_identifier domain_name:sql_identifier "
        "udt_catalog:sql_identifier udt_schema:sql_identifier udt_name:sql_identifier "
        "scope_catalog:sql_identifier scope_schema:sql_identifier scope_name:sql_identifier "
        "maximum_cardinality:cardinal_number dtd_identifier:sql_identifier "
        "is_self_referencing:yes_or_no is_identity:yes_or_no identity_generation:character_data "
        "identity_start:character_data identity_increment:character_data "
        "identity_maximum:character_data identity_minimum:character_data "
        "identity_cycle:yes_or_no is_generated:character_data "
        "generation_expression:character_data is_updatable:yes_or_no",
        {"table_catalog": _CATALOG, "table_schema": "n.nspname", "table_name": "c.relname",
         "column_name": "a.attname", "ordinal_position": "a.attnum",
         "column_default": "CASE WHEN a.attgenerated = '' THEN d.adbin END",
         "is_nullable": "CASE WHEN a.attnotnull THEN 'NO' ELSE 'YES' END",
         "data_type": _DATA_TYPE,
         "character_maximum_length": "CASE WHEN a.atttypid IN (1042, 1043) "
                                     "AND a.atttypmod >= 4 THEN a.atttypmod - 4 END",
         "character_octet_length": _OCTETS, "numeric_precision": _PRECISION,
         "numeric_precision_radix": _RADIX, "numeric_scale": _SCALE,
         "datetime_precision": _DATETIME_PRECISION, "udt_catalog": _CATALOG,
         "udt_schema": "tn.nspname", "udt_name": "t.typname", "dtd_identifier": "a.attnum",
         "is_self_referencing": "'NO'",
         "is_identity": "CASE WHEN a.attidentity = '' THEN 'NO' ELSE 'YES' END",
         "identity_generation": "CASE a.attidentity WHEN 'a' THEN 'ALWAYS' "
                                "WHEN 'd' THEN 'BY DEFAULT' END",
         "identity_cycle": "'NO'",
         "is_generated": "CASE WHEN a.attgenerated = '' THEN 'NEVER' ELSE 'ALWAYS' END",
         "generation_expression": "CASE WHEN a.attgenerated <> '' THEN d.adbin END",
         "is_updatable": "CASE WHEN c.relkind IN ('r', 'p') THEN 'YES' ELSE 'NO' END"},
        _COLUMNS),
    Relation(
        "views",
        "table_catalog:sql_identifier table_schema:sql_identifier table_name:sql_identifier "
        "view_definition:character_data check_option:character_data is_updatable:yes_or_no "
        "is_insertable_into:yes_or_no is_trigger_updatable:yes_or_no "
        "is_trigger_deletable:yes_or_no is_trigger_insertable_into:yes_or_no",
        {"table_catalog": _CATALOG, "table_schema": "n.nspname", "table_name": "c.relname",
         "view_definition": "pg_get_viewdef(c.oid)", "check_option": "'NONE'",
         "is_updatable": "'NO'", "is_insertable_into": "'NO'", "is_trigger_updatable": "'NO'",
         "is_trigger_deletable": "'NO'", "is_trigger_insertable_into": "'NO'"},
        "pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'v'"),
    Relation(
        "sequences",
        "sequence_catalog:sql_identifier sequence_schema:sql_identifier "
        "sequence_name:sql_identifier data_type:character_data numeric_precision:cardinal_number "
        "numeric_precision_radix:cardinal_number numeric_scale:cardinal_number "
        "start_value:character_data minimum_value:character_data maximum_value:character_data "
        "increment:character_data cycle_option:yes_or_no",
        {"sequence_catalog": _CATALOG, "sequence_schema": "s.schemaname",
         "sequence_name": "s.sequencename", "data_type": "'bigint'", "numeric_precision": "64",
         "numeric_precision_radix": "2", "numeric_scale": "0", "start_value": "s.start_value",
         "minimum_value": "s.min_value", "maximum_value": "s.max_value",
         "increment": "s.increment_by", "cycle_option": "CASE WHEN s.cycle THEN 'YES' ELSE 'NO' "
                                                        "END"},
        "pg_sequences s"),
    Relation(
        "table_constraints",
        "constraint_catalog:sql_identifier constraint_schema:sql_identifier "
        "constraint_name:sql_identifier table_catalog:sql_identifier "
        "table_schema:sql_identifier table_name:sql_identifier constraint_type:character_data "
        "is_deferrable:yes_or_no initially_deferred:yes_or_no enforced:yes_or_no "
        "nulls_distinct:yes_or_no",
        {"constraint_catalog": _CATALOG, "constraint_schema": "tc.schema",
         "constraint_name": "tc.name", "table_catalog": _CATALOG, "table_schema": "tc.schema",
         "table_name": "tc.table_name", "constraint_type": "tc.type", "is_deferrable":
         "CASE WHEN tc.condeferrable THEN 'YES' ELSE 'NO' END",
         "initially_deferred": "CASE WHEN tc.condeferred THEN 'YES' ELSE 'NO' END",
         "enforced": "'YES'",
         "nulls_distinct": "CASE WHEN tc.contype = 'u' THEN 'YES' END"},
        _TABLE_CONSTRAINTS),
    Relation(
        "check_constraints",
        "constraint_catalog:sql_identifier constraint_schema:sql_identifier "
        "constraint_name:sql_identifier check_clause:character_data",
        {"constraint_catalog": _CATALOG, "constraint_schema": "tc.schema",
         "constraint_name": "tc.name",
         "check_clause": "regexp_extract(tc.definition, '^CHECK (.*)$', 1)"},
        _TABLE_CONSTRAINTS + " WHERE tc.type = 'CHECK'"),
    Relation(
        "key_column_usage",
        "constraint_catalog:sql_identifier constraint_schema:sql_identifier "
        "constraint_name:sql_identifier table_catalog:sql_identifier "
        "table_schema:sql_identifier table_name:sql_identifier column_name:sql_identifier "
        "ordinal_position:cardinal_number position_in_unique_constraint:cardinal_number",
        {"constraint_catalog": _CATALOG, "constraint_schema": "kc.nspname",
         "constraint_name": "kc.conname", "table_catalog": _CATALOG,
         "table_schema": "kc.nspname", "table_name": "kc.relname", "column_name": "kc.attname",
         "ordinal_position": "kc.position",
         "position_in_unique_constraint": """CASE WHEN kc.contype = 'f' THEN list_position(
               (SELECT u.conkey FROM pg_constraint u JOIN pg_constraint f ON f.oid = kc.oid
                WHERE u.conrelid = f.confrelid AND u.oid = f.conindid),
               kc.referenced_attnum) END"""},
        _KEY_COLUMNS),
    Relation(
        "referential_constraints",
        "constraint_catalog:sql_identifier constraint_schema:sql_identifier "
        "constraint_name:sql_identifier unique_constraint_catalog:sql_identifier "
        "unique_constraint_schema:sql_identifier unique_constraint_name:sql_identifier "
        "match_option:character_data update_rule:character_data delete_rule:character_data",
        {"constraint_catalog": _CATALOG, "constraint_schema": "n.nspname",
         "constraint_name": "k.conname", "unique_constraint_catalog": _CATALOG,
         "unique_constraint_schema": "un.nspname", "unique_constraint_name": "u.conname",
         "match_option": "'NONE'", "update_rule": _rule("k.confupdtype"),
         "delete_rule": _rule("k.confdeltype")},
        "pg_constraint k JOIN pg_namespace n ON n.oid = k.connamespace "
        "LEFT JOIN pg_constraint u ON u.oid = k.conindid AND u.contype IN ('p', 'u') "
        "LEFT JOIN pg_namespace un ON un.oid = u.connamespace WHERE k.contype = 'f'"),
    Relation(
        "constraint_column_usage",
        "table_catalog:sql_identifier table_schema:sql_identifier table_name:sql_identifier "
        "column_name:sql_identifier constraint_catalog:sql_identifier "
        "constraint_schema:sql_identifier constraint_name:sql_identifier",
        {"table_catalog": _CATALOG, "table_schema": "tn.nspname", "table_name": "t.relname",
         "column_name": "a.attname", "constraint_catalog": _CATALOG,
         "constraint_schema": "n.nspname", "constraint_name": "k.conname"},
        """pg_constraint k JOIN pg_namespace n ON n.oid = k.connamespace,
           unnest(CASE WHEN k.contype = 'f' THEN k.confkey ELSE k.conkey END) AS u(attnum)
           JOIN pg_class t ON t.oid = CASE WHEN k.contype = 'f' THEN k.confrelid
                                          ELSE k.conrelid END
           JOIN pg_namespace tn ON tn.oid = t.relnamespace
           JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = u.attnum"""),
    Relation("routines", _ROUTINE_COLUMNS),
)
