"""Differential suite, pgjdbc: a Java probe (tests/oracle/java/WireProbe.java, compiled here)
uses prepared statements past the prepare threshold, batches, savepoints, fetch sizes (portals
suspended by Execute's row limit), CopyManager both ways, result metadata and an error's
SQLSTATE against Heron and PostgreSQL 15; their outputs must be equal. Skipped without a JDK or
Debian's libpostgresql-jdbc-java."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.jdbc import compile_probe

pytestmark = pytest.mark.timeout(180)

PROBE = Path(__file__).parent / "java" / "WireProbe.java"


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    return compile_probe(PROBE, tmp_path_factory.mktemp("jdbc"))


def _run(classpath: str, server) -> list[str]:
    done = subprocess.run(["java", "-cp", classpath, "WireProbe", server.host,
                           str(server.port)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_pgjdbc_same_as_postgres(probe, heron_server, postgres15):
    expected = _run(probe, postgres15)
    assert _run(probe, heron_server) == expected
