"""A minimal blocking PostgreSQL v3 client for raw-protocol tests: build frontend messages,
read backend messages, with a socket timeout on every read."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

TIMEOUT_S = 10.0


@dataclass
class Message:
    kind: str
    body: bytes

    def fields(self) -> dict[str, str]:
        """ErrorResponse/NoticeResponse fields by code."""
        out, pos = {}, 0
        while self.body[pos] != 0:
            end = self.body.index(b"\0", pos + 1)
            out[chr(self.body[pos])] = self.body[pos + 1 : end].decode()
            pos = end + 1
        return out

    def row(self) -> list[bytes | None]:
        """DataRow values."""
        (count,) = struct.unpack_from("!h", self.body)
        pos, values = 2, []
        for _ in range(count):
            (size,) = struct.unpack_from("!i", self.body, pos)
            pos += 4
            values.append(None if size < 0 else self.body[pos : pos + size])
            pos += max(size, 0)
        return values


def cstr(text: str) -> bytes:
    return text.encode() + b"\0"


def message(kind: bytes, payload: bytes = b"") -> bytes:
    return kind + struct.pack("!i", len(payload) + 4) + payload


def startup_packet(user: str = "heron", database: str = "heron") -> bytes:
    payload = struct.pack("!i", 3 << 16) + cstr("user") + cstr(user) + cstr("database")
    payload += cstr(database) + b"\0"
    return struct.pack("!i", len(payload) + 4) + payload


def parse(sql: str, name: str = "", oids: tuple[int, ...] = ()) -> bytes:
    return message(b"P", cstr(name) + cstr(sql) + struct.pack(f"!h{len(oids)}I", len(oids), *oids))


def bind(
    portal: str = "",
    statement: str = "",
    params: tuple[bytes | None, ...] = (),
    param_formats: tuple[int, ...] = (),
    result_formats: tuple[int, ...] = (),
) -> bytes:
    payload = cstr(portal) + cstr(statement)
    payload += struct.pack(f"!h{len(param_formats)}h", len(param_formats), *param_formats)
    payload += struct.pack("!h", len(params))
    for p in params:
        payload += struct.pack("!i", -1) if p is None else struct.pack("!i", len(p)) + p
    payload += struct.pack(f"!h{len(result_formats)}h", len(result_formats), *result_formats)
    return message(b"B", payload)


def describe(kind: str, name: str = "") -> bytes:
    return message(b"D", kind.encode() + cstr(name))


def execute(portal: str = "", max_rows: int = 0) -> bytes:
    return message(b"E", cstr(portal) + struct.pack("!i", max_rows))


def close(kind: str, name: str = "") -> bytes:
    return message(b"C", kind.encode() + cstr(name))


SYNC = message(b"S")
FLUSH = message(b"H")
TERMINATE = message(b"X")


def query(sql: str) -> bytes:
    return message(b"Q", cstr(sql))


class RawClient:
    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=TIMEOUT_S)
        self.sock.settimeout(TIMEOUT_S)
        self.pid = self.secret = 0

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def send(self, *data: bytes) -> None:
        self.sock.sendall(b"".join(data))

    def recv_exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("server closed the connection")
            buf += chunk
        return buf

    def read(self) -> Message:
        kind, length = struct.unpack("!ci", self.recv_exact(5))
        return Message(kind.decode(), self.recv_exact(length - 4))

    def read_until(self, kind: str = "Z") -> list[Message]:
        """Messages up to and including the first of `kind` (default ReadyForQuery)."""
        out = []
        while True:
            m = self.read()
            out.append(m)
            if m.kind == kind:
                return out

    def startup(self) -> list[Message]:
        self.send(startup_packet())
        messages = self.read_until("Z")
        for m in messages:
            if m.kind == "K":
                self.pid, self.secret = struct.unpack("!ii", m.body)
        return messages

    def closed(self) -> bool:
        """True once the server has closed the socket (reads EOF)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


def kinds(messages: list[Message]) -> str:
    return "".join(m.kind for m in messages)
