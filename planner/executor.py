"""Running an AI plan: candidates from DuckDB, answers from the engine, the rewritten statement.

Contract: an `Executor` serves one session's DuckDB connection and engine. For each operator of an
`AiPlan`, in the plan's order:

1. DuckDB computes the operator's candidates: the distinct values of its prompt fields over the
   statement's FROM/JOIN with every ordinary predicate applied (pushed below the AI operator) and
   the predicates of operators not yet run left out — a superset of the rows it can be asked
   about, never a subset. Rows where a field is NULL get a NULL answer.
2. The engine answers one document-first prompt per candidate (filter layout for one table, join
   layout around the anchor `optimizer.choose_anchor` picks for two). Under a goal (LIMIT),
   candidates are asked in growing batches until enough passed; the others are never asked.
3. The answers become an Arrow table and the operator's marker is replaced by a lookup into it,
   so later operators see earlier ones as ordinary predicates (a cascade).

`run` then executes the rewritten statement in DuckDB (GROUP BY, ORDER BY, LIMIT, aggregates and
windows work around the answers) and returns its `Result` with one `OperatorWork` per operator.
`describe` binds the rewritten statement against empty answer tables (nothing runs); `estimate`
counts candidates and tokens for EXPLAIN without the model. Engine failures become SQLSTATE
58000, a cancelled statement 57014.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa
from sqlglot import exp

from heron.engine.api import (
    AnswerKind,
    Answers,
    Engine,
    EngineCancelled,
    EngineError,
    Metrics,
    Request,
)
from heron.engine.prompts import Prompt
from heron.planner import prompting, statement
from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.logical import AiCall, AiOperator, AiPlan, OperatorWork, is_marker, select_of
from heron.planner.optimizer import choose_anchor
from heron.planner.statement import Column, Result, Statement

MIN_LIMIT_BATCH = 32  # first batch of candidates asked under a LIMIT
ESTIMATE_SAMPLE_ROWS = 64  # candidates tokenized to estimate an operator's tokens
ARG = "__heron_arg"
ANSWER = "__heron_answer"
LOOKUP_ALIAS = "__heron_ai"


@dataclass(frozen=True, slots=True)
class Estimate:
    """What EXPLAIN expects an operator to cost, without running the model."""

    candidates: int
    input_tokens: int = 0
    fresh_tokens: int = 0
    anchor: str | None = None


class Executor:
    def __init__(self, con: duckdb.DuckDBPyConnection, engine: Engine | None,
                 cancel: threading.Event) -> None:
        self.con = con
        self.engine = engine
        self.cancel = cancel  # set by another thread: the engine stops between chunks

    def run(self, stmt: Statement, params: Sequence[Any]) -> Result:
        assert stmt.ai is not None
        if self.engine is None:
            raise SqlError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE,
                           "AI functions need a model; start heron serve with --model")
        self.cancel.clear()
        with self._execution(stmt.ai, params) as execution:
            work = tuple(execution.run_operator(position, op)
                         for position, op in enumerate(stmt.ai.operators))
            result = statement.run(self.con, stmt, sql=execution.final_sql())
        return dataclasses.replace(result, work=work)

    def describe(self, stmt: Statement, params: Sequence[Any] | None
                 ) -> tuple[Column, ...] | None:
        assert stmt.ai is not None
        with self._execution(stmt.ai, params) as execution:
            for op in stmt.ai.operators:
                execution.answered(op, _empty_answers(op.call))
            return statement.describe(self.con, stmt, sql=execution.final_sql(),
                                      params=None if params is None else ())

    def estimate(self, plan: AiPlan, params: Sequence[Any]) -> tuple[Estimate, ...]:
        with self._execution(plan, params) as execution:
            return tuple(execution.estimate(op) for op in plan.operators)

    @contextmanager
    def _execution(self, plan: AiPlan, params: Sequence[Any] | None) -> Iterator[_Execution]:
        execution = _Execution(self, plan, params)
        try:
            yield execution
        finally:
            for name in execution.registered:
                self.con.unregister(name)

    def ask(self, prompts: list[Prompt], metrics: Metrics) -> Answers:
        assert self.engine is not None
        started = time.perf_counter()
        try:
            answers = self.engine.answer(Request(AnswerKind.BOOLEAN, tuple(prompts)),
                                         cancel=self.cancel)
        except EngineCancelled as exc:
            raise SqlError(SqlState.QUERY_CANCELED, str(exc)) from None
        except EngineError as exc:
            raise SqlError(SqlState.SYSTEM_ERROR, f"the inference engine failed: {exc}") from None
        metrics.merge(dataclasses.replace(answers.metrics,
                                          seconds=time.perf_counter() - started))
        return answers

    def count_tokens(self, texts: list[str]) -> list[int]:
        if self.engine is None:
            return [max(1, len(t) // 4) for t in texts]  # no tokenizer: ~4 characters a token
        return self.engine.count_tokens(texts)

    def fetch(self, query: exp.Expression) -> pa.Table:
        try:
            return self.con.sql(query.sql(dialect="duckdb")).to_arrow_table()
        except duckdb.Error as exc:
            raise from_duckdb(exc) from None


class _Execution:
    """One execution's working copy of a plan: the statement with the parameters bound, and the
    answer tables registered in DuckDB so far."""

    def __init__(self, executor: Executor, plan: AiPlan, params: Sequence[Any] | None) -> None:
        self.executor = executor
        self.plan = plan
        self.tree = plan.tree.copy()
        fields = {op.call.marker: [f.copy() for f in op.call.template.fields]
                  for op in plan.operators}
        if params is not None:
            self.tree = bind(self.tree, params)
            fields = {m: [bind(f, params) for f in fs] for m, fs in fields.items()}
        self.fields = fields  # per operator marker: its prompt values, parameters bound
        self.query = select_of(self.tree)
        self.registered: list[str] = []

    def run_operator(self, position: int, op: AiOperator) -> OperatorWork:
        call = op.call
        metrics = Metrics()
        if not call.template.fields:  # a constant question: one prompt, the answer inlined
            answer = self.executor.ask([prompting.row_prompt(call.template, (), ())], metrics)
            self._replace(call.marker, exp.true() if answer.values[0] else exp.false())
            return OperatorWork(op, 1, int(answer.values[0]), metrics)
        pending = frozenset(o.call.marker for o in self.plan.operators[position:])
        candidates = self.executor.fetch(self._candidates_query(op, pending))
        rows = _rows(candidates)
        anchor = choose_anchor(call, rows)[0] if len(call.tables) == 2 else None
        # Without a goal, one engine call over every candidate. With one (LIMIT), growing batches
        # until enough candidates passed: candidates never asked get NULL, which WHERE drops.
        goal = op.goal
        batch = max(2 * goal, MIN_LIMIT_BATCH) if goal else len(rows)
        answers: list[bool] = []
        while len(answers) < len(rows) and not (goal and sum(answers) >= goal):
            chunk = rows[len(answers):len(answers) + batch]
            answers += self.executor.ask(prompts(call, chunk, anchor), metrics).values
            batch *= 2
        asked = candidates.slice(0, len(answers))
        self.answered(op, asked.append_column(ANSWER, pa.array(answers, pa.bool_())))
        return OperatorWork(op, len(rows), sum(answers), metrics, anchor)

    def answered(self, op: AiOperator, answers: pa.Table) -> None:
        """Register an operator's answers and replace its marker by a lookup into them."""
        name = f"__heron_ai_{uuid.uuid4().hex[:12]}"
        self.executor.con.register(name, answers)
        self.registered.append(name)
        self._replace(op.call.marker, _lookup(name, self.fields[op.call.marker]))

    def estimate(self, op: AiOperator) -> Estimate:
        """Candidate count from DuckDB, tokens from the tokenizer on a sample (no model); every
        operator's predicate is left out, as none has run."""
        call = op.call
        if not call.template.fields:
            return Estimate(candidates=1)
        pending = frozenset(o.call.marker for o in self.plan.operators)
        query = self._candidates_query(op, pending).subquery("c")
        fetch = self.executor.fetch
        sample = _rows(fetch(exp.select("*").from_(query.copy()).limit(ESTIMATE_SAMPLE_ROWS)))
        total = int(fetch(exp.select(exp.Count(this=exp.Star())).from_(query)).column(0)[0]
                    .as_py())
        anchor = choose_anchor(call, sample)[0] if len(call.tables) == 2 and sample else None
        if not sample:
            return Estimate(total, anchor=anchor)
        rendered = prompts(call, sample, anchor)
        counts = self.executor.count_tokens([p.prefix for p in rendered]
                                            + [p.suffix for p in rendered])
        prefix_tokens, suffix_tokens = counts[:len(rendered)], counts[len(rendered):]
        distinct_prefixes = {p.prefix: n for p, n in zip(rendered, prefix_tokens, strict=True)}
        scale = total / len(sample)
        return Estimate(
            candidates=total,
            input_tokens=round(scale * (sum(prefix_tokens) + sum(suffix_tokens))),
            fresh_tokens=round(scale * (sum(distinct_prefixes.values()) + sum(suffix_tokens))),
            anchor=anchor)

    def final_sql(self) -> str:
        return self.tree.sql(dialect="duckdb")

    def _replace(self, marker: str, node: exp.Expression) -> None:
        markers = frozenset({marker})
        for column in list(self.tree.find_all(exp.Column)):
            if is_marker(column, markers):
                column.replace(node.copy())

    def _candidates_query(self, op: AiOperator, pending: frozenset[str]) -> exp.Select:
        """Distinct field values over the statement's FROM/JOIN/WHERE, the conjuncts that hold
        a pending operator left out."""
        fields = self.fields[op.call.marker]
        query = exp.select(*[exp.cast(f.copy(), "VARCHAR").as_(f"{ARG}{i}")
                             for i, f in enumerate(fields)]).distinct()
        source = self.query
        for key in ("with", "from_", "from"):
            if source.args.get(key) is not None:
                query.set(key, source.args[key].copy())
        joins = []
        for join in source.args.get("joins") or []:
            copy = join.copy()
            if join.args.get("on") is not None:
                kept = _kept_conjuncts(join.args["on"], pending)
                copy.set("on", exp.and_(*kept) if kept else exp.true())
            joins.append(copy)
        if joins:
            query.set("joins", joins)
        where = source.args.get("where")
        kept = _kept_conjuncts(where.this, pending) if where is not None else []
        kept += [exp.Not(this=exp.Is(this=f.copy(), expression=exp.null())) for f in fields]
        return query.where(exp.and_(*kept)) if kept else query


def prompts(call: AiCall, rows: Sequence[tuple[str, ...]], anchor: str | None) -> list[Prompt]:
    """The engine's prompts for candidate rows: the filter layout for one table, the join layout
    around `anchor` for two."""
    template = call.template
    by_table = {t: [i for i, s in enumerate(call.sources) if s == t] for t in call.tables}
    if anchor is None:
        fields = by_table[call.tables[0]] if call.tables else []
        return [prompting.row_prompt(template, fields, row) for row in rows]
    partner = next(t for t in call.tables if t != anchor)
    return [prompting.pair_prompt(template, by_table[anchor], by_table[partner], row)
            for row in rows]


def _rows(table: pa.Table) -> list[tuple[str, ...]]:
    return list(zip(*[table.column(i).to_pylist() for i in range(table.num_columns)],
                    strict=True))


def _kept_conjuncts(condition: exp.Expression, pending: frozenset[str]) -> list[exp.Expression]:
    """Copies of the conjuncts of `condition` that hold none of the `pending` markers."""
    conjuncts = condition.flatten() if isinstance(condition, exp.And) else [condition]
    return [c.copy() for c in conjuncts
            if not any(is_marker(node, pending) for node in c.find_all(exp.Column))]


def _lookup(table: str, fields: Sequence[exp.Expression]) -> exp.Expression:
    """`(SELECT answer FROM table WHERE arg0 = CAST(field0 AS VARCHAR) AND ...)`: NULL when a
    field is NULL, because no candidate row matches."""
    condition = exp.and_(*[
        exp.EQ(this=exp.column(f"{ARG}{i}", table=LOOKUP_ALIAS),
               expression=exp.cast(f.copy(), "VARCHAR"))
        for i, f in enumerate(fields)])
    select = exp.select(exp.column(ANSWER, table=LOOKUP_ALIAS)).from_(
        exp.to_table(table).as_(LOOKUP_ALIAS)).where(condition)
    return exp.Subquery(this=select)


def _empty_answers(call: AiCall) -> pa.Table:
    return pa.table({f"{ARG}{i}": pa.array([], pa.string())
                     for i in range(len(call.template.fields))}
                    | {ANSWER: pa.array([], call.function.result_type)})


def bind(tree: exp.Expression, params: Sequence[Any]) -> exp.Expression:
    """Inline parameter values as literals (AI statements run as several DuckDB queries)."""
    for node in list(tree.find_all(exp.Parameter, exp.Placeholder)):
        if not isinstance(node, exp.Parameter):
            raise SqlError(SqlState.SYNTAX_ERROR, "use $1, $2, ... for parameters in AI statements")
        literal = _literal(params[int(node.name) - 1])
        if node is tree:
            return literal
        node.replace(literal)
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
