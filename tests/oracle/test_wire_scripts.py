"""Differential suite, client scripts: COPY through each driver's API, SQL and driver cursors,
savepoints, transaction modes, statement_timeout and write conflicts, each script run against
Heron and PostgreSQL 15 with the same results expected (known gaps: `wire_expected`)."""

from __future__ import annotations

import pytest
from oracle.wire_expected import EXPECTED_FAILURES
from oracle.wire_scripts import SCRIPTS

pytestmark = pytest.mark.timeout(120)


def _params() -> list[object]:
    params = []
    for name in SCRIPTS:
        reason = EXPECTED_FAILURES.get(f"script:{name}")
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        params.append(pytest.param(name, id=name, marks=marks))
    return params


@pytest.mark.parametrize("name", _params())
def test_same_as_postgres(heron_server, postgres15, name):
    script = SCRIPTS[name]
    expected = script(postgres15)
    got = script(heron_server)
    assert got == expected
