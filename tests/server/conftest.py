"""Fixtures of the server tests: `tls_files`, a self-signed certificate and its key."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.tls import self_signed


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    files = self_signed(tmp_path_factory.mktemp("tls"))
    if files is None:
        pytest.skip("openssl is not installed: the TLS tests need it to make a certificate")
    return files
