"""PostgreSQL's `to_char(number, template)`, which DuckDB lacks, as a Python function.

Contract: `number_template(template)` says whether a template is a number's template this module
formats: digit positions `9` (blank where the number has no digit) and `0` (zero-filled from
there on), one decimal point (`.` or `D`), group separators (`,` or `G`), `FM` (no padding, no
trailing zeros in `9` fraction positions), and one sign: `S` first or last, `MI` or `PR` last,
or none (a blank or `-` before the first digit). Any other pattern (`PL`, `SG`, `EEEE`, `V`,
`L`, `TH`, `RN`, quoted text) is not one: the caller leaves that call to fail.
`to_char_number(value, template)` formats the text of a number (`CAST(x AS VARCHAR)`) as
PostgreSQL 15 does: rounded half away from zero to the template's fraction digits; a number with
more integer digits than the template holds prints `#` in every digit position; a value that
rounds to zero is not negative. Checked against PostgreSQL 15 (tests/planner/test_pg_to_char.py).
`FUNCTION` is the name the catalog registers it under (`pg_catalog.register`).
"""

from __future__ import annotations

import functools
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import NamedTuple

FUNCTION = "heron_to_char_number"

# PL and SG are read (so that S and G are not), but not formatted.
_TOKEN = re.compile(r"FM|MI|PR|PL|SG|[90.D,GS]", re.IGNORECASE)


class _Layout(NamedTuple):
    """A number template, read once: what every value formatted with it needs."""

    fill: bool  # no FM: padded to the template's width
    sign: str  # "" (before the first digit), "lead" / "trail" (S first / last), "minus", "brackets"
    integer: tuple[str, ...]  # the tokens before the point
    fraction: tuple[str, ...]  # after it
    dotted: bool  # the template has a point


@functools.lru_cache(maxsize=256)
def _layout(template: str) -> _Layout | None:
    """The template's layout, or None when it is not a number's template this module formats."""
    tokens = [t.upper() for t in _TOKEN.findall(template)]
    if "".join(tokens) != template.upper():
        return None
    body = [t for t in tokens if t != "FM"]
    digits = [i for i, t in enumerate(body) if t in ("9", "0")]
    points = [i for i, t in enumerate(body) if t in (".", "D")]
    signs = [i for i, t in enumerate(body) if t in ("S", "MI", "PR")]
    if not digits or "PL" in body or "SG" in body or len(points) > 1 or len(signs) > 1:
        return None
    if (points and points[0] > digits[-1]) or (points and points[0] < digits[0]) or any(
            t in (",", "G") for t in body[digits[-1]:]):
        return None  # a point without digits on both sides, or a separator after the last
    sign = ""
    if signs and signs[0] == 0 and body[0] == "S":
        sign, body = "lead", body[1:]
    elif signs and signs[0] == len(body) - 1:
        sign, body = {"S": "trail", "MI": "minus", "PR": "brackets"}[body[-1]], body[:-1]
    elif signs:
        return None
    point = next((i for i, t in enumerate(body) if t in (".", "D")), len(body))
    return _Layout("FM" not in tokens, sign, tuple(body[:point]), tuple(body[point + 1:]),
                   point < len(body))


def number_template(template: str) -> bool:
    return _layout(template) is not None


def to_char_number(value: str, template: str) -> str:
    layout = _layout(template)
    if layout is None:
        raise ValueError(f"not a number template this function formats: {template!r}")
    fill, sign, integer, fraction, dotted = layout
    places = sum(t in ("9", "0") for t in integer)
    decimals = sum(t in ("9", "0") for t in fraction)

    try:
        number = Decimal(value)
    except InvalidOperation:
        raise ValueError(f'invalid input syntax for type numeric: "{value}"') from None
    try:
        number, overflow = number.quantize(Decimal(1).scaleb(-decimals),
                                           rounding=ROUND_HALF_UP), False
    except InvalidOperation:  # infinite, or too many digits to round: no digit fits
        number, overflow = Decimal(0).copy_sign(Decimal(1) if number.is_nan() else number), True
    negative = number.is_signed() and (overflow or number != 0)
    whole, _, digits = f"{abs(number):f}".partition(".")
    if whole == "0" and dotted:
        whole = ""  # 0.5 prints as .5
    overflow = overflow or len(whole) > places

    # The integer part, left to right: a blank until the number's first digit or a 0 position.
    chars: list[str] = []
    position = 0
    zeros = False
    for token in integer:
        if token in ("9", "0"):
            index = position - (places - len(whole))
            zeros = zeros or token == "0"
            chars.append("#" if overflow else whole[index] if index >= 0 else "0" if zeros
                         else " ")
            position += 1
        else:  # a group separator shows once a digit has
            chars.append("," if any(c != " " for c in chars) else " ")
    printed = "".join(chars).lstrip(" ")
    blanks = len(chars) - len(printed)
    if sign in ("", "lead", "brackets"):
        blanks += 1  # the sign's place: S's own, or one before the template
    fractions = "#" * decimals if overflow else digits[:decimals]
    if not fill and not overflow:
        last_zero = max((i for i, t in enumerate(fraction) if t == "0"), default=-1)
        keep = len(fractions.rstrip("0"))
        fractions = fractions[:max(keep, last_zero + 1)]
        if not printed and not fractions:
            printed = "0"  # PostgreSQL's FM prints 0. rather than a bare point
    mark = {"": "-" if negative else " ", "lead": "-" if negative else "+",
            "brackets": "<" if negative else " "}.get(sign, "")
    head = " " * (blanks - 1) + mark if mark else " " * blanks
    text = head + printed + ("." + fractions if dotted else "")
    text += {"trail": "-" if negative else "+", "minus": "-" if negative else " ",
             "brackets": ">" if negative else " "}.get(sign, "")
    return text if fill else text.strip(" ")
