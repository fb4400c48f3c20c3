"""The logical plan of an AI statement: frozen operator nodes, built once when it is prepared.

Contract: `build(con, tree, explain)` takes a statement parsed by `planner.dialect` and returns an
`AiPlan`, or None when it calls no AI function. AI calls may stand anywhere an expression can:
WHERE, ON (inner and outer joins), SELECT, CASE, GROUP BY, HAVING, ORDER BY, QUALIFY, UPDATE's
SET, inside subqueries (EXISTS, IN, scalar, LATERAL), derived tables, CTEs and set operations, in
SELECT, CREATE TABLE ... AS, INSERT, UPDATE and DELETE statements. Building binds each call
against the catalog (which FROM item, in which scope, each prompt value reads) and refuses what
cannot run, with a SQLSTATE and a hint, before any work: unsupported functions and arguments,
prompt values mixing tables or reading more than two, prompt values that change between
evaluations (random()), AI calls in recursive CTEs, and other statement kinds. The plan is
immutable and serves every execution of a prepared statement:

- `AiPlan.tree` is the statement with each AI call replaced by a marker column (`AiCall.marker`)
  standing for its answer; the same call written twice in one scope (`SELECT AI.IF(x) ...
  GROUP BY AI.IF(x)`) is one call. Executions work on copies.
- `AiPlan.operators` are the calls as typed operators, in written order: `AiFilter` and `AiJoin`
  (TRUE/FALSE conjuncts of WHERE or of an inner join's ON over one table or a pair),
  `AiColumn` (a TRUE/FALSE value anywhere else), `AiScore`, `AiClassify` and `AiComplete`. Each
  carries the `Tier` it runs in within its scope and `requires`, the markers of the operators
  that must run before it: those inside the FROM items and CTEs its rows come from, the calls in
  its own prompt values, and earlier tiers of the scopes its rows pass through (outer-join
  conditions decide which rows exist, conjuncts filter them, values are computed on what
  remains, per-group values last). `planner.optimizer` picks the order within that partial
  order.

`OperatorWork` is what one operator did in one execution; results carry it (`Result.work`).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar

import duckdb
from sqlglot import exp

from heron.engine.api import AnswerKind, Metrics
from heron.planner import functions, prompting, scopes
from heron.planner.dialect import AIFunction
from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.functions import AiFunction, AnswerSpec
from heron.planner.prompting import Template
from heron.planner.scopes import Clause, Link, Scope

MARKER = "__heron_ai_"
SCOPE_KEY = "heron_scope"  # the scope number a plan stores in each scope node's meta


class Explain(enum.Enum):
    """Whether the statement was asked for its plan instead of (or beside) its rows."""

    NONE = "none"
    PLAN = "plan"  # EXPLAIN: the plan and estimates, nothing runs
    ANALYZE = "analyze"  # EXPLAIN ANALYZE: runs, shows the actual work


class Tier(enum.IntEnum):
    """The order in which the calls of one scope run."""

    OUTER_ON = 0  # conditions of outer joins: they decide which rows exist (written order)
    PREDICATE = 1  # conjuncts of WHERE and of inner joins' ON: filters and joins (by cost)
    VALUE = 2  # values per row: SELECT, CASE, ORDER BY, conditions nested in OR / NOT
    GROUP = 3  # values per group or over windows: need every row of the scope decided


@dataclass(frozen=True, slots=True)
class Source:
    """The FROM item a prompt value reads."""

    alias: str  # lower case, as written (or the table name)
    scope: int  # the scope whose FROM clause holds it (the call's own, or one around it)
    relation: str | None  # the table or view it names (statistics key); None for subqueries

    @property
    def name(self) -> str:
        return self.alias


@dataclass(frozen=True, slots=True)
class AiCall:
    """One AI function call of a statement, bound to the FROM items its prompt values read."""

    marker: str  # the column standing for this call's answer in `AiPlan.tree`
    function: AiFunction
    spelling: str  # as written: "AI.IF", "AI_FILTER"
    spec: AnswerSpec
    template: Template
    sources: tuple[Source | None, ...]  # per prompt value: its FROM item, None for a constant
    clause: Clause
    scope: int  # which scope of the statement it stands in (-1: none)

    @property
    def tables(self) -> tuple[Source, ...]:
        """The distinct FROM items its prompt values read, in a fixed order."""
        return tuple(sorted({s for s in self.sources if s is not None},
                            key=lambda s: (s.scope, s.alias)))

    def fields_of(self, table: Source) -> tuple[int, ...]:
        return tuple(i for i, s in enumerate(self.sources) if s == table)

    def question(self, anchor: Source | None = None) -> str:
        """The question as the engine sees it, with {i} standing for constant values; in a
        pair the anchor's fields are DOCUMENT 0 and the partner's DOCUMENT 1."""
        tables = sorted(self.tables, key=lambda t: t != anchor)
        placeholders = ["{" + str(i) + "}" for i in range(len(self.template.fields))]
        if len(tables) == 2 and self.spec.kind in (AnswerKind.BOOLEAN, AnswerKind.SCORE):
            names = {i: f"DOCUMENT {tables.index(s)}" for i, s in enumerate(self.sources) if s}
            return prompting.question(self.template, names, placeholders, drop_edges=False)
        documents = [i for i, s in enumerate(self.sources) if s]
        names = ({documents[0]: "DOCUMENT"} if len(documents) == 1
                 else {i: prompting.field_label(self.template, i) for i in documents})
        return prompting.question(self.template, names, placeholders,
                                  drop_edges=len(documents) == 1)


@dataclass(frozen=True, slots=True)
class _Operator:
    call: AiCall
    tier: Tier
    requires: frozenset[str] = field(default=frozenset())  # markers that must run first
    # The marker whose places in the tree are where this call is evaluated: its own, or that
    # of the call whose prompt values hold it.
    place: str = ""

    @property
    def marker(self) -> str:
        return self.call.marker

    @property
    def pairs(self) -> bool:
        """Whether it asks about pairs of rows (two FROM items, the join layout)."""
        return len(self.call.tables) == 2 and self.call.spec.kind in (AnswerKind.BOOLEAN,
                                                                       AnswerKind.SCORE)


@dataclass(frozen=True, slots=True)
class AiFilter(_Operator):
    """A TRUE/FALSE conjunct over the rows of one FROM item (or a constant question)."""

    label: ClassVar[str] = "AI Filter"


@dataclass(frozen=True, slots=True)
class AiJoin(_Operator):
    """A TRUE/FALSE conjunct over pairs of rows of two FROM items."""

    label: ClassVar[str] = "AI Join"


@dataclass(frozen=True, slots=True)
class AiColumn(_Operator):
    """A TRUE/FALSE value anywhere else (SELECT, CASE, an outer join's ON, OR, NOT, ...)."""

    label: ClassVar[str] = "AI Column"


@dataclass(frozen=True, slots=True)
class AiScore(_Operator):
    """AI.SCORE: the probability that the prompt is TRUE, as float8."""

    label: ClassVar[str] = "AI Score"


@dataclass(frozen=True, slots=True)
class AiClassify(_Operator):
    """AI.CLASSIFY: the label that fits best."""

    label: ClassVar[str] = "AI Classify"


@dataclass(frozen=True, slots=True)
class AiComplete(_Operator):
    """AI_COMPLETE / AI.GENERATE: the model's text."""

    label: ClassVar[str] = "AI Complete"


AiOperator = AiFilter | AiJoin | AiColumn | AiScore | AiClassify | AiComplete
_VALUE_OPERATORS: dict[AnswerKind, type[AiOperator]] = {
    AnswerKind.BOOLEAN: AiColumn, AnswerKind.SCORE: AiScore, AnswerKind.LABEL: AiClassify,
    AnswerKind.TEXT: AiComplete}


@dataclass(frozen=True, slots=True)
class AiPlan:
    tree: exp.Expression  # the statement, AI calls replaced by their markers; never mutated
    operators: tuple[AiOperator, ...]  # in written order; `requires` is the partial order
    explain: Explain = Explain.NONE

    def operator(self, marker: str) -> AiOperator:
        return next(op for op in self.operators if op.marker == marker)

    def required(self, marker: str) -> frozenset[str]:
        """Every operator that must run before `marker` (what it requires, transitively)."""
        found: set[str] = set()
        todo = [marker]
        while todo:
            for before in self.operator(todo.pop()).requires - found:
                found.add(before)
                todo.append(before)
        return frozenset(found)


@dataclass(frozen=True, slots=True)
class OperatorWork:
    """What one operator did in one execution."""

    operator: AiOperator
    candidates: int  # distinct prompt values it could ask about
    passed: int  # candidates answered TRUE (TRUE/FALSE operators)
    metrics: Metrics  # engine work; `seconds` is the wall time spent waiting for answers
    anchor: Source | None = None  # a pair's anchor: its documents' KV served all partners
    reused: int = 0  # answers taken from the answer store instead of the engine
    sampled: int = 0  # candidates asked first to measure its selectivity
    goal: int | None = None  # stopped once this many candidates passed (LIMIT)
    estimate: object = None  # the optimizer's estimate when it chose this operator


def is_marker(node: exp.Expression, markers: Iterable[str] | None = None) -> bool:
    """Whether `node` is a marker column (one of `markers`, when given)."""
    return (isinstance(node, exp.Column) and not node.table and node.name.startswith(MARKER)
            and (markers is None or node.name in markers))


def markers_in(node: exp.Expression) -> set[str]:
    return {c.name for c in node.find_all(exp.Column) if is_marker(c)}


def statement_query(tree: exp.Expression) -> exp.Expression:
    """Refuse statements that cannot hold AI calls; the query part of those that can."""
    if isinstance(tree, exp.Create) and (tree.kind or "").upper() in ("TABLE", "VIEW") and (
            tree.expression is not None):
        return tree.expression
    if isinstance(tree, exp.Insert | exp.Query | exp.Update | exp.Delete):
        return tree.expression if isinstance(tree, exp.Insert) else tree
    raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                   "AI functions are supported in SELECT, CREATE TABLE ... AS, CREATE VIEW, "
                   "INSERT, UPDATE and DELETE statements",
                   hint="Compute the AI answers with a SELECT (or CREATE TABLE ... AS SELECT) "
                        "first.")


def build(con: duckdb.DuckDBPyConnection, tree: exp.Expression,
          explain: Explain = Explain.NONE) -> AiPlan | None:
    """The plan of a parsed statement (which this takes over), or None without AI calls."""
    nodes = list(tree.find_all(AIFunction, bfs=False))
    if not nodes:
        return None
    entries = [functions.lookup(node) for node in nodes]  # refuses what is not evaluated, first
    statement_query(tree)
    for node in nodes:
        _refuse_recursive_cte(node)
    for index, scope in enumerate(tree.find_all(*scopes.SCOPES)):
        scope.meta[SCOPE_KEY] = index
    binder = _Binder(con)
    calls: dict[tuple[int, str], AiCall] = {}
    placed: list[tuple[exp.Expression, AiCall]] = []
    for node, entry in zip(nodes, entries, strict=True):
        scope = scopes.enclosing_scope(node)
        key = (id(scope), node.sql())
        if key not in calls:
            calls[key] = _call(binder, node, entry, len(calls))
        placed.append((node, calls[key]))
    # Innermost first: a call inside another's prompt values becomes a marker inside it.
    for node, call in reversed(placed):
        node.replace(exp.column(call.marker))
    # A prompt value that is itself a call was detached whole: it stands for that call's answer.
    markers = {id(node): call.marker for node, call in placed}
    bound = [dataclasses.replace(call, template=Template(call.template.parts, tuple(
        exp.column(markers[id(f)]) if id(f) in markers else f.copy()
        for f in call.template.fields))) for call in calls.values()]
    operators = _operators(tree, bound)
    return AiPlan(tree, operators, explain)


def _refuse_recursive_cte(node: exp.Expression) -> None:
    for ancestor in scopes.ancestors(node):
        if isinstance(ancestor, exp.CTE) and isinstance(ancestor.parent, exp.With) and (
                ancestor.parent.args.get("recursive")):
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           "AI functions inside WITH RECURSIVE are not supported",
                           hint="Compute the recursive part first (CREATE TEMP TABLE ... AS "
                                "WITH RECURSIVE ...), then ask the AI function of its rows.")


def _call(binder: _Binder, node: AIFunction, entry: AiFunction, index: int) -> AiCall:
    spec = entry.spec(node)
    template = prompting.template(node.spelling, node.arguments[0],
                                  needs_question=spec.kind in (AnswerKind.BOOLEAN,
                                                               AnswerKind.SCORE))
    for value in template.fields:
        if scopes.is_volatile(value):
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           f"prompt value {value.sql()} changes each time it is evaluated",
                           hint="Materialize it first, e.g. CREATE TEMP TABLE t AS SELECT "
                                "..., random() AS r FROM ...; then ask about t's rows.")
    at = scopes.position(node)
    if at.clause is Clause.FROM:
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                       f"{node.spelling} cannot stand in a FROM item",
                       hint="Ask it in the select list or WHERE clause of a query over the "
                            "FROM item, or in a subquery.")
    sources = tuple(binder.source(value) for value in template.fields)
    call = AiCall(f"{MARKER}{index}", entry, node.spelling, spec, template, sources,
                  at.clause, at.scope.meta.get(SCOPE_KEY, -1) if at.scope is not None else -1)
    if len(call.tables) > 2:
        names = ", ".join(t.name for t in call.tables)
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                       f"{call.spelling} reads {len(call.tables)} tables ({names}); "
                       "at most two (a pair) are supported",
                       hint="Join the other tables with ordinary conditions, or ask one AI "
                            "function per pair of tables and AND them.")
    return call


def _operators(tree: exp.Expression, calls: Iterable[AiCall]) -> tuple[AiOperator, ...]:
    """Operators in written order, each with its tier and what it requires."""
    places: dict[str, list[exp.Column]] = {}
    for column in tree.find_all(exp.Column):
        if is_marker(column):
            places.setdefault(column.name, []).append(column)
    # A call in another's prompt values stands where that call stands.
    calls = list(calls)
    place = {marker: marker for marker in places}
    while unplaced := [c for c in calls if c.marker not in places]:
        for call in calls:
            for inner in markers_in_fields(call) & {c.marker for c in unplaced}:
                if call.marker in places:
                    places[inner] = places[call.marker]
                    place[inner] = place[call.marker]
    shapes = []
    for call in calls:
        nodes = places[call.marker]
        tier = min(_tier(n, call) for n in nodes)
        shapes.append((call, tier, nodes))
    operators = []
    for call, tier, nodes in shapes:
        requires = set(markers_in_fields(call))
        for other, _, other_nodes in shapes:
            if other is not call and _before(other, other_nodes, call, nodes):
                requires.add(other.marker)
        operators.append(_kind(call, tier)(call, tier, frozenset(requires), place[call.marker]))
    order = [c.marker for c in calls]
    operators.sort(key=lambda op: order.index(op.marker))
    _check_acyclic(operators)
    return tuple(operators)


def markers_in_fields(call: AiCall) -> set[str]:
    return {m for f in call.template.fields for m in markers_in(f)}


def _kind(call: AiCall, tier: Tier) -> type[AiOperator]:
    if call.spec.kind is AnswerKind.BOOLEAN and tier is Tier.PREDICATE:
        return AiJoin if len(call.tables) == 2 else AiFilter
    return _VALUE_OPERATORS[call.spec.kind]


def _tier(node: exp.Expression, call: AiCall | None) -> Tier:
    """The tier of an expression (a call's marker, or a subquery) within its scope."""
    at = scopes.position(node)
    if at.clause is Clause.ON and at.outer_join:
        return Tier.OUTER_ON
    if call is not None and any(f.find(exp.Window) for f in call.template.fields):
        return Tier.GROUP
    if not at.row_level:
        return Tier.GROUP
    if at.clause in (Clause.WHERE, Clause.ON):
        return Tier.PREDICATE
    return Tier.VALUE


def _chain(node: exp.Expression) -> list[tuple[Scope, exp.Expression]]:
    """The scopes whose rows decide where `node` is evaluated, innermost first, each with the
    expression standing for `node` in it (itself, or the subquery holding it)."""
    chain = []
    current = node
    while (scope := scopes.enclosing_scope(current)) is not None:
        chain.append((scope, current))
        link = scopes.context(scope)
        if link.link is Link.TOP or link.anchor is None:
            break
        current = link.anchor
    return chain


def _before(other: AiCall, other_nodes: list[exp.Column], call: AiCall,
            nodes: list[exp.Column]) -> bool:
    """Whether `other` must be answered before `call` is asked: it stands inside a FROM item or
    CTE that `call`'s rows come from, or in an earlier tier of a scope both pass through."""
    verdicts = set()
    for node in nodes:
        for scope, _ in _chain(node):
            if any(_feeds(o, scope, node) for o in other_nodes):
                return True
            mine, theirs = _rank_at(nodes, call, scope), _rank_at(other_nodes, other, scope)
            if mine is not None and theirs is not None and mine != theirs:
                verdicts.add(theirs < mine)
    return verdicts == {True}


def _rank_at(nodes: list[exp.Column], call: AiCall, scope: Scope) -> tuple[Tier, float] | None:
    """When a call runs among the calls of `scope`: its earliest tier there (the tier of the
    subquery holding it, if it stands deeper), outer-join conditions in the order of the joins."""
    ranks = []
    for node in nodes:
        for candidate, standing in _chain(node):
            if candidate is scope:
                tier = _tier(standing, call if standing is node else None)
                join = scopes.position(standing).join if tier is Tier.OUTER_ON else None
                ranks.append((tier, float("inf") if join is None else join))
    return min(ranks) if ranks else None


def _feeds(other: exp.Expression, scope: Scope, node: exp.Expression) -> bool:
    """Whether `other` stands inside a FROM item of `scope`, or inside a CTE visible from
    `node` (one defined before the CTE holding `node`, if any), off `node`'s own path."""
    node_path = {id(a) for a in scopes.ancestors(node)}
    for ancestor in scopes.ancestors(other):
        if id(ancestor) in node_path:
            return False
        parent = ancestor.parent
        if parent is None:
            return False
        if isinstance(parent, exp.From | exp.Join) and ancestor.arg_key == "this" and (
                parent.parent is scope):
            return True
        if isinstance(ancestor, exp.CTE) and isinstance(parent, exp.With) and (
                id(parent.parent) in node_path):
            holder = next((c for c in parent.expressions if id(c) in node_path), None)
            return holder is None or ancestor.index < holder.index
    return False


def _check_acyclic(operators: list[AiOperator]) -> None:
    done: set[str] = set()
    pending = list(operators)
    while pending:
        ready = [op for op in pending if op.requires <= done]
        if not ready:
            raise SqlError(SqlState.INTERNAL_ERROR, "AI operators depend on each other in a cycle")
        done |= {op.marker for op in ready}
        pending = [op for op in pending if op.marker not in done]


class _Binder:
    """Finds the FROM item each prompt value reads, looking through the scopes around it (the
    call's own first, then those a correlated subquery reads), as SQL resolves names."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.columns: dict[int, dict[str, tuple[set[str], str | None]]] = {}

    def source(self, value: exp.Expression) -> Source | None:
        found = set()
        for column in value.find_all(exp.Column):
            if is_marker(column):
                continue
            found.add(self._resolve(column))
        # Answers of calls nested in this value read what those calls read; they are bound
        # already, as markers are not columns of any FROM item.
        if len(found) > 1:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           f"prompt value {value.sql()} mixes columns of several tables",
                           hint="Pass each table's columns as separate prompt values.")
        return found.pop() if found else None

    def _resolve(self, column: exp.Column) -> Source:
        current: exp.Expression = column
        while (scope := scopes.enclosing_scope(current)) is not None:
            items = self._items(scope)
            number = scope.meta.get(SCOPE_KEY, -1)
            if column.table:
                alias = column.table.lower()
                if alias in items:
                    return Source(alias, number, items[alias][1])
            else:
                name = column.name.lower()
                owners = [a for a, (names, _) in items.items() if name in names]
                if len(owners) > 1:
                    raise SqlError(SqlState.AMBIGUOUS_COLUMN,
                                   f'column reference "{column.name}" is ambiguous')
                if owners:
                    return Source(owners[0], number, items[owners[0]][1])
                target = _output_alias(scope, name)
                if target is not None:
                    sources = {self._resolve(c) for c in target.find_all(exp.Column)
                               if not is_marker(c)}
                    if len(sources) == 1:
                        return sources.pop()
            link = scopes.context(scope)
            if link.link is Link.TOP or link.anchor is None:
                break
            current = link.anchor
        if column.table:
            raise SqlError(SqlState.UNDEFINED_TABLE,
                           f'missing FROM-clause entry for table "{column.table}"')
        raise SqlError(SqlState.UNDEFINED_COLUMN, f'column "{column.name}" does not exist')

    def _items(self, scope: Scope) -> dict[str, tuple[set[str], str | None]]:
        """alias -> (column names, relation name) of the scope's FROM items."""
        if id(scope) not in self.columns:
            items = {}
            for item in from_items(scope):
                alias = item.alias_or_name.lower()
                relation = _relation_name(item)
                items[alias] = (self._probe(scope, item), relation)
            self.columns[id(scope)] = items
        return self.columns[id(scope)]

    def _probe(self, scope: Scope, item: exp.Expression) -> set[str]:
        probe = exp.select("*").from_(_without_markers(item.copy())).limit(0)
        ctes = visible_ctes(scope)
        if ctes:
            probe.set("with_", exp.With(expressions=[_without_markers(c) for c in ctes]))
        try:
            names = self.con.sql(probe.sql(dialect="duckdb")).columns
        except duckdb.Error as exc:
            raise from_duckdb(exc) from None
        return {n.lower() for n in names}


def from_items(scope: Scope) -> list[exp.Expression]:
    """The FROM items of a scope, in order (an UPDATE's or DELETE's table first)."""
    items = []
    if isinstance(scope, exp.Update | exp.Delete):
        items.append(scope.this)
    from_ = scope.args.get("from_")
    if from_ is not None:
        items.append(from_.this)
    items += [join.this for join in scope.args.get("joins") or []]
    items += list(scope.args.get("using") or [])
    return items


def visible_ctes(scope: exp.Expression) -> list[exp.CTE]:
    """Copies of the CTEs a scope can read, in an order that defines each before its readers;
    a CTE body sees only the CTEs defined before it, an inner CTE shadows an outer one of the
    same name."""
    layers = []  # innermost WITH first
    path = list(scopes.ancestors(scope))
    for index, ancestor in enumerate(path):
        with_ = ancestor.args.get("with_")
        if not isinstance(with_, exp.With):
            continue
        if index >= 2 and path[index - 1] is with_:  # inside one of its CTE bodies
            layers.append(with_.expressions[:path[index - 2].index])
        else:
            layers.append(with_.expressions)
    found: dict[str, exp.CTE] = {}
    for ctes in reversed(layers):
        for cte in ctes:
            name = cte.alias_or_name.lower()
            found.pop(name, None)
            found[name] = cte
    return [cte.copy() for cte in found.values()]


def _relation_name(item: exp.Expression) -> str | None:
    if isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier):
        return ".".join(p.name.lower() for p in item.parts)
    return None


def _output_alias(scope: Scope, name: str) -> exp.Expression | None:
    if not isinstance(scope, exp.Select):
        return None
    for output in scope.expressions:
        if isinstance(output, exp.Alias) and output.alias.lower() == name:
            return output.this
    return None


def _without_markers(node: exp.Expression) -> exp.Expression:
    """A copy that DuckDB can bind: marker columns (and AI calls not yet replaced) become
    NULLs."""
    copy = node.copy()
    for inner in list(copy.find_all(exp.Column, AIFunction)):
        if isinstance(inner, AIFunction) or is_marker(inner):
            if inner is copy:
                return exp.null()
            inner.replace(exp.null())
    return copy
