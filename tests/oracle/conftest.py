"""Fixtures of the differential catalog tests: one Heron and one PostgreSQL 15 holding the same
schema (`catalog_schema.SCHEMA`), as `servers` = (heron, postgres)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def servers(spawn_heron, postgres15, tmp_path_factory):
    pytest.importorskip("psycopg")
    from support.catalog_schema import load

    heron = spawn_heron(tmp_path_factory.mktemp("oracle-heron") / "data")
    for server in (heron, postgres15):
        load(server.dsn)
    return heron, postgres15
