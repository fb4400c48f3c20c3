"""SQLAlchemy 2 through its psycopg (3), psycopg2 and pg8000 dialects: connecting (the psycopg
dialect's type probe runs inside a savepoint), parameters, and a Session whose nested
transactions are savepoints — one released, one rolled back after a unique violation."""

from __future__ import annotations

import pytest

sqlalchemy = pytest.importorskip("sqlalchemy")
from sqlalchemy.orm import Session  # noqa: E402

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("dialect", ["psycopg", "psycopg2", "pg8000"])
def test_session_with_savepoints(heron_server, dialect):
    pytest.importorskip(dialect)
    url = f"postgresql+{dialect}://heron@{heron_server.host}:{heron_server.port}/heron"
    engine = sqlalchemy.create_engine(url, connect_args={"timeout": 10} if dialect == "pg8000"
                                      else {"connect_timeout": 10})
    table = f"sa_{dialect}"
    text = sqlalchemy.text
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT 1 + :x"), {"x": 2}).scalar() == 3
            conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
            conn.execute(text(f"CREATE TABLE {table} (id integer PRIMARY KEY, name text)"))
            conn.commit()
        with Session(engine) as session:
            session.execute(text(f"INSERT INTO {table} VALUES (:id, :name)"),
                            {"id": 1, "name": "first"})
            with session.begin_nested():
                session.execute(text(f"INSERT INTO {table} VALUES (2, 'kept')"))
            with pytest.raises(sqlalchemy.exc.IntegrityError), session.begin_nested():
                session.execute(text(f"INSERT INTO {table} VALUES (1, 'duplicate')"))
            session.execute(text(f"INSERT INTO {table} VALUES (3, 'after')"))
            session.commit()
        with engine.connect() as conn:
            rows = conn.execute(text(f"SELECT id, name FROM {table} ORDER BY id")).all()
        assert [tuple(r) for r in rows] == [(1, "first"), (2, "kept"), (3, "after")]
    finally:
        engine.dispose()
