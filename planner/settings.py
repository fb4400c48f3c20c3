"""The session settings the planner reads: `heron.order`, `heron.reuse_answers` and
`heron.max_tokens`.

Contract: `DEFAULTS` are the settings' names and default values, as the session lists them (SET,
SHOW, RESET and current_setting() see them like any other setting). `check(name, value)` returns
the canonical spelling of a value for one of these settings (the input unchanged for any other
name) or raises `SqlError` 22023 naming the values it takes, as PostgreSQL answers a bad value of
an enumerated or integer setting. `Settings.of(mapping)` reads them from what the session
publishes. `heron.max_tokens` is the tokens one statement may have the model read (prompt tokens
plus generated ones; 0: no limit), `planner.budget` enforces it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from heron.planner.errors import SqlError, SqlState
from heron.planner.optimizer import Order

ORDER = "heron.order"
REUSE_ANSWERS = "heron.reuse_answers"
MAX_TOKENS = "heron.max_tokens"
DEFAULTS = {ORDER: Order.COST.value, REUSE_ANSWERS: "on", MAX_TOKENS: "0"}
_BOOLEANS = {"on": True, "true": True, "yes": True, "1": True,
             "off": False, "false": False, "no": False, "0": False}


@dataclass(frozen=True, slots=True)
class Settings:
    order: Order = Order.COST  # cost-based operator order, or as written
    reuse_answers: bool = True  # serve repeated prompts from the server's answer store
    max_tokens: int = 0  # tokens one statement may have the model read; 0: no limit

    @staticmethod
    def of(settings: Mapping[str, str]) -> Settings:
        values = {k.lower(): v for k, v in settings.items()}

        def value(name: str) -> str:
            return check(name, values.get(name, DEFAULTS[name]))

        return Settings(Order(value(ORDER)), value(REUSE_ANSWERS) == "on", int(value(MAX_TOKENS)))


def check(name: str, value: str) -> str:
    key = name.lower()
    text = value.strip().lower()
    if key == ORDER:
        if text not in {o.value for o in Order}:
            raise _invalid(name, value, ", ".join(o.value for o in Order))
        return text
    if key == REUSE_ANSWERS:
        if text not in _BOOLEANS:
            raise _invalid(name, value, "on, off")
        return "on" if _BOOLEANS[text] else "off"
    if key == MAX_TOKENS:
        if not text.isascii() or not text.isdigit():
            raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                           f'invalid value for parameter "{name}": "{value}"',
                           hint="Give a whole number of tokens, or 0 for no limit.")
        return str(int(text))
    return value


def _invalid(name: str, value: str, choices: str) -> SqlError:
    return SqlError(SqlState.INVALID_PARAMETER_VALUE,
                    f'invalid value for parameter "{name}": "{value}"',
                    hint=f"Available values: {choices}.")
