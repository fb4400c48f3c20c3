"""Frontend message parsing, without a server: the one-pass readings of Bind, Describe and
Execute against `_Body`'s careful reading (the reference), on random and broken bodies."""

from __future__ import annotations

import random
import struct

import pytest

from heron.server import protocol
from heron.server.protocol import ProtocolError


def careful(kind: bytes, raw: bytes) -> protocol.FrontendMessage | ProtocolError:
    """What the reference reading makes of a body: the message, or the error it raises."""
    body = protocol._Body(raw)
    try:
        message = protocol._PARSERS[kind](body)
        body.end()
    except ProtocolError as exc:
        return exc
    return message


def cstr(text: str) -> bytes:
    return text.encode() + b"\0"


def bind_body(rng: random.Random) -> bytes:
    names = ["", "p", "s1", "é名"]
    params = [None if rng.random() < 0.2 else rng.randbytes(rng.randrange(6))
              for _ in range(rng.randrange(4))]
    body = cstr(rng.choice(names)) + cstr(rng.choice(names))
    formats = [rng.choice((0, 1)) for _ in range(rng.choice((0, 1, len(params))))]
    body += struct.pack(f"!h{len(formats)}h", len(formats), *formats)
    body += struct.pack("!h", len(params))
    for p in params:
        body += struct.pack("!i", -1) if p is None else struct.pack("!i", len(p)) + p
    results = [rng.choice((0, 1)) for _ in range(rng.choice((0, 1, 3)))]
    return body + struct.pack(f"!h{len(results)}h", len(results), *results)


def broken(rng: random.Random, raw: bytes) -> bytes:
    """`raw` truncated, extended, or with a byte changed (to NUL, 0xff or 0x80 often)."""
    choice = rng.randrange(3)
    if choice == 0 and raw:
        return raw[: rng.randrange(len(raw))]
    if choice == 1:
        return raw + rng.randbytes(rng.randrange(1, 4))
    if not raw:
        return raw
    at = rng.randrange(len(raw))
    return raw[:at] + bytes([rng.choice((0, 0xFF, 0x80, rng.randrange(256)))]) + raw[at + 1 :]


BODIES = {
    b"B": bind_body,
    b"D": lambda rng: rng.choice(b"SPX").to_bytes() + cstr(rng.choice(["", "p", "é"])),
    b"E": lambda rng: cstr(rng.choice(["", "c", "é"])) + struct.pack("!i", rng.randrange(-2, 9)),
}


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_quick_reading_agrees_with_the_careful_one(kind: bytes) -> None:
    rng = random.Random(kind[0])
    quick = protocol._FAST_PARSERS[kind]
    for _ in range(3000):
        raw = BODIES[kind](rng)
        if rng.random() < 0.5:
            raw = broken(rng, raw)
        expected = careful(kind, raw)
        got = quick(raw)
        if isinstance(expected, ProtocolError):
            assert got is None, (raw, expected)
        else:  # a well-formed message may be left to the careful reading, never read otherwise
            assert got is None or got == expected, (raw, got, expected)
            if kind != b"D" or raw[:1] in (b"S", b"P"):
                assert got == expected or not raw.isascii(), raw


def test_a_reader_takes_a_pipeline_whole() -> None:
    def message(kind: bytes, body: bytes) -> bytes:
        return kind + struct.pack("!i", len(body) + 4) + body

    bind = cstr("") + cstr("s1") + struct.pack("!hhhi", 1, 0, 1, 2) + b"42" + struct.pack(
        "!hh", 1, 1)
    data = (message(b"B", bind) + message(b"D", b"P\0") + message(b"E", b"\0\0\0\0\0")
            + message(b"S", b""))
    reader = protocol.MessageReader(None)  # type: ignore[arg-type] (parsing only)
    reader._data += data
    reader._parse_complete()
    assert list(reader.pending) == [
        protocol.Bind("", "s1", (0,), (b"42",), (1,)), protocol.Describe("P", ""),
        protocol.Execute("", 0), protocol.Sync()]
    assert not reader._data
