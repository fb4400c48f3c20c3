"""The schema both servers get for the catalog comparisons, and a helper to load it.

`SCHEMA` is portable SQL (PostgreSQL 15 and Heron accept it alike): tables joined by foreign
keys, a primary key, a unique and a NOT NULL constraint, a secondary index, a view, an enum type
and a column of it, a jsonb and a json column and a view of the jsonb one.
`with_expected_failures(cases, reasons)` parametrizes a differential test: each case listed in
`reasons` is a strict xfail, so one that starts to agree fails until it leaves the list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

SCHEMA = (
    "CREATE TABLE cat_authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)",
    "CREATE TABLE cat_books (id INTEGER PRIMARY KEY, title VARCHAR(200) NOT NULL, "
    "author_id INTEGER REFERENCES cat_authors (id), price NUMERIC(10,2), published DATE, "
    "tags TEXT[])",
    "CREATE INDEX cat_books_title_idx ON cat_books (title)",
    "CREATE VIEW cat_cheap_books AS SELECT id, title FROM cat_books WHERE price < 10",
    "CREATE MATERIALIZED VIEW cat_book_titles AS SELECT id, title FROM cat_books",
    "CREATE TYPE cat_mood AS ENUM ('sad', 'happy')",
    "CREATE TABLE cat_reviews (book_id INTEGER NOT NULL REFERENCES cat_books (id), "
    "mood cat_mood, note TEXT, note_length INTEGER GENERATED ALWAYS AS (length(note)) STORED)",
    "CREATE TABLE cat_events (id INTEGER PRIMARY KEY, payload JSONB NOT NULL, raw JSON)",
    "CREATE VIEW cat_event_payloads AS SELECT id, payload FROM cat_events",
    "INSERT INTO cat_authors VALUES (1, 'Le Guin'), (2, 'Lem')",
    "INSERT INTO cat_books VALUES (1, 'The Dispossessed', 1, 9.50, DATE '1974-05-01', "
    "ARRAY['utopia']), (2, 'Solaris', 2, 12.00, DATE '1961-01-01', ARRAY['sea', 'mind'])",
    "INSERT INTO cat_events VALUES (1, '{\"kind\": \"read\", \"at\": 1.50}', '{\"kind\" : 1}')",
)


def load(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for sql in SCHEMA:
            conn.execute(sql)


def with_expected_failures(cases: Iterable[str], reasons: Mapping[str, str]) -> list:
    """pytest parameters for `cases`, those in `reasons` as strict xfails with that reason."""
    unknown = set(reasons) - set(cases)
    assert not unknown, f"expected failures of no case: {unknown}"
    return [pytest.param(c, marks=pytest.mark.xfail(reason=reasons[c], strict=True))
            if c in reasons else c for c in cases]
