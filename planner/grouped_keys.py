"""GROUP BY a table's primary key, as PostgreSQL reads it: the table's other columns grouped too.

PostgreSQL lets a query grouped by a table's primary key select that table's other columns
(they depend on the key: one value per group); DuckDB asks for each in the GROUP BY (42803).
ORMs rely on it: Django's `annotate(Count(...))` groups by the model's key alone.

Contract: `group_by_keys(tree, relations)` adds to each GROUP BY (a plain list, no ROLLUP, CUBE or
GROUPING SETS) that names every primary key column of a table of its query's FROM (qualified by
the table's name or alias, or plain where the FROM has one table) the table's other columns,
qualified; the GROUP BY nodes it changed. Groups and results are unchanged: the added columns
have one value per group. `relations` (maybe a function, called only when a GROUP BY is found)
tell the tables' keys (`column_origins.Relations.primary_keys`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot import exp

if TYPE_CHECKING:  # (column_origins reads pg_semantics, which reads this module)
    from heron.planner.column_origins import Relations


def group_by_keys(tree: exp.Expression, relations: Relations | Callable[[], Relations] | None
                  ) -> list[exp.Expression]:
    """See the module docstring."""
    groups = [(select, group) for select in tree.find_all(exp.Select)
              if isinstance(group := select.args.get("group"), exp.Group) and group.expressions
              and not any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets"))]
    if not groups or relations is None:
        return []
    found = relations() if callable(relations) else relations
    changed = []
    for select, group in groups:
        grouped = {(c.table.lower(), c.name.lower()) for c in group.expressions
                   if isinstance(c, exp.Column)}
        tables = _tables(select)
        for table in tables:
            key = found.key_of(table.db.lower() or None, table.name.lower())
            primary = found.primary_keys.get(key) if key is not None else None
            if not primary:
                continue
            alias = table.alias_or_name
            if not all((alias.lower(), c) in grouped or (len(tables) == 1 and ("", c) in grouped)
                       for c in primary):
                continue
            added = [exp.column(name, table=exp.to_identifier(alias, quoted=True), quoted=True)
                     for name, _ in found.by_name[key]
                     if (alias.lower(), name) not in grouped and name not in primary]
            if added:
                group.set("expressions", [*group.expressions, *added])
                changed.append(group)
    return changed


def _tables(select: exp.Select) -> list[exp.Table]:
    """The tables a SELECT's FROM and joins name directly (not in a subquery)."""
    sources = [select.args.get("from_"), *(select.args.get("joins") or ())]
    return [source.this for source in sources
            if source is not None and isinstance(source.this, exp.Table)
            and isinstance(source.this.this, exp.Identifier)]
