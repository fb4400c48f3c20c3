"""`heron serve` as a subprocess on 127.0.0.1 with an ephemeral port, for the tests.

`start_heron(data_dir, *args)` starts one (model none unless the arguments name one) and returns
a `HeronProcess` once it printed its listening line; `HeronProcess.stop()` ends it with SIGTERM,
then SIGKILL after a grace period.
"""

from __future__ import annotations

import re
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
_LISTENING = re.compile(r"heron: listening on (?P<host>\S+):(?P<port>\d+)")


@dataclass
class HeronProcess:
    """One running `heron serve`."""

    host: str
    port: int
    data_dir: Path
    process: subprocess.Popen[str]
    log_path: Path
    _spawned: list[HeronProcess] = field(default_factory=list, repr=False)

    def spawn(self, data_dir: str | Path) -> HeronProcess:
        """Start another server (model none) on `data_dir`; stopped at session end at latest."""
        server = start_heron(Path(data_dir))
        self._spawned.append(server)
        return server

    @property
    def dsn(self) -> str:
        """libpq connection string (psycopg, psycopg2) with a connect timeout."""
        return f"host={self.host} port={self.port} user=heron dbname=heron connect_timeout=10"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> int | None:
        """SIGTERM (graceful shutdown), SIGKILL after a grace period; the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_TIMEOUT_S)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.process.returncode


def start_heron(data_dir: Path, *extra_args: str, timeout: float = START_TIMEOUT_S
                ) -> HeronProcess:
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = data_dir.parent / f"{data_dir.name}-heron.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "heron.server.cli",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--data-dir",
                str(data_dir),
                "--model",
                "none",
                *extra_args,
            ],
            cwd=data_dir,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    deadline = time.monotonic() + timeout
    selector = selectors.DefaultSelector()
    assert process.stdout is not None
    selector.register(process.stdout, selectors.EVENT_READ)
    try:
        while (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                continue
            line = process.stdout.readline()
            if not line:  # exited before listening
                break
            if m := _LISTENING.search(line):
                return HeronProcess(m["host"], int(m["port"]), data_dir, process, log_path)
    finally:
        selector.close()
    process.kill()
    process.wait()
    raise RuntimeError(
        f"heron serve did not start within {timeout}s:\n"
        f"{log_path.read_text(errors='replace')}"
    )
