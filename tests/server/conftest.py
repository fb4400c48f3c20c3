"""Fixtures of the server tests: `tls_files`, a self-signed certificate and its key; `conn`, a
psycopg 3 connection to `heron_server` in autocommit (test_psycopg2.py has its own)."""

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


@pytest.fixture
def conn(heron_server):
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(heron_server.dsn, autocommit=True) as c:
        yield c
