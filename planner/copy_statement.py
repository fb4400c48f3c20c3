"""COPY between a table (or a query) and the client, read into a frozen `CopyCommand`.

Contract: `read_copy(sql)` returns the `CopyCommand` of a `COPY ... FROM STDIN` or
`COPY ... TO STDOUT` statement, in both of PostgreSQL's option syntaxes (`WITH (FORMAT csv,
HEADER, ...)` and the older `WITH CSV HEADER DELIMITER AS ','` that psql and psycopg2 send), and
None for any other statement — a COPY to or from a file of the server is DuckDB's to run. The
options are checked as PostgreSQL checks them: a bad combination raises `SqlError` with its
SQLSTATE and wording (42601 for syntax, 0A000 for options a format does not have, 22023 for bad
values). A COPY ... FROM STDIN names a table; a COPY ... TO STDOUT names a table or a query.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from heron.planner import dialect
from heron.planner.commands import identifier
from heron.planner.errors import SqlError, SqlState

_TOKENIZER = Postgres().tokenizer_class


class CopyFormat(enum.Enum):
    TEXT = "text"
    CSV = "csv"
    BINARY = "binary"


@dataclass(frozen=True, slots=True)
class CopyOptions:
    format: CopyFormat = CopyFormat.TEXT
    delimiter: str = "\t"  # CSV: ","
    null: str = "\\N"  # CSV: ""
    header: bool = False
    quote: str = '"'
    escape: str = '"'  # CSV: defaults to the quote
    force_quote: tuple[str, ...] | None = ()  # None: FORCE_QUOTE *
    force_not_null: tuple[str, ...] = ()
    force_null: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CopyCommand:
    """COPY table [(columns)] FROM STDIN, or COPY {table [(columns)] | (query)} TO STDOUT."""

    from_client: bool  # FROM STDIN; else TO STDOUT
    table: tuple[str, ...] = ()  # the table's name parts, folded like PostgreSQL identifiers
    columns: tuple[str, ...] = ()  # empty: every column of the table
    query: str | None = None  # COPY (query) TO STDOUT
    where: str | None = None  # COPY ... FROM STDIN WHERE condition
    options: CopyOptions = CopyOptions()

    @property
    def table_sql(self) -> str:
        """The table's name as SQL, each part quoted."""
        return ".".join(dialect.quoted(part) for part in self.table)


def read_copy(sql: str) -> CopyCommand | None:
    try:
        tokens = _TOKENIZER().tokenize(sql)
    except TokenError:
        return None
    if not tokens or tokens[0].text.upper() != "COPY":
        return None
    return _Reader(sql, tokens).command()


def _syntax_error(token: Token | None) -> SqlError:
    if token is None:
        return SqlError(SqlState.SYNTAX_ERROR, "syntax error at end of input")
    return SqlError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{token.text}"')


class _Reader:
    """A cursor over the tokens of one COPY statement."""

    def __init__(self, sql: str, tokens: list[Token]) -> None:
        self.sql = sql
        self.tokens = [t for t in tokens if t.token_type != TokenType.SEMICOLON]
        self.pos = 1  # after COPY

    def peek(self, offset: int = 0) -> Token | None:
        index = self.pos + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def word(self, offset: int = 0) -> str:
        """The keyword at `offset`, upper case; "" for a string or a quoted identifier."""
        token = self.peek(offset)
        if token is None or token.token_type == TokenType.STRING or self._quoted(token):
            return ""
        return token.text.upper()

    def _quoted(self, token: Token) -> bool:
        return self.sql[token.start] == '"'

    def take(self) -> Token:
        token = self.peek()
        if token is None:
            raise _syntax_error(None)
        self.pos += 1
        return token

    def accept(self, *words: str) -> bool:
        if all(self.word(i) == w for i, w in enumerate(words)):
            self.pos += len(words)
            return True
        return False

    def expect(self, token_type: TokenType) -> Token:
        token = self.take()
        if token.token_type != token_type:
            raise _syntax_error(token)
        return token

    def name(self) -> str:
        token = self.take()
        if token.token_type in (TokenType.STRING, TokenType.L_PAREN, TokenType.R_PAREN,
                                TokenType.COMMA, TokenType.DOT):
            raise _syntax_error(token)
        raw = self.sql[token.start : token.end + 1]
        return identifier(raw)

    def string(self) -> str:
        token = self.take()
        if token.token_type == TokenType.BYTE_STRING and self.sql[token.start] in "eE":
            # sqlglot reads E'...' as a byte string and drops its escapes; read the source.
            return _unescape(self.sql[token.start + 2 : token.end])
        if token.token_type not in (TokenType.STRING, TokenType.HEREDOC_STRING):
            raise _syntax_error(token)
        return token.text

    def name_list(self) -> tuple[str, ...]:
        self.expect(TokenType.L_PAREN)
        names = [self.name()]
        while self.peek() is not None and self.peek().token_type == TokenType.COMMA:
            self.pos += 1
            names.append(self.name())
        self.expect(TokenType.R_PAREN)
        return tuple(names)

    # -- the statement -------------------------------------------------------------------------

    def command(self) -> CopyCommand | None:
        table: tuple[str, ...] = ()
        columns: tuple[str, ...] = ()
        query = None
        first = self.peek()
        if first is not None and first.token_type == TokenType.L_PAREN:
            query = self._parenthesized_text()
        else:
            parts = [self.name()]
            while self.peek() is not None and self.peek().token_type == TokenType.DOT:
                self.pos += 1
                parts.append(self.name())
            table = tuple(parts)
            if self.peek() is not None and self.peek().token_type == TokenType.L_PAREN:
                columns = self.name_list()
        direction = self.word()
        if direction not in ("FROM", "TO"):
            raise _syntax_error(self.peek())
        self.pos += 1
        endpoint = self.word()
        if (direction, endpoint) not in (("FROM", "STDIN"), ("TO", "STDOUT")):
            return None  # a file or a program of the server: not the client's COPY
        self.pos += 1
        from_client = direction == "FROM"
        if query is not None and from_client:
            raise _syntax_error(first)
        options = self._options()
        where = None
        if self.word() == "WHERE":
            if not from_client:
                raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                               "WHERE clause not allowed with COPY TO")
            where = self.sql[self.take().end + 1 :].strip().rstrip(";").strip()
            self.pos = len(self.tokens)
        if self.peek() is not None:
            raise _syntax_error(self.peek())
        return CopyCommand(from_client, table, columns, query, where, options)

    def _parenthesized_text(self) -> str:
        open_paren = self.take()
        depth = 1
        while depth:
            token = self.take()
            if token.token_type == TokenType.L_PAREN:
                depth += 1
            elif token.token_type == TokenType.R_PAREN:
                depth -= 1
        return self.sql[open_paren.end + 1 : token.start].strip()

    # -- options -------------------------------------------------------------------------------

    def _options(self) -> CopyOptions:
        values: dict[str, object] = {}
        self.accept("WITH")
        token = self.peek()
        if token is not None and token.token_type == TokenType.L_PAREN:
            self.pos += 1
            while True:
                self._option(values)
                separator = self.take()
                if separator.token_type == TokenType.R_PAREN:
                    break
                if separator.token_type != TokenType.COMMA:
                    raise _syntax_error(separator)
        else:
            while self.peek() is not None and self.word() not in ("", "WHERE"):
                self._legacy_option(values)
        return _checked(values)

    def _option(self, values: dict[str, object]) -> None:
        name = self.name().lower()
        if name in ("force_quote", "force_not_null", "force_null"):
            token = self.peek()
            if name == "force_quote" and token is not None and token.text == "*":
                self.pos += 1
                _set(values, name, None)
            else:
                _set(values, name, self.name_list())
            return
        token = self.peek()
        argument: str | None = None
        if token is not None and token.token_type in (TokenType.STRING, TokenType.BYTE_STRING,
                                                      TokenType.HEREDOC_STRING):
            argument = self.string()
        elif token is not None and token.token_type not in (TokenType.COMMA, TokenType.R_PAREN):
            argument = self.take().text
        _set(values, name, argument)

    def _legacy_option(self, values: dict[str, object]) -> None:
        word = self.word()
        self.pos += 1
        if word in ("BINARY", "CSV"):
            _set(values, "format", word.lower())
        elif word == "HEADER":
            _set(values, "header", None)
        elif word in ("DELIMITER", "NULL", "QUOTE", "ESCAPE", "ENCODING"):
            self.accept("AS")
            _set(values, word.lower(), self.string())
        elif word == "FORCE":
            if self.accept("QUOTE"):
                token = self.peek()
                if token is not None and token.text == "*":
                    self.pos += 1
                    _set(values, "force_quote", None)
                else:
                    _set(values, "force_quote", self._bare_names())
            elif self.accept("NOT", "NULL"):
                _set(values, "force_not_null", self._bare_names())
            else:
                raise _syntax_error(self.peek())
        else:
            raise _syntax_error(self.tokens[self.pos - 1])

    def _bare_names(self) -> tuple[str, ...]:
        names = [self.name()]
        while self.peek() is not None and self.peek().token_type == TokenType.COMMA:
            self.pos += 1
            names.append(self.name())
        return tuple(names)


_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)",
                     re.DOTALL)


def _unescape(body: str) -> str:
    """The value of the body of an E'...' string (C-style backslash escapes, '' for a quote)."""

    def one(m: re.Match[str]) -> str:
        code = m[1]
        if code[0] in "xuU":
            return chr(int(code[1:], 16))
        if code[0] in "01234567":
            return chr(int(code, 8))
        return _ESCAPES.get(code, code)

    return _ESCAPE.sub(one, body.replace("''", "'"))


def _set(values: dict[str, object], name: str, value: object) -> None:
    if name in values:
        raise SqlError(SqlState.SYNTAX_ERROR, "conflicting or redundant options")
    values[name] = value


_BOOLEAN_WORDS = {"true": True, "on": True, "1": True, "false": False, "off": False, "0": False}


def _boolean(name: str, value: object) -> bool:
    if value is None:
        return True
    word = str(value).lower()
    if word == "match" and name == "header":
        return True  # HEADER MATCH: a header line is there (its names are not compared)
    if word not in _BOOLEAN_WORDS:
        raise SqlError(SqlState.SYNTAX_ERROR, f"{name} requires a Boolean value")
    return _BOOLEAN_WORDS[word]


def _checked(values: dict[str, object]) -> CopyOptions:
    """The options PostgreSQL's COPY accepts, with its defaults per format and its checks."""
    known = {"format", "freeze", "delimiter", "null", "header", "quote", "escape", "force_quote",
             "force_not_null", "force_null", "encoding", "default"}
    for name in values:
        if name not in known:
            raise SqlError(SqlState.SYNTAX_ERROR, f'option "{name}" not recognized')
    format_name = str(values.get("format") or "text").lower()
    try:
        fmt = CopyFormat(format_name)
    except ValueError:
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                       f'COPY format "{format_name}" not recognized') from None
    if "encoding" in values and str(values["encoding"]).upper().replace("-", "") not in (
            "UTF8", "UNICODE"):
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                       f"COPY encoding {values['encoding']!r} is not supported; use UTF8")
    if "default" in values:
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED, "COPY DEFAULT is not supported")
    if "freeze" in values:
        _boolean("freeze", values["freeze"])  # accepted; DuckDB has no table freezing to ask for
    csv = fmt is CopyFormat.CSV
    if fmt is CopyFormat.BINARY:
        for name in ("delimiter", "null", "header"):
            if name in values:
                raise SqlError(SqlState.SYNTAX_ERROR, f"cannot specify {name.upper()} in BINARY "
                                                      "mode")
    for name in ("quote", "escape", "force_quote", "force_not_null", "force_null"):
        if name in values and not csv:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           f"COPY {name.replace('_', ' ')} available only in CSV mode")
    delimiter = str(values.get("delimiter", "," if csv else "\t"))
    null = str(values.get("null", "" if csv else "\\N"))
    quote = str(values.get("quote", '"'))
    escape = str(values.get("escape", quote))
    if len(delimiter.encode()) != 1:
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                       "COPY delimiter must be a single one-byte character")
    if delimiter in "\r\n":
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                       "COPY delimiter cannot be newline or carriage return")
    if "\r" in null or "\n" in null:
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                       "COPY null representation cannot use newline or carriage return")
    if not csv and delimiter in "\\.abcdefghijklmnopqrstuvwxyz0123456789":
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                       f'COPY delimiter cannot be "{delimiter}"')
    if csv:
        if len(quote.encode()) != 1:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           "COPY quote must be a single one-byte character")
        if len(escape.encode()) != 1:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           "COPY escape must be a single one-byte character")
        if delimiter == quote:
            raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                           "COPY delimiter and quote must be different")
    if delimiter in null:
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                       "COPY delimiter must not appear in the NULL specification")
    force_quote = values.get("force_quote", ())
    return CopyOptions(fmt, delimiter, null, _boolean("header", values["header"])
                       if "header" in values else False, quote, escape,
                       force_quote,  # type: ignore[arg-type]
                       tuple(values.get("force_not_null", ())),  # type: ignore[arg-type]
                       tuple(values.get("force_null", ())))  # type: ignore[arg-type]
