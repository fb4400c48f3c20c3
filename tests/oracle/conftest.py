"""Fixtures of the differential catalog tests: one Heron and one PostgreSQL 15 holding the same
schema (`catalog_schema.SCHEMA`), as `servers` = (heron, postgres).

Heron's data directory is created without the demo tables, so both servers hold exactly the
schema's objects.
"""

from __future__ import annotations

import pytest

from heron.catalog.database import Database


@pytest.fixture(scope="session")
def servers(spawn_heron, postgres15, tmp_path_factory):
    pytest.importorskip("psycopg")
    from support.catalog_schema import load

    data_dir = tmp_path_factory.mktemp("oracle-heron") / "data"
    Database(data_dir, load_demo=False).close()
    heron = spawn_heron(data_dir)
    for server in (heron, postgres15):
        load(server.dsn)
    return heron, postgres15
