"""Random JSON documents as a client may write them, for comparing jsonb with PostgreSQL 15.

`documents(count, seed)` gives `count` JSON texts (the same for the same seed) that exercise
what jsonb normalizes: objects with keys of different lengths, bytes and scripts (ASCII,
accented, CJK, astral characters, control characters, escapes), duplicated keys, nested
containers, empty ones, numbers written every way JSON allows (signs, zeros, fractions with
trailing zeros, exponents of either case and sign, big integers, tiny and huge magnitudes),
strings with every kind of escape (\\uXXXX in either case, surrogate pairs, \\/), and
whitespace of the four kinds JSON allows around every token. Every text is valid JSON that
PostgreSQL's jsonb accepts (no \\u0000, no lone surrogates, numbers within numeric's range).
`parts(texts, seed)` pairs each document with a candidate for `@>`: mostly part of it.
"""

from __future__ import annotations

import json
import random
from decimal import Decimal
from typing import Any

_KEY_CHARS = "abcAB_ -é日\U0001d11e\t\"\\/"
_STRING_CHARS = "az AZ09.-é€日\U0001f600\n\t\r\b\f\"\\/\x01\x1f\x7f\u2028"
_WHITESPACE = ("", "", "", " ", "  ", "\n", "\t", "\r\n", " \t ")


def _string(rng: random.Random, chars: str, longest: int) -> str:
    """A JSON string literal of random characters, each written as itself or escaped."""
    out = ['"']
    for c in rng.choices(chars, k=rng.randint(0, longest)):
        code = ord(c)
        if c in '"\\' or code < 0x20:
            short = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r",
                     "\b": "\\b", "\f": "\\f"}.get(c)
            out.append(short if short and rng.random() < 0.7 else f"\\u{code:04x}")
        elif c == "/" and rng.random() < 0.5:
            out.append("\\/")
        elif rng.random() < 0.2:  # escaped although it need not be
            if code > 0xFFFF:  # a surrogate pair
                code -= 0x10000
                high, low = 0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)
                out.append(f"\\u{high:04x}\\u{low:04X}")
            else:
                out.append(f"\\u{code:04X}" if rng.random() < 0.5 else f"\\u{code:04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def _number(rng: random.Random) -> str:
    sign = "-" if rng.random() < 0.3 else ""
    kind = rng.random()
    if kind < 0.1:
        integer = "0"
    elif kind < 0.2:
        integer = str(rng.randint(1, 9)) + "".join(rng.choices("0123456789", k=rng.randint(15, 40)))
    else:
        integer = str(rng.randint(0, 10 ** rng.randint(1, 6)))
    fraction = ""
    if rng.random() < 0.5:
        fraction = "." + "".join(rng.choices("0123456789", k=rng.randint(1, 8)))
        if rng.random() < 0.3:
            fraction += "0" * rng.randint(1, 3)  # trailing zeros jsonb keeps
    exponent = ""
    if rng.random() < 0.35:
        exponent = (rng.choice("eE") + rng.choice(["", "+", "-"])
                    + str(rng.choice([0, 1, 2, 3, 7, 20, 100, 300])))
    return sign + integer + fraction + exponent


def _value(rng: random.Random, depth: int, container: bool = False) -> str:
    """A random JSON value (`container`: an object or an array)."""
    ws = lambda: rng.choice(_WHITESPACE)  # noqa: E731 - whitespace around a token
    roll = rng.random() * (0.45 if container else 1)
    if depth < 4 and roll < 0.25:
        keys = [_string(rng, _KEY_CHARS, 4) for _ in range(rng.randint(0, 6))]
        if keys and rng.random() < 0.3:
            keys.append(rng.choice(keys))  # a duplicated key: the last value stays
        pairs = [f"{ws()}{k}{ws()}:{ws()}{_value(rng, depth + 1)}{ws()}" for k in keys]
        return "{" + ",".join(pairs) + "}" if pairs else "{" + ws() + "}"
    if depth < 4 and roll < 0.45:
        items = [f"{ws()}{_value(rng, depth + 1)}{ws()}" for _ in range(rng.randint(0, 5))]
        return "[" + ",".join(items) + "]" if items else "[" + ws() + "]"
    if roll < 0.7:
        return _number(rng)
    if roll < 0.9:
        return _string(rng, _STRING_CHARS, 8)
    return rng.choice(["true", "false", "null"])


def documents(count: int, seed: int = 0) -> list[str]:
    """`count` random JSON texts (see the module docstring)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        ws = rng.choice(_WHITESPACE)
        out.append(ws + _value(rng, 0, container=rng.random() < 0.85) + ws)
    return out


def _pruned(rng: random.Random, value: Any) -> Any:
    """Part of a parsed value: some of its keys and elements, sometimes a scalar changed."""
    if isinstance(value, dict):
        keys = [k for k in value if rng.random() < 0.6]
        return {k: _pruned(rng, value[k]) for k in keys}
    if isinstance(value, list):
        items = [_pruned(rng, v) for v in value if rng.random() < 0.6]
        rng.shuffle(items)
        return items
    if rng.random() < 0.15:  # no longer part of it (or, by chance, still)
        return rng.choice([0, 1, "a", True, None, [], {}])
    return value


def parts(texts: list[str], seed: int = 0) -> list[tuple[str, str]]:
    """(document, candidate) pairs for containment: each candidate mostly a part of its
    document (keys and elements left out, a scalar changed now and then), else another
    document; numbers keep their value (Decimal), not their spelling."""
    rng = random.Random(seed)
    out = []
    for text in texts:
        value = json.loads(text, parse_float=Decimal)
        candidate = _pruned(rng, value) if rng.random() < 0.8 else json.loads(
            rng.choice(texts), parse_float=Decimal)
        if rng.random() < 0.1 and isinstance(candidate, list) and candidate:
            candidate = candidate[0]  # a scalar (or container) an array may contain
        out.append((text, _dumps(candidate)))
    return out


def _dumps(value: Any) -> str:
    """JSON text of a parsed value, Decimals as numbers (json.dumps would quote them)."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_dumps(v) for v in value) + "]"
    return json.dumps(value)
