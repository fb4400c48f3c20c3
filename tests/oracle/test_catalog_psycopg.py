"""psycopg 3's type registry against Heron and PostgreSQL 15 on the same schema.

psycopg looks types up in the catalog to adapt them (`TypeInfo.fetch`, and `EnumInfo` /
`CompositeInfo` for enums and row types, with `to_regtype`): each look-up's answer is compared,
OIDs of objects the schema created left out (the two servers number them differently). Calls
known to differ are strict xfails listed in EXPECTED_FAILURES with the reason.
"""

from __future__ import annotations

import pytest
from support.catalog_schema import with_expected_failures

psycopg = pytest.importorskip("psycopg")
from psycopg.types import TypeInfo  # noqa: E402
from psycopg.types.composite import CompositeInfo  # noqa: E402
from psycopg.types.enum import EnumInfo  # noqa: E402

pytestmark = pytest.mark.timeout(60)

BUILTIN = ("int4", "int4[]", "text", "_text", "numeric", "character varying", "timestamptz",
           "double precision[]", "pg_catalog.bool")
CALLS = {
    "builtin_types": lambda c: [
        (t.name, t.oid, t.array_oid, t.delimiter) for t in (TypeInfo.fetch(c, n) for n in BUILTIN)],
    "unknown_type": lambda c: TypeInfo.fetch(c, "no_such_type"),
    "enum": lambda c: (lambda e: (e.name, e.labels))(EnumInfo.fetch(c, "cat_mood")),
    "row_type": lambda c: (lambda r: (r.name, r.field_names, r.field_types))(
        CompositeInfo.fetch(c, "cat_authors")),
    "view_row_type": lambda c: (lambda r: (r.name, r.field_names, r.field_types))(
        CompositeInfo.fetch(c, "cat_cheap_books")),
}
EXPECTED_FAILURES: dict[str, str] = {}


def _answer(server, call: str):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        return CALLS[call](conn)


@pytest.mark.parametrize("call", with_expected_failures(CALLS, EXPECTED_FAILURES))
def test_psycopg_type_registry_answers_as_postgresql(servers, call):
    heron, postgres = servers
    assert _answer(heron, call) == _answer(postgres, call)
