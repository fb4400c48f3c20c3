"""The PostgreSQL commands Heron answers itself, read into frozen values.

Contract: each `read_*` function takes the text of one statement and returns its command value,
or None when the text is not that command; a statement that is the command but misspelled raises
`SqlError` 42601 with PostgreSQL's wording. Nothing here runs anything. The commands:

- `SessionCommand`: SET / RESET / SHOW of a run-time parameter, DEALLOCATE of a prepared
  statement; `SET SESSION CHARACTERISTICS AS TRANSACTION ...` and `SET TRANSACTION ...` become SETs
  of `default_transaction_*` / `transaction_*`;
- `PrepareCommand` and `ExecuteCommand`: SQL's PREPARE name [(types)] AS statement and EXECUTE
  name [(arguments)], the types and arguments as written (split at their top-level commas);
- `DiscardCommand`: DISCARD ALL | PLANS | SEQUENCES | TEMP[ORARY];
- `TransactionOptions`: the modes of BEGIN / START TRANSACTION (isolation level, READ ONLY);
- `SavepointCommand`: SAVEPOINT, RELEASE [SAVEPOINT], ROLLBACK [WORK|TRANSACTION] TO [SAVEPOINT];
- `DeclareCommand`, `FetchCommand` (FETCH and MOVE), `CloseCommand`: SQL cursors;
- `ListenCommand` (LISTEN, UNLISTEN) and `NotifyCommand`: asynchronous notifications;
- `LockCommand`: LOCK TABLE (its mode's number: `LOCK_MODES`);
- `ConstraintsCommand`: SET CONSTRAINTS.

Identifiers fold to lower case unless double-quoted, as in PostgreSQL.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator
from dataclasses import dataclass

from heron.planner.errors import SqlError, SqlState

# An identifier as PostgreSQL reads one, double-quoted or plain (a regular expression).
IDENTIFIER = r'(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*)'


def identifier(text: str) -> str:
    """A SQL identifier as PostgreSQL resolves it: quoted kept, unquoted folded to lower case."""
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('""', '"')
    return text.lower()


def _syntax_error(near: str) -> SqlError:
    token = near.split()[0] if near.split() else near
    return SqlError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{token}"' if token else
                    "syntax error at end of input")


# -- SET / RESET / SHOW / DEALLOCATE -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionCommand:
    """The operand of SET/RESET/SHOW (a setting) or DEALLOCATE (a statement name)."""

    name: str  # as written (case kept); DEALLOCATE: folded unless quoted, "" for ALL
    value: str | None = None  # SET: the value, quotes removed; None for DEFAULT
    local: bool = False  # SET LOCAL: until the transaction ends


_SET = re.compile(
    r"^\s*SET\s+(?:SESSION\s+|(?P<local>LOCAL\s+))?(?:(?P<tz>TIME\s+ZONE)\s+(?P<tzvalue>.+?)|"
    r"(?P<name>[\w.]+)\s*(?:=|\s+TO\s+)\s*(?P<value>.+?))\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_RESET = re.compile(r"^\s*RESET\s+(?P<name>[\w.]+)\s*;?\s*$", re.IGNORECASE)
_SHOW = re.compile(r"^\s*SHOW\s+(?P<name>[\w.]+(?:\s+[\w.]+)*)\s*;?\s*$", re.IGNORECASE)
_DEALLOCATE = re.compile(r'^\s*DEALLOCATE\s+(?:PREPARE\s+)?(?:(?P<quoted>")?(?P<name>[^"\s;]+)"?)'
                         r"\s*;?\s*$", re.IGNORECASE)
_SET_TRANSACTION = re.compile(
    r"^\s*SET\s+(?P<session>SESSION\s+CHARACTERISTICS\s+AS\s+)?TRANSACTION\s+"
    r"(?P<modes>.*?)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL)
_LIST_ITEM = re.compile(r"\s*('(?:[^']|'')*'|[^,]+)\s*,?")  # one item of a SET value list


def read_session_command(sql: str) -> SessionCommand | None:
    """SET/RESET/SHOW of a setting (a `SET ... TRANSACTION` sets its first mode's setting; see
    `read_transaction_settings` for all of them)."""
    if settings := read_transaction_settings(sql):
        return settings[0]
    if m := _SET.match(sql):
        if m["tz"]:
            return SessionCommand("TimeZone", _unquote(m["tzvalue"]), bool(m["local"]))
        return SessionCommand(m["name"], _unquote(m["value"]), bool(m["local"]))
    if m := _RESET.match(sql):
        return SessionCommand(m["name"])
    if m := _SHOW.match(sql):
        return SessionCommand(m["name"])
    return None


def read_deallocate(sql: str) -> SessionCommand | None:
    m = _DEALLOCATE.match(sql)
    if m is None:
        return None
    name = m["name"]
    if name.upper() == "ALL" and not m["quoted"]:
        name = ""
    elif not m["quoted"]:
        name = name.lower()
    return SessionCommand(name)


@dataclass(frozen=True, slots=True)
class PrepareCommand:
    name: str
    types: tuple[str, ...]  # the parameters' declared types, as written
    body: str  # the statement prepared


@dataclass(frozen=True, slots=True)
class ExecuteCommand:
    name: str
    arguments: tuple[str, ...]  # SQL expressions, as written


@dataclass(frozen=True, slots=True)
class DiscardCommand:
    what: str  # ALL, PLANS, SEQUENCES or TEMP


_PREPARE = re.compile(rf"^\s*PREPARE\s+(?P<name>{IDENTIFIER})\s*(?:\((?P<types>.*?)\))?\s*AS\s+"
                      r"(?P<body>.+?)\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_EXECUTE = re.compile(rf"^\s*EXECUTE\s+(?P<name>{IDENTIFIER})\s*(?:\((?P<arguments>.*)\))?"
                      r"\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_DISCARD = re.compile(r"^\s*DISCARD\s+(?P<what>\w+)\s*;?\s*$", re.IGNORECASE)
_DISCARDED = {"ALL": "ALL", "PLANS": "PLANS", "SEQUENCES": "SEQUENCES", "TEMP": "TEMP",
              "TEMPORARY": "TEMP"}


def read_prepare(sql: str) -> PrepareCommand | None:
    m = _PREPARE.match(sql)
    if m is None or (m["types"] is not None and not _balanced(m["types"])):
        return None
    types = split_items(m["types"]) if m["types"] is not None else ()
    return PrepareCommand(identifier(m["name"]), tuple(types), m["body"])


def read_execute(sql: str) -> ExecuteCommand | None:
    m = _EXECUTE.match(sql)
    if m is None:
        return None
    arguments = split_items(m["arguments"]) if m["arguments"] is not None else ()
    return ExecuteCommand(identifier(m["name"]), tuple(arguments))


def read_discard(sql: str) -> DiscardCommand | None:
    m = _DISCARD.match(sql)
    if m is None:
        return None
    what = _DISCARDED.get(m["what"].upper())
    if what is None:
        raise _syntax_error(m["what"])
    return DiscardCommand(what)


def split_items(text: str) -> list[str]:
    """A list's items at its top-level commas (not those inside parentheses, brackets, quoted
    strings or names)."""
    items, depth, start, quote = [], 0, 0, ""
    for i, char in enumerate(text):
        if quote:
            if char == quote:
                quote = ""  # (a doubled quote closes and opens again: same result)
        elif char in "'\"":
            quote = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    items.append(text[start:].strip())
    return [item for item in items if item] if any(items) else []


def depths(text: str, start: int = 0, depth: int = 0) -> Iterator[tuple[int, int]]:
    """Each parenthesis of `text` from `start` (outside quoted strings and names) with the
    depth after it, counted from `depth`."""
    quote = ""
    for i in range(start, len(text)):
        char = text[i]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "()":
            depth += 1 if char == "(" else -1
            yield i, depth


def _balanced(text: str) -> bool:
    """Whether `text`'s parentheses close as they open (outside quotes)."""
    depth = 0
    for _, depth in depths(text):
        if depth < 0:
            return False
    return depth == 0


def _unquote(value: str) -> str | None:
    """A SET value without its quotes; None for DEFAULT."""
    value = value.strip()
    if value.upper() == "DEFAULT":
        return None
    parts = [p.strip() for p in _LIST_ITEM.findall(value)]
    return ", ".join(p[1:-1].replace("''", "'") if len(p) >= 2 and p[0] == p[-1] == "'" else p
                     for p in parts if p.strip())


# -- transaction modes ---------------------------------------------------------------------------


class Isolation(enum.StrEnum):
    """PostgreSQL's isolation levels, spelled as SHOW transaction_isolation prints them."""

    READ_UNCOMMITTED = "read uncommitted"
    READ_COMMITTED = "read committed"
    REPEATABLE_READ = "repeatable read"
    SERIALIZABLE = "serializable"


@dataclass(frozen=True, slots=True)
class TransactionOptions:
    """The modes of BEGIN / START TRANSACTION / SET TRANSACTION; None: not given."""

    isolation: Isolation | None = None
    read_only: bool | None = None
    deferrable: bool | None = None


_MODE = re.compile(
    r"\s*(?:ISOLATION\s+LEVEL\s+(?P<level>READ\s+UNCOMMITTED|READ\s+COMMITTED|"
    r"REPEATABLE\s+READ|SERIALIZABLE)|READ\s+(?P<access>ONLY|WRITE)|"
    r"(?P<not>NOT\s+)?(?P<deferrable>DEFERRABLE))(?:\s*,\s*|\s+|$)", re.IGNORECASE)
_BEGIN_MODES = re.compile(r"^\s*(?:BEGIN(?:\s+(?:WORK|TRANSACTION))?|START\s+TRANSACTION)"
                          r"(?P<modes>.*?)\s*;?\s*$", re.IGNORECASE | re.DOTALL)


def read_transaction_options(modes: str) -> TransactionOptions:
    """Transaction modes such as `ISOLATION LEVEL SERIALIZABLE, READ ONLY` (commas optional, as
    in PostgreSQL's grammar; 42601 if not)."""
    options = TransactionOptions()
    pos, text = 0, modes.strip()
    while pos < len(text):
        m = _MODE.match(text, pos)
        if m is None or m.end() == pos:
            raise _syntax_error(text[pos:])
        if m["level"]:
            options = _replace(options, isolation=Isolation(" ".join(m["level"].lower().split())))
        elif m["access"]:
            options = _replace(options, read_only=m["access"].upper() == "ONLY")
        else:
            options = _replace(options, deferrable=not m["not"])
        pos = m.end()
    return options


def _replace(options: TransactionOptions, **changes: object) -> TransactionOptions:
    values = {f: getattr(options, f) for f in TransactionOptions.__slots__}
    values.update(changes)
    return TransactionOptions(**values)  # type: ignore[arg-type]


def read_begin(sql: str) -> TransactionOptions | None:
    """The modes of BEGIN / START TRANSACTION, or None when `sql` is not one of them."""
    m = _BEGIN_MODES.match(sql)
    return None if m is None else read_transaction_options(m["modes"])


def read_transaction_settings(sql: str) -> tuple[SessionCommand, ...]:
    """`SET [SESSION CHARACTERISTICS AS] TRANSACTION modes` as the SETs it stands for."""
    m = _SET_TRANSACTION.match(sql)
    if m is None:
        return ()
    options = read_transaction_options(m["modes"])
    prefix = "default_transaction_" if m["session"] else "transaction_"
    settings = []
    if options.isolation is not None:
        settings.append(SessionCommand(prefix + "isolation", options.isolation.value))
    if options.read_only is not None:
        settings.append(SessionCommand(prefix + "read_only", "on" if options.read_only else "off"))
    if options.deferrable is not None:
        settings.append(SessionCommand(prefix + "deferrable",
                                       "on" if options.deferrable else "off"))
    return tuple(settings)


# -- savepoints ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SavepointCommand:
    name: str


_SAVEPOINT = re.compile(rf"^\s*SAVEPOINT\s+(?P<name>{IDENTIFIER})\s*;?\s*$", re.IGNORECASE)
_RELEASE = re.compile(rf"^\s*RELEASE\s+(?:SAVEPOINT\s+)?(?P<name>{IDENTIFIER})\s*;?\s*$",
                      re.IGNORECASE)
_ROLLBACK_TO = re.compile(rf"^\s*(?:ROLLBACK|ABORT)(?:\s+(?:WORK|TRANSACTION))?\s+TO\s+"
                          rf"(?:SAVEPOINT\s+)?(?P<name>{IDENTIFIER})\s*;?\s*$", re.IGNORECASE)


def read_savepoint(sql: str) -> SavepointCommand | None:
    return _named(_SAVEPOINT, sql)


def read_release(sql: str) -> SavepointCommand | None:
    return _named(_RELEASE, sql)


def read_rollback_to(sql: str) -> SavepointCommand | None:
    return _named(_ROLLBACK_TO, sql)


def _named(pattern: re.Pattern[str], sql: str) -> SavepointCommand | None:
    m = pattern.match(sql)
    return None if m is None else SavepointCommand(identifier(m["name"]))


# -- cursors -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeclareCommand:
    """DECLARE name [BINARY] [ASENSITIVE | INSENSITIVE] [[NO] SCROLL] CURSOR
    [{WITH | WITHOUT} HOLD] FOR query."""

    name: str
    query: str
    binary: bool = False
    scroll: bool = False
    hold: bool = False


class Direction(enum.Enum):
    """Where FETCH and MOVE go. FORWARD and BACKWARD take `count` rows (None: ALL); ABSOLUTE and
    RELATIVE go to one row (`count` is its position, from the end when negative, or its distance
    from the current row)."""

    FORWARD = "forward"
    BACKWARD = "backward"
    ABSOLUTE = "absolute"
    RELATIVE = "relative"


@dataclass(frozen=True, slots=True)
class FetchCommand:
    """FETCH or MOVE."""

    cursor: str
    direction: Direction
    count: int | None
    move: bool = False


@dataclass(frozen=True, slots=True)
class CloseCommand:
    name: str | None  # None: CLOSE ALL


_DECLARE = re.compile(
    rf"^\s*DECLARE\s+(?P<name>{IDENTIFIER})\s+(?P<options>(?:\w+\s+)*?)CURSOR\s+"
    r"(?:(?P<hold>WITH|WITHOUT)\s+HOLD\s+)?FOR\s+(?P<query>.*?)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL)
_FETCH = re.compile(r"^\s*(?P<verb>FETCH|MOVE)\b(?P<rest>.*?)\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_FETCH_TAIL = re.compile(rf"^(?P<where>.*?)\s*(?:\b(?:FROM|IN)\s+)?(?P<cursor>{IDENTIFIER})$",
                         re.IGNORECASE | re.DOTALL)
_CLOSE = re.compile(rf"^\s*CLOSE\s+(?P<name>{IDENTIFIER})\s*;?\s*$", re.IGNORECASE)
_DECLARE_OPTIONS = {"BINARY", "ASENSITIVE", "INSENSITIVE", "NO", "SCROLL"}


def read_declare(sql: str) -> DeclareCommand | None:
    m = _DECLARE.match(sql)
    if m is None:
        return None
    words = m["options"].upper().split()
    if any(w not in _DECLARE_OPTIONS for w in words):
        raise _syntax_error(next(w for w in words if w not in _DECLARE_OPTIONS))
    scroll = "SCROLL" in words and not any(a == "NO" and b == "SCROLL"
                                           for a, b in zip(words, words[1:], strict=False))
    return DeclareCommand(identifier(m["name"]), m["query"], binary="BINARY" in words,
                          scroll=scroll, hold=(m["hold"] or "").upper() == "WITH")


def read_fetch(sql: str) -> FetchCommand | None:
    """FETCH / MOVE [direction] [FROM | IN] cursor."""
    m = _FETCH.match(sql)
    if m is None:
        return None
    tail = _FETCH_TAIL.match(m["rest"].strip())
    if tail is None:
        raise _syntax_error(m["rest"].strip())
    direction, count = _direction(tail["where"].split())
    return FetchCommand(identifier(tail["cursor"]), direction, count,
                        move=m["verb"].upper() == "MOVE")


_FIXED_DIRECTIONS = {
    (): (Direction.FORWARD, 1), ("NEXT",): (Direction.FORWARD, 1),
    ("PRIOR",): (Direction.BACKWARD, 1), ("FIRST",): (Direction.ABSOLUTE, 1),
    ("LAST",): (Direction.ABSOLUTE, -1), ("ALL",): (Direction.FORWARD, None),
    ("FORWARD",): (Direction.FORWARD, 1), ("BACKWARD",): (Direction.BACKWARD, 1),
    ("FORWARD", "ALL"): (Direction.FORWARD, None), ("BACKWARD", "ALL"): (Direction.BACKWARD, None),
}
_COUNTED = {"FORWARD": Direction.FORWARD, "BACKWARD": Direction.BACKWARD,
            "ABSOLUTE": Direction.ABSOLUTE, "RELATIVE": Direction.RELATIVE}


def _direction(words: list[str]) -> tuple[Direction, int | None]:
    key = tuple(w.upper() for w in words)
    if key in _FIXED_DIRECTIONS:
        return _FIXED_DIRECTIONS[key]
    if len(key) == 1 or (len(key) == 2 and key[0] in _COUNTED):
        try:
            value = int(words[-1])
        except ValueError:
            raise _syntax_error(words[-1]) from None
        direction = _COUNTED[key[0]] if len(key) == 2 else Direction.FORWARD
        if value < 0 and direction in (Direction.FORWARD, Direction.BACKWARD):
            # A negative count goes the other way, as in PostgreSQL.
            direction = (Direction.BACKWARD if direction is Direction.FORWARD
                         else Direction.FORWARD)
            value = -value
        return direction, value
    raise _syntax_error(" ".join(words))


def read_close(sql: str) -> CloseCommand | None:
    if re.match(r"^\s*CLOSE\s+ALL\s*;?\s*$", sql, re.IGNORECASE):
        return CloseCommand(None)
    m = _CLOSE.match(sql)
    return None if m is None else CloseCommand(identifier(m["name"]))


# -- notifications -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListenCommand:
    channel: str | None  # UNLISTEN *: None
    listen: bool = True  # False: UNLISTEN


@dataclass(frozen=True, slots=True)
class NotifyCommand:
    channel: str
    payload: str = ""


_LISTEN = re.compile(rf"^\s*(?P<verb>LISTEN|UNLISTEN)\s+(?:(?P<all>\*)|(?P<channel>{IDENTIFIER}))"
                     r"\s*;?\s*$", re.IGNORECASE)
_NOTIFY = re.compile(rf"^\s*NOTIFY\s+(?P<channel>{IDENTIFIER})\s*"
                     r"(?:,\s*'(?P<payload>(?:[^']|'')*)')?\s*;?\s*$", re.IGNORECASE | re.DOTALL)
MAX_PAYLOAD_BYTES = 7999  # PostgreSQL's limit


def read_listen(sql: str) -> ListenCommand | None:
    m = _LISTEN.match(sql)
    if m is None:
        return None
    listen = m["verb"].upper() == "LISTEN"
    if m["all"] and listen:
        raise _syntax_error("*")
    return ListenCommand(None if m["all"] else identifier(m["channel"]), listen)


def read_notify(sql: str) -> NotifyCommand | None:
    m = _NOTIFY.match(sql)
    if m is None:
        return None
    payload = (m["payload"] or "").replace("''", "'")
    if len(payload.encode()) > MAX_PAYLOAD_BYTES:
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE, "payload string too long")
    return NotifyCommand(identifier(m["channel"]), payload)


# -- LOCK ----------------------------------------------------------------------------------------

# PostgreSQL's table lock modes, as `pg_advisory.Mode`'s numbers.
LOCK_MODES = {"ACCESS SHARE": 1, "ROW SHARE": 2, "ROW EXCLUSIVE": 3, "SHARE UPDATE EXCLUSIVE": 4,
              "SHARE": 5, "SHARE ROW EXCLUSIVE": 6, "EXCLUSIVE": 7, "ACCESS EXCLUSIVE": 8}


@dataclass(frozen=True, slots=True)
class LockCommand:
    """LOCK [TABLE] [ONLY] name [*] [, ...] [IN mode MODE] [NOWAIT]."""

    tables: tuple[tuple[str, ...], ...]  # each name's parts, folded
    mode: int  # `LOCK_MODES`'
    nowait: bool


_QUALIFIED = rf"{IDENTIFIER}(?:\s*\.\s*{IDENTIFIER}){{0,2}}(?:\s*\*)?"
_LOCK = re.compile(
    rf"^\s*LOCK\s+(?:TABLE\s+)?(?P<names>(?:ONLY\s+)?{_QUALIFIED}(?:\s*,\s*(?:ONLY\s+)?"
    rf"{_QUALIFIED})*)(?:\s+IN\s+(?P<mode>[A-Z ]+?)\s+MODE)?(?P<nowait>\s+NOWAIT)?\s*;?\s*$",
    re.IGNORECASE)
_ONLY = re.compile(r"^\s*ONLY\s+", re.IGNORECASE)


def read_lock(sql: str) -> LockCommand | None:
    if not re.match(r"^\s*LOCK\b", sql, re.IGNORECASE):
        return None
    m = _LOCK.match(sql)
    if m is None:
        raise _syntax_error(sql.split(None, 1)[1] if len(sql.split()) > 1 else "")
    mode = " ".join((m["mode"] or "ACCESS EXCLUSIVE").upper().split())
    if mode not in LOCK_MODES:
        raise _syntax_error(mode)
    tables = tuple(tuple(identifier(p) for p in re.findall(IDENTIFIER, _ONLY.sub("", name)))
                   for name in m["names"].split(","))
    return LockCommand(tables, LOCK_MODES[mode], bool(m["nowait"]))


# -- SET CONSTRAINTS -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConstraintsCommand:
    """SET CONSTRAINTS { ALL | name [, ...] } { DEFERRED | IMMEDIATE }."""

    names: tuple[tuple[str, ...], ...]  # each name's parts, folded; empty for ALL
    deferred: bool


_SET_CONSTRAINTS = re.compile(
    rf"^\s*SET\s+CONSTRAINTS\s+(?:(?P<all>ALL)|(?P<names>{_QUALIFIED}(?:\s*,\s*{_QUALIFIED})*))"
    r"\s+(?P<mode>DEFERRED|IMMEDIATE)\s*;?\s*$", re.IGNORECASE)


def read_set_constraints(sql: str) -> ConstraintsCommand | None:
    if not re.match(r"^\s*SET\s+CONSTRAINTS\b", sql, re.IGNORECASE):
        return None
    m = _SET_CONSTRAINTS.match(sql)
    if m is None:  # (PostgreSQL points at the word where DEFERRED or IMMEDIATE should be)
        words = sql.rstrip().rstrip(";").split()
        raise _syntax_error(words[-1] if len(words) > 3 else "")
    names = () if m["all"] else tuple(
        tuple(identifier(p) for p in re.findall(IDENTIFIER, name))
        for name in m["names"].split(","))
    return ConstraintsCommand(names, m["mode"].upper() == "DEFERRED")
