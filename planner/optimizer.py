"""Choosing how an AI plan runs: which operator next, around which anchor, with which goal.

Contract: nothing here runs a query or the model; the executor measures and this decides.

- `Shape` is what is known of a pending operator at a moment: its candidate count (counted, or
  for EXPLAIN over too many rows DuckDB's estimate: `counted`), the layouts it could be asked in
  (one per possible anchor: distinct prefixes, mean prefix and suffix tokens) and its
  selectivity with where that came from (`Evidence`: assumed one half, remembered in the
  catalog, or measured on a sample of this execution).
- `order(shapes, model, resident)` returns the cheapest sequence of a scope's predicate
  operators (conjuncts filtering the same rows) with an `Estimate` for each: a dynamic program
  over the sets of operators already run and the tables whose document KV is resident, pricing
  each step with the roofline `CostModel` on the candidates left by those before it (a filter
  keeps `selectivity` of its table's documents, a join the documents that found a partner).
  For independent filters this is the classic order by cost / (1 − selectivity). Past
  `EXHAUSTIVE_LIMIT` operators it is greedy by that rank.
- `estimate(shape, model, resident, applied)` prices one operator, choosing its anchor: for a
  pair, the side whose distinct documents form the cheaper shared prefixes.
- `row_goal(tree, marker, pending)`: under a LIMIT, how many candidates of a conjunct of the
  statement's top scope must pass before the rest need not be asked, and in which order to ask
  them (`Goal`); `value_rows(tree, marker, pending)`: for a value in the top scope's select list
  under ORDER BY ... LIMIT, the rows that can reach the result (`Goal` with `top`).
- `Order` is the session's `heron.order`: COST (the above) or AS_WRITTEN (operators in the
  order they are written, each after what it requires; no sampling).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlglot import exp

from heron.planner import scopes
from heron.planner.cost import CostModel, Work
from heron.planner.logical import Source, is_marker

EXHAUSTIVE_LIMIT = 10  # predicate operators per scope ordered by the dynamic program
ASSUMED_SELECTIVITY = 0.5
MIN_LIMIT_BATCH = 32  # the first batch asked under a LIMIT (later batches double)


class Order(enum.Enum):
    COST = "cost"
    AS_WRITTEN = "as_written"


class Evidence(enum.Enum):
    """Where a selectivity comes from."""

    ASSUMED = "assumed"
    CATALOG = "catalog"  # observed by earlier statements
    SAMPLE = "sample"  # measured on a sample in this execution
    NONE = "none"  # the operator is no TRUE/FALSE conjunct


@dataclass(frozen=True, slots=True)
class Layout:
    """The prompts of one operator asked around one anchor."""

    anchor: Source | None  # the FROM item whose documents form the shared prefixes
    prefixes: int  # distinct prefixes among the candidates
    prefix_tokens: float  # mean tokens of a prefix
    suffix_tokens: float  # mean tokens of a suffix (question, or partner document)
    # Mean tokens of the prefix's leading document part, the part every layout over the same
    # document shares (the whole prefix of a filter; a join anchor's document before the
    # question).
    document_tokens: float = 0


@dataclass(frozen=True, slots=True)
class Shape:
    marker: str
    tables: tuple[Source, ...]
    candidates: int
    layouts: tuple[Layout, ...]
    selectivity: float = ASSUMED_SELECTIVITY
    evidence: Evidence = Evidence.NONE
    decode_tokens: int = 0  # a completion's token budget per prompt
    counted: bool = True  # False: `candidates` is DuckDB's estimate (EXPLAIN over many rows)

    def documents(self, table: Source) -> int:
        return next((lay.prefixes for lay in self.layouts if lay.anchor == table),
                    self.candidates)


@dataclass(frozen=True, slots=True)
class Estimate:
    """What one operator is expected to cost when it runs."""

    candidates: float
    work: Work
    seconds: float
    selectivity: float | None
    evidence: Evidence
    anchor: Source | None
    goal: Goal | None = None
    counted: bool = True  # False: from estimated candidates, not counted ones


def estimate(shape: Shape, model: CostModel, resident: frozenset[Source] = frozenset(),
             applied: Sequence[Shape] = (), goal: Goal | None = None) -> Estimate:
    """The cost of `shape` after the operators `applied` filtered its rows, around its cheapest
    anchor; `resident`: the tables whose documents' KV the engine holds already; under a `goal`
    only the candidates asked before it is met are priced (whole anchor groups for pairs)."""
    factor = _remaining_share(shape, applied)
    candidates = shape.candidates * factor
    asked = candidates
    if goal is not None:
        asked = min(candidates, goal.rows) if goal.top else expected_asked(
            candidates, shape.selectivity, goal.rows)
    best = None
    for layout in shape.layouts:
        prefixes = min(layout.prefixes * _side_share(shape, layout.anchor, applied), candidates)
        # A goal stops early: fewer documents; for pairs, fewer whole anchor groups.
        prefixes = min(prefixes, asked) if len(shape.tables) < 2 else (
            prefixes * asked / candidates if candidates else 0)
        work = model.work(asked, prefixes, layout.prefix_tokens, layout.suffix_tokens,
                          layout.document_tokens if layout.anchor in resident else 0)
        if shape.decode_tokens:
            work = replace(work, decode_tokens=asked * shape.decode_tokens)
        seconds = model.seconds(work)
        if best is None or seconds < best.seconds:
            selectivity = None if shape.evidence is Evidence.NONE else shape.selectivity
            best = Estimate(candidates, work, seconds, selectivity, shape.evidence,
                            layout.anchor if len(shape.tables) == 2 else None, goal,
                            shape.counted)
    assert best is not None
    return best


def _remaining_share(shape: Shape, applied: Sequence[Shape]) -> float:
    """The share of `shape`'s candidates left once `applied` ran (independence assumed)."""
    share = 1.0
    mine = set(shape.tables)
    for other in applied:
        theirs = set(other.tables)
        if not mine & theirs or other.evidence is Evidence.NONE:
            continue
        if theirs == mine or len(theirs) == 1:
            share *= other.selectivity
        else:  # a join with a table of mine: my documents that found a partner
            for table in mine & theirs:
                share *= _matched_share(other, table)
    return share


def _side_share(shape: Shape, table: Source | None, applied: Sequence[Shape]) -> float:
    """The share of one side's documents left once `applied` ran."""
    if table is None:
        return _remaining_share(shape, applied)
    share = 1.0
    for other in applied:
        if table not in other.tables or other.evidence is Evidence.NONE:
            continue
        share *= other.selectivity if len(other.tables) == 1 else _matched_share(other, table)
    return share


def _matched_share(join: Shape, table: Source) -> float:
    """The share of `table`'s documents with at least one partner passing `join`."""
    documents = max(join.documents(table), 1)
    partners = join.candidates / documents
    return 1 - (1 - join.selectivity) ** partners


@dataclass(frozen=True, slots=True)
class Step:
    marker: str
    estimate: Estimate


def order(shapes: Sequence[Shape], model: CostModel,
          resident: frozenset[Source] = frozenset(), applied: Sequence[Shape] = ()
          ) -> list[Step]:
    """The cheapest order of a scope's predicate operators, each with its estimate;
    `applied`: operators that ran before (their selectivities reduce these candidates)."""
    if len(shapes) > EXHAUSTIVE_LIMIT:
        return _greedy(shapes, model, resident, applied)
    # best[(done mask, resident tables)] = (seconds so far, steps)
    best: dict[tuple[int, frozenset[Source]], tuple[float, list[Step]]] = {
        (0, resident): (0.0, [])}
    for _ in shapes:
        following: dict[tuple[int, frozenset[Source]], tuple[float, list[Step]]] = {}
        for (mask, kv), (seconds, steps) in best.items():
            before = [*applied, *(s for i, s in enumerate(shapes) if mask >> i & 1)]
            for i, shape in enumerate(shapes):
                if mask >> i & 1:
                    continue
                cost = estimate(shape, model, kv, before)
                state = (mask | 1 << i, kv | left_resident(shape, cost))
                total = seconds + cost.seconds
                if state not in following or total < following[state][0]:
                    following[state] = (total, [*steps, Step(shape.marker, cost)])
        best = following
    return min(best.values(), key=lambda entry: entry[0])[1]


def _greedy(shapes: Sequence[Shape], model: CostModel, resident: frozenset[Source],
            applied: Sequence[Shape]) -> list[Step]:
    steps: list[Step] = []
    left = list(shapes)
    applied = list(applied)
    while left:
        costs = [(estimate(s, model, resident, applied), s) for s in left]
        cost, shape = min(costs, key=lambda c: c[0].seconds / max(1e-9, 1 - (
            c[0].selectivity if c[0].selectivity is not None else 0)))
        steps.append(Step(shape.marker, cost))
        resident |= left_resident(shape, cost)
        applied.append(shape)
        left.remove(shape)
    return steps


def left_resident(shape: Shape, cost: Estimate) -> frozenset[Source]:
    """Tables whose documents' KV an operator leaves in the engine's cache: a one-table
    operator's, a pair's anchor's."""
    if not cost.work.prompts:
        return frozenset()
    if len(shape.tables) == 1:
        return frozenset(shape.tables)
    return frozenset({cost.anchor}) if cost.anchor is not None else frozenset()


# -- goals ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Goal:
    """How many candidates must pass (`rows`), asked in the order of `keys` (none: any order);
    for a value (`top`), only candidates of rows ranked within `rows` by `keys` (no keys: of
    any `rows` rows)."""

    rows: int
    keys: tuple[exp.Ordered, ...] = ()
    top: bool = False


def row_goal(tree: exp.Expression, marker: str, pending: frozenset[str]) -> Goal | None:
    """LIMIT + OFFSET when they bound the engine's work for a TRUE/FALSE conjunct: the call is a
    conjunct of the top scope's WHERE (or of an inner join's ON), it is the last call left that
    can remove or reorder rows, every other conjunct is pushed below it, and nothing combines
    rows (GROUP BY, DISTINCT, aggregates, windows). Each passing candidate then yields a result
    row; with ORDER BY, candidates are asked in that order."""
    scope, bound = _limited_top(tree, marker)
    if scope is None or bound is None:
        return None
    place = _place(tree, marker)
    at = scopes.position(place)
    if at.conjunct is not place or at.clause not in (scopes.Clause.WHERE, scopes.Clause.ON) or (
            at.clause is scopes.Clause.ON and at.outer_join):
        return None
    others = pending - {marker}
    if not _settled_except_select(scope, others):
        return None
    if any(scopes.is_volatile(c) for c in _all_conjuncts(scope)):
        return None
    keys = scopes.order_keys(scope)
    if any(_holds(k, others | {marker}) for k in keys):
        return None
    return Goal(bound, tuple(keys))


def value_rows(tree: exp.Expression, marker: str, pending: frozenset[str]) -> Goal | None:
    """For a value in the top scope's select list or ORDER BY under a LIMIT, with everything
    deciding the rows answered: only the rows ranked within LIMIT + OFFSET by the ORDER BY keys
    before the first one holding a pending call (ties included) can reach the result; without
    ORDER BY, any LIMIT + OFFSET rows will do (the statement is then kept to rows whose values
    were asked). None when the first key holds a call (every row must be asked)."""
    scope, bound = _limited_top(tree, marker)
    if scope is None or bound is None:
        return None
    at = scopes.position(_place(tree, marker))
    if at.scope is not scope or at.clause not in (scopes.Clause.SELECT, scopes.Clause.ORDER):
        return None
    if not _settled_except_select(scope, pending - {marker}) or any(
            scopes.is_volatile(c) for c in _all_conjuncts(scope)):
        return None
    order = scopes.order_keys(scope)
    if not order:
        return Goal(bound, top=True)
    keys = []
    for key in order:
        if _holds(key, pending):
            break
        keys.append(key)
    return Goal(bound, tuple(keys), top=True) if keys else None


def first_batch(goal_rows: int) -> int:
    """How many candidates to ask first under a goal; each later batch doubles."""
    return max(2 * goal_rows, MIN_LIMIT_BATCH)


def expected_asked(candidates: float, selectivity: float, goal_rows: int) -> float:
    """How many candidates the doubling batches ask, on average, before `goal_rows` pass."""
    asked, batch = 0.0, float(first_batch(goal_rows))
    while asked < candidates and asked * selectivity < goal_rows:
        asked += batch
        batch *= 2
    return min(asked, candidates)


def _limited_top(tree: exp.Expression, marker: str) -> tuple[exp.Select | None, int | None]:
    """The SELECT holding `marker` when a literal LIMIT (+ OFFSET) bounds the rows it returns to
    the statement, with nothing combining rows: the statement's top SELECT, or a derived table
    (a view) that a top SELECT only passes through (`SELECT ... FROM (...) s LIMIT n`: no other
    FROM item, no WHERE, ORDER BY or grouping there); else (None, None)."""
    query = tree.expression if isinstance(tree, exp.Create | exp.Insert) else tree
    if not isinstance(query, exp.Select):
        return None, None
    bound = _bound(query)
    target = scopes.enclosing_scope(_place(tree, marker))
    while bound is not None and _keeps_rows(query) and query is not target:
        inner = _passed_through(query)
        if inner is None:
            return None, None
        own = _bound(inner)
        query, bound = inner, min(bound, own) if own is not None else bound
        if inner.args.get("limit") is not None and own is None:
            return None, None  # a LIMIT that is no literal
    if bound is None or not _keeps_rows(query) or query is not target:
        return None, None
    return query, bound


def _bound(query: exp.Select) -> int | None:
    """LIMIT + OFFSET when both are literal integers; None without a LIMIT."""
    limit, offset = query.args.get("limit"), query.args.get("offset")
    if limit is None:
        return None
    bounds = [limit.expression] + ([offset.expression] if offset is not None else [])
    if not all(isinstance(b, exp.Literal) and b.is_int for b in bounds):
        return None
    return sum(int(b.name) for b in bounds)


def _keeps_rows(query: exp.Select) -> bool:
    """Whether each row the scope passes on is one of its FROM rows (no grouping, DISTINCT,
    QUALIFY or window functions)."""
    return not scopes.is_grouped(query) and not any(
        query.args.get(k) for k in ("distinct", "qualify")) and not any(
        scopes.enclosing_scope(w) is query for w in query.find_all(exp.Window))


def _passed_through(query: exp.Select) -> exp.Select | None:
    """The derived table a SELECT only passes rows of, unordered and unfiltered."""
    from_ = query.args.get("from_")
    if from_ is None or query.args.get("joins") or any(
            query.args.get(k) for k in ("where", "order")):
        return None
    item = from_.this
    if not isinstance(item, exp.Subquery) or not isinstance(item.this, exp.Select):
        return None
    inner = item.this
    return None if inner.args.get("order") else inner


def _place(tree: exp.Expression, marker: str) -> exp.Column:
    return next(c for c in tree.find_all(exp.Column) if is_marker(c, (marker,)))


def _holds(node: exp.Expression, markers: frozenset[str]) -> bool:
    return any(is_marker(c, markers) for c in node.find_all(exp.Column))


def _all_conjuncts(scope: exp.Select) -> list[exp.Expression]:
    found = []
    where = scope.args.get("where")
    if where is not None:
        found += scopes.conjuncts(where.this)
    for join in scope.args.get("joins") or []:
        if join.args.get("on") is not None:
            found += scopes.conjuncts(join.args["on"])
    return found


def _settled_except_select(scope: exp.Select, pending: frozenset[str]) -> bool:
    """Whether the only pending calls left in the scope (and the FROM items it reads) stand in
    its select list: everything that decides which rows it returns is answered."""
    if not pending:
        return True
    for key, value in scope.args.items():
        if key == "expressions" or value is None:
            continue
        parts = value if isinstance(value, list) else [value]
        if any(isinstance(p, exp.Expression) and _holds(p, pending) for p in parts):
            return False
    return True
