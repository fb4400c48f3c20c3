"""The worker pool: each connection's lane runs its calls in order, one at a time; a call that
runs long never holds up other lanes; threads started beside long calls end once surplus."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from heron.server.worker import QUICK_RUNS, QUICK_S, Pace, WorkerPool

pytestmark = pytest.mark.timeout(30)


def test_a_lane_runs_its_calls_in_order_one_at_a_time() -> None:
    pool = WorkerPool(3)
    inside = 0
    overlaps = 0
    seen: list[int] = []
    guard = threading.Lock()

    def call(i: int) -> int:
        nonlocal inside, overlaps
        with guard:
            inside += 1
            overlaps += inside > 1
        time.sleep(0.002)
        seen.append(i)
        with guard:
            inside -= 1
        return i * 10

    async def main() -> list[int]:
        lane = pool.lane(asyncio.get_running_loop())
        futures = [lane.submit(call, i) for i in range(20)]  # none awaited before the next
        assert lane.busy
        results = await asyncio.gather(*futures)
        assert not lane.busy
        return results

    assert asyncio.run(main()) == [i * 10 for i in range(20)]
    assert seen == list(range(20)) and overlaps == 0


def test_errors_reach_the_caller_and_cancelled_calls_do_not_run() -> None:
    pool = WorkerPool(1)
    ran: list[str] = []
    release = threading.Event()

    def fail() -> None:
        raise ValueError("no")

    async def main() -> None:
        lane = pool.lane(asyncio.get_running_loop())
        with pytest.raises(ValueError, match="no"):
            await lane.submit(fail)
        blocker = lane.submit(release.wait)
        skipped = lane.submit(ran.append, "skipped")
        skipped.cancel()
        kept = lane.submit(ran.append, "kept")
        release.set()
        await blocker
        await kept

    asyncio.run(main())
    assert ran == ["kept"]


def test_long_calls_do_not_hold_up_other_lanes_and_extra_threads_end() -> None:
    pool = WorkerPool(1, long_call_s=0.02)
    release = threading.Event()

    async def main() -> float:
        loop = asyncio.get_running_loop()
        long_lanes = [pool.lane(loop) for _ in range(3)]
        waiting = [lane.submit(release.wait) for lane in long_lanes]  # each takes a thread
        await asyncio.sleep(0.2)
        started = time.perf_counter()
        assert await pool.lane(loop).submit(sum, [1, 2]) == 3
        waited = time.perf_counter() - started
        assert pool.alive == 4  # one per long call, and one ready
        release.set()
        await asyncio.gather(*waiting)
        return waited

    assert asyncio.run(main()) < 0.2
    deadline = time.monotonic() + 5
    while pool.alive > 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.alive == 1


def test_a_closed_lane_finishes_what_was_queued_and_refuses_more() -> None:
    pool = WorkerPool(2)

    async def main() -> None:
        lane = pool.lane(asyncio.get_running_loop())
        queued = [lane.submit(time.sleep, 0.01), lane.submit(sum, [4, 5])]
        lane.close()
        with pytest.raises(RuntimeError, match="closed"):
            lane.submit(sum, [1])
        assert (await asyncio.gather(*queued))[1] == 9

    asyncio.run(main())


def test_a_pool_needs_a_thread() -> None:
    with pytest.raises(ValueError, match="at least one thread"):
        WorkerPool(0)


def test_a_pace_is_quick_after_quick_runs_in_a_row_until_one_is_slow() -> None:
    pace = Pace()
    for _ in range(QUICK_RUNS):
        assert not pace.quick
        assert pace.run(lambda x: x + 1, 1) == 2
    assert pace.quick
    pace.run(time.sleep, QUICK_S * 3)
    assert not pace.quick
    for _ in range(QUICK_RUNS):
        with pytest.raises(ZeroDivisionError):  # a call that fails is timed too
            pace.run(lambda: 1 / 0)
    assert pace.quick
    pace.never()
    pace.run(lambda: None)
    assert not pace.quick
