"""The answer store: exact keys, bounded by bytes, shared by threads."""

import threading

from heron.catalog.answers import AnswerKey, AnswerKeys, AnswerStore


def key(prefix="DOCUMENT:\nA film.", suffix="Is it good?", **overrides) -> AnswerKey:
    question = {"model": "m", "layout_version": 1, "kind": "boolean", "labels": (),
                "max_tokens": 0} | overrides
    return AnswerKeys(**question).of(prefix, suffix)


def test_every_part_of_the_question_is_in_the_key():
    base = key()
    assert key() == base
    for changed in [key(prefix="DOCUMENT:\nA film!"), key(suffix="Is it bad?"),
                    key(model="other"), key(layout_version=2), key(kind="score"),
                    key(labels=("a", "b")), key(max_tokens=4),
                    key(prefix="DOCUMENT:\nA film.Is", suffix=" it good?")]:
        assert changed != base


def test_keys_of_one_question_hash_a_shared_prefix_once_and_agree_with_fresh_ones():
    keys = AnswerKeys("m", 1, "boolean", (), 0)
    anchor = "DOCUMENT:\n" + "a long report " * 1000
    pairs = [keys.of(anchor, f"term {i}") for i in range(3)]
    assert len(set(pairs)) == 3
    assert pairs[1] == key(prefix="".join(["DOCUMENT:\n", "a long report " * 1000]),
                           suffix="term 1")


def test_stored_answers_come_back_and_the_oldest_go_first():
    store = AnswerStore(max_bytes=1000)
    store.put(key(suffix="q0"), (True, 0.9))
    assert store.get(key(suffix="q0")) == (True, 0.9)
    assert store.get(key(suffix="never")) is None
    for i in range(1, 50):
        store.put(key(suffix=f"q{i}"), (False, 0.1))
    assert store.get(key(suffix="q0")) is None  # evicted
    assert store.get(key(suffix="q49")) == (False, 0.1)
    assert 0 < len(store) < 50
    store.put(key(suffix="huge"), ("x" * 5000, -1.0))  # larger than the store: not kept
    assert store.get(key(suffix="huge")) is None


def test_threads_share_one_store():
    store = AnswerStore()

    def fill(offset):
        for i in range(500):
            store.put(key(suffix=f"{offset}-{i}"), (True, 1.0))

    threads = [threading.Thread(target=fill, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store) == 2000
