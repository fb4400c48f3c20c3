"""Token counts of sample prompts for the cost model, each long value counted once.

Contract: a `TokenCounts` wraps an exact counter (`Engine.count_tokens`, one call per `count`).
`marked(rows)` gives sample rows with every value of more than `LONG_VALUE` characters replaced
by a short marker (one per distinct value); `count(texts)`, for texts rendered from marked rows,
is the exact count of each text with its markers removed — the template's words and the short
values, few distinct strings — plus the exact count of each marked value, every distinct string
counted once per `TokenCounts`; a value of more than `SAMPLED_VALUE` characters is counted on
`SLICES` slices spread along it, `SAMPLED_VALUE` characters in all, scaled by its length. Texts
holding no marker are counted exactly.

Why an estimate: a join's anchor document is in the prompt of every pair of a sample, and with
the other side as the anchor in every pair's suffix; counting each rendered prompt tokenized
the same long documents dozens of times (63 ms of a 92 ms anchor choice on the H200 host, with
the device idle), and tokenizing a cold document costs about a millisecond per 5,000 characters.
Tokens merge across a value's edges at most, so a count is within a token or two per marked
value of the exact one, or a few percent for a sampled one (slices along a document, because its
tokens per character change along it: a head alone was 10 % off in a test): well within what the
cost model needs. A sample whose values hold the marker character itself is not marked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

LONG_VALUE = 256  # characters: values this long or shorter stay in the text counted
SAMPLED_VALUE = 4096  # characters: longer values are counted on slices this long in all
SLICES = 8
_OPEN, _CLOSE = "\ue000", "\ue001"  # private-use characters around a marked value's number
_MARKER = re.compile(f"{_OPEN}(\\d+){_CLOSE}")

Row = tuple[str | None, ...]


class TokenCounts:
    def __init__(self, count: Callable[[list[str]], list[int]]) -> None:
        self._exact = count
        self._known: dict[str, int] = {}  # exact counts of the strings counted so far
        self._values: list[str] = []  # the marked values, by their number
        self._markers: dict[str, str] = {}  # a marked value -> its marker

    def marked(self, rows: Sequence[Row]) -> list[Row]:
        """`rows` with their long values replaced by markers."""
        if any(v is not None and _OPEN in v for row in rows for v in row):
            return list(rows)
        return [tuple(v if v is None or len(v) <= LONG_VALUE else self._marker(v) for v in row)
                for row in rows]

    def count(self, texts: Sequence[str]) -> list[int]:
        """The token counts of texts rendered from marked rows (see the contract)."""
        split = [self._split(text) for text in texts]
        wanted = dict.fromkeys([rest for rest, _ in split]
                               + [_sampled(v) for _, values in split for v in values])
        missing = [s for s in wanted if s not in self._known]
        if missing:
            self._known.update(zip(missing, self._exact(missing), strict=True))
        return [self._known[rest] + sum(map(self._value, values)) for rest, values in split]

    def _value(self, value: str) -> int:
        sample = _sampled(value)
        return round(self._known[sample] * len(value) / len(sample))

    def _marker(self, value: str) -> str:
        marker = self._markers.get(value)
        if marker is None:
            marker = self._markers[value] = f"{_OPEN}{len(self._values)}{_CLOSE}"
            self._values.append(value)
        return marker

    def _split(self, text: str) -> tuple[str, list[str]]:
        """`text` without its markers, and the values they stand for."""
        if _OPEN not in text:
            return text, []
        values = [self._values[int(n)] for n in _MARKER.findall(text)]
        return _MARKER.sub("", text), values


def _sampled(value: str) -> str:
    """What `value` is counted on: itself, or slices spread along it when it is long."""
    if len(value) <= SAMPLED_VALUE:
        return value
    width = SAMPLED_VALUE // SLICES
    starts = (i * len(value) // SLICES for i in range(SLICES))
    return "".join(value[start:start + width] for start in starts)
