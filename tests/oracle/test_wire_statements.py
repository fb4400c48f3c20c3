"""Differential suite, statements: every case of `wire_cases` through every driver against Heron
and PostgreSQL 15; the observations (column names and type OIDs, values, command tags,
SQLSTATEs) must be equal. Known gaps are listed in `wire_expected.EXPECTED_FAILURES` (strict:
a gap that closes fails until it is taken off the list)."""

from __future__ import annotations

import pytest
from oracle.wire_cases import CASES
from oracle.wire_drivers import DRIVERS, observe, setup
from oracle.wire_expected import EXPECTED_FAILURES

pytestmark = pytest.mark.timeout(120)


def _params() -> list[object]:
    params = []
    for case in CASES:
        for driver in DRIVERS:
            reason = EXPECTED_FAILURES.get(f"{driver}:{case.name}") or EXPECTED_FAILURES.get(
                f"*:{case.name}")
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            params.append(pytest.param(driver, case, id=f"{driver}-{case.name}", marks=marks))
    return params


@pytest.mark.parametrize(("driver", "case"), _params())
def test_same_as_postgres(heron_server, postgres15, driver, case):
    observations = []
    for server in (postgres15, heron_server):
        setup(server.dsn, case.setup)
        observations.append(observe(driver, server.dsn, server.host, server.port, case))
    expected, got = observations
    assert got == expected
