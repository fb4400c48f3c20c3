"""Running an AI plan: candidates from DuckDB, answers from the engine, the rewritten statement.

Contract: an `Executor` serves one session's DuckDB connection and engine, with the server's
`Statistics` and `AnswerStore`. `run(stmt, params, settings)` executes an `AiPlan`:

1. Volatile inputs are evaluated once: a table read with TABLESAMPLE, and a derived table whose
   rows change between evaluations (random(), ...), is materialized before anything reads it,
   so the prompts and the final statement see the same rows.
2. Operators run one at a time, each once every operator it requires has; `planner.optimizer`
   picks the next (under `heron.order = cost`: a scope's conjuncts in the cheapest order, their
   selectivities from the catalog or, when unknown, measured on a sample of their candidates).
3. An operator's candidates come from DuckDB (`planner.candidates`: the distinct prompt values
   over the rows where it stands, every answered condition applied; each candidate query is
   fetched once per execution, as ids — a hash of each value, checked to be unique among the
   candidates — and each distinct text once, decoded into one shared string); the engine answers one
   prompt per candidate not answered before (the answer store, keyed by model and exact prompt,
   serves repeats across statements unless `heron.reuse_answers` is off). A big operator's
   prompts stream to the engine as one call in parts (`PART_FIRST` prompts, then twice as many
   each time up to `PART_MOST`): each part is keyed and looked up in the answer store while the
   engine answers the parts before it, so the engine starts after the first part; prompts are
   rendered as their part is keyed. Every prompt is checked against the model's context
   (`Engine.check`) once the first part is sent and before the second is, so one too long
   refuses the statement after at most the first part's work. Pairs are asked grouped by
   anchor, around the anchor chosen on the candidates with only the calls the operator requires
   applied (so its prompts do not depend on the order), led by one pair of each anchor whose
   document the engine's first chunk can hold: they are the first part, so the engine computes
   those documents while the host renders, keys and sends the other pairs. Under a goal (a
   LIMIT, optionally in ORDER BY order) a conjunct's candidates are asked in growing batches —
   whole anchor groups for pairs — until enough passed; a value under LIMIT is asked only for
   the rows that can be returned (under a bare LIMIT the statement is then kept to those).
4. The answers become a lookup function of the values' ids registered in DuckDB that replaces
   the operator's marker, so later operators and the final statement see them as ordinary
   values (NULL for NULL prompt values and candidates never asked).

While it runs, an executor given a `ProgressListener` reports each operator's stages — the
sample that measures a selectivity, then the answering — as they go (`planner.progress`: from
the answer store, at every engine request and engine progress callback, and at their end, also
when the statement fails). The rewritten statement then runs in DuckDB, and the `Result` carries
one `OperatorWork` per operator in the order they ran. `describe` binds the rewritten statement
with empty lookups (nothing runs); `estimate` prices the plan for EXPLAIN without the model.
Engine failures become SQLSTATE 58000, a cancelled statement 57014, a prompt longer than the
model's context 54000. Under `heron.max_tokens` (`planner.budget`) a statement whose estimate
exceeds the budget is refused before it runs, and one that passes it while running is stopped
(54000). Everything registered is removed afterwards.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import decimal
import itertools
import json
import math
import operator
import re
import threading
import time
import uuid
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from heron.catalog.answers import Answer, AnswerKey, AnswerKeys, AnswerStore
from heron.catalog.statistics import Statistics
from heron.engine.api import (
    AnswerKind,
    Answers,
    Engine,
    EngineCancelled,
    EngineError,
    Metrics,
    ProgressCallback,
    PromptTooLong,
    Request,
)
from heron.engine.prompts import TEMPLATE_VERSION, Prompt
from heron.planner import candidates, optimizer, prompting, scopes, statement
from heron.planner.budget import TokenBudget, estimated_tokens
from heron.planner.cost import CostModel, Work
from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.logical import (
    SCOPE_KEY,
    AiCall,
    AiOperator,
    AiPlan,
    OperatorWork,
    Source,
    Tier,
    is_marker,
    visible_ctes,
)
from heron.planner.optimizer import Estimate, Evidence, Goal, Layout, Order, Shape
from heron.planner.progress import OperatorRun, ProgressListener, Stage, State
from heron.planner.settings import Settings
from heron.planner.statement import Column, Result, Statement
from heron.planner.token_counts import TokenCounts

SAMPLE_SIZE = 8  # candidates asked to measure an unknown selectivity
SAMPLE_ANCHORS = 2  # pairs sampled around at most this many anchors
TOKEN_SAMPLE = 32  # candidates rendered and tokenized to estimate an operator's tokens
# EXPLAIN never runs what it explains: it counts candidates while that takes less than
# EXPLAIN_SECONDS in all, then takes DuckDB's estimates of how many there are and, for their
# tokens, the first rows found in the SAMPLE_SECONDS after that: well within a second in all.
EXPLAIN_SECONDS = 0.4
SAMPLE_SECONDS = 0.3
# An operator's prompts reach the engine in parts of growing size: the first small, so that the
# engine starts soon; the later ones larger, so that there are few.
PART_FIRST = 256
PART_MOST = 4096
# Candidates cross from DuckDB as ids (`candidates.identified`) made by the first of these
# functions that gives the distinct values of an execution's candidates distinct ids (checked
# at every fetch: a 64-bit hash collides about once in 10^7 fetches of a million values).
ID_FUNCTIONS = ("hash", "md5_number_lower", "md5_number_upper")
LOOKUP = "__heron_lookup_"
MATERIALIZED = "__heron_rows_"

Key = tuple[str | None, ...]  # one candidate: its prompt values as text
Ids = tuple[int | None, ...]  # the same, each value as its id (`ID_FUNCTIONS`)


class Executor:
    def __init__(self, con: duckdb.DuckDBPyConnection, engine: Engine | None,
                 cancel: threading.Event, statistics: Statistics, answers: AnswerStore,
                 progress: ProgressListener | None = None) -> None:
        self.con = con
        self.engine = engine
        self.cancel = cancel  # set by another thread: the engine stops between chunks
        self.statistics = statistics
        self.answers = answers
        self.progress = progress  # told how the operators of running statements progress

    def cost_model(self) -> CostModel:
        info = self.engine.info if self.engine is not None else None
        return CostModel.of(info, self.statistics.speed_factor())

    def run(self, stmt: Statement, params: Sequence[Any], settings: Settings) -> Result:
        assert stmt.ai is not None
        if self.engine is None:
            raise SqlError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE,
                           "AI functions need a model; start heron serve with --model")
        budget = TokenBudget(settings.max_tokens)
        if budget.limited:
            budget.refuse_estimate(sum(estimated_tokens(estimate.work) for _, estimate
                                       in self.estimate(stmt.ai, params, settings)))
        with self._execution(stmt.ai, params, settings, budget) as execution:
            work = execution.run_all()
            result = statement.run(self.con, stmt, sql=execution.final_sql())
        return dataclasses.replace(result, work=work)

    def describe(self, stmt: Statement, params: Sequence[Any] | None
                 ) -> tuple[Column, ...] | None:
        assert stmt.ai is not None
        with self._execution(stmt.ai, params, Settings()) as execution:
            for op in stmt.ai.operators:
                execution.answered(op, {})
            return statement.describe(self.con, stmt, sql=execution.final_sql(),
                                      params=None if params is None else ())

    def estimate(self, plan: AiPlan, params: Sequence[Any], settings: Settings
                 ) -> list[tuple[AiOperator, Estimate]]:
        """Each operator with what it is expected to cost, in the order it would run; nothing
        asks the model."""
        with self._execution(plan, params, settings) as execution:
            return execution.plan_all()

    @contextmanager
    def _execution(self, plan: AiPlan, params: Sequence[Any] | None, settings: Settings,
                   budget: TokenBudget | None = None) -> Iterator[_Execution]:
        execution = _Execution(self, plan, params, settings, budget or TokenBudget(0))
        try:
            yield execution
        finally:
            execution.close()

    def fetch(self, query: exp.Expression, deadline: float | None = None) -> pa.Table:
        """The rows of `query`; with a `deadline` (`time.monotonic()`), `_OutOfTime` when it
        would run past it (it is interrupted there)."""
        sql = query.sql(dialect="duckdb")
        if deadline is None:
            try:
                return self.con.sql(sql).to_arrow_table()
            except duckdb.Error as exc:
                raise from_duckdb(exc) from None
        left = deadline - time.monotonic()
        if left <= 0:
            raise _OutOfTime
        alarm = _Alarm(self.con, left)
        try:
            return self.con.sql(sql).to_arrow_table()
        except duckdb.Error as exc:
            if alarm.stop() and not self.cancel.is_set():
                raise _OutOfTime from None
            raise from_duckdb(exc) from None
        finally:
            alarm.stop()

    def estimated_rows(self, query: exp.Expression) -> int:
        """DuckDB's estimate of how many rows `query` returns (its plan's; nothing runs)."""
        try:
            plan = self.con.sql("EXPLAIN (FORMAT JSON) " + query.sql(dialect="duckdb")).fetchall()
        except duckdb.Error as exc:
            raise from_duckdb(exc) from None
        return _cardinality(json.loads(plan[0][1])[0])

    def count_tokens(self, texts: list[str]) -> list[int]:
        if self.engine is None:
            return [max(1, len(t) // 4) for t in texts]  # no tokenizer: ~4 characters a token
        try:
            return self.engine.count_tokens(texts)
        except EngineError as exc:
            raise SqlError(SqlState.SYSTEM_ERROR, f"the inference engine failed: {exc}") from None

    def ask(self, call: AiCall, prompts: Sequence[Prompt], settings: Settings,
            metrics: Metrics, budget: TokenBudget, run: OperatorRun | None = None,
            first: int | None = None) -> tuple[list[Any], int]:
        """The answers to `prompts` (in order) and how many came from the answer store; the
        engine's tokens are charged to `budget`; `run` is told of both as they come. The first
        part holds `first` prompts (default `PART_FIRST`); `prompts` may render as read."""
        assert self.engine is not None
        spec = call.spec
        stored = _StoredAnswers(self.answers, self.engine.info.name, call, prompts, settings,
                                run)
        parts = (stored.missing(start, end) for start, end in _parts(len(prompts), first))
        try:
            first_part = next((part for part in parts if part), None)
            if first_part is not None:
                started = time.perf_counter()
                progress = run.request(len(first_part), metrics) if run is not None else None
                answers = self.engine.answer(
                    Request(spec.kind, first_part, spec.labels, spec.max_tokens),
                    cancel=self.cancel, progress=_both(progress, budget.watch()),
                    more=self._checked(call, prompts, parts))
                budget.charge(answers.metrics)
                metrics.merge(dataclasses.replace(answers.metrics,
                                                  seconds=time.perf_counter() - started))
                if run is not None:
                    run.returned(metrics)
                stored.answered(answers)
        except EngineCancelled as exc:
            raise SqlError(SqlState.QUERY_CANCELED, str(exc)) from None
        except PromptTooLong as exc:
            raise _prompt_too_long(exc, stored.asked(exc.prompt)) from None
        except EngineError as exc:
            raise SqlError(SqlState.SYSTEM_ERROR,
                           f"the inference engine failed: {exc}") from None
        return stored.values(), stored.reused

    def _checked(self, call: AiCall, prompts: Sequence[Prompt],
                 parts: Iterator[tuple[Prompt, ...]]) -> Iterator[tuple[Prompt, ...]]:
        """The parts after the first that hold prompts, every one of `prompts` checked against
        the model's context before the first of them is given: a prompt too long refuses the
        statement before the engine runs more than the first part."""
        checked = False
        for part in parts:
            if not part:
                continue
            if not checked:
                assert self.engine is not None
                spec = call.spec
                try:
                    self.engine.check(Request(spec.kind, tuple(prompts), spec.labels,
                                              spec.max_tokens))
                except PromptTooLong as exc:
                    raise _prompt_too_long(exc, prompts[exc.prompt]) from None
                checked = True
            yield part


class _StoredAnswers:
    """The answers of one operator's prompts: from the answer store, looked up a part at a time
    (`missing`), then from the engine for the prompts it lacked (`answered`), stored there."""

    def __init__(self, store: AnswerStore, model: str, call: AiCall, prompts: Sequence[Prompt],
                 settings: Settings, run: OperatorRun | None) -> None:
        spec = call.spec
        self.store = store
        self.keys = AnswerKeys(model, TEMPLATE_VERSION, spec.kind.value, spec.labels,
                               spec.max_tokens)
        self.prompts = prompts
        self.reuse = settings.reuse_answers
        self.run = run
        self.found: list[Answer | None] = [None] * len(prompts)
        self.sent: list[int] = []  # prompts asked of the engine, in the order asked
        self.sent_keys: list[AnswerKey] = []  # their keys in the store (when it is used)
        self.reused = 0

    def missing(self, start: int, end: int) -> tuple[Prompt, ...]:
        """The prompts of `start:end` the store does not answer (those it does are told to the
        progress run)."""
        asked = []
        for i in range(start, end):
            prompt = self.prompts[i]
            if self.reuse:
                key = self.keys.of(prompt.prefix, prompt.suffix)
                found = self.store.get(key)
                if found is not None:
                    self.found[i] = found
                    continue
                self.sent_keys.append(key)
            self.sent.append(i)
            asked.append(prompt)
        reused = end - start - len(asked)
        self.reused += reused
        if self.run is not None:
            self.run.from_store(reused)
        return tuple(asked)

    def asked(self, position: int) -> Prompt:
        """The prompt the engine numbers `position` (of those sent)."""
        return self.prompts[self.sent[position]]

    def answered(self, answers: Answers) -> None:
        found = list(zip(answers.values, answers.scores, strict=True))
        for i, answer in zip(self.sent, found, strict=True):
            self.found[i] = answer
        if self.reuse:
            self.store.put_many(self.sent_keys, found)

    def values(self) -> list[Any]:
        return [found[0] for found in self.found if found is not None]


def _parts(count: int, first: int | None = None) -> list[tuple[int, int]]:
    """`(start, end)` of each part of `count` prompts: `first` (default `PART_FIRST`), then
    twice as many each time (at least `PART_FIRST`, at most `PART_MOST`)."""
    bounds, start, size = [], 0, PART_FIRST if first is None else first
    while start < count:
        bounds.append((start, min(count, start + size)))
        start, size = start + size, min(2 * max(size, PART_FIRST // 2), PART_MOST)
    return bounds


class _Rendered(Sequence[Prompt]):
    """A call's prompts, rendered the first time one at or past them is read (in order): the
    first part reaches the engine before the others are rendered."""

    def __init__(self, rendering: Iterator[Prompt], count: int) -> None:
        self._rendering = rendering
        self._count = count
        self._done: list[Prompt] = []

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return self._upto(self._count)[index]
        if not -self._count <= index < self._count:
            raise IndexError(index)
        position = index % self._count
        return self._upto(position + 1)[position]

    def _upto(self, end: int) -> list[Prompt]:
        if end > len(self._done):
            self._done.extend(itertools.islice(self._rendering, end - len(self._done)))
        return self._done


@dataclass(frozen=True)
class _Candidates:
    """A candidate query's rows as text keys (equal texts one shared string), and `ids`, the
    same rows, row for row, as their values' ids (UBIGINT columns named as the values)."""

    rows: list[Key]
    ids: pa.Table
    texts: tuple[dict[int, str], ...]  # per value: its texts by id

    def keys(self, ids: pa.Table) -> list[Key]:
        """Rows of `ids` (some of these candidates) as text keys."""
        return _keys(self.texts, ids)


class _CandidateSet(NamedTuple):
    """An operator's candidates as `_Execution._candidates` finds them."""

    query: exp.Subquery  # all of them
    total: int  # how many (DuckDB's estimate unless `counted`)
    sample: list[Key]  # some, in hash order
    counted: bool
    ids: pa.Table | None = None  # all of them as ids, when fetched (`_Candidates.ids`)


@dataclass
class _Asked:
    """One operator's answers so far in one execution, and the work they took."""

    values: dict[Key, Any] = dataclasses.field(default_factory=dict)
    metrics: Metrics = dataclasses.field(default_factory=Metrics)
    reused: int = 0
    sampled: int = 0


class _Execution:
    """One execution's working copy of a plan: the statement with the parameters bound, and the
    lookups and materialized rows registered in DuckDB so far."""

    def __init__(self, executor: Executor, plan: AiPlan, params: Sequence[Any] | None,
                 settings: Settings, budget: TokenBudget) -> None:
        self.executor = executor
        self.con = executor.con
        self.plan = plan
        self.settings = settings
        self.budget = budget
        self.tree = plan.tree.copy()
        fields = {op.marker: [f.copy() for f in op.call.template.fields]
                  for op in plan.operators}
        if params is not None:
            self.tree = bind(self.tree, params)
            fields = {m: [bind(f, params) for f in fs] for m, fs in fields.items()}
        self.fields = fields  # per operator marker: its prompt values, parameters bound
        self.functions: list[str] = []
        self.tables: list[str] = []
        self._fetched: dict[str, _Candidates] = {}  # candidate queries' rows, by their SQL
        self._id_function = 0  # the index in ID_FUNCTIONS of the function making ids
        self._ids: dict[str, int] = {}  # prompt values' ids, as far as they are known
        self.tokens = TokenCounts(executor.count_tokens)  # of sample prompts, for layouts
        self.asked: dict[str, _Asked] = {op.marker: _Asked() for op in plan.operators}
        self.done: set[str] = set()  # operators run (or, for EXPLAIN, planned)
        self.answered_markers: set[str] = set()  # operators whose markers became lookups
        self.resident: frozenset[Source] = frozenset()  # tables whose document KV is warm
        self.measure = True  # whether shapes may ask a sample (never for EXPLAIN)
        self.deadline: float | None = None  # EXPLAIN: when counting gives way to estimates
        self.applied: list[Shape] = []  # EXPLAIN: the shapes planned so far
        self._shapes: dict[str, Shape] = {}  # EXPLAIN: nothing changes, so shapes are kept
        self._anchors: dict[str, Layout | None] = {}  # pair operators' chosen layouts
        self.lookups: dict[str, str] = {}  # marker -> the function standing for its answers
        self._correlated: dict[Any, bool] = {}
        self.runs: dict[str, OperatorRun] = {}  # marker -> its stage reporting progress

    # -- the loop ------------------------------------------------------------------------

    def run_all(self) -> tuple[OperatorWork, ...]:
        work = []
        self._materialize_volatile()
        while (choice := self._next()) is not None:
            work.append(self.run_operator(choice[0]))
            self._materialize_volatile()
        return tuple(work)

    def plan_all(self) -> list[tuple[AiOperator, Estimate]]:
        """The order and estimates EXPLAIN shows: operators chosen as `run_all` would, each
        priced after those planned before it; nothing is asked and no marker answered, so
        every candidate count is taken with all AI conditions left out and reduced by the
        selectivities of the operators planned earlier."""
        self.measure = False
        self.deadline = time.monotonic() + EXPLAIN_SECONDS
        planned = []
        model = self.executor.cost_model()
        while (choice := self._next()) is not None:
            op, chosen = choice
            shape = self.shape(op)
            goal = self._goal(op, self._pending())
            cost = optimizer.estimate(shape, model, self.resident, self.applied, goal) if (
                goal is not None or chosen is None) else chosen
            planned.append((op, cost))
            self.applied.append(shape)
            self.resident |= optimizer.left_resident(shape, cost)
            self._stand_in(op)
            self.done.add(op.marker)
        return planned

    def _stand_in(self, op: AiOperator) -> None:
        """EXPLAIN: replace a planned operator's marker by SQL that stands for its answers
        without asking (TRUE for TRUE/FALSE, so later candidates are counted with it left out;
        a value per distinct prompt for the rest), so later operators can be counted."""
        fields = [exp.cast(f.copy(), "VARCHAR") for f in self.fields[op.marker]]
        key = exp.Array(expressions=[f.copy() for f in fields])
        spec = op.call.spec
        hashed = exp.Anonymous(this="hash", expressions=[key.copy()])
        if spec.kind is AnswerKind.BOOLEAN:
            value: exp.Expression = exp.true()
        elif spec.kind is AnswerKind.SCORE:
            value = exp.Div(this=hashed, expression=exp.Literal.number(2.0**64))
        elif spec.kind is AnswerKind.LABEL:
            labels = exp.Array(expressions=[exp.Literal.string(x) for x in spec.labels])
            value = exp.Bracket(this=labels, expressions=[exp.Add(
                this=exp.Mod(this=hashed, expression=exp.Literal.number(len(spec.labels))),
                expression=exp.Literal.number(1))])
        else:
            value = exp.cast(key, "VARCHAR")
        nulls = [exp.Is(this=f, expression=exp.null()) for f in fields]
        self._replace(op.marker, exp.Case(ifs=[exp.If(this=exp.or_(*nulls), true=exp.null())],
                                          default=value) if nulls else value)
        self.answered_markers.add(op.marker)

    def _pending(self) -> frozenset[str]:
        """Markers not answered yet (still markers in the working tree)."""
        return frozenset(op.marker for op in self.plan.operators
                         if op.marker not in self.answered_markers)

    def _base_unknown(self, op: AiOperator) -> frozenset[str]:
        """What to leave out for the candidates `op` has whatever order the others run in:
        every call but those it requires (which always run before it)."""
        required = self.plan.required(op.marker)
        return self._pending() | frozenset(
            name for marker, name in self.lookups.items() if marker not in required)

    def _next(self) -> tuple[AiOperator, Estimate | None] | None:
        """The operator to run next and, when the optimizer chose it among others of its
        scope, its estimate."""
        ready = [op for op in self.plan.operators
                 if op.marker not in self.done and op.requires <= self.done]
        if not ready:
            return None
        if self.settings.order is Order.AS_WRITTEN:
            return ready[0], None
        first = min(ready, key=lambda op: op.tier)
        group = [op for op in ready if op.tier is Tier.PREDICATE and first.tier is Tier.PREDICATE
                 and op.call.scope == first.call.scope]
        if len(group) < 2:
            return first, None
        shapes = [self.shape(op, sample=self.measure) for op in group]
        steps = optimizer.order(shapes, self.executor.cost_model(), self.resident, self.applied)
        return self.plan.operator(steps[0].marker), steps[0].estimate

    # -- one operator -------------------------------------------------------------------

    def run_operator(self, op: AiOperator) -> OperatorWork:
        call = op.call
        asked = self.asked[op.marker]
        ordinal = len(self.done) + 1
        if not call.template.fields:  # a constant question: one prompt, its answer inlined
            run = self._begin(op, Stage.ANSWERING, 1, ordinal=ordinal)
            values, reused = self.executor.ask(
                call, [prompting.render(call.template, call.spec, (), (), ())], self.settings,
                asked.metrics, self.budget, run)
            self._end(op)
            self._replace(op.marker, _literal(values[0]))
            self.answered_markers.add(op.marker)
            self.done.add(op.marker)
            passed = int(values[0] is True)
            return OperatorWork(op, 1, passed, asked.metrics, reused=reused)
        pending = self._pending()
        goal = self._goal(op, pending)
        rows = self._candidate_rows(self._candidate_query(
            op, pending, ranked=goal.keys if goal else (), top=goal.rows if goal and goal.top
            else None)).rows
        anchor = self._anchor(op)
        ordered = rows
        if op.pairs and anchor is not None and not (goal and goal.keys):
            ordered = _by_anchor(rows, op.call.fields_of(anchor))
        stops_early = goal is not None and not goal.top
        self._begin(op, Stage.ANSWERING, len(rows), done=sum(r in asked.values for r in rows),
                    ordinal=ordinal, may_stop_early=stops_early)
        if goal is not None and stops_early:
            self._ask_until(op, ordered, anchor, goal.rows)
        else:
            todo = [row for row in ordered if row not in asked.values]
            leaders = 0
            if ordered is not rows:
                todo, leaders = _leaders_first(todo, op.call.fields_of(anchor),
                                               self._leaders(op))
            self._ask(op, todo, anchor, leaders or None)
        self._end(op)
        if goal is not None and goal.top and not goal.keys:
            self._keep_rows_asked(op, set(rows))
        self.answered(op, asked.values)
        self.done.add(op.marker)
        if asked.metrics.prompts and len(call.tables) == 1:
            self.resident |= frozenset(call.tables)
        elif asked.metrics.prompts and anchor is not None:
            self.resident |= frozenset({anchor})
        answered = [asked.values[r] for r in rows if r in asked.values]
        passed = sum(1 for v in answered if v is True)
        if call.spec.kind is AnswerKind.BOOLEAN:
            self.executor.statistics.observe(statistics_key(call), len(answered), passed)
        self._observe_speed(asked)
        return OperatorWork(op, len(rows), passed, asked.metrics, anchor, asked.reused,
                            asked.sampled, goal.rows if goal is not None and not goal.top
                            else None)

    def _begin(self, op: AiOperator, stage: Stage, total: int, *, done: int = 0,
               ordinal: int | None = None, may_stop_early: bool = False) -> OperatorRun | None:
        """Start reporting a stage of `op` (when the executor has a progress listener)."""
        listener = self.executor.progress
        if listener is None:
            return None
        run = OperatorRun(listener, op, len(self.plan.operators), stage, total, done=done,
                          ordinal=ordinal, may_stop_early=may_stop_early)
        self.runs[op.marker] = run
        return run

    def _end(self, op: AiOperator) -> None:
        run = self.runs.pop(op.marker, None)
        if run is not None:
            run.end(State.DONE)

    def _goal(self, op: AiOperator, pending: frozenset[str]) -> Goal | None:
        if op.place != op.marker:  # asked for another call's prompt values
            return None
        if op.tier is Tier.PREDICATE and op.call.spec.kind is AnswerKind.BOOLEAN:
            return optimizer.row_goal(self.tree, op.marker, pending)
        if op.tier is Tier.VALUE:
            return optimizer.value_rows(self.tree, op.marker, pending)
        return None

    def _ask(self, op: AiOperator, rows: list[Key], anchor: Source | None,
             first: int | None = None) -> None:
        """Ask `rows` (`first` of them in the engine call's first part)."""
        if not rows:
            return
        asked = self.asked[op.marker]
        values, reused = self.executor.ask(
            op.call, _Rendered(rendered(op.call, rows, anchor), len(rows)), self.settings,
            asked.metrics, self.budget, self.runs.get(op.marker), first)
        asked.values.update(zip(rows, values, strict=True))
        asked.reused += reused

    def _ask_until(self, op: AiOperator, rows: list[Key], anchor: Source | None,
                   goal: int) -> None:
        """Ask the candidates in their order, in growing batches (whole anchor groups for
        pairs), until `goal` of a prefix of them passed: the rows after it need no answer
        (they get NULL, which the conjunct drops), whether a LIMIT takes any rows or the
        first ones in ORDER BY order."""
        values = self.asked[op.marker].values
        batch = optimizer.first_batch(goal)
        anchor_fields = op.call.fields_of(anchor) if anchor is not None else ()
        anchor_of = _picker(anchor_fields)
        position = passed = 0  # rows[:position] are answered; `passed` of them TRUE
        while position < len(rows) and passed < goal:
            todo, end = [], position
            while end < len(rows) and (len(todo) < batch or (
                    anchor_fields and todo  # finish the anchor group: its prefix runs anyway
                    and anchor_of(rows[end]) == anchor_of(todo[-1]))):
                if rows[end] not in values:
                    todo.append(rows[end])
                end += 1
            self._ask(op, todo, anchor)
            passed += sum(1 for r in rows[position:end] if values.get(r) is True)
            position = end
            batch *= 2

    def _keep_rows_asked(self, op: AiOperator, asked: set[Key]) -> None:
        """Under a bare LIMIT only some rows' values were asked: keep the statement to rows
        whose values were asked (or are NULL, which needs no asking), of which there are
        enough. Later values of the same select list are asked for those rows only."""
        name = f"{LOOKUP}{uuid.uuid4().hex[:12]}"
        kept_ids = set(self._ids_of(list(asked)))

        def kept(keys: pa.Array) -> pa.Array:
            return pa.array([tuple(k) in kept_ids for k in keys.to_pylist()], pa.bool_())

        self._register(name, kept, "BOOLEAN")
        fields = [exp.cast(f.copy(), "VARCHAR") for f in self.fields[op.marker]]
        condition = exp.or_(*[exp.Is(this=f.copy(), expression=exp.null()) for f in fields],
                            exp.Anonymous(this=name, expressions=[self._key(op)]))
        scope = scopes.position(self._place(op)).scope
        assert isinstance(scope, exp.Select)
        scope.where(exp.Paren(this=condition), copy=False)

    def _place(self, op: AiOperator) -> exp.Column:
        return next(c for c in self.tree.find_all(exp.Column) if is_marker(c, (op.place,)))

    def _register(self, name: str, function: Any, sql_type: str) -> None:
        try:
            self.con.create_function(name, function,
                                     [duckdb.list_type(duckdb.sqltype("UBIGINT"))],
                                     duckdb.sqltype(sql_type), type="arrow",
                                     null_handling="special", side_effects=False)
        except duckdb.Error as exc:
            raise from_duckdb(exc) from None
        self.functions.append(name)

    def answered(self, op: AiOperator, values: dict[Key, Any]) -> None:
        """Register an operator's answers as a lookup function of the list of its prompt
        values' ids; its marker becomes a call of it."""
        name = f"{LOOKUP}{uuid.uuid4().hex[:12]}"
        self.lookups[op.marker] = name
        result_type = op.call.function.result_type
        width = len(self.fields[op.marker])
        by_id = dict(zip(self._ids_of(list(values)), values.values(), strict=True))

        def lookup(keys: pa.Array) -> pa.Array:
            ids = pc.list_flatten(keys).to_pylist()  # lists never NULL, each `width` long
            get, columns = by_id.get, [ids[i::width] for i in range(width)]
            return pa.array([get(key) for key in zip(*columns, strict=True)], result_type)

        self._register(name, lookup, op.call.function.sql_type)
        self.answered_markers.add(op.marker)
        self._replace(op.marker, exp.Anonymous(this=name, expressions=[self._key(op)]))

    def _id(self, text: exp.Expression) -> exp.Expression:
        """The id of a text value, as this execution makes ids (`ID_FUNCTIONS`)."""
        return exp.Anonymous(this=ID_FUNCTIONS[self._id_function], expressions=[text])

    def _key(self, op: AiOperator) -> exp.Array:
        """The list of the ids of `op`'s prompt values (NULL for a NULL value), as a lookup
        reads them."""
        ids = []
        for field in self.fields[op.marker]:
            text = exp.cast(field.copy(), "VARCHAR")
            ids.append(exp.Case(ifs=[exp.If(this=exp.Is(this=text.copy(), expression=exp.null()),
                                            true=exp.null())], default=self._id(text)))
        return exp.Array(expressions=ids)

    def _ids_of(self, keys: list[Key]) -> list[Ids]:
        """The ids of candidates' values (those not fetched as candidates asked of DuckDB)."""
        missing = list({t for key in keys for t in key if t is not None and t not in self._ids})
        if missing:
            table = self._register_rows(pa.table({"text": pa.array(missing, pa.string())}))
            found = self.executor.fetch(exp.select(
                "text", self._id(exp.column("text")).as_("id")).from_(table))
            self._ids.update(zip(found.column("text").to_pylist(),
                                 found.column("id").to_pylist(), strict=True))
        if not keys or not keys[0]:
            return [() for _ in keys]
        ids = self._ids  # column by column: thousands of pairs, no generator per key
        columns = [[None if t is None else ids[t] for t in column]
                   for column in zip(*keys, strict=True)]
        return list(zip(*columns, strict=True))

    # -- what the optimizer needs ---------------------------------------------------------

    def shape(self, op: AiOperator, sample: bool = False) -> Shape:
        """What is known of `op` now: candidates, layouts, selectivity (measured on a sample
        first when `sample` and nothing is known)."""
        if not self.measure and op.marker in self._shapes:
            return self._shapes[op.marker]
        shape = self._shape(op, sample)
        if not self.measure:
            self._shapes[op.marker] = shape
        return shape

    def _shape(self, op: AiOperator, sample: bool) -> Shape:
        call = op.call
        if not call.template.fields:
            return Shape(op.marker, (), 1, (Layout(None, 1, 0, 8),),
                         *self._selectivity(op))
        found = self._candidates(op, self._pending())
        total, rows = found.total, found.sample
        if sample and self._selectivity(op)[1] is Evidence.ASSUMED and total > SAMPLE_SIZE:
            self._sample(op, rows)
        anchor = self._anchor(op) if op.pairs else (
            call.tables[0] if len(call.tables) == 1 else None)
        layout = self._layout(op, found, anchor)
        selectivity, evidence = self._selectivity(op)
        return Shape(op.marker, call.tables, total, (layout,), selectivity, evidence,
                     call.spec.max_tokens, found.counted)

    def _candidates(self, op: AiOperator, unknown: frozenset[str]) -> _CandidateSet:
        """`op`'s candidates (leaving out the calls `unknown` names) as a subquery, how many
        there are and a sample of them, and whether they were counted: for EXPLAIN, once
        counting would take longer than `EXPLAIN_SECONDS`, the count is DuckDB's estimate and
        the sample the first rows found in the `SAMPLE_SECONDS` after that (none when none are
        found by then)."""
        select = self._candidate_query(op, unknown)
        query = select.subquery("c")
        if self.deadline is None:  # a run asks them all anyway: fetched once, then read here
            fetched = self._candidate_rows(select)
            query = exp.select("*").from_(self._register_rows(fetched.ids)).subquery("c")
            rows = fetched.keys(self._fetch(self._hash_ordered(op, query, ids=True).limit(
                TOKEN_SAMPLE)))
            return _CandidateSet(query, len(fetched.rows), rows, True, fetched.ids)
        try:
            total = int(self._fetch(exp.select(exp.Count(this=exp.Star())).from_(query.copy()))
                        .column(0)[0].as_py())
            rows = _rows(self._fetch(self._hash_ordered(op, query).limit(TOKEN_SAMPLE)))
            return _CandidateSet(query, total, rows, True)
        except _OutOfTime:
            pass
        first = select.copy()
        first.set("distinct", None)  # no DISTINCT: rows stream, the first ones come at once
        assert self.deadline is not None  # only EXPLAIN counts against a deadline
        try:
            rows = _rows(self.executor.fetch(first.limit(TOKEN_SAMPLE),
                                             self.deadline + SAMPLE_SECONDS))
        except _OutOfTime:
            rows = []
        # Of the rows the candidates are drawn from: DuckDB would guess a fixed share for each
        # IS NOT NULL, which the values of documents seldom are.
        rows_from = select.args["from_"].this.this
        return _CandidateSet(query, self.executor.estimated_rows(rows_from),
                             list(dict.fromkeys(rows)), False)

    def _candidate_rows(self, select: exp.Select) -> _Candidates:
        """A candidate query's rows, fetched once per execution: the anchor choice, the
        optimizer and the operator itself often ask the same query (tables do not change
        while a statement runs, and its volatile inputs were materialized first)."""
        sql = select.sql(dialect="duckdb")
        if sql not in self._fetched:
            self._fetched[sql] = self._identified(select)
        return self._fetched[sql]

    def _identified(self, select: exp.Select) -> _Candidates:
        """A candidate query's rows fetched as ids and distinct texts (`candidates.identified`),
        with the next of `ID_FUNCTIONS` for the whole execution once one gives two of its
        values one id."""
        while True:
            table = self.executor.fetch(candidates.identified(
                select, ID_FUNCTIONS[self._id_function]))
            part = table.column(candidates.PART)
            # As Python values: a session's DuckDB may export booleans as an extension type.
            if False not in table.column(candidates.EXACT).to_pylist():
                break
            if self._id_function + 1 == len(ID_FUNCTIONS):
                raise SqlError(SqlState.INTERNAL_ERROR, "distinct prompt values share every id "
                               f"of {', '.join(ID_FUNCTIONS)}")
            self._id_function += 1
            self._ids.clear()
            self._fetched.clear()  # ids of the function given up
        width = sum(1 for name in table.column_names if name.startswith(candidates.ARG))
        texts = []
        for i in range(width):
            values = table.filter(pc.equal(part, i + 1))
            ids = values.column(candidates.arg(i)).to_pylist()
            found = dict(zip(ids, values.column(candidates.TEXT).to_pylist(), strict=True))
            self._ids.update(zip(found.values(), ids, strict=True))
            texts.append(found)
        rows = table.filter(pc.equal(part, 0))
        if candidates.RANK in table.column_names:
            rows = rows.sort_by(candidates.RANK)
        ids = rows.select([candidates.arg(i) for i in range(width)])
        return _Candidates(_keys(texts, ids), ids, tuple(texts))

    def _fetch(self, query: exp.Expression) -> pa.Table:
        """A query's rows, within EXPLAIN's deadline (`_OutOfTime` past it)."""
        return self.executor.fetch(query, self.deadline)

    def _layout_texts(self, op: AiOperator, sample: list[Key], anchor: Source | None
                      ) -> list[str]:
        """What `_layout` counts the tokens of: the sample's prompts around `anchor` (prefixes,
        then suffixes) and, for pairs, the anchor's documents alone; the labels' last. Rendered
        from the sample with its long values marked (`TokenCounts`): each counted once."""
        call = op.call
        sample = self.tokens.marked(sample)
        rendered = prompts(call, sample, anchor if op.pairs else None)
        texts = [p.prefix for p in rendered] + [p.suffix for p in rendered]
        if op.pairs and anchor is not None:  # the anchor's document alone, as a filter reads it
            fields = call.fields_of(anchor)
            texts += sorted({prompting.row_prompt(call.template, fields, row).prefix
                             for row in sample})
        return texts + [" " + x for x in call.spec.labels]

    def _layout(self, op: AiOperator, found: _CandidateSet, anchor: Source | None,
                texts: list[str] | None = None) -> Layout:
        """`op`'s layout around `anchor`, from a sample of its candidates (`texts`: the
        sample's `_layout_texts`, when the caller has them)."""
        call = op.call
        sample, total = found.sample, found.total
        if not sample:
            return Layout(anchor, 0, 0, 0)
        texts = texts if texts is not None else self._layout_texts(op, sample, anchor)
        counts = self.tokens.count(texts)
        size, labels = len(sample), len(call.spec.labels)
        prefix_tokens = dict(zip(texts[:size], counts[:size], strict=True))  # distinct ones
        suffix_tokens = counts[size:2 * size]
        documents = counts[2 * size:len(counts) - labels]
        document_tokens = sum(documents or prefix_tokens.values()) / len(
            documents or prefix_tokens)
        if anchor is None:
            prefixes = total
        else:
            fields = [candidates.arg(i) for i in call.fields_of(anchor)]
            if found.ids is not None:
                prefixes = _distinct_rows(found.ids.select(fields))
            else:
                distinct = exp.select(exp.Count(this=exp.Distinct(expressions=[
                    exp.column(f) for f in fields]))).from_(found.query.copy())
                try:
                    prefixes = int(self._fetch(distinct).column(0)[0].as_py())
                except _OutOfTime:  # at most one per row of the anchor's FROM item
                    prefixes = min(total, self._source_rows(anchor, total))
        if call.spec.kind is AnswerKind.LABEL:  # each label runs as a suffix of its own
            label_tokens = sum(counts[len(counts) - labels:])
            suffix_tokens = [n + label_tokens for n in suffix_tokens]
        return Layout(anchor, prefixes, sum(prefix_tokens.values()) / len(prefix_tokens),
                      sum(suffix_tokens) / len(suffix_tokens), document_tokens)

    def _selectivity(self, op: AiOperator) -> tuple[float, Evidence]:
        if op.call.spec.kind is not AnswerKind.BOOLEAN or op.tier is not Tier.PREDICATE:
            return optimizer.ASSUMED_SELECTIVITY, Evidence.NONE
        asked = self.asked[op.marker]
        if asked.sampled:
            answers = list(asked.values.values())
            return (sum(1 for v in answers if v is True) + 0.5) / (len(answers) + 1), (
                Evidence.SAMPLE)
        known = self.executor.statistics.selectivity(statistics_key(op.call))
        if known is not None:
            return known.fraction, Evidence.CATALOG
        return optimizer.ASSUMED_SELECTIVITY, Evidence.ASSUMED

    def _sample(self, op: AiOperator, rows: list[Key]) -> None:
        """Ask a few candidates (pairs around few anchors) to measure the selectivity; the
        answers are kept, so the operator does not ask them again."""
        if self.executor.engine is None:
            return
        chosen = rows
        anchor = self._anchor(op) if op.pairs else None
        if anchor is not None:
            anchor_of = _picker(op.call.fields_of(anchor))
            anchors = list(dict.fromkeys(map(anchor_of, rows)))[:SAMPLE_ANCHORS]
            chosen = [r for r in rows if anchor_of(r) in anchors]
        chosen = chosen[:SAMPLE_SIZE]
        self._begin(op, Stage.SAMPLING, len(chosen))
        self._ask(op, chosen, anchor)
        self._end(op)
        self.asked[op.marker].sampled = len(chosen)

    def _anchor(self, op: AiOperator) -> Source | None:
        """The anchor of a pair operator: the side whose documents make the cheaper shared
        prefixes, judged on its candidates with only the calls it requires applied, so that
        the prompts — and the answers — do not depend on the order the others ran in."""
        if not op.pairs:
            return None
        if op.marker not in self._anchors:
            found = self._candidates(op, self._base_unknown(op))
            texts = {side: self._layout_texts(op, found.sample, side)
                     for side in op.call.tables}
            # Every side's texts in one engine call: one round trip, tokenized in parallel.
            self.tokens.count([t for side_texts in texts.values() for t in side_texts])
            layouts = tuple(self._layout(op, found, side, texts[side])
                            for side in op.call.tables)
            shape = Shape(op.marker, op.call.tables, found.total, layouts)
            anchor = optimizer.estimate(shape, self.executor.cost_model()).anchor
            self._anchors[op.marker] = next((lay for lay in layouts if lay.anchor == anchor),
                                            None)
        layout = self._anchors[op.marker]
        return None if layout is None else layout.anchor

    def _leaders(self, op: AiOperator) -> int:
        """How many anchor groups of a pair operator lead with one pair each (`_leaders_first`):
        as many as the engine's first chunk computes the documents of."""
        layout = self._anchors.get(op.marker)
        chunk = self.executor.engine.info.chunk_tokens if self.executor.engine else 0
        if layout is None or not chunk or layout.prefix_tokens <= 0:
            return 1
        return max(1, int(chunk // layout.prefix_tokens))

    def _source_rows(self, source: Source, default: int) -> int:
        """DuckDB's estimate of the rows of the table or view a FROM item names (`default`
        for a derived table, or when it cannot say)."""
        if source.relation is None:
            return default
        try:
            return self.executor.estimated_rows(exp.select("*").from_(exp.to_table(
                source.relation)))
        except SqlError:
            return default

    def _hash_ordered(self, op: AiOperator, query: exp.Expression, ids: bool = False
                      ) -> exp.Select:
        """The candidates (their values, or with `ids` their ids) in a fixed pseudo-random
        order, the same for both (samples that do not depend on how DuckDB produces them)."""
        columns = [exp.column(candidates.arg(i)) for i in range(len(op.call.template.fields))]
        return exp.select("*").from_(query.copy()).order_by(exp.Anonymous(
            this="hash", expressions=columns if ids else [self._id(c) for c in columns]))

    def _observe_speed(self, asked: _Asked) -> None:
        """Tell the statistics how long the engine took for work the cost model priced."""
        metrics = asked.metrics
        if metrics.prompts and metrics.seconds > 0:
            model = dataclasses.replace(self.executor.cost_model(), speed_factor=1.0)
            self.executor.statistics.observe_speed(
                model.seconds(Work.of(metrics.prompts, metrics.input_tokens,
                                      metrics.fresh_tokens)), metrics.seconds)

    # -- queries --------------------------------------------------------------------------

    def _candidate_query(self, op: AiOperator, unknown: frozenset[str], *,
                         ranked: Sequence[exp.Ordered] = (), top: int | None = None
                         ) -> exp.Select:
        return candidates.candidate_query(self.tree, op.place, self.fields[op.marker],
                                          unknown, self._is_correlated, ranked=ranked, top=top)

    def _is_correlated(self, scope: scopes.Scope) -> bool:
        """Whether a subquery reads columns of the scopes around it: DuckDB cannot bind it
        alone."""
        key = scope.meta.get(SCOPE_KEY, id(scope))
        if key not in self._correlated:
            probe = exp.select("*").from_(self._bindable(scope).subquery("p")).limit(0)
            ctes = visible_ctes(scope)
            if ctes:
                probe.set("with_", exp.With(expressions=[self._bindable(c) for c in ctes]))
            try:
                self.con.sql(probe.sql(dialect="duckdb"))
                self._correlated[key] = False
            except duckdb.Error:
                self._correlated[key] = True
        return self._correlated[key]

    def _bindable(self, node: exp.Expression) -> exp.Expression:
        """A copy DuckDB can bind: each pending marker becomes the list of its prompt values
        (so the columns they read are bound too)."""
        copy = node.copy()
        for column in list(copy.find_all(exp.Column)):
            if is_marker(column):
                column.replace(exp.Array(expressions=[
                    exp.cast(f.copy(), "VARCHAR") for f in self.fields[column.name]]))
        return copy

    def _materialize_volatile(self) -> None:
        """Evaluate once each FROM item whose rows change between evaluations (TABLESAMPLE, a
        derived table using random(), ...) once it holds no pending call."""
        pending = self._pending()
        for item in list(self.tree.find_all(exp.Table, exp.Subquery)):
            holder = item.parent
            if not (isinstance(holder, exp.From | exp.Join) and item.arg_key == "this"):
                continue
            volatile = item.args.get("sample") is not None if isinstance(item, exp.Table) else (
                scopes.is_volatile(item))
            if not volatile or any(is_marker(c, pending) for c in item.find_all(exp.Column)):
                continue
            scope = scopes.enclosing_scope(item)
            probe = exp.select("*").from_(item.copy())
            ctes = visible_ctes(scope) if scope is not None else []
            if ctes:
                probe.set("with_", exp.With(expressions=ctes))
            name = self._register_rows(self.executor.fetch(probe))
            alias = item.alias_or_name
            item.replace(exp.Table(this=exp.to_identifier(name),
                                   alias=exp.TableAlias(this=exp.to_identifier(alias))))

    def _register_rows(self, rows: pa.Table) -> str:
        """Name `rows` in DuckDB for this execution (unregistered when it closes)."""
        name = f"{MATERIALIZED}{uuid.uuid4().hex[:12]}"
        self.con.register(name, rows)
        self.tables.append(name)
        return name

    def final_sql(self) -> str:
        return self.tree.sql(dialect="duckdb")

    def _replace(self, marker: str, node: exp.Expression) -> None:
        """Replace a marker in the tree and in the prompt values of calls nested around it."""
        for column in list(self.tree.find_all(exp.Column)):
            if is_marker(column, (marker,)):
                column.replace(node.copy())
        for values in self.fields.values():
            for index, value in enumerate(values):
                if is_marker(value, (marker,)):
                    values[index] = node.copy()
                    continue
                for column in list(value.find_all(exp.Column)):
                    if is_marker(column, (marker,)):
                        column.replace(node.copy())

    def close(self) -> None:
        for run in self.runs.values():  # the statement ended before these stages did
            run.end(State.STOPPED)
        self.runs.clear()
        for name in self.functions:
            with contextlib.suppress(duckdb.Error):  # a failed transaction may have dropped it
                self.con.remove_function(name)
        for name in self.tables:
            self.con.unregister(name)


def _cardinality(node: dict[str, Any]) -> int:
    """The rows a node of DuckDB's JSON plan is estimated to give: its own estimate, else that
    of its inputs (multiplied for a cross product, which DuckDB leaves unestimated)."""
    estimate = re.sub(r"\D", "", str(node.get("extra_info", {}).get("Estimated Cardinality", "")))
    if estimate:
        return int(estimate)
    inputs = [_cardinality(child) for child in node.get("children", [])]
    if not inputs:
        return 0
    return math.prod(inputs) if node.get("name") == "CROSS_PRODUCT" else max(inputs)


class _OutOfTime(Exception):
    """A query was stopped at its deadline (EXPLAIN estimates instead)."""


class _Alarm:
    """Interrupts a DuckDB connection after `seconds` unless stopped first."""

    def __init__(self, con: duckdb.DuckDBPyConnection, seconds: float) -> None:
        self._con = con
        self._lock = threading.Lock()
        self._stopped = self._rang = False
        self._timer = threading.Timer(seconds, self._ring)
        self._timer.daemon = True
        self._timer.start()

    def _ring(self) -> None:
        with self._lock:
            if not self._stopped:
                self._rang = True
                self._con.interrupt()

    def stop(self) -> bool:
        """Disarm it (an interrupt that comes after is harmless: DuckDB forgets it when the
        next query starts); whether it rang."""
        with self._lock:
            self._stopped = True
        self._timer.cancel()
        return self._rang


def statistics_key(call: AiCall) -> tuple[str, ...]:
    """What a question's selectivity is remembered under: the question and the columns it
    reads (by table name, not alias, so later statements find it)."""
    documents = []
    for value, source in zip(call.template.fields, call.sources, strict=True):
        if source is not None:
            name = source.relation or source.alias
            column = value.copy()
            for c in column.find_all(exp.Column):
                c.set("table", None)
            documents.append(f"{name}:{column.sql()}")
    return (call.spec.kind.value, call.question(), *sorted(documents))


def prompts(call: AiCall, rows: Sequence[Key], anchor: Source | None) -> list[Prompt]:
    """The engine's prompts for candidate rows (`rendered`), as a list."""
    return list(rendered(call, rows, anchor))


def rendered(call: AiCall, rows: Iterable[Key], anchor: Source | None) -> Iterator[Prompt]:
    """The engine's prompts for candidate rows, one per row as they are read: the pair layout
    around `anchor` for two FROM items, else the layout of the call's answer kind over all its
    documents."""
    template, spec = call.template, call.spec
    if anchor is None:
        anchor_fields = tuple(i for i, s in enumerate(call.sources) if s is not None)
        for row in rows:
            yield prompting.render(template, spec, anchor_fields, (), row)
        return
    partner = next(t for t in call.tables if t != anchor)
    anchor_fields, partner_fields = call.fields_of(anchor), call.fields_of(partner)
    # A pair's prefix reads every value but the partner's: the pairs of one anchor share one
    # prefix string, which the answer keys, the request and the tokenizer then hash once. The
    # TRUE/FALSE pair layout (`prompting.pair_prompt`) puts the partner's document alone in the
    # suffix, so a pair is rendered only when its anchor or its partner is new.
    partner_only = spec.kind in (AnswerKind.BOOLEAN, AnswerKind.SCORE)
    prefix_key = _picker([i for i in range(len(template.fields)) if i not in partner_fields])
    partner_key = _picker(partner_fields)
    prefixes: dict[Hashable, str] = {}
    suffixes: dict[Hashable, str] = {}
    for row in rows:
        key = prefix_key(row)
        prefix = prefixes.get(key)
        suffix = suffixes.get(partner_key(row)) if partner_only else None
        if prefix is None or suffix is None:
            values = row
            if prefix is not None and partner_only:  # only the partner's suffix is new: no
                values = tuple("" if i in anchor_fields else v  # copy of a long anchor document
                               for i, v in enumerate(row))
            prompt = prompting.render(template, spec, anchor_fields, partner_fields, values)
            prefix = prefixes.setdefault(key, prompt.prefix)
            suffix = prompt.suffix
            if partner_only:
                suffix = suffixes.setdefault(partner_key(row), suffix)
        yield Prompt(prefix, suffix)


def _both(first: ProgressCallback | None, second: ProgressCallback | None
          ) -> ProgressCallback | None:
    """One engine progress callback calling `first` then `second` (either may be None)."""
    if first is None or second is None:
        return first or second

    def progress(metrics: Metrics) -> None:
        first(metrics)
        second(metrics)

    return progress


def _prompt_too_long(exc: PromptTooLong, prompt: Prompt) -> SqlError:
    text = (prompt.prefix + prompt.suffix).replace("\n", " ")
    shown = text if len(text) <= 80 else f"{text[:60]} ... {text[-16:]}"
    return SqlError(SqlState.PROGRAM_LIMIT_EXCEEDED,
                    f"an AI prompt has {exc.tokens} tokens, more than the model's context of "
                    f"{exc.context} tokens", detail=f"The prompt: {shown}",
                    hint="Ask about shorter documents, e.g. left(body, 4000) in place of body.")


def _distinct_rows(table: pa.Table) -> int:
    """How many distinct rows without NULLs `table` has: of one column by `count_distinct`, for
    Acero's `group_by` costs 20-35 ms to set up on its first call in a process (a statement's
    time before the engine starts, with the device idle)."""
    if table.num_columns == 1:
        return int(pc.count_distinct(table.column(0), mode="only_valid").as_py())
    return table.drop_null().group_by(table.column_names).aggregate([]).num_rows


def _rows(table: pa.Table) -> list[Key]:
    names = [n for n in table.column_names if n.startswith(candidates.ARG)]
    return list(zip(*[_texts(table.column(n)) for n in names], strict=True))


def _keys(texts: Sequence[dict[int, str]], ids: pa.Table) -> list[Key]:
    """Rows of ids (UBIGINT columns named as the values) as text keys."""
    columns = [[by_id[v] for v in ids.column(candidates.arg(i)).to_pylist()]
               for i, by_id in enumerate(texts)]
    return list(zip(*columns, strict=True))


def _texts(values: pa.Array | pa.ChunkedArray) -> list[str | None]:
    """Text values as Python strings, equal values one shared object: a join's anchor document
    repeats in thousands of candidates, and is then decoded once and hashed once."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    texts: list[str | None] = []
    for chunk in chunks:
        encoded = pc.dictionary_encode(chunk)
        distinct = encoded.dictionary.to_pylist()
        texts += [None if i is None else distinct[i] for i in encoded.indices.to_pylist()]
    return texts


def _picker(fields: Sequence[int]) -> Callable[[Key], Hashable]:
    """A row's values at `fields`, as a key to compare with keys of the same picker only (one
    field's is the value itself): per-row work of thousands of pairs, in C."""
    return operator.itemgetter(*fields) if fields else lambda row: ()


def _leaders_first(rows: list[Key], fields: Sequence[int], count: int
                   ) -> tuple[list[Key], int]:
    """`rows` grouped by anchor (`_by_anchor`), the first row of each of the first `count`
    groups moved to the front, and how many were (0 for fewer than two groups: `rows` as they
    are). The engine starts on a request's first prompts at once: led by one pair of every
    anchor, its first chunk computes those anchors' documents — a full chunk of work when they
    are long, during which the host prepares the pairs' rows — rather than one document and a
    few pairs (then the device waits for the host). Their KV stays pinned until their groups are
    answered: about one chunk's worth."""
    key = _picker(fields)
    leaders: dict[Hashable, int] = {}
    for i, row in enumerate(rows):
        if len(leaders) == count:
            break
        leaders.setdefault(key(row), i)
    if len(leaders) < 2:
        return rows, 0
    first = set(leaders.values())
    return [rows[i] for i in leaders.values()] + [row for i, row in enumerate(rows)
                                                   if i not in first], len(first)


def _by_anchor(rows: list[Key], fields: Sequence[int]) -> list[Key]:
    """Rows grouped by their anchor document, groups in order of first appearance."""
    groups: dict[Hashable, list[Key]] = {}
    for key, row in zip(map(_picker(fields), rows), rows, strict=True):
        group = groups.get(key)
        if group is None:
            groups[key] = [row]
        else:
            group.append(row)
    return [row for group in groups.values() for row in group]


def _literal(value: Any) -> exp.Expression:
    if value is None:
        return exp.null()
    if isinstance(value, bool):
        return exp.true() if value else exp.false()
    if isinstance(value, float):
        return exp.cast(exp.Literal.number(repr(value)), "DOUBLE")
    return exp.Literal.string(str(value))


def bind(tree: exp.Expression, params: Sequence[Any]) -> exp.Expression:
    """Inline parameter values as literals (AI statements run as several DuckDB queries)."""
    for node in list(tree.find_all(exp.Parameter, exp.Placeholder)):
        if not isinstance(node, exp.Parameter):
            raise SqlError(SqlState.SYNTAX_ERROR, "use $1, $2, ... for parameters in AI statements")
        literal = _parameter(params[int(node.name) - 1])
        if node is tree:
            return literal
        node.replace(literal)
    return tree


def _parameter(value: Any) -> exp.Expression:
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
