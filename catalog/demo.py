"""Demo tables created on a data directory's first start.

`demo.reviews` holds 300 short movie reviews generated from a fixed seed: each review praises or
pans one to three aspects of a film (acting, ending, music, effects, pacing, story), so questions
such as "Does this review discuss the ending?" have a planted answer. The planted labels are kept in
ordinary columns (`sentiment`, `aspects`) so a user can compare AI answers with the truth.
`demo.aspects` lists the aspects, for AI-join examples.
"""

from __future__ import annotations

import random

import duckdb
import pyarrow as pa

SCHEMA = "demo"
REVIEW_COUNT = 300
SEED = 20261129

MOVIES = [
    "The Silent Harbor", "Glass Mountain", "Midnight Circuit", "The Last Orchard", "Paper Moons",
    "Iron Lullaby", "A Winter in Lisbon", "Starfall Express", "The Clockmaker's Daughter",
    "Neon Tide", "Small Hours", "The Salt Road", "Violet Frequency", "Harbor of Echoes",
    "Seven Lanterns", "The Quiet Engine",
]

# aspect -> (positive sentences, negative sentences)
ASPECTS: dict[str, tuple[list[str], list[str]]] = {
    "acting": (
        ["The lead performance is outstanding and completely believable.",
         "The cast is superb; every actor disappears into their role.",
         "The acting is warm, subtle and deeply moving."],
        ["The acting is wooden and the dialogue delivery feels forced.",
         "The lead actor seems bored in every single scene.",
         "The performances are flat and unconvincing."],
    ),
    "ending": (
        ["The ending is perfect and left me in tears.",
         "The final twist is earned and the last scene is unforgettable.",
         "It wraps up with a satisfying, beautifully judged ending."],
        ["The ending is rushed and makes no sense.",
         "The final twist ruins everything that came before it.",
         "The last ten minutes fall apart completely."],
    ),
    "music": (
        ["The soundtrack is gorgeous and I have been humming it all week.",
         "The score lifts every scene.",
         "The music is haunting and beautifully composed."],
        ["The music is loud, generic and distracting.",
         "The score drowns out the dialogue.",
         "The soundtrack is forgettable at best."],
    ),
    "effects": (
        ["The visual effects are stunning.",
         "The special effects look real and the cinematography is breathtaking.",
         "Every shot is a visual feast."],
        ["The special effects look cheap and dated.",
         "The CGI is so bad it pulled me out of the film.",
         "The visuals are murky and poorly lit."],
    ),
    "pacing": (
        ["The pacing is tight; not a minute is wasted.",
         "It moves briskly and never drags.",
         "The story unfolds at exactly the right speed."],
        ["The middle hour drags terribly.",
         "It is far too long and painfully slow.",
         "The pacing is a mess, rushing some scenes and stalling in others."],
    ),
    "story": (
        ["The story is original and full of surprises.",
         "The plot is clever and keeps you guessing.",
         "A smart, heartfelt script."],
        ["The plot is full of holes.",
         "The story is predictable from the first scene.",
         "The script is lazy and confusing."],
    ),
}

OPENINGS = [
    "I watched {movie} last night.", "Just saw {movie} in the cinema.",
    "{movie} finally came out this week.", "My friends dragged me to {movie}.",
    "I had high hopes for {movie}.", "Saw {movie} on a rainy Sunday.",
]
CLOSINGS = {
    "positive": ["Highly recommended.", "I will watch it again.", "A must-see.",
                 "Easily one of the best films this year."],
    "negative": ["Skip it.", "What a waste of an evening.", "Not recommended.",
                 "I want my money back."],
}
STARS = {"positive": [4, 5], "negative": [1, 2]}


def reviews(count: int = REVIEW_COUNT, seed: int = SEED) -> pa.Table:
    """The generated reviews as an Arrow table (deterministic for a given seed)."""
    rng = random.Random(seed)
    columns = ("id", "movie", "body", "stars", "sentiment", "aspects")
    rows: dict[str, list] = {k: [] for k in columns}
    for review_id in range(1, count + 1):
        movie = rng.choice(MOVIES)
        sentiment = rng.choice(["positive", "negative"])
        chosen = rng.sample(sorted(ASPECTS), k=rng.randint(1, 3))
        positive = sentiment == "positive"
        sentences = [rng.choice(OPENINGS).format(movie=movie)]
        for aspect in chosen:
            praise, pan = ASPECTS[aspect]
            sentences.append(rng.choice(praise if positive else pan))
        sentences.append(rng.choice(CLOSINGS[sentiment]))
        rows["id"].append(review_id)
        rows["movie"].append(movie)
        rows["body"].append(" ".join(sentences))
        rows["stars"].append(rng.choice(STARS[sentiment]))
        rows["sentiment"].append(sentiment)
        rows["aspects"].append(",".join(sorted(chosen)))
    return pa.table({
        "id": pa.array(rows["id"], pa.int32()),
        "movie": rows["movie"],
        "body": rows["body"],
        "stars": pa.array(rows["stars"], pa.int32()),
        "sentiment": rows["sentiment"],
        "aspects": rows["aspects"],
    })


def aspects() -> pa.Table:
    names = {
        "acting": "the acting", "ending": "the ending", "music": "the music or soundtrack",
        "effects": "the visual effects", "pacing": "the pacing", "story": "the story or plot",
    }
    return pa.table({"id": pa.array(range(1, len(names) + 1), pa.int32()),
                     "name": list(names), "aspect": list(names.values())})


def load(con: duckdb.DuckDBPyConnection) -> None:
    """Create the `demo` schema and its tables in one transaction."""
    con.execute("BEGIN")
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    for name, table in (("reviews", reviews()), ("aspects", aspects())):
        con.register("heron_demo_rows", table)
        try:
            con.execute(f"CREATE TABLE {SCHEMA}.{name} AS SELECT * FROM heron_demo_rows "
                        "ORDER BY id")
        finally:
            con.unregister("heron_demo_rows")
    con.execute("COMMIT")
