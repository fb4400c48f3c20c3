"""PostgreSQL v3 wire messages: reading frontend messages and building backend ones.

Contract: `read_startup` reads the untyped first packet of a connection (StartupMessage,
SSLRequest, GSSENCRequest or CancelRequest); `read_message` reads one typed message and parses it
into a frozen dataclass (`Query`, `Parse`, `Bind`, ...). Any malformed input (unknown message type,
a length that is too small or too large, fields that run past the end or leave bytes over) raises
`ProtocolError`, which the connection answers with SQLSTATE 08P01 before closing.
`read_sasl_initial_response` and `read_sasl_response` read the authentication exchange's
messages (type 'p': its layout depends on the exchange, so each is read as expected). A clean end
of stream raises `asyncio.IncompleteReadError`, which means the client went away. The `*_message`
functions build complete backend messages as bytes; nothing here touches sessions or sockets
beyond reading from an `asyncio.StreamReader`.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Special request codes sent in place of a protocol version in the first packet.
SSL_REQUEST_CODE = 80877103
GSSENC_REQUEST_CODE = 80877104
CANCEL_REQUEST_CODE = 80877102
PROTOCOL_3_0 = 3 << 16

# PostgreSQL refuses start-up packets over 10000 bytes; other messages may be large (COPY data,
# big parameters) but a length near 2 GiB is garbage or an attack, so cap what we buffer.
MAX_STARTUP_LENGTH = 10_000
MAX_MESSAGE_LENGTH = 256 * 1024 * 1024

_I16 = struct.Struct("!h")
_I32 = struct.Struct("!i")
_HEADER = struct.Struct("!ci")


class ProtocolError(Exception):
    """The client broke the protocol; answered with SQLSTATE 08P01 and the connection closes."""


# -- frontend messages ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Startup:
    version: int
    parameters: dict[str, str]


@dataclass(frozen=True, slots=True)
class SSLRequest:
    pass


@dataclass(frozen=True, slots=True)
class GSSENCRequest:
    pass


@dataclass(frozen=True, slots=True)
class CancelRequest:
    pid: int
    secret: int


@dataclass(frozen=True, slots=True)
class Query:
    sql: str


@dataclass(frozen=True, slots=True)
class Parse:
    name: str
    sql: str
    param_oids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Bind:
    portal: str
    statement: str
    param_formats: tuple[int, ...]
    params: tuple[bytes | None, ...]
    result_formats: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Describe:
    kind: str  # "S" statement or "P" portal
    name: str


@dataclass(frozen=True, slots=True)
class Execute:
    portal: str
    max_rows: int  # 0: all rows


@dataclass(frozen=True, slots=True)
class Close:
    kind: str  # "S" statement or "P" portal
    name: str


@dataclass(frozen=True, slots=True)
class Sync:
    pass


@dataclass(frozen=True, slots=True)
class Flush:
    pass


@dataclass(frozen=True, slots=True)
class Terminate:
    pass


FrontendMessage = Query | Parse | Bind | Describe | Execute | Close | Sync | Flush | Terminate


@dataclass(frozen=True, slots=True)
class SASLInitialResponse:
    mechanism: str
    data: bytes


@dataclass(frozen=True, slots=True)
class SASLResponse:
    data: bytes


class _Body:
    """A cursor over one message body; every read checks bounds so truncation is an error."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def int16(self) -> int:
        return self._unpack(_I16)

    def int32(self) -> int:
        return self._unpack(_I32)

    def _unpack(self, fmt: struct.Struct) -> int:
        end = self.pos + fmt.size
        if end > len(self.data):
            raise ProtocolError("invalid message format")
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos = end
        return value

    def bytes(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise ProtocolError("invalid message format")
        self.pos = end
        return self.data[end - n : end]

    def byte(self) -> str:
        return self.bytes(1).decode("latin-1")

    def cstring(self) -> str:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise ProtocolError("invalid string in message")
        raw = self.data[self.pos : end]
        self.pos = end + 1
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError("invalid byte sequence for encoding \"UTF8\"") from None

    def int16_list(self) -> tuple[int, ...]:
        count = self.int16()
        if count < 0:
            raise ProtocolError("invalid message format")
        return tuple(self.int16() for _ in range(count))

    def end(self) -> None:
        # PostgreSQL's pq_getmsgend: bytes left over mean the client and we disagree on framing.
        if self.pos != len(self.data):
            raise ProtocolError("invalid message format")


async def read_startup(
    reader: asyncio.StreamReader,
) -> Startup | SSLRequest | GSSENCRequest | CancelRequest:
    (length,) = _I32.unpack(await reader.readexactly(4))
    if length < 8 or length > MAX_STARTUP_LENGTH:
        raise ProtocolError("invalid length of startup packet")
    body = _Body(await reader.readexactly(length - 4))
    code = body.int32()
    if code == SSL_REQUEST_CODE:
        body.end()
        return SSLRequest()
    if code == GSSENC_REQUEST_CODE:
        body.end()
        return GSSENCRequest()
    if code == CANCEL_REQUEST_CODE:
        request = CancelRequest(body.int32(), body.int32())
        body.end()
        return request
    parameters: dict[str, str] = {}
    if code >> 16 == 3:
        while True:
            name = body.cstring()
            if not name:
                break
            parameters[name] = body.cstring()
        body.end()
    return Startup(code, parameters)


async def read_message(reader: asyncio.StreamReader) -> FrontendMessage:
    kind, length = _HEADER.unpack(await reader.readexactly(5))
    if length < 4 or length > MAX_MESSAGE_LENGTH:
        raise ProtocolError(f"invalid message length {length}")
    parser = _PARSERS.get(kind)
    if parser is None:
        raise ProtocolError(f"invalid frontend message type {kind[0]}")
    body = _Body(await reader.readexactly(length - 4))
    message = parser(body)
    body.end()
    return message


async def _read_password_body(reader: asyncio.StreamReader) -> _Body:
    kind, length = _HEADER.unpack(await reader.readexactly(5))
    if kind != b"p":
        raise ProtocolError(f"expected SASL response, got message type {kind[0]}")
    if length < 4 or length > MAX_STARTUP_LENGTH:
        raise ProtocolError(f"invalid message length {length}")
    return _Body(await reader.readexactly(length - 4))


async def read_sasl_initial_response(reader: asyncio.StreamReader) -> SASLInitialResponse:
    body = await _read_password_body(reader)
    mechanism = body.cstring()
    size = body.int32()
    data = b"" if size == -1 else body.bytes(size)
    body.end()
    return SASLInitialResponse(mechanism, data)


async def read_sasl_response(reader: asyncio.StreamReader) -> SASLResponse:
    body = await _read_password_body(reader)
    return SASLResponse(body.bytes(len(body.data)))


def _parse(body: _Body) -> Parse:
    name, sql = body.cstring(), body.cstring()
    count = body.int16()
    if count < 0:
        raise ProtocolError("invalid message format")
    # OIDs are unsigned on the wire.
    oids = tuple(body.int32() & 0xFFFFFFFF for _ in range(count))
    return Parse(name, sql, oids)


def _bind(body: _Body) -> Bind:
    portal, statement = body.cstring(), body.cstring()
    param_formats = body.int16_list()
    count = body.int16()
    if count < 0:
        raise ProtocolError("invalid message format")
    params: list[bytes | None] = []
    for _ in range(count):
        size = body.int32()
        if size < -1:
            raise ProtocolError(f"invalid length {size} of bind parameter")
        params.append(None if size == -1 else body.bytes(size))
    return Bind(portal, statement, param_formats, tuple(params), body.int16_list())


def _kind_and_name(body: _Body) -> tuple[str, str]:
    kind = body.byte()
    if kind not in ("S", "P"):
        raise ProtocolError(f"invalid DESCRIBE/CLOSE message subtype {kind!r}")
    return kind, body.cstring()


_PARSERS = {
    b"Q": lambda b: Query(b.cstring()),
    b"P": _parse,
    b"B": _bind,
    b"D": lambda b: Describe(*_kind_and_name(b)),
    b"E": lambda b: Execute(b.cstring(), b.int32()),
    b"C": lambda b: Close(*_kind_and_name(b)),
    b"S": lambda b: Sync(),
    b"H": lambda b: Flush(),
    b"X": lambda b: Terminate(),
}


# -- backend messages -------------------------------------------------------------------------


def _message(kind: bytes, payload: bytes = b"") -> bytes:
    return kind + _I32.pack(len(payload) + 4) + payload


def _cstr(text: str) -> bytes:
    return text.encode("utf-8") + b"\0"


def authentication_ok() -> bytes:
    return _message(b"R", _I32.pack(0))


def authentication_sasl(mechanisms: Sequence[str]) -> bytes:
    return _message(b"R", _I32.pack(10) + b"".join(_cstr(m) for m in mechanisms) + b"\0")


def authentication_sasl_continue(data: bytes) -> bytes:
    return _message(b"R", _I32.pack(11) + data)


def authentication_sasl_final(data: bytes) -> bytes:
    return _message(b"R", _I32.pack(12) + data)


def parameter_status(name: str, value: str) -> bytes:
    return _message(b"S", _cstr(name) + _cstr(value))


def backend_key_data(pid: int, secret: int) -> bytes:
    return _message(b"K", _I32.pack(pid) + _I32.pack(secret))


def negotiate_protocol_version(minor: int, unrecognized: Sequence[str]) -> bytes:
    payload = _I32.pack(minor) + _I32.pack(len(unrecognized))
    return _message(b"v", payload + b"".join(_cstr(o) for o in unrecognized))


def ready_for_query(status: str) -> bytes:
    return _message(b"Z", status.encode("ascii"))


@dataclass(frozen=True, slots=True)
class FieldDescription:
    name: str
    type_oid: int
    type_len: int
    type_mod: int = -1
    format: int = 0
    table_oid: int = 0
    column: int = 0


def row_description(fields: Sequence[FieldDescription]) -> bytes:
    parts = [struct.pack("!h", len(fields))]
    for f in fields:
        parts.append(_cstr(f.name))
        parts.append(struct.pack("!IhIhih", f.table_oid, f.column, f.type_oid, f.type_len,
                                 f.type_mod, f.format))
    return _message(b"T", b"".join(parts))


def parameter_description(oids: Sequence[int]) -> bytes:
    return _message(b"t", struct.pack(f"!h{len(oids)}I", len(oids), *oids))


_NULL_FIELD = _I32.pack(-1)


def data_rows(columns: Sequence[Sequence[bytes | None]], num_rows: int) -> Iterable[bytes]:
    """DataRow messages for column-wise encoded values (None is SQL NULL)."""
    count = _I16.pack(len(columns))
    # Frame each value once per column, then stitch rows: fewer Python-level operations than
    # packing row by row.
    framed = [[_NULL_FIELD if v is None else _I32.pack(len(v)) + v for v in col]
              for col in columns]
    for i in range(num_rows):
        payload = count + b"".join(col[i] for col in framed)
        yield b"D" + _I32.pack(len(payload) + 4) + payload


def command_complete(tag: str) -> bytes:
    return _message(b"C", _cstr(tag))


def empty_query_response() -> bytes:
    return _message(b"I")


def parse_complete() -> bytes:
    return _message(b"1")


def bind_complete() -> bytes:
    return _message(b"2")


def close_complete() -> bytes:
    return _message(b"3")


def no_data() -> bytes:
    return _message(b"n")


def portal_suspended() -> bytes:
    return _message(b"s")


def error_response(
    sqlstate: str,
    message: str,
    *,
    severity: str = "ERROR",
    detail: str | None = None,
    hint: str | None = None,
    notice: bool = False,
) -> bytes:
    """ErrorResponse (or NoticeResponse) with the fields libpq shows: S, V, C, M, D, H."""
    fields = [(b"S", severity), (b"V", severity), (b"C", sqlstate), (b"M", message)]
    if detail:
        fields.append((b"D", detail))
    if hint:
        fields.append((b"H", hint))
    payload = b"".join(code + _cstr(value) for code, value in fields) + b"\0"
    return _message(b"N" if notice else b"E", payload)
