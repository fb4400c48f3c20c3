"""COPY between a table (or a query) and the client: the COPY sub-protocol and its data formats.

Contract: `run(host, portal)` runs a portal whose statement is `COPY ... FROM STDIN` or `COPY ...
TO STDOUT` (`planner.copy_statement`) and returns its command tag, "COPY n". The server's own
standard input and output are never involved.

- TO STDOUT: CopyOutResponse, then one CopyData per row in PostgreSQL's text, CSV or binary
  format (binary: the file header travels with the first row, the trailer alone at the end, as
  PostgreSQL sends them), each column encoded as the type it is announced as
  (`column_origins.wire_type`: a jsonb column's values normalized, binary version 1 first),
  then CopyDone. Rows stream from DuckDB and are encoded a batch at a
  time on the thread pool (vectorized, `encode.encode_values`), so memory stays bounded.
- FROM STDIN: CopyInResponse; the client's CopyData are handed to a worker thread through a
  bounded buffer (`_Feed`: the event loop waits while `FEED_BYTES` are unread), parsed there
  incrementally into Arrow batches (text and CSV by Arrow's CSV reader, then PostgreSQL's
  escapes; binary by its tuple layout, each field decoded by the target column's type) and
  inserted batch by batch with PostgreSQL's input conversions (`pg_semantics.text_input`).
  CopyDone ends the data (as does a final `\\.` line). The COPY is one transaction (or part of
  the client's): bad data (22P02, 22P04, ...), a CopyFail (57014) or a broken connection leave
  no row of it behind. Messages other than CopyData, CopyDone, CopyFail, Flush and Sync during
  the copy are a protocol violation (08P01).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime as dt
import io
import re
import struct
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from heron.planner import Column, SqlError, SqlState
from heron.planner.column_origins import wire_type
from heron.planner.copy_statement import CopyCommand, CopyFormat, CopyOptions
from heron.planner.pg_types import PgType, for_arrow
from heron.server import decode, encode, protocol
from heron.server.portal import Portal
from heron.server.session import CopyColumn, Session

T = TypeVar("T")

FEED_BYTES = 8 * 1024 * 1024  # client data buffered before the event loop waits for the parser
BLOCK_BYTES = 1024 * 1024  # CSV/text parsed per Arrow batch
BINARY_ROWS = 8192  # binary tuples per Arrow batch
OUT_ROWS = 8192  # rows encoded per thread-pool call when copying out
BINARY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
BINARY_HEADER = BINARY_SIGNATURE + struct.pack("!ii", 0, 0)
BINARY_TRAILER = struct.pack("!h", -1)


class Host(Protocol):
    """What the COPY sub-protocol needs from its connection."""

    session: Session

    def send(self, message: bytes) -> None: ...

    async def call(self, fn: Callable[..., T], *args: Any) -> T: ...

    async def flush(self) -> None: ...

    async def read_message(self) -> protocol.FrontendMessage: ...


async def run(host: Host, portal: Portal) -> str:
    command = portal.statement.command
    assert isinstance(command, CopyCommand)
    if command.from_client:
        return await _copy_in(host, portal, command)
    return await _copy_out(host, portal, command)


# -- COPY TO STDOUT ---------------------------------------------------------------------------


async def _copy_out(host: Host, portal: Portal, command: CopyCommand) -> str:
    session = host.session
    result = await host.call(session.start, portal)
    assert result.columns is not None
    options = command.options
    binary = options.format is CopyFormat.BINARY
    host.send(protocol.copy_out_response(binary, len(result.columns)))
    timezone = encode.session_timezone(session.setting("TimeZone"))
    # each column encoded as the type its origin declares (a jsonb column's values normalized)
    wires = [wire_type(c.type, c.origin)[0] for c in result.columns]
    rows = 0
    first = True
    if options.header:
        host.send(protocol.copy_data(_csv_header(result.columns, options)))
    while True:
        messages, count = await host.call(_encode_out, session, portal, options, timezone,
                                          wires)
        if count == 0:
            break
        if first and binary:
            messages = _with_header(messages)
        first = False
        rows += count
        host.send(messages)
        await host.flush()
    if binary:
        host.send(protocol.copy_data((BINARY_HEADER if first else b"") + BINARY_TRAILER))
    host.send(protocol.copy_done())
    return f"COPY {rows}"


def _encode_out(session: Session, portal: Portal, options: CopyOptions, timezone: dt.tzinfo,
                wires: Sequence[PgType]) -> tuple[bytes, int]:
    """The next rows of the portal as CopyData messages, one per row, each column encoded as
    its `wires` type (thread pool)."""
    batch = session.read(portal, OUT_ROWS)
    if batch is None:
        return b"", 0
    if options.format is CopyFormat.BINARY:
        columns = [encode.encode_values(column, 1, wire=wire)
                   for column, wire in zip(batch.columns, wires, strict=True)]
        return protocol.row_messages(columns, b"d"), batch.num_rows
    texts = [_text_values(column, timezone, wire)
             for column, wire in zip(batch.columns, wires, strict=True)]
    if options.format is CopyFormat.CSV:
        forced = options.force_quote
        quoted = [forced is None or name in forced for name in batch.schema.names]
        fields = [_csv_field(text, options, force) for text, force in zip(texts, quoted,
                                                                           strict=True)]
    else:
        fields = [_text_field(text, options) for text in texts]
    line = pc.binary_join_element_wise(*fields, _bytes(options.delimiter.encode()))
    line = pc.binary_join_element_wise(line, _bytes(b"\n"), _bytes(b""))
    return protocol.row_messages([_encoded(line)], b"d", framed=False), batch.num_rows


def _bytes(value: bytes) -> pa.Scalar:
    return pa.scalar(value, pa.large_binary())


def _with_header(messages: bytes) -> bytes:
    """The first CopyData message of a binary copy with the file header in front of its row."""
    (length,) = struct.unpack_from("!i", messages, 1)
    return (b"d" + struct.pack("!i", length + len(BINARY_HEADER)) + BINARY_HEADER
            + messages[5:])


def _text_values(column: pa.Array, timezone: dt.tzinfo, wire: PgType) -> pa.Array:
    """A column as PostgreSQL's text output of type `wire` (large_binary, NULL for NULL)."""
    values = encode.encode_values(column, 0, timezone, wire)
    validity = pa.array(values.valid).buffers()[1] if not values.valid.all() else None
    return pa.Array.from_buffers(pa.large_binary(), len(values), [
        validity, pa.py_buffer(values.offsets.tobytes()), pa.py_buffer(values.data.tobytes())],
        null_count=int((~values.valid).sum()))


def _encoded(strings: pa.Array) -> protocol.Encoded:
    strings = strings.cast(pa.large_binary())
    _, offsets, data = strings.buffers()
    return protocol.Encoded(np.frombuffer(offsets, np.int64)[
        strings.offset : strings.offset + len(strings) + 1],
        np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8),
        np.ones(len(strings), bool))


_TEXT_ESCAPES = (("\\", "\\\\"), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"), ("\b", "\\b"),
                 ("\f", "\\f"), ("\v", "\\v"))


def _text_field(values: pa.Array, options: CopyOptions) -> pa.Array:
    """Text format: backslash escapes for the special characters and the delimiter."""
    for raw, escaped in _TEXT_ESCAPES:
        values = pc.replace_substring(values, raw.encode(), escaped.encode())
    if options.delimiter not in "\t":
        values = pc.replace_substring(values, options.delimiter.encode(),
                                      ("\\" + options.delimiter).encode())
    return values.fill_null(_bytes(options.null.encode()))


def _csv_field(values: pa.Array, options: CopyOptions, force: bool) -> pa.Array:
    """CSV format: quoted when forced, when it holds the delimiter, the quote, a line break or
    starts like the end-of-data marker, or when it equals the NULL string."""
    quote = options.quote.encode()
    needs = pc.or_(pc.or_(pc.match_substring(values, options.delimiter),
                          pc.match_substring(values, options.quote)),
                   pc.or_(pc.match_substring_regex(values, "[\r\n]"),
                          pc.equal(values, pa.scalar(options.null.encode(), pa.large_binary()))))
    needs = pc.or_(needs, pc.starts_with(values, "\\."))
    if force:
        needs = pc.or_(needs, pc.is_valid(values))
    escaped = pc.replace_substring(values, quote, options.escape.encode() + quote)
    if options.escape != options.quote:
        escaped = pc.replace_substring(values, options.escape.encode(),
                                       options.escape.encode() * 2)
        escaped = pc.replace_substring(escaped, quote, options.escape.encode() + quote)
    quoted = pc.binary_join_element_wise(_bytes(quote), escaped, _bytes(quote), _bytes(b""))
    return pc.if_else(needs, quoted, values).fill_null(_bytes(options.null.encode()))


def _csv_header(columns: Sequence[Column], options: CopyOptions) -> bytes:
    names = pa.array([c.name.encode() for c in columns], pa.large_binary())
    fields = _csv_field(names, options, False) if options.format is CopyFormat.CSV else (
        _text_field(names, options))
    return options.delimiter.encode().join(fields.to_pylist()) + b"\n"


# -- COPY FROM STDIN --------------------------------------------------------------------------


class _Failed(Exception):
    """The client sent CopyFail."""


class _Feed(io.RawIOBase):
    """The client's COPY data, written by the event loop and read (blocking) by the parser's
    thread; the loop waits while `FEED_BYTES` are unread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._end: BaseException | bool = False  # True: CopyDone; an exception: CopyFail
        self._ready = threading.Condition()
        self._space = asyncio.Event()
        self._space.set()

    # -- the event loop's side
    async def put(self, data: bytes) -> None:
        await self._space.wait()
        with self._ready:
            self._chunks.append(data)
            self._buffered += len(data)
            if self._buffered > FEED_BYTES:
                self._space.clear()
            self._ready.notify()

    def finish(self, end: BaseException | bool = True) -> None:
        with self._ready:
            self._end = end
            self._ready.notify()

    # -- the parser's side
    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        with self._ready:
            while not self._chunks and self._end is False:
                self._ready.wait()
            if not self._chunks:
                if isinstance(self._end, BaseException):
                    raise self._end
                return 0
            chunk = self._chunks.popleft()
            size = min(len(view), len(chunk))
            view[:size] = chunk[:size]
            if size < len(chunk):
                self._chunks.appendleft(chunk[size:])
            self._buffered -= size
            if self._buffered <= FEED_BYTES:
                self._loop.call_soon_threadsafe(self._space.set)
            return size

    def stop(self) -> None:
        """The reader is done (or gave up on bad data): the loop must not wait for it."""
        with contextlib.suppress(RuntimeError):  # the server is shutting down
            self._loop.call_soon_threadsafe(self._space.set)


async def _copy_in(host: Host, portal: Portal, command: CopyCommand) -> str:
    session = host.session
    columns = await host.call(session.copy_target, command)
    host.send(protocol.copy_in_response(command.options.format is CopyFormat.BINARY,
                                        len(columns)))
    await host.flush()
    feed = _Feed(asyncio.get_running_loop())
    batches = _batches(feed, command.options, columns)
    work = asyncio.ensure_future(host.call(session.copy_in, portal.statement, columns, batches))
    try:
        while not work.done():
            reader = asyncio.ensure_future(host.read_message())
            await asyncio.wait({reader, work}, return_when=asyncio.FIRST_COMPLETED)
            if not reader.done():
                reader.cancel()  # the worker failed first: its error is the answer
                break
            message = reader.result()
            if isinstance(message, protocol.CopyData):
                await _put(feed, message.data, work)
            elif isinstance(message, protocol.CopyDone):
                feed.finish()
                break
            elif isinstance(message, protocol.CopyFail):
                feed.finish(_Failed(message.message))
                break
            elif not isinstance(message, protocol.Flush | protocol.Sync):
                feed.finish(_Failed("protocol violation"))
                await asyncio.wait({work})
                if isinstance(message, protocol.Malformed) and message.kind in b"dcf":
                    raise SqlError(SqlState(message.sqlstate), message.message)
                raise SqlError(SqlState.PROTOCOL_VIOLATION,
                               f"unexpected message type 0x{_type_byte(message):02X} during "
                               "COPY from stdin")
        rows = await work
    except _Failed as failed:
        raise SqlError(SqlState.QUERY_CANCELED, f"COPY from stdin failed: {failed}") from None
    except BaseException:
        feed.finish(_Failed("connection lost"))
        raise
    return f"COPY {rows}"


async def _put(feed: _Feed, data: bytes, work: asyncio.Future[Any]) -> None:
    """Hand data to the parser, waiting for room unless the parser already stopped."""
    put = asyncio.ensure_future(feed.put(data))
    await asyncio.wait({put, work}, return_when=asyncio.FIRST_COMPLETED)
    if not put.done():
        put.cancel()


_TYPE_BYTES = {protocol.Query: b"Q", protocol.Parse: b"P", protocol.Bind: b"B",
               protocol.Describe: b"D", protocol.Execute: b"E", protocol.Close: b"C",
               protocol.Terminate: b"X"}


def _type_byte(message: protocol.FrontendMessage) -> int:
    if isinstance(message, protocol.Malformed):
        return message.kind[0]
    return _TYPE_BYTES.get(type(message), b"?")[0]


def _batches(feed: _Feed, options: CopyOptions, columns: Sequence[CopyColumn]
             ) -> Generator[pa.RecordBatch, None, None]:
    """The client's data as Arrow batches: strings (text, CSV) or typed values (binary)."""
    try:
        if options.format is CopyFormat.BINARY:
            yield from _binary_batches(feed, columns)
        else:
            yield from _delimited_batches(feed, options, columns)
    finally:
        feed.stop()


# -- text and CSV input -----------------------------------------------------------------------

_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)", re.DOTALL)
_ESCAPED = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _unescape(text: str) -> str:
    """PostgreSQL's text-format escapes: \\b \\f \\n \\r \\t \\v, octal, \\xHH; \\c is c."""

    def one(m: re.Match[str]) -> str:
        code = m[1]
        if code[0] == "x" and len(code) > 1:
            return chr(int(code[1:], 16))
        if code[0] in "01234567":
            return chr(int(code, 8))
        return _ESCAPED.get(code, code)

    return _ESCAPE.sub(one, text)


class _EndMarker(io.RawIOBase):
    """The feed without a final end-of-data line (`\\.`), which older clients still send."""

    _TAIL = 5  # "\n\\.\r\n": enough held back to recognize the marker at the end

    def __init__(self, feed: io.RawIOBase) -> None:
        self._feed = feed
        self._buffer = b""
        self._last = b"\n"  # the last byte handed out: a line starts after it
        self._eof = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while not self._eof and len(self._buffer) <= self._TAIL:
            chunk = self._feed.read(BLOCK_BYTES)
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True
                self._buffer = self._without_marker(self._buffer)
        available = len(self._buffer) if self._eof else len(self._buffer) - self._TAIL
        size = min(len(view), available)
        view[:size] = self._buffer[:size]
        if size:
            self._last = self._buffer[size - 1 : size]
        self._buffer = self._buffer[size:]
        return size

    def _without_marker(self, tail: bytes) -> bytes:
        for marker in (b"\\.\r\n", b"\\.\n", b"\\."):
            if tail.endswith(marker):
                before = tail[: -len(marker)]
                if before.endswith(b"\n") or (not before and self._last == b"\n"):
                    return before
        return tail


def _delimited_batches(feed: _Feed, options: CopyOptions, columns: Sequence[CopyColumn]
                       ) -> Iterator[pa.RecordBatch]:
    names = [c.name for c in columns]
    csv = options.format is CopyFormat.CSV
    quote = options.quote if csv else False
    escape = False if not csv or options.escape == options.quote else options.escape
    parse = pacsv.ParseOptions(delimiter=options.delimiter, quote_char=quote,
                               double_quote=csv and options.escape == options.quote,
                               escape_char=escape, newlines_in_values=csv,
                               ignore_empty_lines=False)
    read = pacsv.ReadOptions(column_names=[f"c{i}" for i in range(len(names))],
                             skip_rows=1 if options.header else 0, block_size=BLOCK_BYTES,
                             use_threads=False)
    convert = pacsv.ConvertOptions(
        column_types={f"c{i}": pa.string() for i in range(len(names))},
        null_values=[options.null], strings_can_be_null=True,
        quoted_strings_can_be_null=False)
    try:
        reader = pacsv.open_csv(_EndMarker(feed), read_options=read, parse_options=parse,
                                convert_options=convert)
        for batch in reader:
            yield _input_batch(batch, names, options)
    except pa.ArrowInvalid as exc:
        raise _copy_format_error(str(exc), names) from None


def _input_batch(batch: pa.RecordBatch, names: list[str], options: CopyOptions
                 ) -> pa.RecordBatch:
    arrays = []
    for name, array in zip(names, batch.columns, strict=True):
        if options.format is CopyFormat.TEXT:
            array = _unescaped(array)
        elif name in options.force_not_null:
            array = array.fill_null(options.null)  # an unquoted NULL string is the string
        elif name in options.force_null:
            array = pc.if_else(pc.equal(array, options.null), pa.scalar(None, pa.string()),
                               array)
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _unescaped(array: pa.Array) -> pa.Array:
    has_escape = pc.match_substring(array, "\\")
    if not pc.any(has_escape).as_py():
        return array
    values = array.to_pylist()
    for i in np.flatnonzero(has_escape.fill_null(False).to_numpy(zero_copy_only=False)):
        values[i] = _unescape(values[i])
    return pa.array(values, pa.string())


_COLUMN_COUNT = re.compile(r"Expected (?P<expected>\d+) columns, got (?P<got>\d+)")


def _copy_format_error(text: str, names: list[str]) -> SqlError:
    if m := _COLUMN_COUNT.search(text):
        expected, got = int(m["expected"]), int(m["got"])
        if got > expected:
            return SqlError(SqlState.BAD_COPY_FILE_FORMAT,
                            "extra data after last expected column")
        return SqlError(SqlState.BAD_COPY_FILE_FORMAT,
                        f'missing data for column "{names[min(got, len(names) - 1)]}"')
    if "UTF8" in text or "utf8" in text.lower():
        return SqlError(SqlState.CHARACTER_NOT_IN_REPERTOIRE,
                        'invalid byte sequence for encoding "UTF8"')
    return SqlError(SqlState.BAD_COPY_FILE_FORMAT, f"malformed COPY data: {text}")


# -- binary input -----------------------------------------------------------------------------


def _read_exactly(feed: io.RawIOBase, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = feed.read(size - len(data))
        if not chunk:
            raise SqlError(SqlState.BAD_COPY_FILE_FORMAT, "unexpected EOF in COPY data")
        data += chunk
    return data


def _binary_batches(feed: _Feed, columns: Sequence[CopyColumn]) -> Iterator[pa.RecordBatch]:
    reader = io.BufferedReader(feed, BLOCK_BYTES)
    header = _read_exactly(reader, len(BINARY_SIGNATURE) + 8)
    if header[: len(BINARY_SIGNATURE)] != BINARY_SIGNATURE:
        raise SqlError(SqlState.BAD_COPY_FILE_FORMAT, "COPY file signature not recognized")
    flags, extension = struct.unpack_from("!ii", header, len(BINARY_SIGNATURE))
    if flags & 0x10000:
        raise SqlError(SqlState.BAD_COPY_FILE_FORMAT,
                       "COPY file with OIDs is not supported")
    _read_exactly(reader, extension)
    oids = [for_arrow(c.type).oid for c in columns]
    values: list[list[Any]] = [[] for _ in columns]
    while True:
        (count,) = struct.unpack("!h", _read_exactly(reader, 2))
        if count == -1:
            break
        if count != len(columns):
            raise SqlError(SqlState.BAD_COPY_FILE_FORMAT,
                           f"row field count is {count}, expected {len(columns)}")
        for index, oid in enumerate(oids):
            (size,) = struct.unpack("!i", _read_exactly(reader, 4))
            values[index].append(None if size < 0 else decode.decode_param(
                _read_exactly(reader, size), oid, 1))
        if len(values[0]) >= BINARY_ROWS:
            yield _typed_batch(values, columns)
            values = [[] for _ in columns]
    if values[0]:
        yield _typed_batch(values, columns)


def _typed_batch(values: list[list[Any]], columns: Sequence[CopyColumn]) -> pa.RecordBatch:
    arrays = []
    for column, items in zip(columns, values, strict=True):
        try:
            arrays.append(pa.array(items, column.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arrays.append(pa.array([None if v is None else str(v) for v in items], pa.string()))
    return pa.RecordBatch.from_arrays(arrays, names=[c.name for c in columns])
