"""Statement shapes for the planner's differential tests: the tables they read (`load`), 60-odd
hand-written shapes with how to compare their rows (`SHAPES`), and a generator of random ones
(`random_statement`). Imported as `support.shapes`.
"""

from __future__ import annotations

import enum

import duckdb


class Compare(enum.Enum):
    ORDERED = "ordered"  # the statement orders its rows totally
    BAG = "bag"
    LIMITED = "limited"  # LIMIT without a total order: any rows of the answer, that many


BODIES = [
    "The ending is perfect and left me in tears.",
    "The acting is wooden and the plot drags.",
    "Gorgeous music, dull story.",
    "The final twist ruins everything that came before.",
    "A warm film about family, with a great score.",
    "I laughed, I cried, I want my money back.",
    "Slow, beautiful, and the ending lands.",
    "The cast is superb; the script is not.",
    "Nothing happens for two hours.",
    "The soundtrack alone is worth the ticket.",
    "A sequel nobody asked for.",
    "Brilliant performances all round.",
]


def load(con: duckdb.DuckDBPyConnection) -> None:
    """The tables every shape reads: reviews, movies, aspects, tags."""
    con.execute("CREATE TABLE movies (id INTEGER, title VARCHAR, plot VARCHAR)")
    con.execute("""INSERT INTO movies VALUES
        (1, 'Tears', 'A family reunites after years apart.'),
        (2, 'Wood', 'A detective investigates a forest.'),
        (3, 'Score', 'A composer loses his hearing.'),
        (4, 'Twist', 'Nothing is what it seems.'),
        (5, 'Money', 'A heist goes wrong.'),
        (6, 'Sequel', NULL)""")
    con.execute("CREATE TABLE reviews (id INTEGER, movie_id INTEGER, stars INTEGER, "
                "title VARCHAR, body VARCHAR)")
    rows = []
    for i in range(1, 31):
        body = None if i in (7, 19) else BODIES[(i * 5) % len(BODIES)]
        rows.append((i, i % 6 + 1, i % 5 + 1, f"Review {i % 9}", body))
    con.executemany("INSERT INTO reviews VALUES (?, ?, ?, ?, ?)", rows)
    con.execute("CREATE TABLE aspects (id INTEGER, aspect VARCHAR)")
    con.execute("INSERT INTO aspects VALUES (1, 'the ending'), (2, 'the music'), "
                "(3, 'the acting'), (4, NULL)")
    con.execute("CREATE TABLE tags (id INTEGER, review_id INTEGER, tag VARCHAR)")
    con.execute("INSERT INTO tags SELECT i, (i * 7) % 30 + 1, CASE i % 4 WHEN 0 THEN 'moving' "
                "WHEN 1 THEN 'boring' WHEN 2 THEN 'loud' ELSE 'funny' END FROM range(20) t(i)")


JOIN = "AI_FILTER(PROMPT('Does the review {{0}} discuss {{1}}?', {body}, {aspect}))"
LABELS = "['positive', 'negative', 'mixed']"


def ai_if(body: str = "body", question: str = "Is this review positive? ") -> str:
    return f"AI.IF(('{question}', {body}))"


def ai_join(body: str = "r.body", aspect: str = "a.aspect") -> str:
    return JOIN.format(body=body, aspect=aspect)


ORDERED, BAG, LIMITED = Compare.ORDERED, Compare.BAG, Compare.LIMITED
SHAPES: list[tuple[str, Compare]] = [
    # Filters, chains, boolean logic, NULL documents, the three spellings.
    (f"SELECT id FROM reviews WHERE {ai_if()}", BAG),
    (f"SELECT id FROM reviews WHERE stars >= 3 AND {ai_if()}", BAG),
    (f"SELECT id FROM reviews WHERE {ai_if()} AND {ai_if(question='Does it mention music? ')} "
     f"AND {ai_if('title', 'Is this a title? ')}", BAG),
    (f"SELECT id FROM reviews WHERE {ai_if()} OR {ai_if(question='Is it about acting? ')}", BAG),
    (f"SELECT id FROM reviews WHERE NOT {ai_if()} AND stars < 4", BAG),
    (f"SELECT id, CASE WHEN {ai_if()} THEN 'up' ELSE 'down' END AS verdict FROM reviews "
     "ORDER BY id", ORDERED),
    (f"SELECT id, {ai_if()} AS positive FROM reviews ORDER BY id", ORDERED),
    ("SELECT id FROM reviews WHERE AI_FILTER(PROMPT('Is {0} positive?', body))", BAG),
    ("SELECT id FROM reviews WHERE AI.IF('Is this review positive? ' || body)", BAG),
    ("SELECT id FROM reviews WHERE AI.IF(PROMPT('Is {0} the title of {1}?', title, body))", BAG),
    (f"SELECT id FROM reviews WHERE {ai_if()} IS NOT TRUE", BAG),
    (f"SELECT id, COALESCE({ai_if()}, false) AS p FROM reviews ORDER BY id", ORDERED),
    # Joins: with filters, equality conditions, three tables, self-aliases, comma joins.
    (f"SELECT r.id, a.id FROM reviews r JOIN aspects a ON {ai_join()} WHERE r.stars > 2", BAG),
    ("SELECT r.id, m.id FROM reviews r JOIN movies m ON r.movie_id = m.id AND "
     "AI_FILTER(PROMPT('Is {0} a fair review of a film about {1}?', r.body, m.plot))", BAG),
    (f"SELECT r.id, a.id, m.id FROM reviews r JOIN aspects a ON {ai_join()} JOIN movies m "
     "ON r.movie_id = m.id AND AI_FILTER(PROMPT('Is {0} about {1}?', m.plot, a.aspect)) "
     "WHERE r.id < 20", BAG),
    ("SELECT r1.id, r2.id FROM reviews r1 JOIN reviews r2 ON r1.id < r2.id AND "
     "AI_FILTER(PROMPT('Do {0} and {1} agree?', r1.body, r2.body)) "
     "WHERE r1.id < 9 AND r2.id < 9", BAG),
    (f"SELECT r.id, a.aspect FROM reviews r, aspects a WHERE {ai_join()} AND r.id % 2 = 0", BAG),
    (f"SELECT r.id, a.id FROM reviews r JOIN aspects a ON {ai_join()} WHERE {ai_if('r.body')} "
     "AND AI.IF(('Is this a real topic? ', a.aspect))", BAG),
    # Outer joins keep their unmatched rows.
    (f"SELECT r.id, a.id FROM reviews r LEFT JOIN aspects a ON {ai_join()} WHERE a.id IS NULL",
     BAG),
    (f"SELECT r.id, a.id FROM aspects a RIGHT JOIN reviews r ON {ai_join()} WHERE a.id IS NULL",
     BAG),
    (f"SELECT r.id, a.id FROM reviews r FULL JOIN aspects a ON {ai_join()} AND r.id < 6", BAG),
    (f"SELECT r.id, a.id FROM reviews r LEFT JOIN aspects a ON a.id = 1 AND {ai_if('r.body')}",
     BAG),
    (f"SELECT r.id, a.id FROM reviews r LEFT JOIN aspects a ON {ai_join()} "
     "WHERE r.stars > 3", BAG),
    (f"SELECT r.id, a.id, m.id FROM reviews r LEFT JOIN aspects a ON {ai_join()} "
     "LEFT JOIN movies m ON m.id = a.id AND AI.IF(('Is it a drama? ', m.plot))", BAG),
    # Classification.
    (f"SELECT id, AI.CLASSIFY(body, {LABELS}) AS label FROM reviews ORDER BY id", ORDERED),
    ("SELECT AI_CLASSIFY(body, ARRAY['good', 'bad']) AS label, count(*) FROM reviews "
     "GROUP BY 1", BAG),
    (f"SELECT id FROM reviews WHERE AI.CLASSIFY(body, {LABELS}) = 'positive'", BAG),
    ("SELECT id, AI.CLASSIFY(body, [('up', 'the reviewer liked it'), ('down', 'they did "
     "not')]) AS l FROM reviews ORDER BY id", ORDERED),
    ("SELECT id, AI_CLASSIFY(PROMPT('Which aspect does {0} praise?', body), "
     "ARRAY['music', 'acting', 'story']) AS l FROM reviews WHERE stars > 2 ORDER BY id", ORDERED),
    # Scores: ORDER BY ... LIMIT, conditions, aggregates.
    ("SELECT id FROM reviews ORDER BY AI.SCORE(('How positive is it? ', body)) DESC NULLS "
     "LAST, id LIMIT 3", ORDERED),
    ("SELECT id FROM reviews ORDER BY stars DESC, AI.SCORE(('How positive is it? ', body)) "
     "DESC NULLS LAST, id LIMIT 4", ORDERED),
    ("SELECT id FROM reviews WHERE AI.SCORE(('How positive is it? ', body)) > 0.5", BAG),
    ("SELECT stars, avg(AI.SCORE(('How positive is it? ', body))) AS s FROM reviews "
     "GROUP BY stars", BAG),
    # Completions.
    ("SELECT id, AI_COMPLETE(('Summarize: ', body), 8) AS s FROM reviews ORDER BY id LIMIT 3",
     ORDERED),
    ("WITH s AS (SELECT id, AI.GENERATE(('One word for: ', body)) AS w FROM reviews "
     "WHERE id < 10) SELECT id FROM s WHERE AI.IF(('Is this word happy? ', w))", BAG),
    # Subqueries: EXISTS, NOT EXISTS, IN, scalar, uncorrelated, nested, derived tables.
    (f"SELECT id FROM reviews r WHERE EXISTS (SELECT 1 FROM aspects a WHERE {ai_join()})", BAG),
    (f"SELECT id FROM reviews r WHERE stars > 1 AND NOT EXISTS (SELECT 1 FROM aspects a "
     f"WHERE {ai_join()})", BAG),
    ("SELECT id FROM reviews WHERE id IN (SELECT review_id FROM tags WHERE "
     "AI.IF(('Is this tag positive? ', tag)))", BAG),
    (f"SELECT r.id, (SELECT count(*) FROM aspects a WHERE {ai_join()}) AS n FROM reviews r "
     "ORDER BY r.id", ORDERED),
    (f"SELECT id FROM reviews WHERE stars >= (SELECT avg(stars) FROM reviews WHERE {ai_if()})",
     BAG),
    (f"SELECT s.id FROM (SELECT id, stars, {ai_if()} AS pos FROM reviews) s "
     "WHERE s.pos AND s.stars > 2", BAG),
    ("SELECT r.id FROM reviews r WHERE EXISTS (SELECT 1 FROM tags t WHERE t.review_id = r.id "
     f"AND EXISTS (SELECT 1 FROM aspects a WHERE {ai_join('r.body', 'a.aspect')} "
     "AND AI.IF(('Is this tag about it? ', t.tag))))", BAG),
    (f"SELECT r.id, x.aspect FROM reviews r, LATERAL (SELECT a.aspect FROM aspects a WHERE "
     f"{ai_join()} ORDER BY a.id LIMIT 1) x", BAG),
    # CTEs: plain, shadowing a table name, read twice.
    (f"WITH s AS (SELECT * FROM reviews WHERE {ai_if()}) SELECT id FROM s "
     "WHERE AI.IF(('Is this a good title? ', s.title))", BAG),
    (f"WITH reviews AS (SELECT * FROM reviews WHERE stars > 2) SELECT id FROM reviews "
     f"WHERE {ai_if()}", BAG),
    (f"WITH p AS (SELECT id, body FROM reviews WHERE {ai_if()}) SELECT p1.id, p2.id FROM p p1 "
     "JOIN p p2 ON p1.id < p2.id AND p1.body = p2.body", BAG),
    # Set operations.
    (f"SELECT id FROM reviews WHERE {ai_if()} UNION SELECT id FROM reviews WHERE "
     f"{ai_if(question='Is it about music? ')}", BAG),
    (f"SELECT count(*) FROM (SELECT id FROM reviews WHERE {ai_if()} EXCEPT SELECT review_id "
     "FROM tags WHERE AI.IF(('Is it loud? ', tag))) u", BAG),
    # Grouping, HAVING, aggregates' FILTER, windows, QUALIFY, DISTINCT.
    (f"SELECT {ai_if()} AS positive, count(*) FROM reviews GROUP BY {ai_if()}", BAG),
    (f"SELECT AI.CLASSIFY(body, {LABELS}) AS l, count(*) FROM reviews GROUP BY 1 HAVING "
     "count(*) > 1", BAG),
    ("SELECT movie_id FROM reviews GROUP BY movie_id HAVING AI.IF(('Are these reviews "
     "positive? ', string_agg(body, ' | ' ORDER BY id)))", BAG),
    (f"SELECT stars, count(*) FILTER (WHERE {ai_if()}) AS n FROM reviews GROUP BY stars", BAG),
    (f"SELECT id, sum(CASE WHEN {ai_if()} THEN 1 ELSE 0 END) OVER (ORDER BY id) AS running "
     "FROM reviews ORDER BY id", ORDERED),
    ("SELECT id FROM reviews QUALIFY row_number() OVER (PARTITION BY stars ORDER BY "
     "AI.SCORE(('How positive is it? ', body)) DESC NULLS LAST, id) = 1", BAG),
    (f"SELECT DISTINCT AI.CLASSIFY(body, {LABELS}) AS l FROM reviews", BAG),
    # LIMIT goals.
    (f"SELECT id FROM reviews WHERE {ai_if()} LIMIT 3", LIMITED),
    (f"SELECT id FROM reviews WHERE {ai_if()} ORDER BY id LIMIT 3 OFFSET 1", ORDERED),
    (f"SELECT r.id, a.id FROM reviews r JOIN aspects a ON {ai_join()} LIMIT 2", LIMITED),
    (f"SELECT r.id, a.id FROM reviews r JOIN aspects a ON {ai_join()} ORDER BY r.id DESC, a.id "
     "LIMIT 2", ORDERED),
    (f"SELECT id, AI_COMPLETE(('Summarize: ', body), 8) AS s, AI.CLASSIFY(body, {LABELS}) "
     "AS l FROM reviews WHERE stars > 2 LIMIT 4", LIMITED),
    ("SELECT id, AI.SCORE(('How positive is it? ', body)) AS s FROM reviews ORDER BY stars, "
     "id DESC LIMIT 3 OFFSET 2", ORDERED),
    ("SELECT * FROM (SELECT id, AI_COMPLETE(('Summarize: ', body), 8) AS s FROM reviews "
     "WHERE stars > 1) v LIMIT 4", LIMITED),
    (f"SELECT s.id FROM (SELECT id, body FROM reviews WHERE {ai_if()}) s LIMIT 3", LIMITED),
    # Calls inside calls, constants.
    ("SELECT id, AI.IF(('Is this summary positive? ', AI_COMPLETE(('Summarize: ', body), 4))) "
     "AS p FROM reviews WHERE id < 12 ORDER BY id", ORDERED),
    ("SELECT AI.IF('Is the sky blue?') AS sky, AI.CLASSIFY('A cat', ['animal', 'plant']) AS k",
     ORDERED),
    (f"SELECT id FROM reviews WHERE {ai_if()} AND AI.IF('Is water wet?')", BAG),
]


QUESTIONS = ["Is it positive? ", "Does it mention music? ", "Is it short? "]


def random_statement(rng) -> tuple[str, Compare]:
    """A random statement over reviews r, aspects a and movies m: AI filters and joins mixed
    with ordinary conditions under AND / OR / NOT, inner or outer joins, optional grouping,
    ordering and limits."""
    def condition(tables: list[str]) -> str:
        kind = rng.choice(["filter", "filter", "plain", "join", "not", "or"])
        if kind == "plain":
            return rng.choice([f"{t}.id % {rng.randint(2, 4)} = {rng.randint(0, 1)}"
                               for t in tables])
        if kind == "join" and "a" in tables:
            return ai_join()
        if kind == "join" and "m" in tables:
            return "AI_FILTER(PROMPT('Is {0} about {1}?', r.body, m.plot))"
        if kind in ("not", "or"):
            left, right = condition(tables), condition(tables)
            return f"NOT ({left})" if kind == "not" else f"({left} OR {right})"
        if rng.random() < 0.15:
            return rng.choice([
                "EXISTS (SELECT 1 FROM tags t WHERE t.review_id = r.id AND "
                "AI.IF(('Is this tag positive? ', t.tag)))",
                "r.id IN (SELECT review_id FROM tags WHERE AI.IF(('Is it loud? ', tag)))",
                "(SELECT count(*) FROM aspects x WHERE "
                "AI_FILTER(PROMPT('Does {0} discuss {1}?', r.body, x.aspect))) > 1"])
        table = rng.choice(tables)
        column = {"r": "r.body", "a": "a.aspect", "m": "m.plot"}[table]
        if rng.random() < 0.15:
            return f"AI.CLASSIFY({column}, ['x', 'y', 'z']) = 'x'"
        return ai_if(column, rng.choice(QUESTIONS))

    tables = ["r"]
    source = "reviews r"
    for name, item, key in [("a", "aspects a", None), ("m", "movies m", "r.movie_id = m.id")]:
        if rng.random() < 0.5:
            continue
        side = rng.choice(["", "", "LEFT ", "RIGHT "])
        on = [condition([*tables, name])] + ([key] if key else [])
        tables.append(name)
        source += f" {side}JOIN {item} ON {' AND '.join(on)}"
    where = " AND ".join(condition(tables) for _ in range(rng.randint(0, 3)))
    select = ", ".join(f"{t}.id AS {t}_id" for t in tables)
    if rng.random() < 0.2:
        select += ", AI.SCORE(('How long is it? ', r.body)) AS score"
    sql = f"SELECT {select} FROM {source}" + (f" WHERE {where}" if where else "")
    if rng.random() < 0.2:
        return (f"WITH s AS ({sql.replace(' FROM ', ', r.body AS r_body FROM ', 1)}) "
                f"SELECT * FROM s WHERE {ai_if('r_body', 'Is it short? ')}"), BAG
    if rng.random() < 0.25:
        return (f"SELECT {ai_if('r.body')} AS p, count(*) FROM {source}"
                + (f" WHERE {where}" if where else "") + " GROUP BY 1"), BAG
    if rng.random() < 0.3:
        keys = ", ".join(f"{t}.id NULLS FIRST" for t in tables)
        return f"{sql} ORDER BY {keys} LIMIT {rng.randint(1, 6)}", ORDERED
    return sql, BAG
