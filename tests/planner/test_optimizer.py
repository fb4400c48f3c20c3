"""The cost-based planner: orders by measured or remembered selectivity, filters before joins
when cheaper, anchor groups under LIMIT, reused answers, and estimates close to the actual work
on QUAIL-B-shaped statements (the deterministic `HashEngine` plays the engine)."""

import itertools
import random

import duckdb
import pytest
from support import quail
from support.hash_engine import HashEngine

from heron.catalog.answers import AnswerStore
from heron.catalog.statistics import Statistics
from heron.planner import Planner, candidates, optimizer
from heron.planner.cost import CostModel
from heron.planner.logical import Source
from heron.planner.optimizer import Evidence, Layout, Shape


@pytest.fixture(scope="module")
def con():
    # One DuckDB thread: under a bare LIMIT the candidates are asked in the order DuckDB
    # produces them, which several threads may change from run to run (and with it how many
    # prompts the LIMIT needs, which these tests compare).
    con = duckdb.connect(config={"threads": 1})
    quail.load(con)
    yield con
    con.close()


def planner_for(con, order="cost", **kwargs) -> tuple[Planner, HashEngine]:
    engine = HashEngine(rates=quail.RATES)
    planner = Planner(con.cursor(), engine, **kwargs)
    planner.publish_settings({"heron.order": order})
    return planner, engine


def run(planner: Planner, sql: str):
    result = planner.execute(planner.prepare(sql))
    return sorted(tuple(r.values()) for r in result.rows.read_all().to_pylist()), result.work


# -- the dynamic program against brute force ------------------------------------------------


def brute_force(shapes, model):
    """Every order priced step by step: the dynamic program's slow twin."""
    best = None
    for order in itertools.permutations(shapes):
        resident, applied, total = frozenset(), [], 0.0
        for shape in order:
            cost = optimizer.estimate(shape, model, resident, applied)
            total += cost.seconds
            resident |= optimizer.left_resident(shape, cost)
            applied.append(shape)
        best = total if best is None else min(best, total)
    return best


def random_shapes(rng: random.Random) -> list[Shape]:
    tables = [Source(name, 0, name) for name in ("r", "m", "a")]
    shapes = []
    for index in range(rng.randint(2, 6)):
        chosen = tuple(sorted(rng.sample(tables, rng.choice([1, 1, 2])),
                              key=lambda t: t.alias))
        candidates = rng.randint(1, 5000)
        layouts = tuple(Layout(t, rng.randint(1, candidates), rng.uniform(5, 800),
                               rng.uniform(3, 60)) for t in chosen)
        shapes.append(Shape(f"m{index}", chosen, candidates, layouts, rng.uniform(0.01, 0.99),
                            Evidence.SAMPLE))
    return shapes


def test_the_dynamic_program_finds_the_cheapest_order():
    rng = random.Random(3)
    model = CostModel.of(None)
    for _ in range(60):
        shapes = random_shapes(rng)
        steps = optimizer.order(shapes, model)
        assert sorted(s.marker for s in steps) == sorted(s.marker for s in shapes)
        assert sum(s.estimate.seconds for s in steps) == pytest.approx(brute_force(shapes, model))


def test_independent_filters_run_by_rank():
    """cost / (1 - selectivity), the classic rule, for filters over the same documents."""
    table = Source("r", 0, "r")
    model = CostModel.of(None)
    shapes = [Shape(name, (table,), 1000, (Layout(table, 1000, 100, 10),), selectivity,
                    Evidence.CATALOG)
              for name, selectivity in (("a", 0.9), ("b", 0.1), ("c", 0.5))]
    assert [s.marker for s in optimizer.order(shapes, model)] == ["b", "c", "a"]


# -- orders on real statements ---------------------------------------------------------------


def test_filters_run_before_a_join_when_cheaper(con):
    """IMDB-4: a review x movie join with a filter on each side."""
    sql = quail.SHAPES["IMDB-4"]
    as_written, written_engine = planner_for(con, "as_written")
    cost, cost_engine = planner_for(con, "cost")
    written_rows, written_work = run(as_written, sql)
    cost_rows, cost_work = run(cost, sql)
    assert cost_rows == written_rows
    assert [w.operator.label for w in written_work][0] == "AI Join"  # as written: ON first
    assert [w.operator.label for w in cost_work][-1] == "AI Join"  # filters first
    prompts = sum(w.metrics.prompts for w in cost_work)
    fresh = sum(w.metrics.fresh_tokens for w in cost_work)
    assert prompts * 5 < sum(w.metrics.prompts for w in written_work)
    assert fresh * 2 < sum(w.metrics.fresh_tokens for w in written_work)


def test_selectivity_is_sampled_once_then_remembered(con):
    statistics = Statistics()
    planner, _ = planner_for(con, statistics=statistics)
    sql = quail.SHAPES["IMDB-2"]
    _, work = run(planner, sql)
    assert any(w.sampled for w in work)
    # The selective question ran first, and the next statement needs no sample.
    assert "ending" in work[0].operator.call.question()
    planned = planner.executor.estimate(planner.prepare(sql).ai, (), planner.settings)
    assert [e.evidence for _, e in planned] == [Evidence.CATALOG] * 2
    assert planned[0][1].selectivity == pytest.approx(0.1, abs=0.06)
    _, work = run(planner, sql)
    assert not any(w.sampled for w in work)


def test_a_join_under_limit_asks_whole_anchor_groups(con):
    sql = quail.SHAPES["BIO-2"]
    planner, _ = planner_for(con)
    planner.publish_settings({"heron.reuse_answers": "off"})
    _, (everything,) = run(planner, sql)
    limited_planner, _ = planner_for(con)
    rows, (limited,) = run(limited_planner, sql + " LIMIT 2")
    assert len(rows) == 2 and limited.goal == 2
    assert limited.anchor.name == "p"  # the long reports are the shared prefixes
    # Whole groups around few anchors: most reports' prefixes were never computed.
    assert limited.metrics.prompts < everything.metrics.prompts / 2
    assert limited.metrics.fresh_tokens < everything.metrics.fresh_tokens / 2


def test_answers_are_reused_across_sessions_unless_switched_off(con):
    store = AnswerStore()
    sql = quail.SHAPES["IMDB-1"]
    first, first_engine = planner_for(con, answers=store)
    rows, _ = run(first, sql)
    second, second_engine = planner_for(con, answers=store)
    again, (work,) = run(second, sql)
    assert again == rows and second_engine.prompts == 0 and work.reused == work.candidates
    second.publish_settings({"heron.reuse_answers": "off"})
    third, (work,) = run(second, sql)
    assert third == rows and second_engine.prompts == work.candidates


# -- estimates against actuals ----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(quail.SHAPES))
def test_estimates_are_within_half_again_of_the_actual_work(con, name):
    """After one run taught the statistics the selectivities, EXPLAIN's estimates of prompts,
    input and fresh tokens are within 1.5x of what a cold run does (no answers reused)."""
    sql = quail.SHAPES[name]
    statistics = Statistics()
    teacher, _ = planner_for(con, statistics=statistics)
    run(teacher, sql)
    planner, _ = planner_for(con, statistics=statistics)
    planner.publish_settings({"heron.reuse_answers": "off"})
    planned = dict((op.marker, e) for op, e in planner.executor.estimate(
        planner.prepare(sql).ai, (), planner.settings))
    _, work = run(planner, sql)
    for w in work:
        estimate = planned[w.operator.marker].work
        for label, guess, actual in [("prompts", estimate.prompts, w.metrics.prompts),
                                     ("input", estimate.input_tokens, w.metrics.input_tokens),
                                     ("fresh", estimate.fresh_tokens, w.metrics.fresh_tokens)]:
            assert actual / 1.5 <= guess <= actual * 1.5, (name, label, guess, actual)


def test_values_under_limit_are_asked_only_for_rows_that_can_be_returned(con):
    planner, engine = planner_for(con)
    rows, (work,) = run(planner, "SELECT id, AI_COMPLETE(('Summarize: ', body), 4) FROM "
                                 "reviews LIMIT 5")
    assert len(rows) == 5 and engine.prompts == 5 and all(text for _, text in rows)
    # Top-k by a plain key, then a score: only the rows tied within the first keys.
    _, (work,) = run(planner, "SELECT id FROM reviews ORDER BY movie_id DESC, "
                              "AI.SCORE(('How good is it? ', body)) DESC LIMIT 3")
    reviews_of_last_movie = con.execute("SELECT count(*) FROM reviews WHERE movie_id = "
                                        "(SELECT max(movie_id) FROM reviews)").fetchone()[0]
    assert work.candidates == reviews_of_last_movie < 200
    # With the score first, every row needs its score.
    _, (work,) = run(planner, "SELECT id FROM reviews ORDER BY AI.SCORE(('How good is it? ', "
                              "body)) DESC, movie_id LIMIT 3")
    assert work.candidates == 200


def test_a_join_sends_one_prefix_object_per_anchor_and_fetches_its_candidates_once(con):
    """Host work around a join: thousands of pairs repeat an anchor's document, so its pairs
    share one prefix string (hashed once for the answer keys, pickled once to the engine), and
    the anchor choice and the operator read one fetch of the candidate query."""
    planner, engine = planner_for(con)
    planner.publish_settings({"heron.reuse_answers": "off"})
    fetched = []
    fetch = planner.executor.fetch

    def counting(query, deadline=None):
        fetched.append(query.sql(dialect="duckdb"))
        return fetch(query, deadline)

    planner.executor.fetch = counting
    _, (work,) = run(planner, quail.SHAPES["BIO-2"])
    prompts = [p for r in engine.requests for p in r.prompts]
    assert len(prompts) == work.metrics.prompts > len({p.prefix for p in prompts})
    for request in engine.requests:
        texts = {p.prefix for p in request.prompts}
        assert len({id(p.prefix) for p in request.prompts}) == len(texts)
    candidate_queries = [sql for sql in fetched if candidates.PART in sql]
    assert len(candidate_queries) == len(set(candidate_queries)) == 1
