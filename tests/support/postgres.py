"""A throwaway PostgreSQL 15 cluster, the oracle of the differential tests.

`find_binaries()` locates `initdb`, `pg_ctl` and `postgres` (Debian's versioned directory, or
PATH), or None. `start_postgres()` initializes a cluster in a new temporary folder and starts it
on 127.0.0.1 with a free port, trust authentication for a superuser `heron` and a database
`heron` (the names Heron answers to), and returns a `PostgresProcess` (`dsn`, `stop()`, which
also removes the folder). As root the server runs as the `postgres` system user, since
PostgreSQL refuses to run as root (the folder is then made outside pytest's private tmp).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

VERSIONS = ("15", "16", "17")
START_TIMEOUT_S = 60


@dataclass
class PostgresProcess:
    host: str
    port: int
    folder: Path
    pg_ctl: Path
    _as_user: list[str]

    @property
    def dsn(self) -> str:
        """libpq connection string, in the same shape as `HeronProcess.dsn`."""
        return f"host={self.host} port={self.port} user=heron dbname=heron connect_timeout=10"

    def stop(self) -> None:
        subprocess.run([*self._as_user, str(self.pg_ctl), "-D", str(self.folder / "pgdata"), "-m",
                        "fast", "-w", "stop"], capture_output=True, timeout=START_TIMEOUT_S)
        shutil.rmtree(self.folder, ignore_errors=True)


def find_binaries() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres, or None when PostgreSQL is absent."""
    candidates = [Path(f"/usr/lib/postgresql/{v}/bin") for v in VERSIONS]
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(initdb).parent)
    for folder in candidates:
        if all((folder / name).exists() for name in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_postgres() -> PostgresProcess:
    binaries = find_binaries()
    if binaries is None:
        raise RuntimeError("PostgreSQL binaries (initdb, pg_ctl, postgres) not found")
    folder = Path(tempfile.mkdtemp(prefix="heron-postgres-"))
    data_dir = folder / "pgdata"
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    subprocess.run([*as_user, str(binaries / "initdb"), "-D", str(data_dir), "-U", "heron",
                    "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8"],
                   check=True, capture_output=True, timeout=START_TIMEOUT_S, cwd=folder)
    port = _free_port()
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off"
    result = subprocess.run([*as_user, str(binaries / "pg_ctl"), "-D", str(data_dir), "-o",
                             options, "-l", str(folder / "postgres.log"), "-w", "-t",
                             str(START_TIMEOUT_S), "start"], capture_output=True, text=True,
                            timeout=START_TIMEOUT_S + 10)
    if result.returncode != 0:
        log = (folder / "postgres.log").read_text(errors="replace")
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {result.stderr}\n{log}")
    server = PostgresProcess("127.0.0.1", port, folder, binaries / "pg_ctl", as_user)
    subprocess.run([*as_user, str(binaries / "createdb"), "-h", "127.0.0.1",
                    "-p", str(port), "-U", "heron", "heron"], check=True, capture_output=True,
                   timeout=START_TIMEOUT_S)
    return server
