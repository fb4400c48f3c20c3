"""The listener: one asyncio event loop (uvloop when installed) serving every connection.

Contract: `serve(host, port, data_dir, model, device=...)` opens the data directory, loads the
engine once (unless `model` is "none"), binds the socket and prints exactly one line
``heron: listening on HOST:PORT`` to stdout (with the real port when 0 was asked) once clients
can connect. It runs until SIGINT/SIGTERM (or `stop` is set), then stops accepting, interrupts
running statements, closes every session, the engine and the database, and returns. `run(...)` is
the blocking entry for the command line; it returns the process exit status.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import signal
import sys
from pathlib import Path
from typing import Any

from heron.catalog import Database
from heron.server.connection import Connection, ServerContext

# DuckDB and the engine release the GIL, so concurrent sessions overlap; threads idle cheaply.
MAX_WORKER_THREADS = 64
SHUTDOWN_GRACE_S = 10.0


def open_engine(model: str, device: str) -> Any:
    """The engine for `model`, or None for "none" (AI statements then fail with 55000)."""
    if model.lower() == "none":
        return None
    from heron import engine  # lazily: only a server with a model pays for the engine's imports

    print(f"heron: loading model {model} on {device} ...", file=sys.stderr, flush=True)
    instance = engine.open_engine(engine.EngineConfig(model=model, device=device))
    info = instance.info
    print(f"heron: model ready: {info.architecture}, {info.num_layers} layers, "
          f"{info.num_params / 1e6:.1f}M parameters, {info.dtype} on {info.device}",
          file=sys.stderr, flush=True)
    return instance


async def serve(
    host: str,
    port: int,
    data_dir: str | Path,
    model: str,
    *,
    device: str = "cpu",
    stop: asyncio.Event | None = None,
) -> None:
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        # Not available off the main thread or on some platforms; then the caller sets `stop`.
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    executor = concurrent.futures.ThreadPoolExecutor(MAX_WORKER_THREADS,
                                                     thread_name_prefix="heron-session")
    database = await loop.run_in_executor(executor, Database, data_dir)
    engine = None
    try:
        engine = await loop.run_in_executor(executor, open_engine, model, device)
        context = ServerContext(database, engine, executor)
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

        server = await asyncio.start_server(accept, host, port)
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
            await loop.run_in_executor(executor, engine.close)
        await loop.run_in_executor(executor, database.close)
        executor.shutdown(wait=False, cancel_futures=True)


def run(host: str, port: int, data_dir: str | Path, model: str, device: str = "cpu") -> int:
    """Serve until a signal arrives; the exit status for the command line."""
    try:
        import uvloop
    except ImportError:  # Windows, or a minimal install: the default loop works too
        uvloop = None
    coroutine = serve(host, port, data_dir, model, device=device)
    try:
        if uvloop is not None:
            uvloop.run(coroutine)
        else:
            asyncio.run(coroutine)
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        print(f"heron: cannot start on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - e.g. a model that cannot load: say why, exit 1
        print(f"heron: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0
