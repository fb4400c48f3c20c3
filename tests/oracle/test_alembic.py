"""Alembic's operations (what its migrations run) and SQLAlchemy's inspector against Heron and
PostgreSQL 15, each step's answer compared: tables with named constraints, columns added,
retyped, made NOT NULL and renamed, foreign keys, unique and check constraints dropped and made
again by name, an index, a column dropped, a table renamed, then the inspector's view of it."""

from __future__ import annotations

import pytest

sqlalchemy = pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")
from alembic.migration import MigrationContext  # noqa: E402
from alembic.operations import Operations  # noqa: E402

pytestmark = pytest.mark.timeout(120)

sa = sqlalchemy


def _journey(server) -> dict[str, object]:
    """Each step's answer (or its error's type and first line), each step its own transaction."""
    engine = sa.create_engine(f"postgresql+psycopg://heron@{server.host}:{server.port}/heron")
    answers: dict[str, object] = {}

    def step(name, run):
        try:
            with engine.begin() as conn:
                answers[name] = run(Operations(MigrationContext.configure(conn)), conn)
        except Exception as exc:  # noqa: BLE001 - the error is the answer
            answers[name] = (type(exc).__name__, str(exc).splitlines()[0])

    def inspected(op, conn):
        seen = sa.inspect(conn)
        return (sorted(k["name"] for k in seen.get_foreign_keys("al_post2")),
                sorted(u["name"] for u in seen.get_unique_constraints("al_user")),
                sorted(c["name"] for c in seen.get_check_constraints("al_user")),
                [(c["name"], str(c["type"]), c["nullable"]) for c in seen.get_columns("al_user")])

    Column, Integer, String = sa.Column, sa.Integer, sa.String
    step("create user", lambda op, c: op.create_table(
        "al_user", Column("id", Integer, primary_key=True), Column("email", String(50),
        nullable=False), Column("name", String(20)),
        sa.UniqueConstraint("email", name="uq_user_email")) is not None)
    step("create post", lambda op, c: op.create_table(
        "al_post", Column("id", Integer, primary_key=True), Column("user_id", Integer,
        sa.ForeignKey("al_user.id", name="fk_post_user")), Column("body", sa.Text),
        sa.CheckConstraint("length(body) > 0", name="ck_post_body")) is not None)
    step("index", lambda op, c: op.create_index("ix_post_user", "al_post", ["user_id"]))
    step("rows", lambda op, c: [c.execute(sa.text(sql)).rowcount for sql in (
        "INSERT INTO al_user (id, email, name) VALUES (1, 'a@x', 'ann')",
        "INSERT INTO al_post VALUES (1, 1, 'hi')")])
    step("add column", lambda op, c: op.add_column("al_user", Column(
        "age", Integer, server_default="0", nullable=False)))
    step("retype", lambda op, c: op.alter_column("al_user", "name", type_=String(100),
                                                 existing_type=String(20)))
    step("not null", lambda op, c: op.alter_column("al_user", "name", nullable=False,
                                                   existing_type=String(100)))
    step("rename column", lambda op, c: op.alter_column("al_user", "name",
                                                        new_column_name="full_name"))
    step("drop foreign key", lambda op, c: op.drop_constraint("fk_post_user", "al_post",
                                                              type_="foreignkey"))
    step("foreign key", lambda op, c: op.create_foreign_key("fk_post_user2", "al_post",
                                                            "al_user", ["user_id"], ["id"]))
    step("drop unique", lambda op, c: op.drop_constraint("uq_user_email", "al_user",
                                                         type_="unique"))
    step("unique", lambda op, c: op.create_unique_constraint("uq_user_email2", "al_user",
                                                             ["email"]))
    step("drop check", lambda op, c: op.drop_constraint("ck_post_body", "al_post", type_="check"))
    step("check", lambda op, c: op.create_check_constraint("ck_age", "al_user", "age >= 0"))
    step("drop index", lambda op, c: op.drop_index("ix_post_user", "al_post"))
    step("drop column", lambda op, c: op.drop_column("al_post", "body"))
    step("rename table", lambda op, c: op.rename_table("al_post", "al_post2"))
    step("inspect", inspected)
    step("drop", lambda op, c: [c.execute(sa.text(f"DROP TABLE {t}")).rowcount
                                for t in ("al_post2", "al_user")])
    engine.dispose()
    return answers


def test_alembic_operations_answer_as_on_postgresql(spawn_heron, postgres15, tmp_path_factory):
    heron = spawn_heron(tmp_path_factory.mktemp("alembic") / "data")
    theirs = _journey(postgres15)
    ours = _journey(heron)
    assert list(ours.items()) == list(theirs.items())
