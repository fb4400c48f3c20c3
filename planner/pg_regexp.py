"""PostgreSQL's regexp_match and regexp_matches in DuckDB's terms.

PostgreSQL's `regexp_match(s, p [, flags])` is the text[] of the first match's capture groups
(the whole match when the pattern has none), NULL when nothing matches; `regexp_matches(s, p
[, flags])` returns such an array per match as a set of rows: one row or none, every match with
the flag `g`. DuckDB's regexp_matches is a boolean test (PostgreSQL's `~`), so a statement that
meant PostgreSQL's would get a silently wrong answer.

Contract: `call(name, args)` is the expression computing `name(args)` (name: "regexp_match" or
"regexp_matches", as PostgreSQL) from DuckDB's regexp_matches, regexp_extract and
regexp_extract_all: a list of the groups for regexp_match, an unnest of the lists for
regexp_matches (a select list item that gives rows, as a set-returning function's does). The
pattern must be a string constant, whose capture groups are counted here (`capture_groups`); the
flags a string constant of `i` (case-insensitive), `c` (case-sensitive, the default), `q` (the
pattern is a literal string) and, for regexp_matches, `g`. Other patterns and flags raise
`SqlError`: 22023 for a flag PostgreSQL does not know (and `g` of regexp_match), 0A000 for one
it knows that is not carried over, or a pattern that is not a constant. A group that takes no
part in the match is NULL, as PostgreSQL's (regexp_extract_all tells it from an empty group;
regexp_extract does not).
"""

from __future__ import annotations

from sqlglot import exp

from heron.planner.errors import SqlError, SqlState

NAMES = frozenset({"regexp_match", "regexp_matches"})
# PostgreSQL's regular expression flags (Table 9.24, and `g`).
_PG_FLAGS = frozenset("bceimnpqstwxg")
_CARRIED_FLAGS = {"i": "i", "c": "c", "q": "l"}  # q: the pattern is a literal string


def call(name: str, args: list[exp.Expression]) -> exp.Expression:
    if len(args) not in (2, 3):
        raise SqlError(SqlState.UNDEFINED_FUNCTION, f"function {name} takes 2 or 3 arguments")
    text, pattern = args[0], args[1]
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                       f"{name} takes its pattern as a string constant here")
    options, every = _options(name, args[2] if len(args) == 3 else None)
    groups = 0 if "l" in (options.name if options else "") else capture_groups(pattern.name)

    def fn(function: str, *more: exp.Expression) -> exp.Expression:
        return exp.Anonymous(this=function, expressions=[
            text.copy(), pattern.copy(), *more, *([options] if options else [])])

    numbers = range(1, groups + 1) if groups else (0,)
    if not every:
        # a group of the first match: the first of regexp_extract_all's, which is NULL where
        # the group takes no part in the match (regexp_extract's is '')
        found = exp.Array(expressions=[exp.Anonymous(this="list_extract", expressions=[
            fn("regexp_extract_all", exp.Literal.number(i)), exp.Literal.number(1)])
            if i else fn("regexp_extract", exp.Literal.number(i)) for i in numbers])
        if name == "regexp_match":
            return exp.Case(ifs=[exp.If(this=fn("regexp_matches"), true=found)])
        return _unnest(exp.Case(ifs=[exp.If(this=fn("regexp_matches"), true=exp.Array(
            expressions=[found]))], default=exp.Array(expressions=[])))
    # every match: group i of match k is the k-th of regexp_extract_all's list of group i
    alls = [fn("regexp_extract_all", exp.Literal.number(i)) for i in numbers]
    k = exp.to_identifier("k")
    per_match = exp.Array(expressions=[exp.Bracket(this=a, expressions=[exp.column(k)])
                                       for a in alls])
    matches = exp.Anonymous(this="range", expressions=[
        exp.Literal.number(1),
        exp.Add(this=exp.Anonymous(this="len", expressions=[alls[0].copy()]),
                expression=exp.Literal.number(1))])
    return _unnest(exp.Anonymous(this="list_transform", expressions=[
        matches, exp.Lambda(this=per_match, expressions=[k])]))


def _unnest(lists: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this="unnest", expressions=[lists])


def _options(name: str, flags: exp.Expression | None) -> tuple[exp.Expression | None, bool]:
    """DuckDB's options for PostgreSQL's `flags`, and whether `g` asks for every match."""
    if flags is None:
        return None, False
    if not (isinstance(flags, exp.Literal) and flags.is_string):
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                       f"{name} takes its flags as a string constant here")
    carried = ""
    for flag in flags.name:
        if flag == "g" and name == "regexp_match":
            raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                           'regexp_match() does not support the "global" option',
                           hint="Use the regexp_matches function instead.")
        if flag not in _PG_FLAGS:
            raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                           f'invalid regular expression option: "{flag}"')
        if flag != "g" and flag not in _CARRIED_FLAGS:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           f'regular expression option "{flag}" is not supported')
        carried += _CARRIED_FLAGS.get(flag, "")
    return (exp.Literal.string(carried) if carried else None), "g" in flags.name


def capture_groups(pattern: str) -> int:
    """How many capturing groups `pattern` has: its `(`s outside bracket expressions that are
    neither escaped nor `(?` (non-capturing groups, lookarounds, options)."""
    count, i, in_brackets = 0, 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if in_brackets:
            # a `]` first in the brackets (or after `^`) is a member, not the end
            opened = pattern[i - 1] == "[" or pattern[i - 2:i] == "[^"
            in_brackets = not (char == "]" and not opened)
        elif char == "[":
            in_brackets = True
        elif char == "(" and not pattern.startswith("(?", i):
            count += 1
        i += 1
    return count
