"""The listener: one asyncio event loop (uvloop when installed) serving every connection.

Contract: `serve(config)` opens `config.data_dir` (the bootstrap superuser's password from the
environment variable `HERON_PASSWORD`, when set), refuses to start with SCRAM authentication when
no role could log in (no role with LOGIN has a password), loads the engine once (unless
`config.engine` is None), binds the socket and prints exactly one line
``heron: listening on HOST:PORT`` to stdout (with the real port when 0 was asked) once clients
can connect. The engine runs supervised (`engine.supervisor`): restarted when it dies or hangs.
Each connection's blocking work runs on its own worker thread (`server.worker`), and at most
`config.max_connections` sessions are open at once. It runs until SIGINT/SIGTERM (or `stop` is
set), then stops accepting, cancels running statements (their clients get 57P01), closes every
session, the engine and the database, and returns.
`run(config)` is the blocking entry for the command line; it returns the process exit status.
It first points the process's standard input at /dev/null: no statement of any client can read
(or wait on) the terminal or pipe the server was started from; clients copy data in through the
COPY sub-protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

import heron.engine
from heron.catalog import Database
from heron.engine.api import Engine
from heron.engine.config import EngineConfig
from heron.planner.settings import MAX_TOKENS
from heron.server.config import AuthMethod, ServerConfig
from heron.server.connection import Connection, ServerContext

SHUTDOWN_GRACE_S = 10.0
PASSWORD_VARIABLE = "HERON_PASSWORD"


class StartupError(Exception):
    """The server cannot start as configured; the message says what to change."""


def open_engine(config: EngineConfig | None) -> Engine | None:
    """The engine `config` describes, or None without one (AI statements then fail with 55000).

    Importing ``heron.engine`` is cheap (no torch); the model loads in the engine process.
    """
    if config is None:
        return None
    print(f"heron: loading model {config.model} on {config.device} ...", file=sys.stderr,
          flush=True)
    instance = heron.engine.open_engine(config)
    info = instance.info
    print(f"heron: model ready: {info.architecture}, {info.num_layers} layers, "
          f"{info.num_params / 1e6:.1f}M parameters, {info.dtype} on {info.device}",
          file=sys.stderr, flush=True)
    return instance


async def serve(config: ServerConfig, *, stop: asyncio.Event | None = None) -> None:
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        # Not available off the main thread or on some platforms; then the caller sets `stop`.
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    database = await asyncio.to_thread(
        Database, config.data_dir, bootstrap_password=os.environ.get(PASSWORD_VARIABLE))
    engine: Engine | None = None
    try:
        if config.auth is AuthMethod.SCRAM_SHA_256 and not any(
                r.login and r.verifier for r in database.roles.all()):
            raise StartupError(f"--auth {config.auth} but no role can log in with a password: "
                               f"set {PASSWORD_VARIABLE} for the superuser heron")
        engine = await asyncio.to_thread(open_engine, config.engine)
        context = ServerContext(database, engine, config.max_connections,
                                {MAX_TOKENS: str(config.max_statement_tokens)}, auth=config.auth,
                                tls=config.tls.context() if config.tls else None,
                                certificate_pem=config.tls.certificate_pem() if config.tls
                                else None)
        tasks: set[asyncio.Task[None]] = set()

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            tasks.add(task)
            try:
                # Cancelled only by shutdown, which the connection already told its client.
                with contextlib.suppress(asyncio.CancelledError):
                    await Connection(reader, writer, context).run()
            finally:
                tasks.discard(task)

        server = await asyncio.start_server(accept, config.host, config.port)
        bound = server.sockets[0].getsockname()
        print(f"heron: listening on {bound[0]}:{bound[1]}", flush=True)
        try:
            await stop.wait()
        finally:
            server.close()
            for connection in context.registry.connections():
                connection.cancel()
            for task in list(tasks):
                task.cancel()
            if tasks:
                await asyncio.wait(list(tasks), timeout=SHUTDOWN_GRACE_S)
    finally:
        if engine is not None:
            await asyncio.to_thread(engine.close)
        await asyncio.to_thread(database.close)


def detach_stdin() -> None:
    """Point file descriptor 0 at /dev/null (reads see end of file at once)."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(devnull, 0)
    finally:
        os.close(devnull)


def run(config: ServerConfig) -> int:
    """Serve until a signal arrives; the exit status for the command line."""
    detach_stdin()
    try:
        import uvloop
    except ImportError:  # Windows, or a minimal install: the default loop works too
        uvloop = None
    coroutine = serve(config)
    try:
        if uvloop is not None:
            uvloop.run(coroutine)
        else:
            asyncio.run(coroutine)
    except KeyboardInterrupt:
        pass
    except StartupError as exc:
        print(f"heron: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"heron: cannot start on {config.host}:{config.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - e.g. a model that cannot load: say why, exit 1
        print(f"heron: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0
