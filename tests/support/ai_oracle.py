"""The as-written oracle of an AI statement: DuckDB evaluates the SQL row by row, each AI call
replaced by a Python function that renders the call's prompt for that row and answers it as
`support.hash_engine` would. Imported as `support.ai_oracle`.

`oracle_sql(con, sql, anchors)` returns the statement with every AI call replaced by a call of a
registered function (the caller removes them with `unregister`); `anchors` maps a call's marker
to the anchor the planner chose for it (part of a pair prompt's text). The planner's own parsing
and prompt rendering are reused (the prompt spellings are tested separately); everything the
planner decides about *which rows* to ask — pushdown, scopes, order, outer joins, LIMIT — is
replaced by DuckDB evaluating the statement as written.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import duckdb
from sqlglot import exp
from support.hash_engine import answer_of

from heron.planner import dialect, logical, prompting, scopes
from heron.planner.dialect import AIFunction
from heron.planner.executor import prompts
from heron.planner.logical import AiCall, Source


def oracle_sql(con: duckdb.DuckDBPyConnection, sql: str, anchors: Mapping[str, Source | None],
               true_rate: float = 0.5) -> tuple[str, list[str]]:
    """(the statement in DuckDB's SQL with oracle functions, the names registered)."""
    plan = logical.build(con, dialect.parse(sql))
    tree = dialect.parse(sql)
    if plan is None:
        return tree.sql(dialect="duckdb"), []
    scope_numbers = {id(s): i for i, s in enumerate(tree.find_all(*scopes.SCOPES))}
    nodes = list(tree.find_all(AIFunction, bfs=False))
    markers: dict[tuple[int, str], str] = {}
    placed = []
    for node in nodes:
        scope = scopes.enclosing_scope(node)
        key = (scope_numbers.get(id(scope), -1), node.sql())
        markers.setdefault(key, f"{logical.MARKER}{len(markers)}")
        placed.append((node, plan.operator(markers[key]).call))
    functions: dict[str, str | None] = {}  # marker -> its function (one for every place)
    for node, call in reversed(placed):  # innermost first, as the planner replaces them
        if call.marker not in functions:
            functions[call.marker] = _register(con, call, anchors.get(call.marker), true_rate)
        node.replace(_call(call, node, functions[call.marker], anchors.get(call.marker),
                           true_rate))
    return tree.sql(dialect="duckdb"), [n for n in functions.values() if n]


def _answer(call: AiCall, values: tuple[str | None, ...], anchor: Source | None,
            true_rate: float) -> object:
    if any(v is None for v in values):
        return None
    (prompt,) = prompts(call, [values], anchor)
    spec = call.spec
    return answer_of(spec.kind, prompt, spec.labels, spec.max_tokens, true_rate)[0]


def _register(con: duckdb.DuckDBPyConnection, call: AiCall, anchor: Source | None,
              true_rate: float) -> str | None:
    if not call.template.fields:
        return None
    name = f"oracle_{uuid.uuid4().hex[:8]}"
    con.create_function(name, lambda values: _answer(call, tuple(values), anchor, true_rate),
                        [duckdb.list_type(duckdb.sqltype("VARCHAR"))],
                        duckdb.sqltype(call.function.sql_type), null_handling="special",
                        side_effects=False)
    return name


def _call(call: AiCall, node: AIFunction, name: str | None, anchor: Source | None,
          true_rate: float) -> exp.Expression:
    if name is None:  # a constant question: its answer inline
        value = _answer(call, (), anchor, true_rate)
        if isinstance(value, bool):
            return exp.true() if value else exp.false()
        if isinstance(value, str):
            return exp.Literal.string(value)
        return exp.cast(exp.Literal.number(repr(value)), "DOUBLE")
    # The call's prompt values as they stand here (calls nested in them already replaced).
    fields = prompting.template(node.spelling, node.arguments[0], needs_question=False).fields
    key = exp.Array(expressions=[exp.cast(f.copy(), "VARCHAR") for f in fields])
    return exp.Anonymous(this=name, expressions=[key])


def unregister(con: duckdb.DuckDBPyConnection, names: list[str]) -> None:
    for name in names:
        con.remove_function(name)
