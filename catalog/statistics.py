"""Statistics the planner learns by running statements: AI selectivities and engine speed.

Contract: one `Statistics` per server (the `Database` holds it), shared by every session and
safe to use from several threads. `observe(key, asked, passed)` records that a TRUE/FALSE
question (`key`: the question and the columns it reads, as the planner spells them) was asked
`asked` times and answered TRUE `passed` times; `selectivity(key)` returns what was seen so far
(`Selectivity`: the fraction that passed, smoothed towards one half by a pseudo-count so a
handful of answers cannot claim 0 or 1), or None for a question never asked. `observe_speed`
records how long the engine took for work the cost model priced, and `speed_factor()` is the
ratio of measured to priced seconds (1.0 until something ran), so estimates in seconds follow
the machine. Bounded: the least recently used questions are forgotten past `max_questions`.
`save(path)` writes what was learned as JSON (atomically) and `Statistics.load(path)` reads it
back, so a restarted server keeps it; a missing or unreadable file starts afresh.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

PSEUDO_COUNT = 1.0  # answers of prior belief (one half TRUE) mixed into each question
MAX_QUESTIONS = 10_000
SPEED_MEMORY = 0.7  # weight of the past in the running speed factor
FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Selectivity:
    fraction: float  # of the candidates asked, the share answered TRUE (smoothed)
    asked: int  # how many answers it rests on


class Statistics:
    def __init__(self, max_questions: int = MAX_QUESTIONS) -> None:
        self._lock = threading.Lock()
        self._counts: OrderedDict[tuple[str, ...], tuple[int, int]] = OrderedDict()
        self._max = max_questions
        self._speed: float | None = None

    def selectivity(self, key: tuple[str, ...]) -> Selectivity | None:
        with self._lock:
            counts = self._counts.get(key)
            if counts is None:
                return None
            self._counts.move_to_end(key)
        asked, passed = counts
        return Selectivity((passed + PSEUDO_COUNT / 2) / (asked + PSEUDO_COUNT), asked)

    def observe(self, key: tuple[str, ...], asked: int, passed: int) -> None:
        if asked <= 0:
            return
        with self._lock:
            old_asked, old_passed = self._counts.pop(key, (0, 0))
            self._counts[key] = (old_asked + asked, old_passed + passed)
            while len(self._counts) > self._max:
                self._counts.popitem(last=False)

    def observe_speed(self, priced_seconds: float, measured_seconds: float) -> None:
        if priced_seconds <= 0 or measured_seconds <= 0:
            return
        ratio = measured_seconds / priced_seconds
        with self._lock:
            self._speed = ratio if self._speed is None else (
                SPEED_MEMORY * self._speed + (1 - SPEED_MEMORY) * ratio)

    def speed_factor(self) -> float:
        with self._lock:
            return 1.0 if self._speed is None else self._speed

    def save(self, path: Path) -> None:
        with self._lock:
            data = {"version": FORMAT_VERSION, "speed": self._speed,
                    "questions": [[list(key), asked, passed]
                                  for key, (asked, passed) in self._counts.items()]}
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps(data))
        os.replace(partial, path)

    @staticmethod
    def load(path: Path, max_questions: int = MAX_QUESTIONS) -> Statistics:
        statistics = Statistics(max_questions)
        try:
            data = json.loads(path.read_text())
            if data.get("version") != FORMAT_VERSION:
                return statistics
            for key, asked, passed in data["questions"]:
                statistics.observe(tuple(str(k) for k in key), int(asked), int(passed))
            speed = data.get("speed")
            statistics._speed = float(speed) if speed is not None else None
        except (OSError, ValueError, KeyError, TypeError):
            return Statistics(max_questions)  # unreadable: learn again
        return statistics
