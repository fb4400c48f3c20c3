"""What DuckDB's background threads cost a small statement: a prepared `SELECT $1::int + 1` run
through the same seam the server uses, with DuckDB at 1 thread, 2, 4, ... up to the machine's
cores, wall and CPU per statement, and a 20M-row aggregate at each for the other side of the
trade (`server.parallelism`). Run `python bench/duckdb_threads.py`."""

from __future__ import annotations

import os
import time

import duckdb
from duckdb import _seam


def per_statement(con: duckdb.DuckDBPyConnection, runs: int) -> tuple[float, float]:
    for _ in range(200):
        _seam.submit(con, "EXECUTE p(5)", None, "stream", 1000).arrow_reader().read_all()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(runs):
        _seam.submit(con, "EXECUTE p(5)", None, "stream", 1000).arrow_reader().read_all()
    return ((time.perf_counter() - wall) / runs * 1e6, (time.process_time() - cpu) / runs * 1e6)


def main() -> None:
    cores = os.cpu_count() or 1
    con = duckdb.connect()
    con.execute("PREPARE p AS SELECT $1::int + 1")
    con.execute("CREATE TABLE t AS SELECT i % 1000 AS g, random() AS r FROM range(20000000) t(i)")
    print(f"{cores} cores; duckdb {duckdb.__version__}")
    print(f"{'threads':>8} {'small: wall us':>15} {'cpu us':>8} {'aggregate ms':>13}")
    counts = sorted({1, 2, 4, 8, 16, cores} & set(range(1, cores + 1)))
    for threads in counts:
        con.execute(f"SET threads = {threads}")
        wall, cpu = per_statement(con, 5000)
        started = time.perf_counter()
        con.execute("SELECT g, avg(r) FROM t GROUP BY g ORDER BY 2 DESC LIMIT 3").fetchall()
        big = (time.perf_counter() - started) * 1e3
        print(f"{threads:8d} {wall:15.1f} {cpu:8.1f} {big:13.1f}")


if __name__ == "__main__":
    main()
