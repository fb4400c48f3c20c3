"""Prefix grouping into waves, and chunk packing (pure Python)."""

from __future__ import annotations

from heron.engine.schedule import Row, pack, waves

A, B, C = (1, 2, 3), (4, 5), (6,)


def _all_rows(ws: list) -> list[Row]:
    return [r for w in ws for r in (*w.full_rows, *w.suffix_rows)]


def test_first_prompt_of_each_prefix_runs_full_and_captures() -> None:
    prompts = [(A, (7,)), (B, (8, 9)), (A, (10,)), (A, (11, 12))]
    (wave,) = list(waves(prompts, lambda key: None, budget=100))
    assert wave.full_rows == [Row(0, A + (7,), capture=3), Row(1, B + (8, 9), capture=2)]
    assert wave.suffix_rows == [Row(2, (10,), prefix_key=A), Row(3, (11, 12), prefix_key=A)]


def test_resident_prefix_runs_only_suffixes() -> None:
    prompts = [(A, (7,)), (A, (8,))]
    (wave,) = list(waves(prompts, {A: "kv"}.get, budget=100))
    assert wave.full_rows == [] and wave.resident == {A: "kv"}
    assert [r.prompt for r in wave.suffix_rows] == [0, 1]


def test_waves_respect_budget_and_look_up_lazily() -> None:
    looked_up: list[tuple[int, ...]] = []

    def lookup(key: tuple[int, ...]) -> None:
        looked_up.append(key)

    prompts = [(A, (7,)), (B, (8,)), (C, (9,)), (A, (1,))]
    gen = waves(prompts, lookup, budget=4)
    first = next(gen)
    assert [r.prompt for r in first.full_rows] == [0]
    assert looked_up == [A]  # later prefixes are looked up only when their wave forms
    assert [r.prompt for r in first.suffix_rows] == [3]  # grouped with its prefix's wave
    rest = list(gen)
    assert [[r.prompt for r in w.full_rows] for w in rest] == [[1, 2]]
    assert sorted(r.prompt for r in _all_rows([first, *rest])) == [0, 1, 2, 3]
    assert looked_up == [A, B, C]


def test_empty_prefix_or_suffix_run_as_plain_rows() -> None:
    prompts = [((), (1, 2)), (A, ())]
    (wave,) = list(waves(prompts, lambda key: None, budget=100))
    assert wave.full_rows == [Row(0, (1, 2)), Row(1, A)]
    assert wave.suffix_rows == []


def test_pack_chunks_by_tokens() -> None:
    rows = [Row(i, (0,) * n) for i, n in enumerate([3, 3, 5, 1, 9])]
    chunks = pack(rows, budget=6)
    assert [[r.prompt for r in c] for c in chunks] == [[0, 1], [2, 3], [4]]
    assert pack([], budget=6) == []
