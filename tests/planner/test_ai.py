"""AI statements end to end through the planner, with the real embedded model (in process).

Each test checks what the planner promises against the engine's own answers for the prompts the
planner should have built: pushdown, spellings, NULLs, joins, cascades, EXPLAIN and KV reuse.
"""

import pytest
from support.engine_reference import boolean

from heron.catalog import Database
from heron.engine.prompts import filter_prompt, join_prompt
from heron.planner import Planner, SqlError, optimizer
from heron.planner.pg_types import for_arrow

QUESTION = "Does this review discuss the ending?"


@pytest.fixture
def planner(tmp_path, smollm2):
    database = Database(tmp_path, load_demo=False)
    con = database.connect()
    con.execute("""CREATE TABLE reviews (id INTEGER, stars INTEGER, body VARCHAR)""")
    con.execute("""INSERT INTO reviews VALUES
        (1, 5, 'The ending is perfect and left me in tears.'),
        (2, 1, 'The acting is wooden.'),
        (3, 4, 'The final twist ruins everything.'),
        (4, 2, 'Gorgeous music, dull story.'),
        (5, 5, NULL),
        (6, 3, 'The ending is perfect and left me in tears.')""")
    con.execute("CREATE TABLE aspects (name VARCHAR, aspect VARCHAR)")
    con.execute("INSERT INTO aspects VALUES ('ending', 'the ending'), ('music', 'the music')")
    yield Planner(con, smollm2)
    database.close()


def run(planner: Planner, sql: str, params=()):
    plan = planner.prepare(sql)
    return planner.execute(plan, params)


def rows(planner: Planner, sql: str, params=()):
    return rows_and_work(planner, sql, params)[0]


def rows_and_work(planner: Planner, sql: str, params=()):
    """The result rows, and the work of each AI operator."""
    result = run(planner, sql, params)
    return [tuple(r.values()) for r in result.rows.read_all().to_pylist()], result.work


def truth(engine, docs, question=QUESTION):
    answers = engine.answer(boolean([filter_prompt(d, question) for d in docs])).values
    return dict(zip(docs, answers, strict=True))


def test_filter_matches_the_engines_answers_and_pushes_predicates_down(planner, smollm2):
    got, work = rows_and_work(planner, f"SELECT id FROM reviews r WHERE r.stars >= 3 AND "
                                       f"AI.IF(('{QUESTION} ', r.body)) ORDER BY id")
    docs = [d for (d,) in planner.con.sql(
        "SELECT DISTINCT body FROM reviews WHERE stars >= 3 AND body IS NOT NULL").fetchall()]
    answers = truth(smollm2, docs)
    expected = [i for (i, b) in planner.con.sql(
        "SELECT id, body FROM reviews WHERE stars >= 3 ORDER BY id").fetchall() if answers.get(b)]
    assert got == [(i,) for i in expected]
    # Ordinary predicates ran first, and identical documents were asked once.
    assert work[0].candidates == len(docs) == 2
    assert work[0].metrics.prompts == 2


def test_the_spellings_agree(planner):
    spellings = [
        f"AI.IF(('{QUESTION} ', body))",
        f"AI_FILTER(PROMPT('{QUESTION} {{0}}', body))",
        f"AI.IF('{QUESTION} ' || body)",
    ]
    results = [rows(planner, f"SELECT id, {s} FROM reviews ORDER BY id") for s in spellings]
    assert results[0] == results[1] == results[2]


def test_null_document_gives_null_answer(planner, smollm2):
    got = dict(rows(planner, f"SELECT id, AI.IF(('{QUESTION} ', body)) FROM reviews"))
    assert got[5] is None
    assert all(isinstance(got[i], bool) for i in (1, 2, 3, 4, 6))
    assert got[1] == got[6]  # the same text, the same answer


def test_aggregates_group_by_and_limit_work_around_ai_results(planner):
    per_row = dict(rows(planner, f"SELECT id, AI.IF(('{QUESTION} ', body)) FROM reviews"))
    grouped = rows(planner, f"SELECT AI.IF(('{QUESTION} ', body)) AS e, count(*) FROM reviews "
                            "GROUP BY 1 ORDER BY 1 NULLS LAST")
    expected = {}
    for answer in per_row.values():
        expected[answer] = expected.get(answer, 0) + 1
    assert dict(grouped) == expected
    limited = rows(planner, f"SELECT id FROM reviews WHERE NOT AI.IF(('{QUESTION} ', body)) "
                            "ORDER BY id DESC LIMIT 1")
    assert limited == [(max(i for i, a in per_row.items() if a is False),)]


def test_ai_join_with_an_equality_condition(planner, smollm2):
    sql = ("SELECT a.name, count(*) FROM reviews r JOIN aspects a ON r.stars >= 3 AND "
           "AI_FILTER(PROMPT('Review: {0} Does it discuss {1}?', r.body, a.aspect)) "
           "GROUP BY 1 ORDER BY 1")
    got, (work,) = rows_and_work(planner, sql)
    assert work.operator.label == "AI Join"
    assert work.anchor.name == "r"  # reviews are longer than aspect names
    pairs = planner.con.sql("SELECT r.body, a.aspect, a.name FROM reviews r, aspects a "
                            "WHERE r.stars >= 3 AND r.body IS NOT NULL").fetchall()
    distinct = sorted({(b, asp) for b, asp, _ in pairs})
    question = "Review: DOCUMENT 0 Does it discuss DOCUMENT 1?"
    answers = smollm2.answer(boolean([join_prompt(b, question, asp)
                                      for b, asp in distinct])).values
    answer = dict(zip(distinct, answers, strict=True))
    expected: dict[str, int] = {}
    for body, aspect, name in pairs:
        if answer[(body, aspect)]:
            expected[name] = expected.get(name, 0) + 1
    assert dict(got) == expected
    assert work.candidates == len(distinct)
    # Each anchor's prefix ran once; partners reused it.
    assert work.metrics.cached_tokens > 0


def test_limit_stops_engine_work_once_enough_rows_passed(planner, tiny_engine, monkeypatch):
    monkeypatch.setattr(optimizer, "MIN_LIMIT_BATCH", 1)
    planner = Planner(planner.con, tiny_engine)  # answers TRUE to about 3 in 4 of these
    planner.con.execute("CREATE TABLE many AS SELECT i AS id, 'Review ' || i || ': ' || "
                        "CASE WHEN i % 2 = 0 THEN 'The ending is perfect.' ELSE 'Dull acting.' "
                        "END AS body FROM range(40) t(i)")
    docs = [d for (d,) in planner.con.sql("SELECT body FROM many").fetchall()]
    passing = {d for d, answer in truth(tiny_engine, docs).items() if answer}
    got, (work,) = rows_and_work(
        planner, f"SELECT id, body FROM many WHERE AI.IF(('{QUESTION} ', body)) LIMIT 3")
    assert len(got) == min(3, len(passing))
    assert all(body in passing for _, body in got)
    assert work.goal == 3 and work.candidates == 40
    assert len(passing) >= 20
    assert work.metrics.prompts < work.candidates  # batches of 6, 12, ... stopped early
    # Under ORDER BY the candidates are asked in that order: the first three that pass.
    got, (work,) = rows_and_work(
        planner, f"SELECT id FROM many WHERE AI.IF(('{QUESTION} ', body)) ORDER BY id DESC "
                 "LIMIT 3")
    ids = [i for (i, body) in planner.con.sql("SELECT id, body FROM many ORDER BY id DESC")
           .fetchall() if body in passing]
    assert got == [(i,) for i in ids[:3]]
    assert work.goal == 3 and work.metrics.prompts + work.reused < work.candidates
    # Aggregated statements need every answer.
    _, (work,) = rows_and_work(
        planner, f"SELECT count(*) FROM many WHERE AI.IF(('{QUESTION} ', body)) LIMIT 3")
    assert work.goal is None
    assert work.metrics.prompts + work.reused == 40


def test_filters_cascade(planner):
    _, (first, second) = rows_and_work(
        planner, f"SELECT id FROM reviews WHERE AI.IF(('{QUESTION} ', body)) "
                 "AND AI.IF(('Is this review positive? ', body))")
    assert second.candidates == first.passed


def test_second_question_reuses_document_kv(planner):
    rows(planner, f"SELECT id FROM reviews WHERE AI.IF(('{QUESTION} ', body))")
    _, (work,) = rows_and_work(
        planner, "SELECT id FROM reviews WHERE AI.IF(('Is the music mentioned? ', body))")
    assert work.metrics.cached_tokens > 0
    assert work.metrics.fresh_tokens < work.metrics.input_tokens


def test_parameters_bind_into_ai_statements(planner):
    got = rows(planner, "SELECT id FROM reviews WHERE id <= $1 AND AI.IF(($2 || ' ', body)) "
                        "ORDER BY id", [2, QUESTION])
    direct = rows(planner, f"SELECT id FROM reviews WHERE id <= 2 AND AI.IF(('{QUESTION} ', body))"
                           " ORDER BY id")
    assert got == direct


class CountingEngine:
    """The real engine, with a count of the prompts it was asked (to prove none were)."""

    def __init__(self, inner):
        self.inner, self.prompts, self.info = inner, 0, inner.info

    def answer(self, request, cancel=None, progress=None, *, more=()):
        self.prompts += len(request.prompts)
        return self.inner.answer(request, cancel, progress, more=self._counted(more))

    def _counted(self, parts):
        for part in parts:
            self.prompts += len(part)
            yield part

    def check(self, request):
        self.inner.check(request)

    def count_tokens(self, texts):
        return self.inner.count_tokens(texts)


def test_explain_estimates_without_running_the_engine(planner):
    planner.engine = CountingEngine(planner.engine)
    lines = [r[0] for r in rows(planner, f"EXPLAIN SELECT id FROM reviews WHERE stars > 1 AND "
                                         f"AI.IF(('{QUESTION} ', body))")]
    text = "\n".join(lines)
    assert "AI Filter #1" in text and f"Question: {QUESTION}" in text
    # Three distinct documents pass stars > 1.
    assert any(line.split() == ["candidates", "3"] for line in lines)
    assert "input tokens" in text and "Relational part (DuckDB)" in text
    assert planner.engine.prompts == 0


def test_explain_analyze_reports_actual_work(planner):
    lines = [r[0] for r in rows(planner, f"EXPLAIN ANALYZE SELECT id FROM reviews WHERE "
                                         f"AI.IF(('{QUESTION} ', body))")]
    text = "\n".join(lines)
    prompts = next(line.split() for line in lines if line.split()[0] == "prompts")
    assert prompts[1:] == ["4", "4"]  # estimated and actual, side by side
    assert "fresh tokens" in text
    assert text.splitlines()[-1].startswith("Result:")


def test_describe_does_not_ask_the_model(planner):
    planner.engine = CountingEngine(planner.engine)
    plan = planner.prepare(f"SELECT id, AI.IF(('{QUESTION} ', body)) AS e FROM reviews")
    columns = planner.describe(plan)
    # (as sent: a session's connection reads DuckDB's booleans as Arrow's bool8 extension)
    assert [(c.name, for_arrow(c.type).name) for c in columns] == [("id", "int4"), ("e", "bool")]
    # A bound portal is described with its parameter values, still without the model.
    plan = planner.prepare("SELECT id, $1 AS q, AI.IF(($1, body)) AS e FROM reviews")
    columns = planner.describe(plan, [QUESTION])
    assert [(c.name, for_arrow(c.type).name) for c in columns] == [
        ("id", "int4"), ("q", "text"), ("e", "bool")]
    assert planner.engine.prompts == 0


def test_ai_answers_can_be_stored(planner):
    expected = rows(planner, f"SELECT id, AI.IF(('{QUESTION} ', body)) FROM reviews ORDER BY id")
    result = run(planner, f"CREATE TABLE answers AS SELECT id, AI.IF(('{QUESTION} ', body)) "
                          "AS ending FROM reviews")
    assert result.command_tag == "SELECT 6"
    assert planner.con.sql("SELECT * FROM answers ORDER BY id").fetchall() == expected
    result = run(planner, f"INSERT INTO answers SELECT id + 100, true FROM reviews "
                          f"WHERE AI.IF(('{QUESTION} ', body))")
    passed = sum(1 for _, answer in expected if answer)
    assert result.command_tag == f"INSERT 0 {passed}"


@pytest.mark.parametrize(
    ("sql", "sqlstate"),
    [
        ("SELECT AI.IF(('x ', nope)) FROM reviews", "42703"),
        ("SELECT AI.IF(('x ', q.body)) FROM reviews", "42P01"),
        ("SELECT AI.IF(('x ', body || random())) FROM reviews", "0A000"),
        ("SELECT AI.IF(('x ', upper(r.body || a.aspect))) FROM reviews r, aspects a", "0A000"),
        ("SELECT AI.IF(('x ', name)) FROM aspects a1, aspects a2", "42702"),
        ("ALTER TABLE reviews ADD COLUMN x BOOLEAN DEFAULT AI.IF(('x ', 'y'))", "0A000"),
    ],
)
def test_bad_ai_statements_fail_with_a_sqlstate(planner, sql, sqlstate):
    with pytest.raises(SqlError) as info:
        run(planner, sql)
    assert info.value.sqlstate == sqlstate


def test_estimates_follow_the_real_engines_accounting(planner, tiny_engine):
    """EXPLAIN's prompts and tokens against what the engine reports, on documents it has
    never seen (its tokenizer, its prefix cache)."""
    planner = Planner(planner.con, tiny_engine)
    planner.publish_settings({"heron.reuse_answers": "off"})
    planner.con.execute("CREATE TABLE notes AS SELECT i AS id, 'Note ' || i || ': ' || "
                        "repeat('a film about trains and rivers ', 1 + i % 5) || i AS body "
                        "FROM range(24) t(i)")
    for sql in ["SELECT id FROM notes WHERE AI.IF(('Is it about trains? ', body))",
                "SELECT n.id, a.name FROM notes n JOIN aspects a ON AI_FILTER(PROMPT("
                "'Does note {0} mention {1}?', n.body, a.aspect))"]:
        plan = planner.prepare(sql).ai
        ((_, estimate),) = planner.executor.estimate(plan, (), planner.settings)
        _, (work,) = rows_and_work(planner, sql)
        assert estimate.work.prompts == work.metrics.prompts
        for guess, actual in [(estimate.work.input_tokens, work.metrics.input_tokens),
                              (estimate.work.fresh_tokens, work.metrics.fresh_tokens)]:
            assert actual / 1.5 <= guess <= actual * 1.5, (sql, guess, actual)


def test_candidates_whose_ids_collide_are_fetched_again_with_the_next_id_function(
        planner, monkeypatch):
    """Candidates cross from DuckDB as ids (a hash of each value): when two distinct values
    share an id, the execution switches to the next id function, and the answers are those of
    an execution without the collision — for the filter's lookup and the join's."""
    from heron.planner import executor

    statements = [f"SELECT id FROM reviews WHERE AI.IF(('{QUESTION} ', body)) ORDER BY id",
                  "SELECT r.id, a.name FROM reviews r JOIN aspects a ON AI_FILTER(PROMPT("
                  "'Review: {0} Does it discuss {1}?', r.body, a.aspect)) ORDER BY 1, 2"]
    expected = [rows(planner, sql) for sql in statements]
    planner.con.execute("CREATE MACRO same_id(text) AS 0::UBIGINT")
    monkeypatch.setattr(executor, "ID_FUNCTIONS", ("same_id", "hash"))
    planner.publish_settings({"heron.reuse_answers": "off"})
    assert [rows(planner, sql) for sql in statements] == expected
    monkeypatch.setattr(executor, "ID_FUNCTIONS", ("same_id",))
    with pytest.raises(SqlError) as raised:
        rows(planner, statements[0])
    assert raised.value.sqlstate == "XX000"
