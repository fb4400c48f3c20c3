"""Choosing how an AI plan runs: the order of its operators, early stops, join anchors.

Contract: `optimize(plan)` returns the plan with its operators in execution order — predicates
(filters and joins) before values (AI columns), which then run only on the rows that survive the
predicates; among each group the order in which the calls were found. When the statement's only
AI call is a predicate and a LIMIT bounds the result with nothing reordering or combining rows,
that operator gets a goal: once LIMIT + OFFSET candidates passed, the rest need not be asked.
`choose_anchor(call, rows)` picks the side of a join whose documents' KV is computed once and
shared by every partner. Nothing here runs a query or the model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sqlglot import exp

from heron.planner.logical import AiCall, AiColumn, AiFilter, AiJoin, AiPlan, is_marker, select_of


def optimize(plan: AiPlan) -> AiPlan:
    operators = sorted(plan.operators, key=lambda op: isinstance(op, AiColumn))
    if len(operators) == 1 and isinstance(operators[0], AiFilter | AiJoin):
        goal = _row_goal(plan.tree, operators[0].call.marker)
        operators[0] = dataclasses.replace(operators[0], goal=goal)
    return dataclasses.replace(plan, operators=tuple(operators))


def _row_goal(tree: exp.Expression, marker: str) -> int | None:
    """LIMIT + OFFSET when they bound the engine's work: the call is a conjunct of WHERE (or of an
    inner join's ON) and nothing reorders or combines rows (ORDER BY, GROUP BY, DISTINCT,
    aggregates, windows). Each passing candidate then yields a result row."""
    query = select_of(tree)
    limit, offset = query.args.get("limit"), query.args.get("offset")
    if limit is None or any(query.args.get(k) for k in ("order", "group", "having", "distinct",
                                                         "qualify")):
        return None
    if any(query.find(kind) for kind in (exp.AggFunc, exp.Window)):
        return None
    node = next(n for n in query.find_all(exp.Column) if is_marker(n, frozenset({marker})))
    parent = node.parent
    while isinstance(parent, exp.And | exp.Paren):
        parent = parent.parent
    inner_join = (isinstance(parent, exp.Join) and not parent.side
                  and parent.kind in ("", "INNER") and node.find_ancestor(exp.Join) is parent)
    if not isinstance(parent, exp.Where) and not inner_join:
        return None
    bounds = [limit.expression] + ([offset.expression] if offset is not None else [])
    if not all(isinstance(b, exp.Literal) and b.is_int for b in bounds):
        return None
    return sum(int(b.name) for b in bounds)


def choose_anchor(call: AiCall, rows: Sequence[tuple[str, ...]]) -> tuple[str, str]:
    """(anchor, partner) of a two-table call: the side whose documents are longer, since its KV
    is computed once per distinct document while the partner's text is paid on every pair."""
    def mean_length(table: str) -> float:
        fields = [i for i, s in enumerate(call.sources) if s == table]
        docs = {tuple(row[i] for i in fields) for row in rows}
        return sum(len("".join(d)) for d in docs) / max(len(docs), 1)

    first, second = call.tables
    return (first, second) if mean_length(first) >= mean_length(second) else (second, first)
