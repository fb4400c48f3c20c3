"""CREATE / DROP EXTENSION over the extensions Heron provides (`planner.extensions`), and their
functions, through the planner facade (PostgreSQL's answers for plpgsql and a missing one:
tests/oracle/test_ddl_statements.py)."""

from __future__ import annotations

import pytest
from support.planning import run

from heron.planner.errors import SqlError


def test_migrations_enable_them(planner):
    for name in ("pgcrypto", '"uuid-ossp"', "plpgsql"):
        result = run(planner, f"CREATE EXTENSION IF NOT EXISTS {name} WITH SCHEMA public")
        assert result.command_tag == "CREATE EXTENSION"
        assert result.notices == (f'extension "{name.strip(chr(34))}" already exists, skipping',)
    with pytest.raises(SqlError) as info:
        run(planner, "DROP EXTENSION pgcrypto")
    assert info.value.sqlstate.value == "0A000"
    with pytest.raises(SqlError) as info:  # (the message is PostgreSQL 15's, the hint Heron's)
        run(planner, "CREATE EXTENSION IF NOT EXISTS postgis")
    assert (info.value.sqlstate.value, info.value.message, info.value.hint) == (
        "0A000", 'extension "postgis" is not available',
        "Heron provides pgcrypto, plpgsql, uuid-ossp.")


def test_their_functions(planner):
    row = run(planner, "SELECT uuid_generate_v4() <> uuid_generate_v4(), uuid_nil()::text, "
                       "encode(digest('abc', 'sha256'), 'hex'), encode(digest('abc', 'md5'), "
                       "'hex')").rows.read_all().to_pylist()[0]
    assert list(row.values()) == [
        True, "00000000-0000-0000-0000-000000000000",
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        "900150983cd24fb0d6963f7d28e17f72"]
