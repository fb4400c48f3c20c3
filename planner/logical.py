"""The logical plan of an AI statement: frozen operator nodes, built once when it is prepared.

Contract: `build(con, tree, explain)` takes a statement parsed by `planner.dialect` and returns an
`AiPlan`, or None when it calls no AI function. Building binds each call against the catalog
(which FROM item each prompt value reads) and refuses what cannot run, with a SQLSTATE, before any
work: unsupported functions, AI calls outside the outermost SELECT, prompt values mixing tables,
more than two tables in one call, statements other than SELECT, CREATE TABLE ... AS SELECT and
INSERT ... SELECT. The plan is immutable and serves every execution of a prepared statement:

- `AiPlan.tree` is the statement with each AI call replaced by a marker column (`AiCall.marker`)
  standing for its answer; executions work on copies;
- `AiPlan.operators` are the calls as typed operators: `AiFilter` (a predicate over one table's
  rows, or a constant question), `AiJoin` (a predicate over pairs of two tables' rows) and
  `AiColumn` (a value anywhere else, e.g. the SELECT list). `build` lists them as found;
  `planner.optimizer` decides the execution order and what LIMIT lets them skip.

`OperatorWork` is what one operator did in one execution; results carry it (`Result.work`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import duckdb
from sqlglot import exp

from heron.engine.api import Metrics
from heron.planner import functions, prompting
from heron.planner.dialect import AIFunction
from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.functions import AiFunction
from heron.planner.prompting import Template

MARKER = "__heron_ai_"


class Explain(enum.Enum):
    """Whether the statement was asked for its plan instead of (or beside) its rows."""

    NONE = "none"
    PLAN = "plan"  # EXPLAIN: the plan and estimates, nothing runs
    ANALYZE = "analyze"  # EXPLAIN ANALYZE: runs, shows the actual work


@dataclass(frozen=True, slots=True)
class AiCall:
    """One AI function call of a statement, bound to the tables its prompt values read."""

    marker: str  # the column standing for this call's answer in `AiPlan.tree`
    function: AiFunction
    spelling: str  # as written: "AI.IF", "AI_FILTER"
    template: Template  # prompt values qualified with the alias of the table they read
    sources: tuple[str | None, ...]  # per prompt value: its table alias, None for a constant

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(sorted({s for s in self.sources if s is not None}))

    def question(self, anchor: str | None = None) -> str:
        """The question as the engine sees it, with {i} standing for constant values; in a
        join the anchor's fields are DOCUMENT 0 and the partner's DOCUMENT 1."""
        tables = sorted(self.tables, key=lambda t: t != anchor)
        if len(tables) == 2:
            names = {i: f"DOCUMENT {tables.index(s)}" for i, s in enumerate(self.sources) if s}
        else:
            names = {i: "DOCUMENT" for i, s in enumerate(self.sources) if s}
        placeholders = ["{" + str(i) + "}" for i in range(len(self.template.fields))]
        return prompting.question(self.template, names, placeholders, drop_edges=len(names) == 1)


@dataclass(frozen=True, slots=True)
class AiFilter:
    """A TRUE/FALSE predicate over the rows of one table (or a constant question)."""

    label: ClassVar[str] = "AI Filter"
    call: AiCall
    goal: int | None = None  # stop once this many candidates passed (a LIMIT); None: ask all


@dataclass(frozen=True, slots=True)
class AiJoin:
    """A TRUE/FALSE predicate over pairs of rows of two tables."""

    label: ClassVar[str] = "AI Join"
    call: AiCall
    goal: int | None = None


@dataclass(frozen=True, slots=True)
class AiColumn:
    """An AI value outside the predicates (the SELECT list, ORDER BY, ...)."""

    label: ClassVar[str] = "AI Column"
    call: AiCall
    goal: None = None


AiOperator = AiFilter | AiJoin | AiColumn


@dataclass(frozen=True, slots=True)
class AiPlan:
    tree: exp.Expression  # the statement, AI calls replaced by their markers; never mutated
    operators: tuple[AiOperator, ...]  # in execution order
    explain: Explain = Explain.NONE


@dataclass(frozen=True, slots=True)
class OperatorWork:
    """What one operator did in one execution."""

    operator: AiOperator
    candidates: int  # distinct prompt values it could ask about
    passed: int  # candidates answered TRUE
    metrics: Metrics  # engine work; `seconds` is the wall time spent waiting for answers
    anchor: str | None = None  # a join's anchor table: its documents' KV served all partners


def select_of(tree: exp.Expression) -> exp.Select:
    """The SELECT whose rows AI functions are asked about: the statement itself, or the query
    of CREATE TABLE ... AS / INSERT INTO ... SELECT."""
    if isinstance(tree, exp.Create | exp.Insert) and isinstance(tree.expression, exp.Select):
        return tree.expression
    if isinstance(tree, exp.Select):
        return tree
    raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                   "AI functions are supported in SELECT, CREATE TABLE ... AS SELECT "
                   "and INSERT ... SELECT statements")


def is_marker(node: exp.Expression, markers: frozenset[str] | None = None) -> bool:
    """Whether `node` is a marker column (one of `markers`, when given)."""
    return (isinstance(node, exp.Column) and not node.table and node.name.startswith(MARKER)
            and (markers is None or node.name in markers))


def build(con: duckdb.DuckDBPyConnection, tree: exp.Expression,
          explain: Explain = Explain.NONE) -> AiPlan | None:
    """The plan of a parsed statement (which this takes over), or None without AI calls."""
    nodes = list(tree.find_all(AIFunction))
    if not nodes:
        return None
    entries = [functions.lookup(node) for node in nodes]  # refuses what is not evaluated, first
    query = select_of(tree)
    for node in nodes:
        if node.find_ancestor(exp.Select) is not query:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           "AI functions inside subqueries or CTEs are not supported yet",
                           hint="Move the AI function to the outermost SELECT.")
    columns = _source_columns(con, query)
    operators: list[AiOperator] = []
    for index, (node, entry) in enumerate(zip(nodes, entries, strict=True)):
        template = prompting.template(node.spelling, node.arguments[0])
        sources = tuple(_field_source(f, columns) for f in template.fields)
        call = AiCall(f"{MARKER}{index}", entry, node.spelling, template, sources)
        predicate = _is_predicate(query, node)
        node.replace(exp.column(call.marker))
        if len(call.tables) > 2:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           f"{call.spelling} reads {len(call.tables)} tables "
                           f"({', '.join(call.tables)}); at most two (a join) are supported")
        if not predicate:
            operators.append(AiColumn(call))
        elif len(call.tables) == 2:
            operators.append(AiJoin(call))
        else:
            operators.append(AiFilter(call))
    return AiPlan(tree, tuple(operators), explain)


def _is_predicate(query: exp.Select, node: exp.Expression) -> bool:
    """Whether a call sits in WHERE, HAVING or a JOIN's ON (else it is a value)."""
    for ancestor in _ancestors(node):
        if isinstance(ancestor, exp.Where | exp.Having) or (
                isinstance(ancestor.parent, exp.Join) and ancestor.arg_key == "on"):
            return True
        if ancestor is query:
            break
    return False


def _ancestors(node: exp.Expression) -> Iterator[exp.Expression]:
    while node is not None:
        yield node
        node = node.parent


def _source_columns(con: duckdb.DuckDBPyConnection, query: exp.Select) -> dict[str, set[str]]:
    """Column names (lower case) of every FROM/JOIN item, keyed by its alias (lower case)."""
    items = []
    from_ = query.args.get("from_") or query.args.get("from")
    if from_ is not None:
        items.append(from_.this)
    items += [join.this for join in query.args.get("joins") or []]
    ctes = query.args.get("with")
    columns = {}
    for item in items:
        alias = item.alias_or_name.lower()
        probe = exp.select("*").from_(item.copy()).limit(0)
        if ctes is not None:
            probe.set("with", ctes.copy())
        try:
            names = con.sql(probe.sql(dialect="duckdb")).columns
        except duckdb.Error as exc:
            raise from_duckdb(exc) from None
        columns[alias] = {n.lower() for n in names}
    return columns


def _field_source(field: exp.Expression, columns: dict[str, set[str]]) -> str | None:
    """The alias of the table a prompt value reads (qualifying its columns), None if none."""
    sources = set()
    for column in field.find_all(exp.Column):
        if column.table:
            alias = column.table.lower()
            if alias not in columns:
                raise SqlError(SqlState.UNDEFINED_TABLE,
                               f'missing FROM-clause entry for table "{column.table}"')
        else:
            owners = [a for a, names in columns.items() if column.name.lower() in names]
            if not owners:
                raise SqlError(SqlState.UNDEFINED_COLUMN, f'column "{column.name}" does not exist')
            if len(owners) > 1:
                raise SqlError(SqlState.AMBIGUOUS_COLUMN,
                               f'column reference "{column.name}" is ambiguous')
            alias = owners[0]
            column.set("table", exp.to_identifier(alias))
        sources.add(alias)
    if len(sources) > 1:
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                       f"prompt value {field.sql()} mixes columns of several tables",
                       hint="Pass each table's columns as separate prompt values.")
    return sources.pop() if sources else None
