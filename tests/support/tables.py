"""Scratch tables for client tests: `fresh_table(conn, table, columns)` drops `table` if it
exists and creates it empty with `columns` (a connection with `execute`, as psycopg 3's)."""

from __future__ import annotations

from typing import Any


def fresh_table(conn: Any, table: str, columns: str) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} ({columns})")
