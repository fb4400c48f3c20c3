"""The `heron` command line.

Contract: `main(argv)` parses arguments and returns the exit status; `heron serve [--host]
[--port] [--data-dir] [--model] [--device] [--kv-cache-gb] [--chunk-tokens]
[--prefix-block-tokens] [--dtype bf16|fp8] [--[no-]deterministic] [--attention segments|fa3]
[--auth trust|scram-sha-256]
[--tls-cert FILE --tls-key FILE] [--max-connections N] [--max-statement-tokens N]` builds a
``ServerConfig`` (``server_config``) and runs the server until SIGINT/SIGTERM; `heron bench
engine ...` measures the engine (``heron.bench.engine``); `heron --version` prints the version.
Bad arguments, and values the configs reject, exit with status 2 and a usage message (argparse).
The bootstrap superuser's password comes from the environment (``HERON_PASSWORD``), never from a
flag, so it stays out of `ps`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from heron.engine.api import EngineError
from heron.engine.config import ATTENTION, DTYPES, EngineConfig
from heron.server.config import AuthMethod, ServerConfig, TlsConfig


def _version() -> str:
    try:
        return metadata.version("heron")
    except metadata.PackageNotFoundError:  # running from a source checkout
        return "0.1.0"


def _port(text: str) -> int:
    # Only the parsing: the range is ServerConfig's to check.
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None


def _tokens(text: str) -> int:
    # Only the parsing: EngineConfig checks the value.
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of tokens: {text!r}") from None


def _count(text: str) -> int:
    # Only the parsing: ServerConfig checks the value.
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _gib(text: str) -> int:
    """GiB (fractions allowed) to bytes."""
    try:
        gib = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of GiB: {text!r}") from None
    if not gib > 0 or gib == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of GiB > 0, got {text!r}")
    return max(1, round(gib * (1 << 30)))


def build_parser() -> argparse.ArgumentParser:
    defaults, engine_defaults = ServerConfig(), EngineConfig()
    parser = argparse.ArgumentParser(
        prog="heron",
        description="A PostgreSQL-wire SQL server that evaluates AI functions with a local LLM.")
    parser.add_argument("--version", action="version", version=f"heron {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    serve = commands.add_parser("serve", help="run the server",
                                description="Run the PostgreSQL wire-protocol server.")
    serve.add_argument("--host", default=defaults.host, help="address to listen on "
                       "(default: %(default)s)")
    serve.add_argument("--port", type=_port, default=defaults.port,
                       help="TCP port, 0 for any free one (default: %(default)s)")
    serve.add_argument("--data-dir", type=Path, default=defaults.data_dir,
                       help="directory of the database and caches (default: %(default)s)")
    serve.add_argument("--model", default=engine_defaults.model,
                       help="model name, local path, Hugging Face id, or 'none' for no AI "
                       "functions (default: %(default)s)")
    serve.add_argument("--device", default=engine_defaults.device,
                       help="where the model runs: cpu, cuda or cuda:N (default: %(default)s)")
    serve.add_argument("--kv-cache-gb", type=_gib, default=None, metavar="GIB",
                       dest="kv_cache_bytes",
                       help="size of the KV cache in GiB: document prefixes kept for reuse and "
                       "the KV of prompts being answered (default: 1 on cpu; on cuda the free "
                       "memory after the weights, less a margin for one chunk)")
    serve.add_argument("--chunk-tokens", type=_tokens, default=None, metavar="N",
                       help="tokens per forward chunk (default: 4096 on cpu, 32768 on cuda)")
    serve.add_argument("--prefix-block-tokens", type=_tokens, default=None, metavar="N",
                       help="tokens per prefix block, the unit in which document KV is "
                       "computed and shared (default: 64)")
    serve.add_argument("--dtype", choices=DTYPES, default=engine_defaults.dtype,
                       help="how the model's projections are stored on CUDA: bf16, or fp8 "
                       "(e4m3, quantized at load) (default: %(default)s)")
    serve.add_argument("--deterministic", action=argparse.BooleanOptionalAction,
                       default=engine_defaults.deterministic,
                       help="answers bit-identical whatever else the engine is running "
                       "(batch-invariant kernels); --no-deterministic uses cuBLAS "
                       "(default: on)")
    serve.add_argument("--attention", choices=ATTENTION, default=engine_defaults.attention,
                       help="segments: Triton segment attention for everything; fa3: "
                       "question rows on vLLM's FlashAttention-3 (an installed vllm, a Hopper "
                       "GPU, with --no-deterministic), faster for joins with many partners "
                       "per anchor, slower for filters (default: %(default)s)")
    serve.add_argument("--auth", choices=[m.value for m in AuthMethod], default=defaults.auth,
                       help="how clients authenticate; trust only on a loopback address "
                       "(default: %(default)s)")
    serve.add_argument("--tls-cert", type=Path, metavar="FILE",
                       help="PEM certificate: clients may then connect with TLS "
                       "(sslmode=require); needs --tls-key")
    serve.add_argument("--tls-key", type=Path, metavar="FILE",
                       help="PEM private key of --tls-cert")
    serve.add_argument("--max-connections", type=_count, default=defaults.max_connections,
                       metavar="N", help="sessions open at once; more are refused with 53300 "
                       "(default: %(default)s)")
    serve.add_argument("--max-statement-tokens", type=_tokens,
                       default=defaults.max_statement_tokens, metavar="N",
                       help="tokens one statement may have the model read, the default of "
                       "SET heron.max_tokens; 0 for no limit (default: %(default)s)")
    # A value the configs refuse is reported like a bad flag: `heron serve` usage, status 2.
    serve.set_defaults(usage_error=serve.error)
    bench = commands.add_parser("bench", help="measure Heron (heron bench engine --help)",
                                description="Benchmarks that measure Heron beside baselines.")
    bench.add_argument("suite", choices=["engine"], help="what to measure")
    bench.add_argument("options", nargs=argparse.REMAINDER, help="the suite's own options")
    return parser


def server_config(args: argparse.Namespace) -> ServerConfig:
    """The ``ServerConfig`` of parsed `heron serve` arguments (``--model none``: no engine).

    Raises ``ValueError`` or ``EngineError`` for a value the configs reject.
    """
    # Built even for --model none, so a bad --device is refused whatever the model.
    engine = EngineConfig(model=args.model, device=args.device,
                          kv_cache_bytes=args.kv_cache_bytes, chunk_tokens=args.chunk_tokens,
                          prefix_block_tokens=args.prefix_block_tokens, dtype=args.dtype,
                          deterministic=args.deterministic, attention=args.attention)
    if (args.tls_cert is None) != (args.tls_key is None):
        raise ValueError("--tls-cert and --tls-key go together: give both or neither")
    tls = TlsConfig(args.tls_cert, args.tls_key) if args.tls_cert is not None else None
    return ServerConfig(host=args.host, port=args.port, data_dir=args.data_dir,
                        engine=None if args.model.lower() == "none" else engine,
                        auth=AuthMethod(args.auth), tls=tls,
                        max_connections=args.max_connections,
                        max_statement_tokens=args.max_statement_tokens)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        try:
            config = server_config(args)
        except (ValueError, EngineError) as exc:
            args.usage_error(str(exc))  # exits with status 2
        from heron.server import app  # imports asyncio machinery only when serving

        return app.run(config)
    if args.command == "bench":
        from heron.bench import engine as bench_engine  # imports torch: only when benchmarking

        return bench_engine.main(args.options)
    raise AssertionError(args.command)  # argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
