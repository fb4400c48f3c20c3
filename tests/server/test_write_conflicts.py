"""`write_conflicts.Writer.wait`: when a statement that met a write conflict may run again.
(Clients waiting on each other through a server, against PostgreSQL: tests/oracle/wire_scripts.py,
`hot_row` and `write_waits_for_block`.)"""

from __future__ import annotations

import threading
import time

import pytest

from heron.server.write_conflicts import Writer, Writers

pytestmark = pytest.mark.timeout(30)


def _never() -> bool:
    return False


def test_a_conflict_without_a_rival_does_not_run_again():
    writers = Writers()
    alone, idle = Writer(writers), Writer(writers)
    since = alone.ended_elsewhere()
    alone.begins()
    alone.ends()  # its own end is not a rival's
    assert idle.ended_elsewhere() == 1
    assert alone.wait(since, _never) is False


def test_a_rival_that_ended_since_the_attempt_began_lets_it_run_again_at_once():
    writers = Writers()
    mine, rival = Writer(writers), Writer(writers)
    rival.begins()
    since = mine.ended_elsewhere()
    rival.ends()
    started = time.monotonic()
    assert mine.wait(since, _never) is True
    assert time.monotonic() - started < 0.05


def test_an_open_rival_is_waited_for_until_it_ends():
    writers = Writers()
    mine, rival = Writer(writers), Writer(writers)
    rival.begins()
    since = mine.ended_elsewhere()
    ended_at: list[float] = []

    def end_later() -> None:
        time.sleep(0.3)
        ended_at.append(time.monotonic())
        rival.ends()

    threading.Thread(target=end_later).start()
    assert mine.wait(since, _never) is True
    assert ended_at and time.monotonic() >= ended_at[0]


def test_a_wait_gives_up_when_told_to_stop():
    writers = Writers()
    mine, rival = Writer(writers), Writer(writers)
    rival.begins()
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    assert mine.wait(mine.ended_elsewhere(), stop.is_set) is False
    rival.ends()
