"""The real psql client against `heron serve`."""

from __future__ import annotations

import shutil
import subprocess

import pytest

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed"),
]


def psql(server, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [
        "psql",
        "-X",
        "-h",
        server.host,
        "-p",
        str(server.port),
        "-U",
        "heron",
        "-d",
        "heron",
        "-A",
        "-t",
        *args,
    ]
    return subprocess.run(
        command,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        env={"PGCONNECT_TIMEOUT": "5", "PATH": "/usr/bin:/bin"},
    )


def test_single_command(heron_server):
    result = psql(heron_server, "-c", "SELECT 1 + 1 AS two, 'héron' AS name, true AS t")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2|héron|t"


def test_several_statements_in_one_script(heron_server):
    script = (
        "CREATE TABLE psql_t (i INTEGER, s VARCHAR);\n"
        "INSERT INTO psql_t VALUES (1, 'a'), (2, NULL);\n"
        "SELECT i, coalesce(s, 'null') FROM psql_t ORDER BY i;\n"
    )
    result = psql(heron_server, "-v", "ON_ERROR_STOP=1", stdin=script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["CREATE", "TABLE", "INSERT", "0", "2", "1|a", "2|null"]


def test_on_error_stop_and_verbose_sqlstate(heron_server):
    script = "\\set VERBOSITY verbose\nSELEC 1;\nSELECT 'not reached';\n"
    result = psql(heron_server, "-v", "ON_ERROR_STOP=1", stdin=script)
    assert result.returncode == 3
    assert "ERROR:  42601:" in result.stderr
    assert "not reached" not in result.stdout


def test_multiple_results_from_one_c(heron_server):
    result = psql(heron_server, "-c", "SELECT 1; SELECT 2")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "2"]
