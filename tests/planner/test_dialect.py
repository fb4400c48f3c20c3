"""Heron's dialect: every spelling of every AI function parses into its typed node, and prints
back as written (the `validate_identity` tables of sqlglot's dialect tests are the model)."""

import pytest
from sqlglot import exp

from heron.planner import dialect
from heron.planner.dialect import AIClassify, AIComplete, AIFunction, AIIf, AIScore, Prompt
from heron.planner.errors import SqlError

SPELLINGS = [
    ("SELECT AI.IF(('Is it good? ', body)) FROM t", AIIf, "AI.IF", 1),
    ("SELECT ai.if('Is it good? ' || body) FROM t", AIIf, "AI.IF", 1),
    ("SELECT AI_FILTER(PROMPT('Is it good? {0}', body)) FROM t", AIIf, "AI_FILTER", 1),
    ("SELECT ai_filter(('Is it good? ', body)) FROM t", AIIf, "AI_FILTER", 1),
    ("SELECT AI.CLASSIFY(body, ['good', 'bad']) FROM t", AIClassify, "AI.CLASSIFY", 2),
    ("SELECT AI_CLASSIFY(body, ARRAY['good', 'bad']) FROM t", AIClassify, "AI_CLASSIFY", 2),
    ("SELECT AI.SCORE(('How good? ', body)) FROM t", AIScore, "AI.SCORE", 1),
    ("SELECT AI_COMPLETE(PROMPT('Summarize {0}', body), 20) FROM t", AIComplete, "AI_COMPLETE",
     2),
    ("SELECT AI.GENERATE(('Summarize ', body)) FROM t", AIComplete, "AI.GENERATE", 1),
    ("SELECT AI_SENTIMENT(body) FROM t", AIFunction, "AI_SENTIMENT", 1),
    ("SELECT AI_AGG(body, 'Summarize') FROM t", AIFunction, "AI_AGG", 2),
    ("SELECT AI.FORECAST(x) FROM t", AIFunction, "AI.FORECAST", 1),
]


@pytest.mark.parametrize(("sql", "node_class", "spelling", "arguments"), SPELLINGS)
def test_every_spelling_parses_into_its_typed_node(sql, node_class, spelling, arguments):
    (node,) = dialect.parse(sql).find_all(AIFunction)
    assert type(node) is node_class
    assert node.spelling == spelling
    assert len(node.arguments) == arguments


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT AI.IF(('Is it good? ', body)) FROM t",
        "SELECT AI_FILTER(PROMPT('Is {0} about {1}?', r.body, a.aspect)) FROM r JOIN a ON TRUE",
        "SELECT AI.CLASSIFY(body, ARRAY['good', 'bad']) FROM t",
        "SELECT AI_COMPLETE(body, 20) FROM t",
        "SELECT id FROM t WHERE AI.IF('x' || body) AND stars > 3 ORDER BY id LIMIT 2",
    ],
)
def test_the_dialect_prints_what_it_read(sql):
    assert dialect.sql(dialect.parse(sql)) == sql


def test_prompt_is_typed_and_plain_sql_is_untouched():
    tree = dialect.parse("SELECT PROMPT('a {0}', body), ai_other(1), t.ai, x.if FROM t")
    (prompt,) = tree.find_all(Prompt)
    assert prompt.this.this == "a {0}" and len(prompt.expressions) == 1
    assert not list(tree.find_all(AIFunction))


def test_arrows_in_arguments_are_json_operators_not_lambdas():
    # PostgreSQL has no `x -> expression` lambdas (sqlglot's postgres grammar reads one here).
    tree = dialect.parse("SELECT length(j -> 'a'), coalesce(j -> 'b' -> 0, j ->> 'c') FROM t")
    assert not list(tree.find_all(exp.Lambda))
    assert len(list(tree.find_all(exp.JSONExtract))) == 3
    assert tree.sql(dialect="duckdb").count("LAMBDA") == 0


@pytest.mark.parametrize("sql", ["SELECT AI.IF(('a', body) FROM t", "SELECT 1; SELECT 2"])
def test_syntax_errors_carry_42601(sql):
    with pytest.raises(SqlError) as info:
        dialect.parse(sql)
    assert info.value.sqlstate == "42601"


def test_an_interval_s_qualifier_is_one_of_postgresql_s_fields_and_literals_stay_as_written():
    # A word after an interval literal or the type that is not a field is an alias; a literal
    # of one field stays one string (sqlglot's '-1' MON is no interval DuckDB reads).
    tree = dialect.parse("SELECT interval '3' d, x::interval c, interval '2' day AS e, "
                         "interval '-1 mon' AS f, interval '1' hour to minute AS g FROM t")
    assert tree.named_selects == ["d", "c", "e", "f", "g"]
    assert tree.sql(dialect="duckdb") == (
        "SELECT INTERVAL '3' AS d, CAST(x AS INTERVAL) AS c, INTERVAL '2' DAY AS e, "
        "INTERVAL '-1 mon' AS f, INTERVAL '1' HOUR TO MINUTE AS g FROM t")
