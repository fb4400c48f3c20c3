"""Everything persistent under a Heron data directory.

Today that is one DuckDB database file holding the user's tables (ACID, survives restarts) and the
demo tables created on first start. Later tiers (token store, statistics, KV cache) live here too.
"""

from heron.catalog.database import Database

__all__ = ["Database"]
