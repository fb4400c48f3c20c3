"""The macros no session owns: created once per process, attached read-only by every database.

Contract: `MACROS` — PostgreSQL's session functions (`pg_catalog_functions.SESSION_MACROS`:
version(), current_user, current_setting(), quote_ident(), ...), the stand-ins of AI calls in
stored views (`views.MACROS`), the cast to text that prints intervals as PostgreSQL does
(`pg_text.MACROS`) and the cast to time that takes a timestamptz (`pg_semantics.MACROS`) —
depend on no session: what differs between sessions they read
from the session variable that `pg_catalog.publish_settings` sets. So they are created once per
process, in a DuckDB file that `attach(con)` attaches READ_ONLY to `con`'s database as
`SHARED_DATABASE` (once per database, through a hard link of its own; `attached` tells), and
`use(con)` puts its schema last on a connection's search path — a new session pays for no macro
(~10 ms when each created its own).

The macros live in their own schema, `heron_macros`, not in the shared database's `main`: DuckDB
reads a schema-qualified name (`main.x`) in the first search-path entry of that schema, so with
`heron_shared.main` on the path a user's `CREATE TABLE main.x` went to the read-only database
instead of the user's `main`.

Read-only, so no session can change what the others call (a user's `CREATE OR REPLACE MACRO
heron_shared.heron_macros.quote_ident ...` fails); a superuser's DETACH of it is refused
(`heron.planner.access`). The schema comes after the user's schemas on the search path (DuckDB
creates unqualified objects in the first one) and before DuckDB's built-ins, which the macros
shadow as the TEMP macros they replace did; unlike a TEMP macro, a user's own macro of the same
name in one of the search path's schemas comes first. The catalog shows none of them: its
namespaces are the session's database's, `temp` and `system`'s (`pg_catalog_relations`), and
current_schemas() leaves the shared schema out. A DuckDB `SET schema` / `SET search_path` that
replaces the search path is followed by `use` (`heron.server.session`).
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
import threading
from pathlib import Path

import duckdb
from duckdb import _seam

from heron.planner import pg_semantics, pg_text, session_sequences, views
from heron.planner.pg_catalog_functions import (
    SESSION_MACROS,
    SHARED_DATABASE,
    Macros,
    create_macro,
)

MACROS: Macros = {**SESSION_MACROS, **views.MACROS, **pg_text.MACROS,
                  **session_sequences.MACROS, **pg_semantics.MACROS}
# Not `main`: a qualified `main.x` must keep naming the user's database's `main` (see above).
MACRO_SCHEMA = "heron_macros"
SHARED_SCHEMA = f"{SHARED_DATABASE}.{MACRO_SCHEMA}"

_lock = threading.Lock()
_file: Path | None = None
_links = itertools.count()  # names the links to `_file` (`attach`)


def _macros_file() -> Path:
    """The process's file holding `MACROS` (written by the first caller, removed at exit)."""
    global _file
    with _lock:
        if _file is None:
            folder = Path(tempfile.mkdtemp(prefix="heron-macros-"))
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            path = folder / "macros.duckdb"
            con = duckdb.connect(str(path))
            try:
                con.execute(f"CREATE SCHEMA {MACRO_SCHEMA}")
                con.execute(f"SET schema = '{MACRO_SCHEMA}'")  # where the macros are created
                session_sequences.register(con)  # (a macro's functions are bound when made)
                for name, overloads in MACROS.items():
                    con.execute(create_macro(name, overloads))
            finally:
                con.close()
            _file = path
        return _file


def attach(con: duckdb.DuckDBPyConnection) -> None:
    """Attach the macros to `con`'s database (all its connections), if not yet, each database
    through a path of its own: a hard link to the process's file.

    Why: DuckDB keeps one entry per attached file path for the whole process, shared by the
    databases that attach it. A database attaching a path another one was detaching (a closed
    in-memory database of an earlier session or test) could claim that database's entry for
    reuse, and DuckDB 2.0.1 then spun in ATTACH forever waiting for the claim to be released
    (seen twice in CI, once here: `tests/support/hang_watch.py`'s native stacks)."""
    if attached(con):
        return
    master = _macros_file()
    link = master.with_name(f"{master.stem}-{next(_links)}{master.suffix}")
    try:
        os.link(master, link)
    except OSError:  # (a file system without hard links)
        shutil.copyfile(master, link)
    path = str(link).replace("'", "''")
    con.execute(f"ATTACH IF NOT EXISTS '{path}' AS {SHARED_DATABASE} (READ_ONLY)")


def attached(con: duckdb.DuckDBPyConnection) -> bool:
    # The binder's answer costs a microsecond, a statement a third of a millisecond of each
    # session's start; only a schema of the same name makes it ask the statement.
    scope = _seam.name_scope(con, SHARED_DATABASE)
    if scope != "schema":
        return scope == "database"
    return bool(con.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name = ?",
                            [SHARED_DATABASE]).fetchall()[0][0])


def use(con: duckdb.DuckDBPyConnection) -> None:
    """End `con`'s search path with the macros' schema (their database attached before)."""
    path, default = con.execute("SELECT system.main.current_setting('search_path'), "
                                "current_database() || '.' || current_schema()"
                                ).fetchall()[0]
    # An empty path means the default schema, which must stay first (where CREATE lands).
    entries = [entry.strip() for entry in path.split(",") if entry.strip()] or [default]
    if SHARED_SCHEMA not in entries:
        joined = ",".join([*entries, SHARED_SCHEMA]).replace("'", "''")
        con.execute(f"SET search_path = '{joined}'")
