"""AI statements: planning AI operators, running them on the engine, rewriting for DuckDB.

Contract: `analyze(prepared)` returns an `AiStatement` when a SELECT, CREATE TABLE ... AS SELECT or
INSERT ... SELECT (or EXPLAIN [ANALYZE] of one) calls boolean AI functions, else None. `execute`
evaluates each AI call as an operator:

1. DuckDB computes the call's candidates: the distinct values of the prompt's fields over the
   statement's FROM/JOIN with every ordinary predicate applied (pushed below the AI operator) and
   the AI predicates not yet evaluated left out. Rows where a field is NULL get a NULL answer.
2. The engine answers one document-first prompt per candidate (filter layout when the fields read
   one table, join layout with a chosen anchor when they read two).
3. The answers become an Arrow table and the call is replaced by a lookup into it, so later AI
   operators see earlier ones as ordinary predicates (a cascade), and the final rewritten statement
   runs in DuckDB with GROUP BY, ORDER BY, LIMIT, aggregates and window functions intact.

AI predicates in WHERE and JOIN ... ON run first, in the order written; AI calls elsewhere (the
SELECT list) run last, on the rows that survive them. Under a LIMIT that bounds the result (one AI
predicate, nothing reordering or aggregating rows) candidates are asked in growing batches until
enough have passed. EXPLAIN shows the AI operators with estimated
prompt and token counts without running the engine; EXPLAIN ANALYZE runs the statement and shows
actual counts beside the estimates.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import re
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from heron.engine.api import EngineCancelled, EngineError
from heron.planner import prompting, statement
from heron.planner.aicalls import MAYBE_AI, AiCall, Template, find_calls
from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.statement import Column, Prepared, Result

if TYPE_CHECKING:
    from heron.planner.session import Plan, Planner

_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+(?P<analyze>ANALYZE\s+)?(?:VERBOSE\s+)?", re.IGNORECASE)
MIN_LIMIT_BATCH = 32  # first batch of candidates asked under a LIMIT
ARG = "__heron_arg"
ANSWER = "__heron_answer"
LOOKUP_ALIAS = "__heron_ai"
PLAN_COLUMN = Column("QUERY PLAN", pa.string())


@dataclass(frozen=True, slots=True)
class AiStatement:
    tree: exp.Expression  # the statement as parsed (parameters not yet bound)
    explain: bool = False
    analyze: bool = False


@dataclass
class OperatorStats:
    """One AI operator's plan and, after running, its actual work."""

    kind: str  # "AI Filter", "AI Join", "AI Column"
    function: str
    question: str
    fields: str
    candidates: int = 0
    anchor: str = ""
    est_input_tokens: int = 0
    est_fresh_tokens: int = 0
    prompts: int = 0
    input_tokens: int = 0
    fresh_tokens: int = 0
    cached_tokens: int = 0
    seconds: float = 0.0
    passed: int = 0
    goal: int | None = None  # stop once this many candidates passed (a LIMIT), None: ask all


@dataclass
class _Operator:
    call: AiCall
    sources: tuple[str | None, ...]  # the table alias each field reads (None: a constant)
    stats: OperatorStats = field(init=False)

    @property
    def tables(self) -> list[str]:
        return sorted({s for s in self.sources if s is not None})


def analyze(prepared: Prepared) -> AiStatement | None:
    if not MAYBE_AI.search(prepared.sql):
        return None
    match = _EXPLAIN.match(prepared.sql)
    body = prepared.sql[match.end():] if match else prepared.sql
    try:
        tree = sqlglot.parse_one(body, read="postgres")
    except ParseError as exc:
        reason = exc.errors[0]["description"] if exc.errors else str(exc)
        raise SqlError(SqlState.SYNTAX_ERROR, f"syntax error: {reason}") from None
    calls = find_calls(tree)
    if not calls:
        return None
    query = _query(tree)
    for call in calls:
        if call.node.find_ancestor(exp.Select) is not query:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           "AI functions inside subqueries or CTEs are not supported yet",
                           hint="Move the AI function to the outermost SELECT.")
    return AiStatement(tree, explain=match is not None, analyze=bool(match and match["analyze"]))


def _query(tree: exp.Expression) -> exp.Select:
    """The SELECT whose rows AI functions are asked about: the statement itself, or the query
    of CREATE TABLE ... AS / INSERT INTO ... SELECT."""
    if isinstance(tree, exp.Create | exp.Insert) and isinstance(tree.expression, exp.Select):
        return tree.expression
    if isinstance(tree, exp.Select):
        return tree
    raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                   "AI functions are supported in SELECT, CREATE TABLE ... AS SELECT "
                   "and INSERT ... SELECT statements")


# -- describe ------------------------------------------------------------------------------


def describe(planner: Planner, plan: Plan, params: Sequence[Any] | None = None
             ) -> tuple[Column, ...] | None:
    """Result columns, found by binding the rewritten statement against empty answer tables."""
    ai: AiStatement = plan.ai
    if ai.explain:
        return (PLAN_COLUMN,)
    if not plan.returns_rows:
        return None
    prepared = plan.prepared
    tree = ai.tree.copy()
    if params is not None:  # bound into the text, as execute() does
        tree = _bind(tree, params)
        prepared = dataclasses.replace(prepared, param_count=0)
    operators = _operators(planner.con, _query(tree))
    names = []
    try:
        for index, op in enumerate(operators):
            empty = pa.table({f"{ARG}{i}": pa.array([], pa.string())
                              for i in range(len(op.call.template.fields))}
                             | {ANSWER: pa.array([], pa.bool_())})
            names.append(_register(planner.con, empty, index))
            op.call.node.replace(_lookup(names[-1], op.call.template))
        return statement.describe(planner.con, prepared, tree.sql(dialect="duckdb"))
    finally:
        _unregister(planner.con, names)


# -- execute -------------------------------------------------------------------------------


def execute(planner: Planner, plan: Plan, params: Sequence[Any]) -> Result:
    ai: AiStatement = plan.ai
    if len(params) != plan.param_count:
        raise SqlError(SqlState.PROTOCOL_VIOLATION,
                       f"bind message supplies {len(params)} parameters, "
                       f"but prepared statement requires {plan.param_count}")
    tree = _bind(ai.tree.copy(), params)
    query = _query(tree)
    operators = _operators(planner.con, query)
    if ai.explain and not ai.analyze:
        lines = _explain(planner, query, operators, actual=False)
        return _plan_result(lines)
    started = time.perf_counter()
    names: list[str] = []
    try:
        for index, op in enumerate(operators):
            answers = _run_operator(planner, query, operators[index:], op)
            if answers is None:
                continue
            names.append(_register(planner.con, answers, index))
            op.call.node.replace(_lookup(names[-1], op.call.template))
        final = tree.sql(dialect="duckdb")
        prepared = dataclasses.replace(plan.prepared, param_count=0, sql=final)
        result = statement.run(planner.con, prepared)
    finally:
        _unregister(planner.con, names)
    planner.last_ai_stats = [op.stats for op in operators]
    if not ai.analyze:
        return dataclasses.replace(result, notices=tuple(_summary(op.stats) for op in operators))
    rows = result.table.num_rows if result.table is not None else 0
    lines = _explain(planner, query, operators, actual=True)
    lines.append(f"Result: {rows} rows in {time.perf_counter() - started:.3f} s")
    return _plan_result(lines)


def _summary(stats: OperatorStats) -> str:
    """One line per operator for the client: the work this statement cost."""
    return (f"{stats.kind} ({stats.function}): {stats.prompts} prompts, {stats.input_tokens} input "
            f"tokens, {stats.fresh_tokens} fresh, {stats.cached_tokens} from cached KV, "
            f"{stats.seconds:.2f} s")


def _plan_result(lines: list[str]) -> Result:
    return Result("EXPLAIN", (PLAN_COLUMN,), pa.table({PLAN_COLUMN.name: lines}))


def _operators(con: duckdb.DuckDBPyConnection, tree: exp.Select) -> list[_Operator]:
    """The AI calls of a statement as operators, in evaluation order, fields qualified."""
    calls = find_calls(tree)
    columns = _source_columns(con, tree)
    operators = []
    for call in calls:
        sources = tuple(_field_source(f, columns) for f in call.template.fields)
        op = _Operator(call, sources)
        if len(op.tables) > 2:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           f"{call.function} reads {len(op.tables)} tables "
                           f"({', '.join(op.tables)}); at most two (a join) are supported")
        kind = {0: "AI Filter", 1: "AI Filter", 2: "AI Join"}[len(op.tables)]
        if _position(tree, call.node) == "select":
            kind = "AI Column"
        op.stats = OperatorStats(kind, call.function, _question_text(call.template, sources),
                                 ", ".join(call.template.field_sql()))
        operators.append(op)
    if len(operators) == 1:
        operators[0].stats.goal = _row_goal(tree, operators[0].call.node)
    return sorted(operators, key=lambda o: o.stats.kind == "AI Column")  # predicates first


def _row_goal(tree: exp.Select, node: exp.Expression) -> int | None:
    """LIMIT + OFFSET when they bound the engine's work: the statement's only AI call is a
    conjunct of WHERE (or of an inner join's ON) and nothing reorders or combines rows (ORDER BY,
    GROUP BY, DISTINCT, aggregates, windows). Each passing candidate then yields a result row, so
    once that many passed, the remaining candidates need not be asked."""
    limit, offset = tree.args.get("limit"), tree.args.get("offset")
    if limit is None or any(tree.args.get(k) for k in ("order", "group", "having", "distinct",
                                                        "qualify")):
        return None
    if any(tree.find(kind) for kind in (exp.AggFunc, exp.Window)):
        return None
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


def _position(tree: exp.Select, node: exp.Expression) -> str:
    """Where a call sits: "predicate" (WHERE, JOIN ON, HAVING) or "select" (anywhere else)."""
    for ancestor in _ancestors(node):
        if isinstance(ancestor, exp.Where | exp.Having) or (
                isinstance(ancestor.parent, exp.Join) and ancestor.arg_key == "on"):
            return "predicate"
        if ancestor is tree:
            break
    return "select"


def _ancestors(node: exp.Expression) -> Iterator[exp.Expression]:
    while node is not None:
        yield node
        node = node.parent


def _question_text(template: Template, sources: tuple[str | None, ...], anchor: str = "") -> str:
    """The question as the engine will see it, with {i} standing for constant values."""
    tables = sorted({s for s in sources if s is not None}, key=lambda t: t != anchor)
    if len(tables) == 2:
        names = {i: f"DOCUMENT {tables.index(s)}" for i, s in enumerate(sources) if s}
    else:
        names = {i: "DOCUMENT" for i, s in enumerate(sources) if s}
    placeholders = ["{" + str(i) + "}" for i in range(len(template.fields))]
    return prompting.question(template, names, placeholders, drop_edges=len(names) == 1)


# -- sources: which table each field reads ---------------------------------------------------


def _source_columns(con: duckdb.DuckDBPyConnection, tree: exp.Select) -> dict[str, set[str]]:
    """Column names (lower case) of every FROM/JOIN item, keyed by its alias (lower case)."""
    items = []
    if tree.args.get("from_") is not None or tree.args.get("from") is not None:
        from_ = tree.args.get("from_") or tree.args.get("from")
        items.append(from_.this)
    items += [join.this for join in tree.args.get("joins") or []]
    ctes = tree.args.get("with")
    columns = {}
    for item in items:
        alias = item.alias_or_name.lower()
        query = exp.select("*").from_(item.copy()).limit(0)
        if ctes is not None:
            query.set("with", ctes.copy())
        try:
            names = con.sql(query.sql(dialect="duckdb")).columns
        except duckdb.Error as exc:
            raise from_duckdb(exc) from None
        columns[alias] = {n.lower() for n in names}
    return columns


def _field_source(field_: exp.Expression, columns: dict[str, set[str]]) -> str | None:
    sources = set()
    for column in field_.find_all(exp.Column):
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
                       f"prompt value {field_.sql()} mixes columns of several tables",
                       hint="Pass each table's columns as separate prompt values.")
    return sources.pop() if sources else None


# -- one operator ----------------------------------------------------------------------------


def _candidates_query(tree: exp.Select, pending: Sequence[_Operator],
                      fields: Sequence[exp.Expression]) -> exp.Select:
    """Distinct field values over the statement's FROM/JOIN/WHERE, pending AI predicates left
    out (a superset of the rows the statement can ask about, never a subset)."""
    pending_nodes = [op.call.node for op in pending]
    query = exp.select(*[exp.cast(f.copy(), "VARCHAR").as_(f"{ARG}{i}")
                         for i, f in enumerate(fields)]).distinct()
    for key in ("with", "from_", "from"):
        if tree.args.get(key) is not None:
            query.set(key, tree.args[key].copy())
    joins = []
    for join in tree.args.get("joins") or []:
        copy = join.copy()
        if join.args.get("on") is not None:
            kept = _kept_conjuncts(join.args["on"], pending_nodes)
            copy.set("on", exp.and_(*kept) if kept else exp.true())
        joins.append(copy)
    if joins:
        query.set("joins", joins)
    kept = _kept_conjuncts(tree.args["where"].this, pending_nodes) if tree.args.get("where") else []
    kept += [exp.Not(this=exp.Is(this=f.copy(), expression=exp.null())) for f in fields]
    return query.where(exp.and_(*kept)) if kept else query


def _kept_conjuncts(condition: exp.Expression, pending: Sequence[exp.Expression]
                    ) -> list[exp.Expression]:
    """Copies of the conjuncts of `condition` that contain none of the `pending` calls."""
    conjuncts = condition.flatten() if isinstance(condition, exp.And) else [condition]
    return [c.copy() for c in conjuncts
            if not any(node is call for node in c.walk() for call in pending)]


def _fetch(con: duckdb.DuckDBPyConnection, query: exp.Expression) -> pa.Table:
    try:
        return con.sql(query.sql(dialect="duckdb")).to_arrow_table()
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None


def _run_operator(planner: Planner, tree: exp.Select, pending: Sequence[_Operator], op: _Operator
                  ) -> pa.Table | None:
    template = op.call.template
    if not template.fields:  # a constant question: one prompt, answer inlined
        prompt = prompting.row_prompt(template, (), ())
        answer = _ask(planner, op, [prompt]).answers[0]
        op.call.node.replace(exp.true() if answer else exp.false())
        return None
    candidates = _fetch(planner.con, _candidates_query(tree, pending, template.fields))
    values = [candidates.column(i).to_pylist() for i in range(candidates.num_columns)]
    rows = list(zip(*values, strict=True))
    op.stats.candidates = len(rows)
    goal = op.stats.goal
    # Without a goal, one engine call over every candidate. With one (LIMIT), growing batches
    # until enough candidates passed: candidates never asked get NULL, which WHERE drops.
    batch = max(2 * goal, MIN_LIMIT_BATCH) if goal else len(rows)
    answers: list[bool] = []
    while len(answers) < len(rows) and not (goal and op.stats.passed >= goal):
        chunk = rows[len(answers):len(answers) + batch]
        answers += _ask(planner, op, _prompts(op, chunk)).answers
        op.stats.passed = sum(answers)
        batch *= 2
    return candidates.slice(0, len(answers)).append_column(ANSWER, pa.array(answers, pa.bool_()))


def _prompts(op: _Operator, rows: Sequence[tuple[str, ...]]) -> list:
    template = op.call.template
    tables = op.tables
    by_table = {t: [i for i, s in enumerate(op.sources) if s == t] for t in tables}
    if len(tables) <= 1:
        fields = by_table[tables[0]] if tables else []
        op.stats.anchor = ""
        return [prompting.row_prompt(template, fields, row) for row in rows]
    anchor, partner = _choose_anchor(by_table, rows)
    op.stats.anchor = anchor
    op.stats.question = _question_text(template, op.sources, anchor)
    return [prompting.pair_prompt(template, by_table[anchor], by_table[partner], row)
            for row in rows]


def _choose_anchor(by_table: dict[str, list[int]], rows: Sequence[tuple[str, ...]]
                   ) -> tuple[str, str]:
    """The side whose documents are longer becomes the anchor: its KV is computed once per
    distinct document, while the partner's text is paid for on every pair."""
    def mean_length(table: str) -> float:
        docs = {tuple(row[i] for i in by_table[table]) for row in rows}
        return sum(len("".join(d)) for d in docs) / max(len(docs), 1)

    first, second = sorted(by_table)
    return (first, second) if mean_length(first) >= mean_length(second) else (second, first)


def _ask(planner: Planner, op: _Operator, prompts: list) -> Any:
    started = time.perf_counter()
    try:
        answers = planner.engine.answer_bool(prompts, cancel=planner.cancelled)
    except EngineCancelled as exc:
        raise SqlError(SqlState.QUERY_CANCELED, str(exc)) from None
    except EngineError as exc:
        raise SqlError(SqlState.SYSTEM_ERROR, f"the inference engine failed: {exc}") from None
    metrics = answers.metrics
    op.stats.prompts += metrics.prompts
    op.stats.input_tokens += metrics.input_tokens
    op.stats.fresh_tokens += metrics.fresh_tokens
    op.stats.cached_tokens += metrics.cached_tokens
    op.stats.seconds += time.perf_counter() - started
    return answers


# -- rewriting -------------------------------------------------------------------------------


def _lookup(table: str, template: Template) -> exp.Expression:
    """`(SELECT answer FROM table WHERE arg0 = CAST(field0 AS VARCHAR) AND ...)`: NULL when a
    field is NULL, because no candidate row matches."""
    condition = exp.and_(*[
        exp.EQ(this=exp.column(f"{ARG}{i}", table=LOOKUP_ALIAS),
               expression=exp.cast(f.copy(), "VARCHAR"))
        for i, f in enumerate(template.fields)])
    select = exp.select(exp.column(ANSWER, table=LOOKUP_ALIAS)).from_(
        exp.to_table(table).as_(LOOKUP_ALIAS)).where(condition)
    return exp.Subquery(this=select)


def _register(con: duckdb.DuckDBPyConnection, table: pa.Table, index: int) -> str:
    name = f"__heron_ai_{uuid.uuid4().hex[:12]}_{index}"
    con.register(name, table)
    return name


def _unregister(con: duckdb.DuckDBPyConnection, names: Sequence[str]) -> None:
    for name in names:
        con.unregister(name)


def _bind(tree: exp.Expression, params: Sequence[Any]) -> exp.Expression:
    """Inline parameter values as literals (AI statements run as several DuckDB queries)."""
    for node in list(tree.find_all(exp.Parameter, exp.Placeholder)):
        if isinstance(node, exp.Parameter):
            index = int(node.name) - 1
        else:
            raise SqlError(SqlState.SYNTAX_ERROR, "use $1, $2, ... for parameters in AI statements")
        node.replace(_literal(params[index]))
    return tree


def _literal(value: Any) -> exp.Expression:
    if value is None:
        return exp.null()
    if isinstance(value, bool):
        return exp.true() if value else exp.false()
    if isinstance(value, int | float | decimal.Decimal):
        return exp.Literal.number(value)
    if isinstance(value, dt.datetime):
        return exp.cast(exp.Literal.string(value.isoformat()),
                        "TIMESTAMPTZ" if value.tzinfo else "TIMESTAMP")
    if isinstance(value, dt.date):
        return exp.cast(exp.Literal.string(value.isoformat()), "DATE")
    return exp.Literal.string(str(value))


# -- EXPLAIN ---------------------------------------------------------------------------------


def _explain(planner: Planner, tree: exp.Select, operators: Sequence[_Operator], actual: bool
             ) -> list[str]:
    lines = []
    for index, op in enumerate(operators):
        if not actual:
            _estimate(planner, tree, operators[index:], op)
        s = op.stats
        lines.append(f"{s.kind} #{index + 1}  ({s.function})")
        lines.append(f"  Question: {s.question}")
        lines.append(f"  Prompt values: {s.fields}")
        if s.anchor:
            lines.append(f"  Anchor: {s.anchor} (its documents' KV is shared by all partners)")
        if s.goal is not None:
            lines.append(f"  Stops once {s.goal} candidates pass (LIMIT)")
        if actual:
            lines.append(f"  Actual: prompts={s.prompts} passed={s.passed} "
                         f"input_tokens={s.input_tokens} fresh_tokens={s.fresh_tokens} "
                         f"cached_tokens={s.cached_tokens} time={s.seconds:.3f} s")
        else:
            lines.append(f"  Estimate: prompts<={s.candidates} input_tokens~{s.est_input_tokens} "
                         f"fresh_tokens~{s.est_fresh_tokens}")
    if not actual:
        lines.append("Relational part (DuckDB): " + _rewritten_for_display(tree, operators))
    return lines


def _rewritten_for_display(tree: exp.Select, operators: Sequence[_Operator]) -> str:
    shown = tree.copy()
    nodes = {id(op.call.node): f"ai_answer_{i + 1}" for i, op in enumerate(operators)}
    for original, node in zip(tree.walk(), shown.walk(), strict=False):
        if id(original) in nodes:
            node.replace(exp.column(nodes[id(original)]))
    return shown.sql(dialect="duckdb")


def _estimate(planner: Planner, tree: exp.Select, pending: Sequence[_Operator], op: _Operator
              ) -> None:
    """Candidate count from DuckDB and token counts from the tokenizer on a sample (no model)."""
    template = op.call.template
    if not template.fields:
        op.stats.candidates = 1
        return
    query = _candidates_query(tree, pending, template.fields)
    sample = _fetch(planner.con, exp.select("*").from_(query.subquery("c")).limit(64))
    total = _fetch(planner.con, exp.select(exp.Count(this=exp.Star())).from_(query.subquery("c")))
    op.stats.candidates = int(total.column(0)[0].as_py())
    rows = list(zip(*[sample.column(i).to_pylist() for i in range(sample.num_columns)],
                    strict=True))
    if not rows:
        return
    prompts = _prompts(op, rows)
    scale = op.stats.candidates / len(rows)
    texts = [p.prefix for p in prompts] + [p.suffix for p in prompts]
    counts = _count_tokens(planner, texts)
    prefix_tokens, suffix_tokens = counts[: len(prompts)], counts[len(prompts):]
    op.stats.est_input_tokens = round(scale * (sum(prefix_tokens) + sum(suffix_tokens)))
    distinct_prefixes = {p.prefix: n for p, n in zip(prompts, prefix_tokens, strict=True)}
    op.stats.est_fresh_tokens = round(scale * (sum(distinct_prefixes.values())
                                               + sum(suffix_tokens)))


def _count_tokens(planner: Planner, texts: list[str]) -> list[int]:
    if planner.engine is None:
        return [max(1, len(t) // 4) for t in texts]  # no tokenizer: ~4 characters a token
    return planner.engine.count_tokens(texts)
