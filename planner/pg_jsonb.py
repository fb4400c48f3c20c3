"""PostgreSQL's jsonb over DuckDB's one JSON type: its text, and the operators DuckDB lacks.

DuckDB keeps a jsonb value as JSON text; Heron stores it normalized (`jsonb_storage`), so that
DuckDB's comparisons of the text (=, DISTINCT, GROUP BY, joins) are jsonb's equality. What makes
a value jsonb is its declared type (`column_origins`), never its DuckDB type.

Contract:
- `normalize(text)` is the text PostgreSQL 15 sends for the jsonb value of `text`
  (jsonb_out(jsonb_in(text))): object keys ordered shorter first, then bytewise (UTF-8), the last
  value of a duplicated key kept; `{"a": 1, "b": [1, 2]}` spacing; numbers as numeric prints
  them (1e2 -> 100, 1.50 -> 1.50, -0 -> 0, no exponent); strings re-escaped as escape_json does
  (`"`, `\\`, \\b \\f \\n \\r \\t, other control characters as \\u00xx, everything else as
  itself). Text PostgreSQL's JSON parser refuses and DuckDB's accepts (trailing commas, NaN,
  Infinity, a lone surrogate escape) raises `SqlError` 22P02, a `\\u0000` escape 22P05, as
  jsonb_in would have at the cast; nesting too deep for Python's parser 54001.
- `NORMALIZE` names `normalize` as the DuckDB function `register` registers, JSON to JSON
  (any value DuckDB casts to JSON implicitly, as a JSON column would take it), its `SqlError`s
  `carried` through DuckDB with their SQLSTATEs.
- `contains(a, b)` is PostgreSQL's `a @> b` (jsonb_contains; `contained(a, b)` is `a <@ b`):
  objects contain objects key by key (values recursively; scalars equal, numbers by value),
  arrays contain arrays element by element (a scalar among the other's scalars, a container in
  one of its containers), a top-level array also contains a scalar, a scalar only itself.
- `exists(value, key)`, `exists_any(value, keys)`, `exists_all(value, keys)` are `?`, `?|`,
  `?&`: the string is a top-level key, or a string element of a top-level array (or the
  top-level string itself); NULL keys are skipped.
- `path(value, steps)` and `path_text` are `#>` / `#>>` (jsonb_extract_path(_text)): each step
  a key of an object or an int4 subscript of an array (negative from the end); NULL where a
  step is NULL or reaches nothing. `array_length`, `object_keys`, `each` (`text`: each_text) and
  `array_elements` are the functions of those names, the set-returning ones' rows as a list;
  on a value of the wrong kind they raise PostgreSQL's `SqlError` 22023 (its words for jsonb
  and for json). `jsonb=False` reads json, keeping its keys' order and numbers' text (jsonb's
  text is normalized: the json reading serves the operators of both).
  `VALUE_FUNCTIONS` names them (with the json twins) as PostgreSQL's functions, registered
  `PREFIX` + name, NULL for a NULL argument, their `SqlError`s `carried`.
- `concat(a, b)` is jsonb's `||` (two objects merged, the second's value for a shared key;
  anything else as arrays concatenated, a non-array as an array of it); `delete_key`,
  `delete_keys` and `delete_index` are `-` of text, text[] and integer (22023 on a scalar, an
  index on an object); `set_path` is jsonb_set, `strip_nulls` jsonb_strip_nulls, `pretty`
  jsonb_pretty, as PostgreSQL 15's; an operand that is not JSON raises 22P02. They are
  `VALUE_FUNCTIONS` too (jsonb_concat, jsonb_delete, jsonb_delete_keys, jsonb_delete_index,
  jsonb_set, jsonb_strip_nulls, jsonb_pretty), their results normalized.
- `FUNCTIONS` names them as PostgreSQL's functions behind the operators, with their DuckDB
  signatures; `register(con)` registers them as Python functions (`pg_catalog.register` calls
  it on the root connection), `@>` and `<@` also as overloads of DuckDB's own operators for
  text operands (JSON is text to DuckDB's binder; lists keep the list overloads), and
  `pg_semantics.rewrite` turns `?`, `?|` and `?&`, which DuckDB reads as parameters, into
  calls.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from decimal import Decimal
from json.encoder import encode_basestring
from typing import Any

import duckdb

from heron.planner.errors import SqlError, SqlState, carried, carrying


class _Numeric(str):
    """A number's text as numeric_out prints it (a `str` the emitter does not quote)."""

    __slots__ = ()


# numeric's limits: digits before the point, and the display scale (digits after it).
MAX_INTEGER_DIGITS = 131072
MAX_SCALE = 16383


def _overflow() -> SqlError:
    return SqlError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")


def _number(text: str) -> _Numeric:
    """numeric_in then numeric_out of a JSON number with a fraction or an exponent: display
    scale = fraction digits less the exponent (at least 0), no exponent in the output, and no
    sign on zero (numeric has no negative zero)."""
    if "e" not in text and "E" not in text and len(text) <= MAX_SCALE:
        # Without an exponent, JSON's text (no leading zeros) is numeric's but for -0.0.
        return _Numeric(text[1:] if text[0] == "-" and not text.strip("-0.") else text)
    value = Decimal(text)
    scale = max(0, -value.as_tuple().exponent)
    if scale > MAX_SCALE or (not value.is_zero() and value.adjusted() >= MAX_INTEGER_DIGITS):
        raise _overflow()
    out = f"{value:.{scale}f}"  # exact: the scale keeps every digit
    return _Numeric(out[1:] if value.is_zero() and out[0] == "-" else out)


def _long_integer(text: str) -> _Numeric:
    """An integer beyond Python's int-to-text limit (4,300 digits), as its own text."""
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _overflow()
    return _Numeric("0" if text == "-0" else text)  # JSON's only signed zero


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as jsonb keeps them: one per key (the last), ordered by the UTF-8 length
    of the key, then bytewise. Code point order is UTF-8's byte order, so the strings sort as
    they are, then (stably) by length: two sorts by C functions, no Python key per key."""
    unique = dict(pairs)
    if len(unique) < 2:
        return unique
    keys = sorted(unique)
    keys.sort(key=len if "".join(keys).isascii() else _utf8_length)
    return {key: unique[key] for key in keys}


def _utf8_length(key: str) -> int:
    return len(key.encode("utf-8", "surrogatepass"))


class _Refused(ValueError):
    """What Python's JSON grammar accepts and PostgreSQL's does not."""


def _constant(name: str) -> Any:
    raise _Refused(f'Token "{name}" is invalid.')


# Python's JSON grammar is PostgreSQL's (RFC 8259: the same whitespace, numbers and escapes, no
# control characters in strings), but for NaN and the infinities, refused here. Integers are
# Python's own (a JSON integer's text is numeric's output but for -0, which int prints as 0).
_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_float=_number,
                            parse_constant=_constant)
_LONG_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_float=_number,
                                 parse_int=_long_integer, parse_constant=_constant)
# A \u0000 escape: a backslash preceded by an even number of backslashes (0 included).
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def normalize(text: str) -> str:
    """PostgreSQL's text of the jsonb value `text` (see the module docstring)."""
    try:
        try:
            value = _DECODER.decode(text)
        except (json.JSONDecodeError, _Refused):
            raise
        except ValueError:  # an integer longer than int() reads
            value = _LONG_DECODER.decode(text)
        parts: list[str] = []
        escaped = encode_basestring
        if "\\u" in text:  # an escape may have made a NUL or a lone surrogate
            if "\\u0000" in text and _NUL_ESCAPE.search(text):  # a cheap test first
                raise SqlError(SqlState.UNTRANSLATABLE_CHARACTER,
                               "unsupported Unicode escape sequence",
                               detail="\\u0000 cannot be converted to text.")
            escaped = _checked
        _emit(value, parts.append, escaped)
    except ValueError as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise SqlError(SqlState.INVALID_TEXT_REPRESENTATION,
                       "invalid input syntax for type json", detail=detail) from None
    except RecursionError:
        raise SqlError(SqlState.STATEMENT_TOO_COMPLEX, "stack depth limit exceeded",
                       hint="The JSON document nests too deeply.") from None
    return "".join(parts)


def _checked(text: str) -> str:
    """`encode_basestring` of a string that an escape may have given a lone surrogate, which
    PostgreSQL's parser refuses."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("Unicode low surrogate must follow a high surrogate.") from None
    return encode_basestring(text)


def _emit(value: Any, out: Callable[[str], None], escaped: Callable[[str], str]) -> None:
    """Append jsonb_out's text of a parsed value (`_DECODER`'s) to `out`."""
    if isinstance(value, str):
        out(value if type(value) is _Numeric else escaped(value))
    elif isinstance(value, dict):
        if not value:
            out("{}")
            return
        separator = "{"
        for key, item in value.items():
            out(separator)
            out(escaped(key))
            out(": ")
            _emit(item, out, escaped)
            separator = ", "
        out("}")
    elif isinstance(value, list):
        if not value:
            out("[]")
            return
        separator = "["
        for item in value:
            out(separator)
            _emit(item, out, escaped)
            separator = ", "
        out("]")
    elif value is True:
        out("true")
    elif value is False:
        out("false")
    elif value is None:
        out("null")
    else:
        out(repr(value))  # an int


# -- the operators ------------------------------------------------------------------------------

# Values for comparing: numbers as Decimals (PostgreSQL compares numerics by value), objects
# with their last value per key.
_VALUE_DECODER = json.JSONDecoder(parse_float=Decimal, parse_int=Decimal,
                                  parse_constant=_constant)
_CACHED_BELOW = 1024  # characters: an operator's constant operand is parsed once


@functools.lru_cache(maxsize=256)
def _cached_value(text: str) -> Any:
    return _VALUE_DECODER.decode(text)


def _value(text: str) -> Any:
    return _cached_value(text) if len(text) < _CACHED_BELOW else _VALUE_DECODER.decode(text)


def _container(value: Any) -> bool:
    return isinstance(value, dict | list)


def _same_scalar(a: Any, b: Any) -> bool:
    # type first: True == 1 and Decimal(1) == 1 in Python, never in jsonb
    return type(a) is type(b) and a == b


def _deep_contains(value: Any, wanted: Any) -> bool:
    """JsonbDeepContains: `wanted` within `value`, both containers of the same kind."""
    if isinstance(wanted, dict):
        if not isinstance(value, dict):
            return False
        for key, item in wanted.items():
            if key not in value:
                return False
            have = value[key]
            if _container(item) or _container(have):
                if type(item) is not type(have) or not _deep_contains(have, item):
                    return False
            elif not _same_scalar(have, item):
                return False
        return True
    if not isinstance(value, list) or not isinstance(wanted, list):
        return False
    scalars = [v for v in value if not _container(v)]
    containers = [v for v in value if _container(v)]
    for item in wanted:
        if _container(item):
            if not any(type(c) is type(item) and _deep_contains(c, item) for c in containers):
                return False
        elif not any(_same_scalar(s, item) for s in scalars):
            return False
    return True


def contains(value: str, wanted: str) -> bool:
    """`value @> wanted` (jsonb_contains)."""
    a, b = _value(value), _value(wanted)
    if isinstance(a, dict) != isinstance(b, dict):
        return False
    # jsonb keeps a top-level scalar as a one-element array: an array contains it, and it
    # contains only itself.
    if not _container(a):
        return not _container(b) and _same_scalar(a, b)
    return _deep_contains(a, b if _container(b) else [b])


def contained(value: str, container: str) -> bool:
    """`value <@ container` (jsonb_contained)."""
    return contains(container, value)


def exists(value: str, key: str) -> bool:
    """`value ? key` (jsonb_exists)."""
    parsed = _value(value)
    if isinstance(parsed, dict):
        return key in parsed
    if isinstance(parsed, list):
        return any(isinstance(item, str) and item == key for item in parsed)
    return isinstance(parsed, str) and parsed == key


def exists_any(value: str, keys: list[str | None]) -> bool:
    """`value ?| keys` (jsonb_exists_any)."""
    return any(exists(value, key) for key in keys if key is not None)


def exists_all(value: str, keys: list[str | None]) -> bool:
    """`value ?& keys` (jsonb_exists_all)."""
    return all(exists(value, key) for key in keys if key is not None)


# name -> (function, DuckDB parameter types); each returns BOOLEAN. VARCHAR, not JSON: a JSON
# parameter would take lists too (DuckDB casts any value to JSON implicitly), and JSON is text.
FUNCTIONS: dict[str, tuple[Callable[..., bool], tuple[str, ...]]] = {
    "jsonb_contains": (contains, ("VARCHAR", "VARCHAR")),
    "jsonb_contained": (contained, ("VARCHAR", "VARCHAR")),
    "jsonb_exists": (exists, ("VARCHAR", "VARCHAR")),
    "jsonb_exists_any": (exists_any, ("VARCHAR", "VARCHAR[]")),
    "jsonb_exists_all": (exists_all, ("VARCHAR", "VARCHAR[]")),
}
# DuckDB's operators that also take text, as these functions.
OPERATORS = {"@>": "jsonb_contains", "<@": "jsonb_contained"}
NORMALIZE = "heron_jsonb_in"


def _normalized_in_duckdb(text: str) -> str:
    try:
        return normalize(text)
    except SqlError as exc:
        raise carried(exc) from None


# -- paths, lengths and the set-returning functions ---------------------------------------------

# json keeps its text: numbers as written, keys in order (a duplicated key's last value).
_JSON_DECODER = json.JSONDecoder(parse_float=_Numeric, parse_int=_Numeric,
                                 parse_constant=_constant)
_MISSING = object()
_INDEX = re.compile(r"\s*[+-]?\d+")  # what strtol reads whole (PostgreSQL's path subscripts)


def _parse(text: str, jsonb: bool) -> Any:
    """A jsonb value's tree (`_DECODER`'s: jsonb's text is normalized) or a json value's."""
    return _DECODER.decode(text) if jsonb else _JSON_DECODER.decode(text)


def _text(value: Any) -> str:
    """jsonb_out's text of a parsed value."""
    parts: list[str] = []
    _emit(value, parts.append, encode_basestring)
    return "".join(parts)


def _as_text(value: Any) -> str | None:
    """`->>`'s text of a parsed value: a string unquoted, JSON null as SQL NULL."""
    if value is None:
        return None
    if isinstance(value, str) and type(value) is not _Numeric:
        return value
    return _text(value)


def _subscript(step: str) -> int | None:
    """A path element as an array subscript (None: not an int4, so no element)."""
    if not _INDEX.fullmatch(step):
        return None
    index = int(step)
    return index if -(2 ** 31) <= index < 2 ** 31 else None


def _at_path(value: Any, path: list[str | None]) -> Any:
    """The value `path` reaches, as `#>` walks it: a key of an object, a subscript of an array
    (negative from the end); `_MISSING` where an element is NULL or reaches nothing."""
    for step in path:
        if step is None:
            return _MISSING
        if isinstance(value, dict):
            if step not in value:
                return _MISSING
            value = value[step]
        elif isinstance(value, list):
            index = _subscript(step)
            if index is None or not -len(value) <= index < len(value):
                return _MISSING
            value = value[index]
        else:
            return _MISSING
    return value


def path(value: str, steps: list[str | None], jsonb: bool = True) -> str | None:
    """`value #> steps` (jsonb_extract_path)."""
    found = _at_path(_parse(value, jsonb), steps)
    return None if found is _MISSING else _text(found)


def path_text(value: str, steps: list[str | None], jsonb: bool = True) -> str | None:
    """`value #>> steps` (jsonb_extract_path_text)."""
    found = _at_path(_parse(value, jsonb), steps)
    return None if found is _MISSING else _as_text(found)


def _kind(value: Any) -> str:
    return "an object" if isinstance(value, dict) else "an array" if isinstance(
        value, list) else "a scalar"


def _refused(message: str) -> SqlError:
    return SqlError(SqlState.INVALID_PARAMETER_VALUE, message)


def array_length(value: str, jsonb: bool = True) -> int:
    """jsonb_array_length (json_array_length)."""
    parsed = _parse(value, jsonb)
    if isinstance(parsed, list):
        return len(parsed)
    raise _refused("cannot get array length of a " + (
        "non-array" if isinstance(parsed, dict) else "scalar"))


def object_keys(value: str, jsonb: bool = True) -> list[str]:
    """jsonb_object_keys (json_object_keys): the rows, as a list."""
    parsed = _parse(value, jsonb)
    if not isinstance(parsed, dict):
        raise _refused(f"cannot call {'jsonb' if jsonb else 'json'}_object_keys on "
                       + _kind(parsed))
    return list(parsed)


def each(value: str, jsonb: bool = True, text: bool = False) -> list[dict[str, str | None]]:
    """jsonb_each (json_each; `text`: jsonb_each_text): the rows (key, value), as a list."""
    parsed = _parse(value, jsonb)
    if not isinstance(parsed, dict):
        if not jsonb:  # json's own words
            raise _refused("cannot deconstruct " + (
                "an array as an object" if isinstance(parsed, list) else "a scalar"))
        raise _refused(f"cannot call jsonb_each{'_text' if text else ''} on a non-object")
    show = _as_text if text else _text
    return [{"key": key, "value": show(item)} for key, item in parsed.items()]


def array_elements(value: str, jsonb: bool = True, text: bool = False) -> list[str | None]:
    """jsonb_array_elements (json_array_elements; `text`: jsonb_array_elements_text): the rows,
    as a list."""
    parsed = _parse(value, jsonb)
    if not isinstance(parsed, list):
        if not jsonb:  # json's own words
            name = "json_array_elements" + ("_text" if text else "")
            raise _refused(f"cannot call {name} on a " + (
                "non-array" if isinstance(parsed, dict) else "scalar"))
        raise _refused("cannot extract elements from " + _kind(parsed))
    show = _as_text if text else _text
    return [show(item) for item in parsed]


# -- functions and operators that build new values ---------------------------------------------

def _jsonb(text: str) -> Any:
    """A jsonb operand's tree; text that is not JSON raises PostgreSQL's 22P02 (an untyped
    literal beside a jsonb operand is read as jsonb)."""
    try:
        return _parse(text, True)
    except ValueError:
        raise SqlError(SqlState.INVALID_TEXT_REPRESENTATION,
                       "invalid input syntax for type json") from None


def _out(value: Any) -> str:
    return normalize(_text(value))


def concat(a: str, b: str) -> str:
    """`a || b`: two objects merged (b's value for a key both have), anything else as arrays
    concatenated (a value that is not an array as an array of it)."""
    x, y = _jsonb(a), _jsonb(b)
    if isinstance(x, dict) and isinstance(y, dict):
        return _out({**x, **y})
    return _out((x if isinstance(x, list) else [x]) + (y if isinstance(y, list) else [y]))


def _deleting(value: Any) -> None:
    if not isinstance(value, dict | list):
        raise _refused("cannot delete from scalar")


def delete_keys(value: str, keys: list[str | None]) -> str:
    """`value - text[]`: the keys gone from an object, the equal strings from an array."""
    tree = _jsonb(value)
    _deleting(tree)
    gone = {k for k in keys if k is not None}
    if isinstance(tree, dict):
        return _out({k: v for k, v in tree.items() if k not in gone})
    return _out([v for v in tree if not (isinstance(v, str) and type(v) is not _Numeric
                                         and v in gone)])


def delete_key(value: str, key: str) -> str:
    """`value - text`."""
    return delete_keys(value, [key])


def delete_index(value: str, index: int) -> str:
    """`value - integer`: an array without its element at `index` (negative from the end;
    out of range: unchanged)."""
    tree = _jsonb(value)
    _deleting(tree)
    if isinstance(tree, dict):
        raise _refused("cannot delete from object using integer index")
    if -len(tree) <= index < len(tree):
        del tree[index]
    return _out(tree)


def set_path(target: str, path: list[str | None], new: str, create_missing: bool = True
             ) -> str:
    """jsonb_set: `new` at `path` (each step a key, or an array subscript, negative from the
    end); a missing last step added when `create_missing` (an array subscript out of range:
    at the start if negative, else at the end); a missing earlier step: unchanged."""
    tree, value = _jsonb(target), _jsonb(new)
    if not isinstance(tree, dict | list):
        raise _refused("cannot set path in scalar")
    if any(step is None for step in path):
        raise SqlError(SqlState.NULL_VALUE_NOT_ALLOWED,
                       "path element at position "
                       f"{next(i for i, s in enumerate(path) if s is None) + 1} is null")
    if not path:
        return _out(tree)
    node = tree
    for depth, step in enumerate(path):
        last = depth == len(path) - 1
        if isinstance(node, dict):
            if last:
                if step in node or create_missing:
                    node[step] = value
            elif step in node:
                node = node[step]
                continue
            break
        if isinstance(node, list):
            index = _subscript(step)
            if index is None:
                raise SqlError(SqlState.INVALID_TEXT_REPRESENTATION,
                               f'path element at position {depth + 1} is not an integer: '
                               f'"{step}"')
            inside = -len(node) <= index < len(node)
            if last:
                if inside:
                    node[index] = value
                elif create_missing:
                    node.insert(0 if index < 0 else len(node), value)
            elif inside:
                node = node[index]
                continue
            break
        break  # a scalar on the way: unchanged
    return _out(tree)


def _stripped(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stripped(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_stripped(v) for v in value]
    return value


def strip_nulls(value: str) -> str:
    """jsonb_strip_nulls: object fields whose value is null removed, at every depth (nulls in
    arrays stay)."""
    return _out(_stripped(_jsonb(value)))


def pretty(value: str) -> str:
    """jsonb_pretty: one element or field per line, four spaces per level."""
    parts: list[str] = []

    def emit(node: Any, indent: int) -> None:
        pad = " " * 4 * (indent + 1)
        if isinstance(node, dict | list):  # (an empty one too: its brackets on two lines)
            opening, closing = ("{", "}") if isinstance(node, dict) else ("[", "]")
            parts.append(opening + "\n")
            items = list(node.items()) if isinstance(node, dict) else [(None, v) for v in node]
            for i, (key, item) in enumerate(items):
                parts.append(pad + (encode_basestring(key) + ": " if key is not None else ""))
                emit(item, indent + 1)
                parts.append(",\n" if i < len(items) - 1 else "\n")
            parts.append(" " * 4 * indent + closing)
        else:
            parts.append(_text(node))

    emit(_jsonb(value), 0)
    return "".join(parts)


_EACH = "STRUCT(key VARCHAR, value JSON)[]"
_EACH_TEXT = "STRUCT(key VARCHAR, value VARCHAR)[]"


def _both(name: str, function: Callable[..., Any], parameters: tuple[str, ...], returns: str,
          json_returns: str | None = None, **options: Any
          ) -> dict[str, tuple[Callable[..., Any], tuple[str, ...], str]]:
    """`name`'s jsonb function and its json twin (`name` with json for jsonb)."""
    return {name: (functools.partial(function, jsonb=True, **options), parameters, returns),
            name.replace("jsonb", "json"): (functools.partial(function, jsonb=False, **options),
                                            parameters, json_returns or returns)}


# PostgreSQL's function -> (function, DuckDB parameter types, DuckDB result type) of the
# Python function `pg_semantics.rewrite` calls for it, named `heron_` and PostgreSQL's name; a
# set-returning function's rows come as a list, which the rewrite unnests.
VALUE_FUNCTIONS: dict[str, tuple[Callable[..., Any], tuple[str, ...], str]] = {
    **_both("jsonb_extract_path", path, ("VARCHAR", "VARCHAR[]"), "JSON"),
    **_both("jsonb_extract_path_text", path_text, ("VARCHAR", "VARCHAR[]"), "VARCHAR"),
    **_both("jsonb_array_length", array_length, ("VARCHAR",), "INTEGER"),
    **_both("jsonb_object_keys", object_keys, ("VARCHAR",), "VARCHAR[]"),
    **_both("jsonb_each", each, ("VARCHAR",), _EACH),
    **_both("jsonb_each_text", each, ("VARCHAR",), _EACH_TEXT, text=True),
    **_both("jsonb_array_elements", array_elements, ("VARCHAR",), "JSON[]"),
    **_both("jsonb_array_elements_text", array_elements, ("VARCHAR",), "VARCHAR[]", text=True),
    "jsonb_set": (set_path, ("VARCHAR", "VARCHAR[]", "VARCHAR", "BOOLEAN"), "JSON"),
    "jsonb_strip_nulls": (strip_nulls, ("VARCHAR",), "JSON"),
    "jsonb_pretty": (pretty, ("VARCHAR",), "VARCHAR"),
    # the operators' (PostgreSQL's jsonb_concat and jsonb_delete)
    "jsonb_concat": (concat, ("VARCHAR", "VARCHAR"), "JSON"),
    "jsonb_delete": (delete_key, ("VARCHAR", "VARCHAR"), "JSON"),
    "jsonb_delete_keys": (delete_keys, ("VARCHAR", "VARCHAR[]"), "JSON"),
    "jsonb_delete_index": (delete_index, ("VARCHAR", "INTEGER"), "JSON"),
}
PREFIX = "heron_"


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Register `NORMALIZE`, `FUNCTIONS`, and `OPERATORS` as overloads of DuckDB's: an overload
    joins the operator's built-in ones (lists' @>), and the binder picks it for text and JSON
    operands only, as lists do not cast to text implicitly (to JSON they do: hence VARCHAR)."""
    for name, (function, parameters) in FUNCTIONS.items():
        con.create_function(name, function, list(parameters), "BOOLEAN")
    for operator, name in OPERATORS.items():
        function, parameters = FUNCTIONS[name]
        con.create_function(operator, function, list(parameters), "BOOLEAN")
    con.create_function(NORMALIZE, _normalized_in_duckdb, ["JSON"], "JSON")
    for name, (function, parameters, returns) in VALUE_FUNCTIONS.items():
        con.create_function(PREFIX + name, carrying(function, len(parameters)),
                            list(parameters), returns, null_handling="special")
