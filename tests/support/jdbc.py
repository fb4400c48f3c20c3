"""pgjdbc probes: `compile_probe(source, folder)` compiles a Java probe against Debian's pgjdbc
jar (`JAR`) into `folder` and returns the class path to run it with; the test is skipped where
there is no JDK or no jar."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

JAR = Path("/usr/share/java/postgresql.jar")


def compile_probe(source: Path, folder: Path) -> str:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("no JDK (javac, java) installed")
    if not JAR.exists():
        pytest.skip("pgjdbc is not installed (Debian: apt-get install libpostgresql-jdbc-java)")
    subprocess.run(["javac", "-cp", str(JAR), "-d", str(folder), str(source)], check=True,
                   capture_output=True, timeout=120)
    return f"{folder}:{JAR}"
