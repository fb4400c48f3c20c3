"""Which prompt values an AI call is asked about: its candidate query.

Contract: `candidate_query(tree, place, values, unknown, correlated)` builds, from an
execution's working tree (answered calls already replaced by lookups, pending ones still
markers), a DuckDB query whose rows are the distinct, NULL-free prompt values (`__heron_arg0`,
... cast to VARCHAR) of a call standing where the marker `place` stands (its own marker, or that
of the call whose prompt values hold it) — a superset of the values the call is evaluated on
when the statement runs with every pending call answered, never a subset. `unknown` names what
must be treated as not answered: the pending calls' markers, and lookup functions whose answers
should not narrow the candidates. For each place the call stands:

- the rows of its scope: the FROM items (each answered join condition kept; an unknown one
  dropped, which only adds rows; an outer join holding the call becomes an inner join, since
  only matching pairs ask it), with the scope's WHERE conjuncts pushed down where that is sound:
  conjuncts holding unknown calls or volatile functions are left out, and for a call in an
  outer join's ON only conjuncts over the join's preserved side (and none when a RIGHT or FULL
  join follows) — the null-extended rows an outer join adds must not be filtered away;
- per-group values (aggregates, HAVING, ...) see the scope's GROUP BY and its answered HAVING;
- a scope that is a correlated subquery (`correlated(scope)`) or a LATERAL item is evaluated
  for the rows of the scope around it: its rows become a LATERAL join of that scope's rows,
  built by the same rules, outward until a scope stands on its own (the statement, a CTE body,
  a derived table); its CTEs (those visible there) are attached.

`ranked` (an ORDER BY of the call's own scope, the statement's top) orders the candidates by
their first row in that order (`__heron_rank`), for asking them in order under a LIMIT; `top`
keeps only the candidates of rows ranked within the first `top` by those keys (ties included),
or, with no keys, of any `top` rows.

`identified(query, function)` is the same candidates as ids, for fetching: each value replaced by
`function(value)` (a 64-bit hash), each distinct value sent once beside its id, and whether it is
the only value with that id among the candidates (see `identified`).
Nothing here runs a query.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp

from heron.planner import scopes
from heron.planner.logical import from_items, is_marker, visible_ctes
from heron.planner.scopes import Link, Position, Scope

ARG = "__heron_arg"
RANK = "__heron_rank"
PART = "__heron_part"
TEXT = "__heron_text"
EXACT = "__heron_exact"
_LEVEL = "__heron_level"
_CANDIDATES = "__heron_c"
_ROWS = "__heron_rows"


def arg(index: int) -> str:
    return f"{ARG}{index}"


def candidate_query(tree: exp.Expression, place: str, values: Sequence[exp.Expression],
                    unknown: frozenset[str], correlated: Callable[[Scope], bool], *,
                    ranked: Sequence[exp.Ordered] = (), top: int | None = None) -> exp.Select:
    places = [c for c in tree.find_all(exp.Column) if is_marker(c, (place,))]
    builder = _Builder(unknown, correlated)
    parts = [builder.rows(place, [v.copy() for v in values], ranked, top) for place in places]
    body: exp.Query = parts[0]
    for part in parts[1:]:
        body = exp.union(body, part, distinct=False)
    names = [arg(i) for i in range(len(values))]
    columns = [exp.column(n) for n in names]
    query = exp.select(*columns).from_(body.subquery(_CANDIDATES))
    not_null = [exp.Not(this=exp.Is(this=c.copy(), expression=exp.null())) for c in columns]
    if not_null:
        query = query.where(exp.and_(*not_null))
    if ranked and top is None:
        return query.select(exp.Min(this=exp.column(RANK)).as_(RANK)).group_by(
            *[c.copy() for c in columns]).order_by(exp.column(RANK))
    return query.distinct()


def identified(query: exp.Select, function: str) -> exp.Select:
    """The candidates of `query` (a `candidate_query`) as ids, in one query whose rows are of
    two kinds, told apart by `PART`:

    - 0: a candidate, each value `arg(i)` replaced by its id `function(value)` (UBIGINT), and
      its `RANK` when `query` is ranked (in no particular order: sort by `RANK`);
    - i + 1: a distinct id of value i (in `arg(i)`), a value having it (`TEXT`), and whether that
      value is the only one among the candidates having it (`EXACT`).

    A join's long document repeats in thousands of candidates: as text it would be hashed for
    DISTINCT and copied out once per candidate. Both kinds read one evaluation of the
    candidates' rows (a materialized CTE), so a LIMIT that keeps any rows keeps the same ones
    for both."""
    names = [e.alias_or_name for e in query.expressions if e.alias_or_name.startswith(ARG)]
    ranked = any(e.alias_or_name == RANK for e in query.expressions)
    ids = [f"{name}_id" for name in names]
    rows = exp.select(*[exp.Anonymous(this=function, expressions=[exp.column(n)]).as_(i)
                        for n, i in zip(names, ids, strict=True)], *names)
    if ranked:
        rows = rows.select(RANK)
    rows.set("from_", query.args["from_"].copy())
    if query.args.get("where") is not None:
        rows.set("where", query.args["where"].copy())
    no_id = exp.cast(exp.null(), "UBIGINT", dialect="duckdb")
    candidates = exp.select(exp.Literal.number(0).as_(PART), *[
        exp.column(i).as_(n) for n, i in zip(names, ids, strict=True)],
        exp.cast(exp.null(), "VARCHAR").as_(TEXT), exp.cast(exp.null(), "BOOLEAN").as_(EXACT),
    ).from_(_ROWS).group_by(*ids)
    if ranked:
        candidates = candidates.select(exp.Min(this=exp.column(RANK)).as_(RANK))
    whole: exp.Query = candidates
    for index, (name, id_) in enumerate(zip(names, ids, strict=True)):
        text = exp.Min(this=exp.column(name))
        distinct = exp.select(
            exp.Literal.number(index + 1),
            *[exp.column(id_) if other == index else no_id.copy() for other in range(len(ids))],
            text, exp.EQ(this=text.copy(), expression=exp.Max(this=exp.column(name))),
        ).from_(_ROWS).group_by(id_)
        if ranked:
            distinct = distinct.select(exp.cast(exp.null(), "BIGINT"))
        whole = exp.union(whole, distinct, distinct=False)
    result = exp.select("*").from_(whole.subquery())
    if query.args.get("with_") is not None:  # the candidates' own CTEs come first
        result.set("with_", query.args["with_"].copy())
    return result.with_(_ROWS, as_=rows, materialized=True)


class _Builder:
    def __init__(self, unknown: frozenset[str], correlated: Callable[[Scope], bool]) -> None:
        self.unknown = unknown
        self.correlated = correlated
        self.levels = 0

    def rows(self, node: exp.Expression, values: list[exp.Expression],
             ranked: Sequence[exp.Ordered] = (), top: int | None = None,
             inner: exp.Expression | None = None) -> exp.Select:
        """SELECT `values` over the rows where `node` is evaluated (see the module doc)."""
        at = scopes.position(node)
        projection = [v.as_(arg(i)) if inner is not None else
                      exp.cast(v, "VARCHAR").as_(arg(i)) for i, v in enumerate(values)]
        if at.scope is None:
            return exp.select(*projection)
        query = self._scope_rows(at, node, inner)
        query = query.select(*projection)
        if top is not None and not ranked:  # any `top` rows
            query = query.limit(top)
        elif ranked:
            window = exp.Window(this=exp.RowNumber(),
                                order=exp.Order(expressions=[k.copy() for k in ranked]))
            if top is None:
                query = query.select(window.as_(RANK))
            else:
                rank = exp.Window(this=exp.Anonymous(this="rank"),
                                  order=exp.Order(expressions=[k.copy() for k in ranked]))
                query.set("qualify", exp.Qualify(this=exp.LTE(
                    this=rank, expression=exp.Literal.number(top))))
        link = scopes.context(at.scope)
        if link.link is not Link.TOP and link.anchor is not None and (
                link.link is Link.LATERAL or self.correlated(at.scope)):
            own = at.scope.args.get("with_")
            if own is not None:  # nested as a LATERAL item: its own CTEs go with it
                query.set("with_", own.copy())
            self.levels += 1
            alias = f"{_LEVEL}{self.levels}"
            outer_values = [exp.column(arg(i), table=alias) for i in range(len(values))]
            lateral = exp.Lateral(this=query.subquery(), alias=exp.TableAlias(
                this=exp.to_identifier(alias)))
            return self.rows(link.anchor, outer_values, inner=lateral)
        ctes = visible_ctes(at.scope)
        if ctes:
            query.set("with_", exp.With(expressions=ctes))
        return query

    def _scope_rows(self, at: Position, node: exp.Expression,
                    inner: exp.Expression | None) -> exp.Select:
        scope = at.scope
        assert scope is not None
        query = exp.Select()
        if isinstance(scope, exp.Select):
            cut = node.parent.index if isinstance(node, exp.Lateral) and isinstance(
                node.parent, exp.Join) else None
            query.set("from_", scope.args["from_"].copy() if scope.args.get("from_") else None)
            joins = []
            for index, join in enumerate(scope.args.get("joins") or []):
                if cut is not None and index >= cut:
                    break
                joins.append(self._join(join, at if at.join == index else None))
            if isinstance(node, exp.Lateral) and not isinstance(node.parent, exp.Join):
                query.set("from_", None)  # the lateral item is the first FROM item
            if inner is not None:
                joins.append(exp.Join(this=inner))
                if query.args.get("from_") is None:
                    query.set("from_", exp.From(this=joins.pop(0).this))
            query.set("joins", joins or None)
        else:
            items = from_items(scope)
            query.set("from_", exp.From(this=items[0].copy()))
            joins = [exp.Join(this=item.copy()) for item in items[1:]]
            if inner is not None:
                joins.append(exp.Join(this=inner))
            query.set("joins", joins or None)
        lateral_cut = isinstance(node, exp.Lateral)
        where = scope.args.get("where")
        if where is not None and not lateral_cut:
            kept = [c.copy() for c in scopes.conjuncts(where.this)
                    if c is not at.conjunct and self._pushable(c) and (
                        not at.outer_join or _preserved_only(c, at))]
            if kept:
                query = query.where(exp.and_(*kept))
        group = scope.args.get("group")
        if not at.row_level and isinstance(scope, exp.Select) and not (
                group is not None and not self._pushable(group)):
            self._groups(scope, at, query)
        # (Grouped by the call itself: its per-group values are among its per-row values.)
        windows = scope.args.get("windows")
        if windows:
            query.set("windows", [w.copy() for w in windows])
        return query

    def _join(self, join: exp.Join, at: Position | None) -> exp.Join:
        copy = join.copy()
        on = join.args.get("on")
        if on is None:
            return copy
        kept = [c.copy() for c in scopes.conjuncts(on)
                if (at is None or c is not at.conjunct) and self._pushable(c)]
        copy.set("on", exp.and_(*kept) if kept else exp.true())
        if at is not None:  # only matching pairs ask the call: an inner join
            copy.set("side", None)
            copy.set("kind", None)
        return copy

    def _groups(self, scope: exp.Select, at: Position, query: exp.Select) -> None:
        group = scope.args.get("group")
        if group is not None and group.args.get("all"):
            keys = [e.this if isinstance(e, exp.Alias) else e for e in scope.expressions
                    if not _has_aggregate(e, scope)]
            group = exp.Group(expressions=[k.copy() for k in keys]) if keys else None
        if group is not None:
            query.set("group", group.copy())
        having = scope.args.get("having")
        if having is not None:
            kept = [c.copy() for c in scopes.conjuncts(having.this)
                    if c is not at.conjunct and self._pushable(c)]
            if kept:
                query.set("having", exp.Having(this=exp.and_(*kept)))

    def _pushable(self, conjunct: exp.Expression) -> bool:
        """Whether a conjunct can filter candidates: it holds no unknown call and no volatile
        function (those are evaluated once, by the statement itself)."""
        return not scopes.is_volatile(conjunct) and not any(
            is_marker(c, self.unknown) or (isinstance(c, exp.Anonymous)
                                           and c.name in self.unknown)
            for c in conjunct.find_all(exp.Column, exp.Anonymous))


def _preserved_only(conjunct: exp.Expression, at: Position) -> bool:
    """Whether a WHERE conjunct reads only the preserved side of the outer join whose ON holds
    the call (so rows the join null-extends pass it or fail it alike), with no RIGHT or FULL
    join after it (whose null-extended rows depend on every pair)."""
    scope = at.scope
    assert isinstance(scope, exp.Select) and at.join is not None
    joins = scope.args.get("joins") or []
    side = scopes.join_side(joins[at.join])
    if side == "FULL" or any(scopes.join_side(j) in ("RIGHT", "FULL")
                             for j in joins[at.join + 1:]):
        return False
    if side == "LEFT":
        items = [scope.args["from_"].this] + [j.this for j in joins[:at.join]]
    else:
        items = [joins[at.join].this]
    preserved = {item.alias_or_name.lower() for item in items}
    if conjunct.find(exp.Query) is not None:
        return False
    columns = list(conjunct.find_all(exp.Column))
    return all(c.table and c.table.lower() in preserved for c in columns)


def _has_aggregate(expression: exp.Expression, scope: exp.Select) -> bool:
    return any(scopes.enclosing_scope(a) is scope and not isinstance(a.parent, exp.Window)
               for a in expression.find_all(exp.AggFunc))

