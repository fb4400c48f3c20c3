"""Where an expression stands in a statement: its scope, clause, conjunct and context.

Contract: pure functions over sqlglot trees of `planner.dialect`; nothing here mutates a tree. A
*scope* is a SELECT, UPDATE or DELETE: the innermost one around an expression decides which rows
it is evaluated on. `position(node)` says where in its scope an expression stands: the `Clause`,
the join whose ON holds it, the top-level conjunct of WHERE / ON / HAVING holding it, and whether
it is evaluated per input row or per group (outside aggregate arguments in a grouped scope).
`context(scope)` says how the scope's rows reach the statement: the statement itself (or a CTE
body, a derived table, a set-operation branch of either), or an expression subquery (EXISTS,
IN, ANY, scalar) or LATERAL item whose rows depend on the rows of the scope around it.
`conjuncts(condition)` flattens AND; `is_grouped(scope)` tells whether a scope aggregates;
`is_volatile(node)` whether an expression draws a new value each time it is evaluated (random(),
TABLESAMPLE, ...); `order_keys(scope)` resolves ORDER BY ordinals and output names to
expressions.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass

from sqlglot import exp

SCOPES = (exp.Select, exp.Update, exp.Delete)
Scope = exp.Select | exp.Update | exp.Delete
# Functions whose value changes from one evaluation to the next (PostgreSQL's VOLATILE ones
# among those DuckDB has); a statement that runs as several DuckDB queries must evaluate them
# once.
VOLATILE_FUNCTIONS = frozenset({"random", "setseed", "nextval", "gen_random_uuid", "uuid",
                                "uuidv4", "uuidv7"})


class Clause(enum.Enum):
    """The part of its scope an expression stands in."""

    FROM = "FROM"  # inside a FROM item that is no scope of its own (a table function's args)
    ON = "ON"  # a join's ON condition
    WHERE = "WHERE"
    GROUP = "GROUP BY"
    HAVING = "HAVING"
    SELECT = "SELECT"  # the select list (and DISTINCT ON, named windows)
    ORDER = "ORDER BY"
    QUALIFY = "QUALIFY"
    SET = "SET"  # UPDATE ... SET
    OTHER = "OTHER"  # LIMIT, OFFSET, VALUES, or no scope at all


# The argument of a scope node holding an expression -> its clause.
_CLAUSE_KEYS = {"where": Clause.WHERE, "group": Clause.GROUP, "having": Clause.HAVING,
                "expressions": Clause.SELECT, "distinct": Clause.SELECT, "order": Clause.ORDER,
                "qualify": Clause.QUALIFY, "joins": Clause.ON, "from_": Clause.FROM,
                "using": Clause.FROM, "this": Clause.FROM, "windows": Clause.SELECT}


@dataclass(frozen=True, slots=True)
class Position:
    """Where an expression stands in its scope."""

    scope: Scope | None  # None: outside every scope (INSERT ... VALUES)
    clause: Clause
    join: int | None = None  # ON: the index of the join in `scope.joins`
    conjunct: exp.Expression | None = None  # WHERE/ON/HAVING/QUALIFY: its top-level conjunct
    row_level: bool = True  # evaluated once per input row, not once per group

    @property
    def outer_join(self) -> bool:
        """Whether it stands in the ON of a LEFT, RIGHT or FULL join."""
        return self.clause is Clause.ON and join_side(self.join_node) != ""

    @property
    def join_node(self) -> exp.Join:
        assert self.scope is not None and self.join is not None
        return self.scope.args["joins"][self.join]


class Link(enum.Enum):
    """How a scope's rows reach the statement."""

    TOP = "top"  # the statement, a CTE body or a derived table (with set operations between)
    SUBQUERY = "subquery"  # an expression subquery: evaluated for rows of the scope around it
    LATERAL = "lateral"  # a LATERAL FROM item: evaluated for the FROM items before it


@dataclass(frozen=True, slots=True)
class Context:
    link: Link
    # SUBQUERY: the expression in the outer scope that holds the subquery (EXISTS, IN, ...);
    # LATERAL: the Join (or From) holding the lateral item.
    anchor: exp.Expression | None = None


def ancestors(node: exp.Expression) -> Iterator[exp.Expression]:
    """The node, then its parents up to the root."""
    current: exp.Expression | None = node
    while current is not None:
        yield current
        current = current.parent


def _above(node: exp.Expression) -> Iterator[exp.Expression]:
    """The node's parents up to the root."""
    return ancestors(node.parent) if node.parent is not None else iter(())


def enclosing_scope(node: exp.Expression) -> Scope | None:
    """The innermost SELECT / UPDATE / DELETE strictly around `node`."""
    for ancestor in _above(node):
        if isinstance(ancestor, SCOPES):
            return ancestor
    return None


def position(node: exp.Expression) -> Position:
    scope = enclosing_scope(node)
    if scope is None:
        return Position(None, Clause.OTHER)
    child, in_aggregate = node, False
    for ancestor in ancestors(node):
        if ancestor is scope:
            break
        if isinstance(ancestor, exp.AggFunc) or (isinstance(ancestor, exp.Where)
                                                 and isinstance(ancestor.parent, exp.Filter)):
            in_aggregate = True
        child = ancestor
    key = child.arg_key
    if isinstance(scope, exp.Update) and key == "expressions":
        return Position(scope, Clause.SET)
    clause = _CLAUSE_KEYS.get(key or "", Clause.OTHER)
    if clause is Clause.ON:
        join = child
        on = join.args.get("on")
        if on is None or not _contains(on, node):
            return Position(scope, Clause.FROM)
        return Position(scope, Clause.ON, join=join.index, conjunct=_conjunct_of(on, node))
    if clause in (Clause.WHERE, Clause.HAVING, Clause.QUALIFY):
        return Position(scope, clause, conjunct=_conjunct_of(child.this, node),
                        row_level=clause is Clause.WHERE or in_aggregate
                        or not is_grouped(scope))
    row_level = clause in (Clause.GROUP, Clause.FROM, Clause.OTHER) or in_aggregate or (
        not is_grouped(scope))
    return Position(scope, clause, row_level=row_level)


def _contains(root: exp.Expression, node: exp.Expression) -> bool:
    return any(a is root for a in ancestors(node))


def _conjunct_of(condition: exp.Expression, node: exp.Expression) -> exp.Expression:
    for conjunct in conjuncts(condition):
        if _contains(conjunct, node):
            return conjunct
    raise AssertionError("node is not inside the condition")


def conjuncts(condition: exp.Expression) -> list[exp.Expression]:
    """The top-level conjuncts of a condition (AND flattened, through parentheses)."""
    if isinstance(condition, exp.And):
        return conjuncts(condition.this) + conjuncts(condition.expression)
    if isinstance(condition, exp.Paren) and isinstance(condition.this, exp.And):
        return conjuncts(condition.this)
    return [condition]


def join_side(join: exp.Join) -> str:
    """"" for inner and cross joins, else LEFT / RIGHT / FULL."""
    side = (join.side or "").upper()
    return side if side in ("LEFT", "RIGHT", "FULL") else ""


def context(scope: Scope) -> Context:
    """How the scope's rows reach the statement (see `Link`)."""
    child: exp.Expression = scope
    for ancestor in _above(scope):
        if isinstance(ancestor, exp.Lateral):
            return Context(Link.LATERAL, ancestor)
        if isinstance(ancestor, exp.CTE | exp.Create | exp.Insert) or (
                isinstance(ancestor, exp.From | exp.Join) and child.arg_key == "this") or (
                isinstance(ancestor, exp.Delete) and child.arg_key == "using"):
            return Context(Link.TOP)
        if isinstance(ancestor, SCOPES):
            return Context(Link.SUBQUERY, scope.parent)
        child = ancestor
    return Context(Link.TOP)


def is_grouped(scope: Scope) -> bool:
    """Whether a SELECT aggregates its rows (GROUP BY, HAVING, or an aggregate outside
    window functions in its select list, HAVING or ORDER BY)."""
    if not isinstance(scope, exp.Select):
        return False
    if scope.args.get("group") is not None or scope.args.get("having") is not None:
        return True
    for key in ("expressions", "order"):
        value = scope.args.get(key)
        parts = value if isinstance(value, list) else [value] if value is not None else []
        for part in parts:
            for node in part.find_all(exp.AggFunc):
                if enclosing_scope(node) is scope and not isinstance(node.parent, exp.Window):
                    return True
    return False


def is_volatile(node: exp.Expression) -> bool:
    """Whether evaluating `node` twice may give different values."""
    for inner in node.find_all(exp.Rand, exp.Uuid, exp.TableSample, exp.Anonymous):
        if not isinstance(inner, exp.Anonymous) or inner.name.lower() in VOLATILE_FUNCTIONS:
            return True
    return False


def order_keys(scope: exp.Select) -> list[exp.Ordered]:
    """ORDER BY keys with ordinals and output-column names replaced by the select-list
    expressions they name (as PostgreSQL resolves them)."""
    order = scope.args.get("order")
    if order is None:
        return []
    outputs = scope.expressions
    by_name = {e.alias.lower(): e.this for e in outputs if isinstance(e, exp.Alias)}
    keys = []
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.name) <= len(outputs):
            target = outputs[int(key.name) - 1]
            key = target.this if isinstance(target, exp.Alias) else target
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in by_name:
            key = by_name[key.name.lower()]
        resolved = ordered.copy()
        resolved.set("this", key.copy())
        keys.append(resolved)
    return keys
