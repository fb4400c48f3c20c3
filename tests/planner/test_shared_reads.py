"""What the sessions read of the catalog alike is read once per catalog generation: a session
sees the catalog's changes at the next generation, and its own temporary tables as its own."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from support.planning import session_rows as rows

from heron.catalog import Database
from heron.planner.shared_reads import SharedReads
from heron.server.session import CatalogGeneration, Session


def test_a_read_serves_its_generation_and_a_new_one_reads_again() -> None:
    reads, loads = SharedReads(), []

    def load(value: str):
        return lambda: loads.append(value) or value

    assert reads.get(1, "k", load("a")) == "a"
    assert reads.get(1, "k", load("b")) == "a"  # kept
    assert reads.get(1, "other", load("c")) == "c"
    assert reads.get(2, "k", load("d")) == "d"  # a new generation forgets the old
    assert reads.get(1, "k", load("e")) == "e"  # an older one's read is not kept
    assert reads.get(2, "k", load("f")) == "d"
    assert loads == ["a", "c", "d", "e"]


def test_threads_reading_at_once_get_one_kept_value() -> None:
    reads, seen = SharedReads(), []
    barrier = threading.Barrier(8)

    def read(i: int) -> None:
        barrier.wait()
        seen.append(reads.get(7, "k", lambda: [i]))

    threads = [threading.Thread(target=read, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert reads.get(7, "k", lambda: None) in seen


@pytest.fixture
def database(tmp_path: Path):
    db = Database(tmp_path / "data", load_demo=False)
    yield db
    db.close()


def origin(session: Session, sql: str) -> int:
    """The table OID RowDescription gives the statement's first column."""
    columns = session.describe(session.prepare(sql))
    assert columns is not None
    return columns[0].origin.table_oid


def test_a_new_table_is_seen_by_sessions_that_read_before_it(database) -> None:
    generation = CatalogGeneration()
    reader, writer = (Session(database, generation=generation) for _ in range(2))
    assert rows(reader, "SELECT 1 WHERE 'a' = 'a'") == [(1,)]  # reads the catalog
    rows(writer, "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
    rows(writer, "CREATE TABLE moods (m mood)")
    rows(writer, "INSERT INTO moods VALUES ('sad'), ('happy')")
    # Compared in the enum's order only where the statement is known to name an enum column.
    assert rows(reader, "SELECT m FROM moods WHERE m > 'ok'") == [("happy",)]
    assert origin(reader, "SELECT m FROM moods") != 0
    fresh = Session(database, generation=generation)
    assert rows(fresh, "SELECT m FROM moods WHERE m > 'ok'") == [("happy",)]


def test_a_session_s_temporary_table_is_its_own(database) -> None:
    generation = CatalogGeneration()
    owner, other = (Session(database, generation=generation) for _ in range(2))
    rows(owner, "CREATE TYPE level AS ENUM ('low', 'high')")
    rows(owner, "CREATE TEMP TABLE levels (l level)")
    rows(owner, "INSERT INTO levels VALUES ('low'), ('high')")
    assert rows(owner, "SELECT l FROM levels WHERE l > 'low'") == [("high",)]
    assert origin(owner, "SELECT l FROM levels") != 0
    rows(other, "CREATE TABLE levels (l text)")  # the same name, another table
    rows(other, "INSERT INTO levels VALUES ('low'), ('high')")
    fresh = Session(database, generation=generation)
    assert rows(fresh, "SELECT l FROM levels WHERE l > 'low'") == []  # text: 'high' < 'low'

    assert rows(owner, "SELECT l FROM levels WHERE l > 'low'") == [("high",)]  # its own
    assert origin(fresh, "SELECT l FROM levels") != origin(owner, "SELECT l FROM levels")
