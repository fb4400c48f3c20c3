"""Tables and statements shaped like the public AI-SQL benchmark QUAIL-B, synthesized (no
downloads): movie reviews with their movies and review aspects (the IMDB shapes), long reports
with short terms (the BIO shapes). Text is deterministic pseudo-random words, so token counts
have realistic spreads. `RATES` plants each question's answer rate for `support.hash_engine`.
Imported as `support.quail`.
"""

from __future__ import annotations

import random

import duckdb

WORDS = (
    "film", "story", "ending", "music", "acting", "plot", "scene", "camera", "light", "score",
    "cast", "twist", "drama", "family", "war", "love", "city", "night", "river", "voice",
    "dream", "house", "road", "winter", "summer", "friend", "brother", "mother", "father",
    "child", "letter", "secret", "truth", "fire", "water", "stone", "glass",
)

# question key -> share of TRUE answers (keys appear only in the questions below)
RATES = {"discuss the ending": 0.1, "is a drama": 0.2, "reviews the film": 0.3,
         "mentions the music": 0.5, "praise the acting": 0.6, "is about the term": 0.05}

SHAPES = {
    "IMDB-1": "SELECT id FROM reviews WHERE AI.IF(('Does this review discuss the ending? ', "
              "body))",
    "IMDB-2": "SELECT id FROM reviews WHERE AI.IF(('Does it praise the acting? ', body)) AND "
              "AI.IF(('Does the review discuss the ending? ', body))",
    "IMDB-3": "SELECT r.id, a.id FROM reviews r JOIN aspects a ON AI_FILTER(PROMPT("
              "'Does the review {0} talk about {1} the way it mentions the music?', r.body, "
              "a.aspect)) WHERE r.id < 60",
    "IMDB-4": "SELECT r.id, m.id FROM reviews r JOIN movies m ON AI_FILTER(PROMPT("
              "'Check whether {0} reviews the film {1}.', r.body, m.plot)) WHERE "
              "AI.IF(('Does this review discuss the ending? ', r.body)) AND "
              "AI.IF(PROMPT('Is it true that {0} is a drama?', m.plot))",
    "IMDB-5": "SELECT id, AI.CLASSIFY(body, ['positive', 'negative', 'mixed']) FROM reviews "
              "WHERE id < 80",
    "IMDB-6": "SELECT id FROM reviews WHERE AI.IF(('Does the review discuss the ending? ', "
              "body)) LIMIT 5",
    "IMDB-7": "SELECT r.id FROM reviews r WHERE EXISTS (SELECT 1 FROM aspects a WHERE "
              "AI_FILTER(PROMPT('Does the review {0} praise the acting of {1}?', r.body, "
              "a.aspect))) AND r.id < 50",
    "BIO-2": "SELECT p.id, t.id FROM reports p JOIN terms t ON AI_FILTER(PROMPT("
             "'Does the report {0} say something that is about the term {1}?', p.body, t.term))",
}


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))) + "."


def load(con: duckdb.DuckDBPyConnection, reviews: int = 200, movies: int = 20) -> None:
    rng = random.Random(7)
    con.execute("CREATE OR REPLACE TABLE movies (id INTEGER, title VARCHAR, plot VARCHAR)")
    con.executemany("INSERT INTO movies VALUES (?, ?, ?)",
                    [(i, f"Film {i}", _text(rng, 15, 40)) for i in range(movies)])
    con.execute("CREATE OR REPLACE TABLE reviews (id INTEGER, movie_id INTEGER, body VARCHAR)")
    con.executemany("INSERT INTO reviews VALUES (?, ?, ?)",
                    [(i, i % movies, _text(rng, 30, 120)) for i in range(reviews)])
    con.execute("CREATE OR REPLACE TABLE aspects (id INTEGER, aspect VARCHAR)")
    con.executemany("INSERT INTO aspects VALUES (?, ?)", list(enumerate(
        ["the ending", "the music", "the acting", "the camera work", "the pacing",
         "the dialogue"])))
    con.execute("CREATE OR REPLACE TABLE reports (id INTEGER, body VARCHAR)")
    con.executemany("INSERT INTO reports VALUES (?, ?)",
                    [(i, _text(rng, 300, 500)) for i in range(4)])
    con.execute("CREATE OR REPLACE TABLE terms (id INTEGER, term VARCHAR)")
    con.executemany("INSERT INTO terms VALUES (?, ?)",
                    [(i, " ".join(rng.choice(WORDS) for _ in range(2))) for i in range(60)])
