"""PostgreSQL v3 wire messages: reading frontend messages and building backend ones.

Contract: `read_startup` reads the untyped first packet of a connection (StartupMessage,
SSLRequest, GSSENCRequest or CancelRequest); a `MessageReader` reads typed messages and parses each
into a frozen dataclass (`Query`, `Parse`, `Bind`, ...). As in PostgreSQL, broken framing (an
unknown message type, a length that is too small or too large) raises `ProtocolError`, which the
connection answers with FATAL 08P01 before closing, while a message whose frame is sound but whose
contents are not (fields that run past its end or leave bytes over, a negative count, text that is
not UTF-8) becomes `Malformed`: the connection reports it as an ERROR (08P01, or 22021 for bad
UTF-8) and goes on with the next message. While a statement runs, `read_ahead` reads what the
client sends meanwhile (bounded) and returns when the client has gone.
`read_sasl_initial_response` and `read_sasl_response` read the authentication exchange's
messages (type 'p': its layout depends on the exchange, so each is read as expected). A clean end
of stream raises `asyncio.IncompleteReadError`, which means the client went away. The other
functions build complete backend messages as bytes: `row_messages` frames a whole batch of rows
(DataRow, or CopyData for COPY) from column-wise `Encoded` values in a few numpy passes, and
`data_rows` is its row-at-a-time reference twin. Nothing here touches sessions or sockets beyond
reading from an `asyncio.StreamReader`.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

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


PROTOCOL_VIOLATION = "08P01"
CHARACTER_NOT_IN_REPERTOIRE = "22021"


class ProtocolError(Exception):
    """The client broke the protocol. Raised by `read_startup` and the framing of `MessageReader`
    it ends the connection (FATAL); raised while parsing a message's fields it becomes that
    message's `Malformed` stand-in."""

    def __init__(self, message: str, sqlstate: str = PROTOCOL_VIOLATION) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


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


@dataclass(frozen=True, slots=True)
class CopyData:
    data: bytes


@dataclass(frozen=True, slots=True)
class CopyDone:
    pass


@dataclass(frozen=True, slots=True)
class CopyFail:
    message: str


@dataclass(frozen=True, slots=True)
class Malformed:
    """A message in a sound frame whose fields could not be read: an ERROR, not a FATAL one."""

    kind: bytes  # its type byte: which message it was meant to be
    sqlstate: str
    message: str


FrontendMessage = (Query | Parse | Bind | Describe | Execute | Close | Sync | Flush | Terminate
                   | CopyData | CopyDone | CopyFail | Malformed)


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
            raise ProtocolError("insufficient data left in message")
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos = end
        return value

    def bytes(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise ProtocolError("insufficient data left in message")
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
        except UnicodeDecodeError as exc:
            raise ProtocolError(_invalid_utf8(raw, exc.start), CHARACTER_NOT_IN_REPERTOIRE
                                ) from None

    def int16_list(self) -> tuple[int, ...]:
        return tuple(self.int16() for _ in range(self.count()))

    def count(self) -> int:
        """An int16 number of items that follow (PostgreSQL reads it unsigned-checked)."""
        count = self.int16()
        if count < 0:
            raise ProtocolError(f"invalid number of items {count} in message")
        return count

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


class MessageReader:
    """Typed frontend messages from a stream, each parsed as soon as it has arrived whole.

    `next()` waits for the next message; `pending` holds the messages already complete in what
    the socket delivered (a pipelining client's Bind/Execute pairs, for one), so a handler can
    see what follows without waiting. `read_ahead()` reads on while a statement runs (at most
    `READ_AHEAD_MESSAGES` wait in `pending`) and returns once the client has closed its end
    (`closed`). Reading is done in chunks, one reader at a time, and a chunk is only taken from
    the stream whole, so cancelling a waiting `next()` or `read_ahead()` loses nothing.
    """

    CHUNK_BYTES = 256 * 1024
    READ_AHEAD_MESSAGES = 64

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader
        self.pending: collections.deque[FrontendMessage] = collections.deque()
        self.closed = False  # the client closed its end: no more messages will come
        self._data = bytearray()
        self._error: ProtocolError | None = None  # raised once the messages before it are read
        self._reading = asyncio.Lock()
        self._taken = asyncio.Event()  # set when a message leaves `pending`

    def take(self) -> FrontendMessage | None:
        """The next message if it is here already (what `next()` would return at once), else
        None: the common case, a pipeline's messages after its first, needs no coroutine."""
        if not self.pending:
            return None
        self._taken.set()
        return self.pending.popleft()

    async def next(self) -> FrontendMessage:
        while not self.pending:
            if self._error is not None:
                raise self._error
            if self.closed:
                raise asyncio.IncompleteReadError(bytes(self._data), None)
            await self._read_chunk(lambda: not self.pending)
        self._taken.set()
        return self.pending.popleft()

    async def read_ahead(self) -> None:
        """Read what the client sends meanwhile; return when it has closed its end."""
        while not self.closed:
            if self._error is not None or len(self.pending) >= self.READ_AHEAD_MESSAGES:
                self._taken.clear()
                await self._taken.wait()  # room again (or never: the caller cancels us)
                continue
            await self._read_chunk(lambda: len(self.pending) < self.READ_AHEAD_MESSAGES)

    async def _read_chunk(self, wanted: Callable[[], bool]) -> None:
        """Read one chunk and parse what it completes, unless another reader got there first
        and made it unnecessary (`wanted()` false once this one's turn comes)."""
        async with self._reading:
            if self.closed or self._error is not None or not wanted():
                return
            chunk = await self.reader.read(self.CHUNK_BYTES)
            if not chunk:
                self.closed = True
                return
            self._data += chunk
            self._parse_complete()

    def _parse_complete(self) -> None:
        data, pos = self._data, 0
        try:
            while len(data) - pos >= 5:
                kind, length = _HEADER.unpack_from(data, pos)
                if length < 4 or length > MAX_MESSAGE_LENGTH:
                    raise ProtocolError(f"invalid message length {length}")
                parser = _PARSERS.get(kind)
                if parser is None:
                    raise ProtocolError(f"invalid frontend message type {kind[0]}")
                end = pos + 1 + length
                if end > len(data):
                    break
                message = _BODILESS.get(kind) if length == 4 else None
                if message is None:
                    raw = bytes(data[pos + 5 : end])
                    fast = _FAST_PARSERS.get(kind)
                    message = fast(raw) if fast is not None else None
                if message is None:
                    body = _Body(raw)
                    try:
                        message = parser(body)
                        body.end()
                    except ProtocolError as exc:  # the frame was sound: the next one follows
                        message = Malformed(kind, exc.sqlstate, str(exc))
                self.pending.append(message)
                pos = end
        except ProtocolError as exc:
            self._error = exc
        del data[:pos]


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


def _invalid_utf8(raw: bytes, start: int) -> str:
    """PostgreSQL's message for bad UTF-8: the bytes of the sequence that begins there."""
    lead = raw[start]
    length = 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if (
        0xF0 <= lead < 0xF8) else 1
    shown = " ".join(f"0x{b:02x}" for b in raw[start : start + length])
    return f'invalid byte sequence for encoding "UTF8": {shown}'


def _parse(body: _Body) -> Parse:
    name, sql = body.cstring(), body.cstring()
    # OIDs are unsigned on the wire.
    oids = tuple(body.int32() & 0xFFFFFFFF for _ in range(body.count()))
    return Parse(name, sql, oids)


def _bind(body: _Body) -> Bind:
    portal, statement = body.cstring(), body.cstring()
    param_formats = body.int16_list()
    params: list[bytes | None] = []
    for _ in range(body.count()):
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


# The messages of every execution of a prepared statement, read in one pass when they are well
# formed (`_Body`'s reading, with its checks and its errors, is the reference: the message is
# read again that way when the quick reading returns None). Per message, a few microseconds.


def _quick_bind(raw: bytes) -> Bind | None:
    first = raw.find(0)
    second = raw.find(0, first + 1) if first >= 0 else -1
    if second < 0:
        return None
    try:
        portal, statement = raw[:first].decode(), raw[first + 1 : second].decode()
        param_formats, pos = _quick_int16s(raw, second + 1)
        (count,) = _I16.unpack_from(raw, pos)
        pos += 2
        if count < 0:
            return None
        params: list[bytes | None] = []
        for _ in range(count):
            (size,) = _I32.unpack_from(raw, pos)
            pos += 4
            if size == -1:
                params.append(None)
                continue
            if size < -1 or pos + size > len(raw):
                return None
            params.append(raw[pos : pos + size])
            pos += size
        result_formats, pos = _quick_int16s(raw, pos)
    except (struct.error, UnicodeDecodeError):
        return None
    if pos != len(raw):
        return None
    return Bind(portal, statement, param_formats, tuple(params), result_formats)


def _quick_int16s(raw: bytes, pos: int) -> tuple[tuple[int, ...], int]:
    """A count and that many int16s at `pos`, and the position after them (struct.error when
    they run past the end or the count is negative)."""
    (count,) = _I16.unpack_from(raw, pos)
    if count == 0:
        return (), pos + 2
    if count == 1:  # (one format for all columns: what most drivers send)
        return _I16.unpack_from(raw, pos + 2), pos + 4
    if count < 0:
        raise struct.error("negative count")
    return struct.unpack_from(f"!{count}h", raw, pos + 2), pos + 2 + 2 * count


def _quick_describe(raw: bytes) -> Describe | None:
    if len(raw) < 2 or raw[0] not in _DESCRIBED_KINDS or raw.find(0, 1) != len(raw) - 1:
        return None
    try:
        return Describe(_DESCRIBED_KINDS[raw[0]], raw[1:-1].decode())
    except UnicodeDecodeError:
        return None


def _quick_execute(raw: bytes) -> Execute | None:
    nul = raw.find(0)
    if nul < 0 or len(raw) != nul + 5:
        return None
    try:
        portal = raw[:nul].decode()
    except UnicodeDecodeError:
        return None
    return Execute(portal, _I32.unpack_from(raw, nul + 1)[0])


_DESCRIBED_KINDS = {ord("S"): "S", ord("P"): "P"}
_FAST_PARSERS: dict[bytes, Callable[[bytes], FrontendMessage | None]] = {
    b"B": _quick_bind, b"D": _quick_describe, b"E": _quick_execute}

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
    b"d": lambda b: CopyData(b.bytes(len(b.data) - b.pos)),
    b"c": lambda b: CopyDone(),
    b"f": lambda b: CopyFail(b.cstring()),
}

# Messages without fields, read without a body to parse (a Sync ends every pipeline).
_BODILESS: dict[bytes, FrontendMessage] = {b"S": Sync(), b"H": Flush(), b"X": Terminate(),
                                           b"c": CopyDone()}


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
    message = _READY.get(status)
    return _message(b"Z", status.encode("ascii")) if message is None else message


_READY = {status: _message(b"Z", status.encode("ascii")) for status in "ITE"}  # sent at each Sync


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


@dataclass(frozen=True, slots=True)
class Encoded:
    """One column's wire values, column-wise: value i is data[offsets[i]:offsets[i + 1]], or SQL
    NULL where not valid[i]."""

    offsets: np.ndarray  # int64, one more than there are values
    data: np.ndarray  # uint8
    valid: np.ndarray  # bool

    def __len__(self) -> int:
        return len(self.valid)

    @classmethod
    def of(cls, values: Sequence[bytes | None]) -> Encoded:
        """From a list of wire values (the reference encoders' output)."""
        lengths = np.fromiter((0 if v is None else len(v) for v in values), np.int64, len(values))
        offsets = np.zeros(len(values) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(v for v in values if v is not None), np.uint8)
        valid = np.fromiter((v is not None for v in values), bool, len(values))
        return cls(offsets, data, valid)


def _put_int(out: np.ndarray, positions: np.ndarray, values: np.ndarray, dtype: str) -> None:
    """Big-endian integers written into `out` at byte `positions`."""
    raw = values.astype(dtype).view(np.uint8).reshape(len(values), -1)
    out[positions[:, None] + np.arange(raw.shape[1])] = raw


def row_messages(columns: Sequence[Encoded], kind: bytes = b"D", *, framed: bool = True
                 ) -> bytes:
    """One message of type `kind` per row, all rows in one buffer. `framed` (DataRow, a binary
    COPY tuple): an int16 field count, then each field as an int32 length (-1 for NULL) and its
    bytes. Unframed (a text or CSV COPY row): the single column's bytes as they are."""
    if not columns or not len(columns[0]):
        return b""
    rows = len(columns[0])
    lengths = [np.where(c.valid, np.diff(c.offsets), 0) for c in columns]
    size = np.asarray(6 + sum(4 + n for n in lengths) if framed else 4 + lengths[0], np.int64)
    starts = np.zeros(rows + 1, np.int64)
    np.cumsum(size + 1, out=starts[1:])
    out = np.empty(int(starts[-1]), np.uint8)
    starts = starts[:-1]
    out[starts] = kind[0]
    _put_int(out, starts + 1, size, ">i4")
    position = starts + 5
    if framed:
        _put_int(out, position, np.full(rows, len(columns), np.int64), ">i2")
        position = position + 2
    for column, length in zip(columns, lengths, strict=True):
        if framed:
            _put_int(out, position, np.where(column.valid, length, -1), ">i4")
            position = position + 4
        total = int(length.sum())
        if total:
            # Byte j of row i goes from data[offsets[i] + j] to out[position[i] + j].
            row_of_byte = np.repeat(np.arange(rows), length)
            first_byte = np.cumsum(length) - length
            within = np.arange(total) - first_byte[row_of_byte]
            out[position[row_of_byte] + within] = column.data[
                column.offsets[:-1][row_of_byte] + within]
        position = position + length
    return out.tobytes()


def data_rows(columns: Sequence[Sequence[bytes | None]], num_rows: int) -> Iterable[bytes]:
    """DataRow messages for column-wise encoded values (None is SQL NULL); the reference twin of
    `row_messages`."""
    count = _I16.pack(len(columns))
    # Frame each value once per column, then stitch rows: fewer Python-level operations than
    # packing row by row.
    framed = [[_NULL_FIELD if v is None else _I32.pack(len(v)) + v for v in col]
              for col in columns]
    for i in range(num_rows):
        payload = count + b"".join(col[i] for col in framed)
        yield b"D" + _I32.pack(len(payload) + 4) + payload


@functools.lru_cache(maxsize=256)  # a prepared statement's executions send the same tags
def command_complete(tag: str) -> bytes:
    return _message(b"C", _cstr(tag))


# The messages without a body, built once: every execution sends some of them.
_EMPTY_QUERY_RESPONSE = _message(b"I")
_PARSE_COMPLETE = _message(b"1")
_BIND_COMPLETE = _message(b"2")
_CLOSE_COMPLETE = _message(b"3")
_NO_DATA = _message(b"n")
_PORTAL_SUSPENDED = _message(b"s")


def empty_query_response() -> bytes:
    return _EMPTY_QUERY_RESPONSE


def parse_complete() -> bytes:
    return _PARSE_COMPLETE


def bind_complete() -> bytes:
    return _BIND_COMPLETE


def close_complete() -> bytes:
    return _CLOSE_COMPLETE


def no_data() -> bytes:
    return _NO_DATA


def portal_suspended() -> bytes:
    return _PORTAL_SUSPENDED


def notification_response(pid: int, channel: str, payload: str) -> bytes:
    return _message(b"A", _I32.pack(pid) + _cstr(channel) + _cstr(payload))


def copy_in_response(binary: bool, columns: int) -> bytes:
    """CopyInResponse: the overall format and each column's (all text or all binary)."""
    fmt = int(binary)
    return _message(b"G", struct.pack(f"!bh{columns}h", fmt, columns, *([fmt] * columns)))


def copy_out_response(binary: bool, columns: int) -> bytes:
    fmt = int(binary)
    return _message(b"H", struct.pack(f"!bh{columns}h", fmt, columns, *([fmt] * columns)))


def copy_data(data: bytes) -> bytes:
    return _message(b"d", data)


def copy_done() -> bytes:
    return _message(b"c")


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
