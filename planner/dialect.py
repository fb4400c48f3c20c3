"""Heron's SQL dialect: PostgreSQL plus the AI functions, parsed into typed expressions.

Contract: `parse(sql)` reads one statement with sqlglot's PostgreSQL grammar and returns its tree,
in which every AI function call is an `AIFunction` node, whatever its spelling:

    AI.IF(prompt)        AI_FILTER(prompt)                    -> AIIf        (TRUE/FALSE)
    AI.CLASSIFY(x, labels)  AI_CLASSIFY(x, labels)            -> AIClassify  (a label)
    AI.SCORE(prompt)                                           -> AIScore     (P(TRUE))
    AI.GENERATE(prompt)  AI_COMPLETE(prompt [, max_tokens])    -> AIComplete  (text)
    PROMPT('template {0}', v0, ...)                            -> Prompt

Names are case-insensitive. Each AI node keeps the spelling it was written with (`spelling`, upper
case) and its arguments in order (`expressions`); what the arguments mean is checked by the
planner (`planner.functions`), so a wrong call is refused with a SQLSTATE, not a parse error.
Any other `AI.name(...)` call, and the other AI functions of the BigQuery and Snowflake families
(`AI_AGG`, `AI_SENTIMENT`, ...), parse as a plain `AIFunction` that the planner refuses by name;
other `AI_*` names stay ordinary functions. `sql(tree)` prints a tree back in this dialect, AI
calls in their written spelling; `quoted(name)` is a name as a quoted identifier (PostgreSQL's
and DuckDB's rule: in double quotes, each inner one doubled). `->` is json's operator wherever it
stands (PostgreSQL has no lambdas; `PostgresSql` is sqlglot's PostgreSQL so read, without the AI
spellings), and only PostgreSQL's `INTERVAL_FIELDS` qualify an interval (another word after
`interval '3'` or `::interval` is an alias), a literal of one field kept as written.
`read_postgres(sql)` reads with that grammar alone and answers None where it cannot.
PostgreSQL's to_char, to_date, div and array_remove, and DuckDB's regexp_extract (in the catalog
rewrite's text), stay calls as written, for `pg_semantics` and the shared macros to give them
PostgreSQL's meaning. `BLANK_PADDED` are sqlglot's types of char(n). Syntax errors raise
`SqlError` 42601.

sqlglot reads `AI.IF(x)` as a qualified call `Dot(AI, IF(x))`; the parser here turns that shape
into the typed node, and maps the one-word spellings through its function table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import ParseError, SqlglotError, TokenError
from sqlglot.tokens import Token, TokenType

from heron.planner.errors import SqlError, SqlState

# sqlglot's types of PostgreSQL's char(n), character(n) and bpchar(n): blank-padded strings.
BLANK_PADDED = frozenset({exp.DataType.Type.CHAR, exp.DataType.Type.NCHAR,
                          exp.DataType.Type.BPCHAR})


class AIFunction(exp.Expression, exp.Func):
    """An AI function call: `spelling` as written (upper case), `expressions` its arguments."""

    arg_types: ClassVar[dict[str, bool]] = {"expressions": True, "spelling": True}
    is_var_len_args = True

    @property
    def spelling(self) -> str:
        return self.text("spelling")

    @property
    def arguments(self) -> list[exp.Expression]:
        return list(self.expressions)


class AIIf(AIFunction):
    """AI.IF / AI_FILTER: is the prompt TRUE?"""


class AIClassify(AIFunction):
    """AI.CLASSIFY / AI_CLASSIFY: which of the labels fits the input best?"""


class AIScore(AIFunction):
    """AI.SCORE: the probability that the prompt is TRUE."""


class AIComplete(AIFunction):
    """AI.GENERATE / AI_COMPLETE: the model's text continuation of the prompt."""


class Prompt(exp.Expression, exp.Func):
    """PROMPT('text {0} text {1}', v0, v1): a prompt template and the values of its slots."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expressions": False}
    is_var_len_args = True


# Spelling (upper case) -> node class. `AI.` names are the BigQuery spellings, `AI_` Snowflake's.
SPELLINGS: dict[str, type[AIFunction]] = {
    "AI.IF": AIIf,
    "AI_FILTER": AIIf,
    "AI.CLASSIFY": AIClassify,
    "AI_CLASSIFY": AIClassify,
    "AI.SCORE": AIScore,
    "AI.GENERATE": AIComplete,
    "AI_COMPLETE": AIComplete,
}


# AI functions of the same families that Heron does not evaluate: parsed so they can be refused
# by name (sqlglot's own classes for some of them insist on their own argument lists).
OTHER_SPELLINGS = frozenset({
    "AI_AGG", "AI_SUMMARIZE_AGG", "AI_SENTIMENT", "AI_EMBED", "AI_SIMILARITY", "AI_EXTRACT",
    "AI_TRANSLATE", "AI_REDACT", "AI_PARSE_DOCUMENT", "AI_TRANSCRIBE",
})


def _builder(spelling: str) -> Callable[[Sequence[exp.Expression]], AIFunction]:
    def build(args: Sequence[exp.Expression]) -> AIFunction:
        node_class = SPELLINGS.get(spelling, AIFunction)
        return node_class(expressions=list(args), spelling=exp.Literal.string(spelling))

    return build


def _dotted_ai_call(node: exp.Expression | None) -> exp.Expression | None:
    """`Dot(AI, name(args))` as an AI node (typed when `AI.name` is one Heron evaluates)."""
    if not isinstance(node, exp.Dot) or not isinstance(node.this, exp.Identifier | exp.Column):
        return node
    inner = node.expression
    if node.this.name.upper() != "AI" or not isinstance(inner, exp.Anonymous | exp.Func):
        return node
    name = inner.name if isinstance(inner, exp.Anonymous) else inner.sql_name()
    spelling = f"AI.{name.upper()}"
    args = inner.expressions if isinstance(inner, exp.Anonymous) else [
        a for a in inner.args.values() if isinstance(a, exp.Expression)]
    return _builder(spelling)(args)


def _kept(name: str) -> Callable[[Sequence[exp.Expression]], exp.Expression]:
    """A parser of `name`'s calls that keeps them as written."""
    return lambda args: exp.Anonymous(this=name.lower(), expressions=list(args))


# The words PostgreSQL reads after an interval literal or the type interval (its
# opt_interval); another word there is an alias (sqlglot reads date_part's abbreviations too:
# `interval '3' d` and `x::interval d` lost their alias `d`).
INTERVAL_FIELDS = frozenset({"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"})
_END = Token(TokenType.SEMICOLON, ";")


class PostgresSql(Postgres):
    """sqlglot's PostgreSQL read as PostgreSQL reads it: it has no `x -> expression` lambdas, so
    within a call's arguments `->` is jsonb's and json's operator, as everywhere else (sqlglot
    would read `f(j -> 'a')` as a lambda); an interval's qualifier is one of `INTERVAL_FIELDS`;
    an ORDER BY key's `USING <` or `USING >` is its ASC or DESC (nulls last or first unless it
    says); the prefix operators `|/` and `||/` (square and cube root) take what follows up to a
    comparison or another operator, `+` and `-` included (`|/ 16 + 1` is the root of 17; sqlglot
    reads it as sqrt(16) + 1), kept as the operators for DuckDB (`pg_catalog_functions`' macros
    of those names: named `?column?`, as PostgreSQL names them)."""

    class Parser(Postgres.Parser):
        LAMBDAS: ClassVar = {token: parser for token, parser in Postgres.Parser.LAMBDAS.items()
                             if token is not TokenType.ARROW}
        UNARY_PARSERS: ClassVar = {
            **Postgres.Parser.UNARY_PARSERS,
            TokenType.PIPE_SLASH: lambda self: self._parse_prefix_operator("|/"),
            TokenType.DPIPE_SLASH: lambda self: self._parse_prefix_operator("||/"),
        }

        def _parse_prefix_operator(self, operator: str) -> exp.Expression:
            # (in parentheses, so that what follows it in the printed text stays outside it)
            return exp.Paren(this=exp.Anonymous(this=operator, expressions=[self._parse_term()]))

        def _parse_ordered(self, parse_method: Callable[[], exp.Expr | None] | None = None
                           ) -> exp.Ordered | None:
            descending: list[bool] = []

            def key() -> exp.Expr | None:
                this = parse_method() if parse_method else self._parse_disjunction()
                if this is not None and self._match(TokenType.USING):
                    if not self._match_set((TokenType.LT, TokenType.GT)):
                        self.raise_error("only USING < and USING > order keys are supported")
                    descending.append(self._prev.token_type is TokenType.GT)
                return this

            ordered = super()._parse_ordered(key)
            if ordered is not None and descending:
                ordered.set("desc", descending[0])
                if self._prev.text.upper() not in ("FIRST", "LAST"):  # no NULLS FIRST / LAST
                    ordered.set("nulls_first", descending[0])
            return ordered

        def _parse_interval_span(self, this: exp.Expr, parse_function_unit: bool = True
                                 ) -> exp.Interval:
            current = self._curr
            if current is None or current.text.upper() in INTERVAL_FIELDS:
                interval = super()._parse_interval_span(this, parse_function_unit)
            else:  # not a qualifier: sqlglot's parse as if the literal ended an expression
                self._curr = _END
                try:
                    interval = super()._parse_interval_span(this, parse_function_unit)
                finally:
                    self._curr = current
            if this.is_string and interval.this is not this and interval.this.name != this.name:
                # sqlglot split a literal of one field into number and unit (`'-1 mon'` into
                # '-1' MON), which DuckDB reads only for some units: the literal as written.
                interval.set("this", this)
                interval.set("unit", None)
            return interval


class Heron(PostgresSql):
    class Parser(PostgresSql.Parser):
        FUNCTIONS: ClassVar = {
            **Postgres.Parser.FUNCTIONS,
            **{name: _builder(name) for name in (*SPELLINGS, *OTHER_SPELLINGS) if "." not in name},
            "PROMPT": lambda args: Prompt(this=args[0] if args else None,
                                          expressions=list(args[1:])),
            # Kept as written: sqlglot would translate to_char's, to_date's and to_timestamp's
            # templates
            # (losing what they cannot map), make_interval's named arguments as the text of an
            # interval literal (`days => n` as '2 day' of the letter n), read div as DuckDB's
            # `//` (a double's division
            # for decimals), array_remove as a filter with `<>` (which removes nothing but
            # every element when the one to remove is NULL), and regexp_extract's third
            # argument (DuckDB's group, in the catalog rewrite's text) as a position, so that
            # pg_typeof of an array was 'text' in a statement `pg_semantics` rewrote.
            **{name: _kept(name) for name in ("TO_CHAR", "TO_DATE", "TO_TIMESTAMP", "DIV",
                                              "ARRAY_REMOVE", "REGEXP_EXTRACT",
                                              "MAKE_INTERVAL")},
        }
        # DATE_PART kept apart from EXTRACT (sqlglot reads both as one): PostgreSQL's date_part
        # is double precision, its extract numeric (`pg_semantics` types both).
        FUNCTION_PARSERS: ClassVar = {
            name: parser for name, parser in Postgres.Parser.FUNCTION_PARSERS.items()
            if name != "DATE_PART"}
        def _parse_column_ops(self, this: exp.Expression | None) -> exp.Expression | None:
            return _dotted_ai_call(super()._parse_column_ops(this))

    class Generator(Postgres.Generator):
        TRANSFORMS: ClassVar = {
            **Postgres.Generator.TRANSFORMS,
            **{cls: lambda self, e: self.func(e.spelling, *e.expressions)
               for cls in {AIFunction, *SPELLINGS.values()}},
            Prompt: lambda self, e: self.func("PROMPT", e.this, *e.expressions),
        }


# After the classes: sqlglot's dialect metaclass adds date_part's names to each class's set.
PostgresSql.VALID_INTERVAL_UNITS = Heron.VALID_INTERVAL_UNITS = set(INTERVAL_FIELDS)


def parse(sql: str) -> exp.Expression:
    """One statement's tree; AI calls are typed nodes."""
    try:
        tree = Heron().parse(sql)
    except (ParseError, TokenError) as exc:
        errors = getattr(exc, "errors", None)
        reason = errors[0]["description"] if errors else str(exc)
        raise SqlError(SqlState.SYNTAX_ERROR, f"syntax error: {reason}") from None
    statements = [t for t in tree if t is not None]
    if len(statements) != 1:
        raise SqlError(SqlState.SYNTAX_ERROR,
                       "cannot insert multiple commands into a prepared statement")
    return statements[0]


def read_postgres(sql: str) -> exp.Expression | None:
    """`sql`'s tree by PostgreSQL's grammar alone (`PostgresSql`: no AI spellings), or None where
    that grammar does not read it: for the readers that recognise one kind of statement and hand
    every other on unread."""
    try:
        return sqlglot.parse_one(sql, read=PostgresSql)
    except (SqlglotError, ValueError):
        return None


def sql(tree: exp.Expression) -> str:
    """The tree printed back in Heron's dialect (AI calls in their written spelling)."""
    return tree.sql(dialect=Heron)


def kept_name(identifier: exp.Expression) -> str:
    """A name given to an object (a constraint's), as PostgreSQL keeps it: folded to lower case
    unless quoted."""
    quoted = isinstance(identifier, exp.Identifier) and identifier.quoted
    return identifier.name if quoted else identifier.name.lower()


def quoted(name: str) -> str:
    """`name` as a quoted identifier, whatever it holds (see the module docstring)."""
    return '"' + name.replace('"', '""') + '"'
