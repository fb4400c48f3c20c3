"""A self-signed TLS certificate for 127.0.0.1/localhost, made by `openssl` for the tests.

`self_signed(folder)` writes `cert.pem` and `key.pem` into `folder` and returns their paths, or
None when the `openssl` command is not installed (the TLS tests then skip and say why).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def self_signed(folder: Path) -> tuple[Path, Path] | None:
    if shutil.which("openssl") is None:
        return None
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key
