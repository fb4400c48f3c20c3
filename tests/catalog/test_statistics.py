"""What the planner learns: selectivities smoothed, bounded, shared by threads, kept across a
restart; and the engine's measured speed."""

import threading

from heron.catalog import Database
from heron.catalog.statistics import Statistics

KEY = ("boolean", "Is it good?", "reviews:body")


def test_selectivity_is_smoothed_towards_one_half():
    statistics = Statistics()
    assert statistics.selectivity(KEY) is None
    statistics.observe(KEY, 2, 0)
    assert 0 < statistics.selectivity(KEY).fraction < 0.25  # two FALSE answers: not zero
    statistics.observe(KEY, 98, 10)
    seen = statistics.selectivity(KEY)
    assert seen.asked == 100 and abs(seen.fraction - 0.1) < 0.01


def test_least_recently_used_questions_are_forgotten():
    statistics = Statistics(max_questions=2)
    statistics.observe(("a",), 1, 1)
    statistics.observe(("b",), 1, 1)
    statistics.selectivity(("a",))  # used: kept
    statistics.observe(("c",), 1, 1)
    assert statistics.selectivity(("b",)) is None and statistics.selectivity(("a",))


def test_threads_observe_without_losing_counts():
    statistics = Statistics()

    def observe():
        for _ in range(1000):
            statistics.observe(KEY, 1, 1)

    threads = [threading.Thread(target=observe) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statistics.selectivity(KEY).asked == 4000


def test_speed_factor_follows_measurements():
    statistics = Statistics()
    assert statistics.speed_factor() == 1.0
    for _ in range(20):
        statistics.observe_speed(priced_seconds=1.0, measured_seconds=4.0)
    assert abs(statistics.speed_factor() - 4.0) < 0.01


def test_a_restarted_server_remembers(tmp_path):
    with Database(tmp_path, load_demo=False) as database:
        database.statistics.observe(KEY, 10, 3)
        database.statistics.observe_speed(1.0, 2.0)
    with Database(tmp_path, load_demo=False) as database:
        assert database.statistics.selectivity(KEY).asked == 10
        assert database.statistics.speed_factor() == 2.0
    (tmp_path / "statistics.json").write_text("not json")
    with Database(tmp_path, load_demo=False) as database:
        assert database.statistics.selectivity(KEY) is None
