"""Asynchronous notifications between sessions: LISTEN, UNLISTEN and NOTIFY.

Contract: one `Notifications` hub per server, used on the event loop only. A connection
`subscribe`s with the channels its session listens on (the session decides when a LISTEN takes
effect: at the end of its transaction); `publish(pid, notices)` hands each committed notification
to every connection listening on its channel, the sender's own included, in the order they were
sent, through `Listener.notify`. Connections deliver them to their clients (NotificationResponse)
while their session is outside a transaction block, as PostgreSQL does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Notification:
    pid: int  # the sending session's backend process id
    channel: str
    payload: str


class Listener(Protocol):
    def notify(self, notification: Notification) -> None: ...


class Notifications:
    def __init__(self) -> None:
        self._listeners: defaultdict[str, set[Listener]] = defaultdict(set)
        self._channels: dict[Listener, frozenset[str]] = {}

    def subscribe(self, listener: Listener, channels: Iterable[str]) -> None:
        """`listener` now listens on exactly `channels`."""
        self.unsubscribe(listener)
        wanted = frozenset(channels)
        if wanted:
            self._channels[listener] = wanted
            for channel in wanted:
                self._listeners[channel].add(listener)

    def unsubscribe(self, listener: Listener) -> None:
        for channel in self._channels.pop(listener, ()):
            self._listeners[channel].discard(listener)
            if not self._listeners[channel]:
                del self._listeners[channel]

    def publish(self, pid: int, notices: Iterable[tuple[str, str]]) -> None:
        for channel, payload in notices:
            for listener in list(self._listeners.get(channel, ())):
                listener.notify(Notification(pid, channel, payload))
