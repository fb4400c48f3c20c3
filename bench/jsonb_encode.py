"""What sending jsonb normalized costs the DataRow encoders, in process (no server, no socket).

Run `python bench/jsonb_encode.py` (from the repository root, with the dev install). It builds
100k-row Arrow columns as DuckDB produces them (through a DuckDB query, so JSON arrives as the
arrow.json extension) and times `encode.encode_values` — what `server/connection.py` calls for
a batch of rows — in text and binary format: the other types (int, float, text, timestamp), a
JSON column sent as json, and the same JSON column sent as jsonb (normalized by
`pg_jsonb.normalize`), for two kinds of documents: small records (`{"id": 1, "name": ...}`,
~110 bytes) and the random documents of the differential tests (`tests/support/json_documents`,
~300 bytes, every feature jsonb normalizes). Each figure is the best of `--repeat` runs.
Before issue 9 a jsonb column was sent as json: the json line is what jsonb cost then.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.json_documents import documents  # noqa: E402

from heron.planner import pg_semantics, pg_types  # noqa: E402
from heron.server import encode  # noqa: E402


def _columns(rows: int) -> dict[str, pa.Array]:
    """The benchmark's columns, as DuckDB hands them to the encoders."""
    con = duckdb.connect()
    pg_semantics.configure(con)
    records = [json.dumps({"id": i, "name": f"user {i}", "tags": ["a", "b"], "score": 12.5 + i,
                           "active": i % 2 == 0, "meta": {"n": None, "at": "2024-01-01"}})
               for i in range(rows)]
    con.register("docs", pa.table({"n": range(rows), "records": records,
                                   "random": documents(rows, 11)}))
    table = con.sql(
        "SELECT n AS i, n::DOUBLE / 2 AS f, 'row ' || n AS t, "
        "TIMESTAMP '2024-01-01' + to_seconds(n) AS ts, records::JSON AS records, "
        "random::JSON AS random FROM docs").to_arrow_table()
    con.close()
    return {name: table.column(name).combine_chunks() for name in table.column_names}


def _best(run, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    columns = _columns(args.rows)
    cases = [("int8", "i", None), ("float8", "f", None), ("text", "t", None),
             ("timestamp", "ts", None), ("json, records", "records", None),
             ("jsonb, records", "records", pg_types.JSONB), ("json, random", "random", None),
             ("jsonb, random", "random", pg_types.JSONB)]
    print(f"{args.rows:,} rows, best of {args.repeat}; encode.encode_values per column")
    print(f"{'column':<18}{'text ms':>10}{'binary ms':>11}{'µs/row':>9}")
    for label, name, wire in cases:
        column = columns[name]
        times = [_best(lambda c=column, f=fmt, w=wire: encode.encode_values(c, f, wire=w),
                       args.repeat) for fmt in (0, 1)]
        print(f"{label:<18}{times[0] * 1e3:>10.1f}{times[1] * 1e3:>11.1f}"
              f"{times[0] / args.rows * 1e6:>9.2f}")


if __name__ == "__main__":
    main()
