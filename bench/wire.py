"""Wire speed beside PostgreSQL 15: the same client against both servers in the same run.

Run `python bench/wire.py` (from the repository root, with the dev install). It starts a
`heron serve --model none` on a fresh data directory and a throwaway PostgreSQL cluster (both on
127.0.0.1, through `tests/support`), then measures, client-side with psycopg 3:

- `SELECT 1` as a prepared statement, p50 and p99 latency per execution;
- streaming 100k rows (int, bigint, float, text) in binary format, rows per second;
- 50 connections running 100 small queries each concurrently, queries per second (the clock
  started before they connect, and once all are connected), and what one connection costs to
  open, milliseconds;
- executemany of 5k single-row INSERTs, seconds;
- the first 100 rows of a 3M-row result through a server-side cursor: how much the server's
  resident memory grows (Heron: the server process; PostgreSQL: the backend of the connection).

Every line prints Heron's figure, PostgreSQL's and their ratio (throughput ratios are Heron /
PostgreSQL, so 1.0 is parity and higher is better; latency and time ratios are Heron /
PostgreSQL, lower is better). Each figure is the median of `--repeats` runs (3), the two
servers taking turns, as PostgreSQL's own concurrent rate moves by a third from run to run on
the 2-core dev machine (memory: the first run's). `--quick` runs smaller sizes, once, for a
smoke test.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.heron_process import start_heron  # noqa: E402
from support.postgres import start_postgres  # noqa: E402


@dataclass(frozen=True)
class Target:
    name: str
    dsn: str
    backend_pid: Callable[[psycopg.Connection], int]  # the process serving a connection


def select1_latency(target: Target, runs: int) -> tuple[float, float]:
    """p50 and p99 milliseconds of a prepared `SELECT 1`."""
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        for _ in range(50):
            conn.execute("SELECT 1", prepare=True).fetchone()
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            conn.execute("SELECT 1", prepare=True).fetchone()
            times.append(time.perf_counter() - started)
    times.sort()
    return times[len(times) // 2] * 1e3, times[int(len(times) * 0.99)] * 1e3


def streaming_rows_per_s(target: Target, rows: int) -> float:
    sql = ("SELECT i, i * 2::bigint AS b, i * 0.5::float8 AS f, 'row number ' || i AS s "
           f"FROM generate_series(1, {rows}) AS t(i)")
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        cur = conn.cursor(binary=True)
        cur.execute(sql).fetchall()  # warm-up
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            got = cur.execute(sql).fetchall()
            best = min(best, time.perf_counter() - started)
            assert len(got) == rows
    return rows / best


def concurrent_qps(target: Target, connections: int, queries: int, *, connected: bool = False
                   ) -> float:
    """Queries per second of `connections` clients running `queries` each; the clock starts
    before they connect, or once all are connected (`connected`)."""

    async def client(conn: psycopg.AsyncConnection) -> None:
        async with conn:
            for i in range(queries):
                await (await conn.execute("SELECT %s::int + 1", [i])).fetchone()

    async def connect() -> psycopg.AsyncConnection:
        return await psycopg.AsyncConnection.connect(target.dsn, autocommit=True)

    async def main() -> float:
        started = time.perf_counter()
        clients = await asyncio.gather(*(connect() for _ in range(connections)))
        if connected:
            started = time.perf_counter()
        await asyncio.gather(*(client(conn) for conn in clients))
        return time.perf_counter() - started

    elapsed = asyncio.run(main())
    return connections * queries / elapsed


def connect_ms(target: Target, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        psycopg.connect(target.dsn).close()
    return (time.perf_counter() - started) / count * 1e3


def executemany_seconds(target: Target, rows: int) -> float:
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_many")
        conn.execute("CREATE TABLE bench_many (id integer, name text)")
        started = time.perf_counter()
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO bench_many VALUES (%s, %s)",
                            [(i, f"name {i}") for i in range(rows)])
        elapsed = time.perf_counter() - started
        assert conn.execute("SELECT count(*) FROM bench_many").fetchone() == (rows,)
        conn.execute("DROP TABLE bench_many")
    return elapsed


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def first_rows_memory_mib(target: Target, rows: int) -> float:
    """Server memory growth while a client reads the first 100 rows of a `rows`-row result."""
    sql = f"SELECT i, 'some text for row ' || i AS s FROM generate_series(1, {rows}) AS t(i)"
    with psycopg.connect(target.dsn) as conn:
        pid = target.backend_pid(conn)
        conn.execute("SELECT 1").fetchone()
        before = _rss_kib(pid)
        with conn.cursor(name="first_rows") as cur:
            cur.execute(sql)
            assert len(cur.fetchmany(100)) == 100
            peak = _rss_kib(pid)
        conn.rollback()
    return (peak - before) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, once (a smoke test)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (the median)")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    repeats = 1 if args.quick else max(1, args.repeats)
    with tempfile.TemporaryDirectory(prefix="heron-bench-") as folder:
        heron = start_heron(Path(folder) / "data")
        postgres = start_postgres()
        try:
            targets = [
                Target("heron", heron.dsn, lambda _conn: heron.process.pid),
                Target("postgres", postgres.dsn,
                       lambda conn: conn.execute("SELECT pg_backend_pid()").fetchone()[0]),
            ]
            run(targets, scale, repeats)
        finally:
            heron.stop()
            postgres.stop()


def run(targets: list[Target], scale: int, repeats: int) -> None:
    print(f"cpu: {os.cpu_count()} cores; client: psycopg {psycopg.__version__}; "
          f"median of {repeats} runs")
    measures = [
        ("SELECT 1 prepared, p50 ms", lambda t: select1_latency(t, 2000 // scale)[0], False),
        ("SELECT 1 prepared, p99 ms", lambda t: select1_latency(t, 2000 // scale)[1], False),
        (f"stream {100_000 // scale} rows binary, rows/s",
         lambda t: streaming_rows_per_s(t, 100_000 // scale), True),
        ("50 connections x 100 queries, queries/s",
         lambda t: concurrent_qps(t, 50, 100 // scale), True),
        ("  the same, timed once all are connected",
         lambda t: concurrent_qps(t, 50, 100 // scale, connected=True), True),
        ("open a connection, ms", lambda t: connect_ms(t, 50 // scale), False),
        (f"executemany {5000 // scale} inserts, s",
         lambda t: executemany_seconds(t, 5000 // scale), False),
        (f"first 100 of {3_000_000 // scale} rows, server MiB",
         lambda t: first_rows_memory_mib(t, 3_000_000 // scale), False),
    ]
    print(f"{'measure':48} {'heron':>12} {'postgres':>12} {'ratio':>8}")
    for label, measure, higher_is_better in measures:
        runs: list[list[float]] = [[] for _ in targets]
        # (a server's memory grows once: a second run would measure what the first left)
        for _ in range(1 if "MiB" in label else repeats):
            for figures, target in zip(runs, targets, strict=True):
                figures.append(measure(target))
        heron, postgres = (statistics.median(figures) for figures in runs)
        ratio = heron / postgres if postgres else float("inf")
        note = "heron/pg, higher is better" if higher_is_better else "heron/pg, lower is better"
        print(f"{label:48} {heron:12.3f} {postgres:12.3f} {ratio:8.2f}  ({note})", flush=True)


if __name__ == "__main__":
    main()
