"""SQLAlchemy 2 reflection (psycopg2 dialect) against Heron and PostgreSQL 15 on the same schema.

Each Inspector call's answer is compared; calls known to differ are strict xfails listed in
EXPECTED_FAILURES with the reason, so the list measures progress.
"""

from __future__ import annotations

import pytest
from support.catalog_schema import with_expected_failures

sqlalchemy = pytest.importorskip("sqlalchemy")
pytest.importorskip("psycopg2")

pytestmark = pytest.mark.timeout(180)

CALLS = {
    "has_table": lambda i: i.has_table("cat_books"),
    "get_table_names": lambda i: sorted(i.get_table_names()),
    "get_view_names": lambda i: sorted(i.get_view_names()),
    "get_view_definition": lambda i: i.get_view_definition("cat_cheap_books"),
    "get_schema_names": lambda i: sorted(i.get_schema_names()),
    "get_columns": lambda i: [(c["name"], str(c["type"]), c["nullable"])
                              for c in i.get_columns("cat_books")],
    "get_pk_constraint": lambda i: i.get_pk_constraint("cat_books"),
    "get_foreign_keys": lambda i: i.get_foreign_keys("cat_books"),
    "get_indexes": lambda i: i.get_indexes("cat_books"),
    "get_unique_constraints": lambda i: i.get_unique_constraints("cat_authors"),
}
EXPECTED_FAILURES: dict[str, str] = {}


def _answer(server, call: str):
    engine = sqlalchemy.create_engine(
        f"postgresql+psycopg2://heron@{server.host}:{server.port}/heron",
        connect_args={"connect_timeout": 10})
    try:
        return CALLS[call](sqlalchemy.inspect(engine))
    finally:
        engine.dispose()


@pytest.mark.parametrize("call", with_expected_failures(CALLS, EXPECTED_FAILURES))
def test_reflection_answers_as_postgresql(servers, call):
    heron, postgres = servers
    assert _answer(heron, call) == _answer(postgres, call)


def _orm_round_trip(server) -> tuple:
    """What an application's first run does: create_all of tables with generated keys (SERIAL
    for an Integer key, IDENTITY when asked), rows inserted returning their keys, the key
    reflected back, drop_all and create_all again (a test suite's set-up)."""
    sa = sqlalchemy
    engine = sa.create_engine(f"postgresql+psycopg2://heron@{server.host}:{server.port}/heron",
                              connect_args={"connect_timeout": 10})
    metadata = sa.MetaData()
    people = sa.Table("o_people", metadata, sa.Column("id", sa.Integer, primary_key=True),
                      sa.Column("name", sa.String(20), nullable=False))
    events = sa.Table("o_events", metadata,
                      sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
                      sa.Column("person", sa.Integer, sa.ForeignKey("o_people.id")))
    try:
        metadata.drop_all(engine)
        metadata.create_all(engine)
        with engine.begin() as conn:
            keys = conn.execute(people.insert().returning(people.c.id),
                                [{"name": "ann"}, {"name": "bob"}]).scalars().all()
            event = conn.execute(events.insert().values(person=keys[0]).returning(
                events.c.id)).scalar()
        columns = [(c["name"], str(c["type"]), c["nullable"], c["autoincrement"], c["default"])
                   for c in sa.inspect(engine).get_columns("o_people")]
        metadata.drop_all(engine)
        metadata.create_all(engine)
        with engine.begin() as conn:
            again = conn.execute(people.insert().returning(people.c.id), [{"name": "cy"}]).scalar()
        metadata.drop_all(engine)
        return keys, event, columns, again
    finally:
        engine.dispose()


def test_orm_tables_with_generated_keys_as_postgresql(servers):
    heron, postgres = servers
    assert _orm_round_trip(heron) == _orm_round_trip(postgres)
