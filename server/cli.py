"""The `heron` command line.

Contract: `main(argv)` parses arguments and returns the exit status; `heron serve [--host]
[--port] [--data-dir] [--model] [--device]` runs the server until SIGINT/SIGTERM, `heron
--version` prints the version. Bad arguments exit with status 2 and a usage message (argparse).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from importlib import metadata

FALLBACK_DEFAULT_MODEL = "smollm2-135m"  # engine.DEFAULT_MODEL, when the engine can't import


def _version() -> str:
    try:
        return metadata.version("heron")
    except metadata.PackageNotFoundError:  # running from a source checkout
        return "0.1.0"


def _default_model() -> str:
    try:
        from heron import engine  # does not import torch

        return str(engine.DEFAULT_MODEL)
    except (ImportError, AttributeError):
        return FALLBACK_DEFAULT_MODEL


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 0 and 65535, got {port}")
    return port


def _device(text: str) -> str:
    if not re.fullmatch(r"cpu|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"device must be cpu, cuda or cuda:N, got {text!r}")
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="heron",
        description="A PostgreSQL-wire SQL server that evaluates AI functions with a local LLM.")
    parser.add_argument("--version", action="version", version=f"heron {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    serve = commands.add_parser("serve", help="run the server",
                                description="Run the PostgreSQL wire-protocol server.")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on "
                       "(default: %(default)s)")
    serve.add_argument("--port", type=_port, default=5433,
                       help="TCP port, 0 for any free one (default: %(default)s)")
    serve.add_argument("--data-dir", default="./heron-data",
                       help="directory of the database and caches (default: %(default)s)")
    serve.add_argument("--model", default=_default_model(),
                       help="model name, local path, Hugging Face id, or 'none' for no AI "
                       "functions (default: %(default)s)")
    serve.add_argument("--device", type=_device, default="cpu",
                       help="where the model runs: cpu, cuda or cuda:N (default: %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        from heron.server import app  # imports asyncio machinery only when serving

        return app.run(args.host, args.port, args.data_dir, args.model, args.device)
    raise AssertionError(args.command)  # argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
