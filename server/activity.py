"""The server's client backends: what pg_stat_activity and heron_stat_ai show of them, and what
pg_cancel_backend and pg_terminate_backend reach.

Contract: `Activity(roles, database)` is one server's registry of backends, safe to use from any
thread. A connection `open`s its `Backend` once its client authenticated, before the session
starts, and `close`s it when it ends. A `Backend` holds what PostgreSQL's pg_stat_activity shows
of a session: its identity, its client, when it started, its state — `active` from the moment a
message starts being worked on (`active`), an idle state at ReadyForQuery (`idle`) — with the
current or last query and when each of them started. It is also its session's
`ProgressListener`: the snapshots of the AI operators its statements run land there
(heron_stat_ai lists those running), and while `progress_interval` is set (the session sets it
from `heron.progress` and `heron.progress_interval`) each running stage is worded to the client
as a NOTICE once per interval — its latest counts aged to the moment, however long the engine's
chunks take, as the connection `tick`s it every `PROGRESS_TICK_S` while stages run — and each
operator that finished answering once more. Whatever reaches the connection goes through its
`Peer`, whose methods any thread may call.

`Activity` is a `pg_activity.Activity`: a caller, once its token checks out, sees every backend,
with the details of its own role's only unless it is a superuser (the others show their
identity, and "<insufficient privilege>" for the query, as PostgreSQL shows them), and may
signal the backends of its own role, or any as a superuser — a superuser's only as one. A cancel
does what a CancelRequest does; a terminate what the server's shutdown does to a connection
(FATAL 57P01 to its client, its statement interrupted, its session closed), and with a timeout
waits for the connection to be gone. An unknown PID gets PostgreSQL's WARNING and false.
It is also the server's `pg_advisory.Locks`: its `locks` table holds the backends' advisory
locks, a backend's own released when it closes, its transaction's by the session
(`Backend.locks`), a wait given up once the backend's `cancelled` is set or it is gone. Each
call of these functions counts in the calling backend's `server_calls`, so its connection knows
which statements reach the server (they never run on its event loop's thread:
`server.worker.Pace`); one that would wait for a lock while its statement runs there
(`Backend.on_loop`) fails with 55P03 instead of stopping every connection, and a terminate
does not wait for its target there.
Queue positions are decided across all backends when heron_stat_ai is read (see
`pg_activity`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from heron.catalog.roles import Role, Roles
from heron.planner.errors import SqlError, SqlState
from heron.planner.pg_activity import BackendRow, Caller, OperatorRow, Outcome, Signal
from heron.planner.pg_advisory import Key, LockTable, Mode
from heron.planner.progress import OperatorProgress, Stage, State
from heron.server.transaction import TransactionStatus

BACKEND_TYPE = "client backend"
PROGRESS_TICK_S = 0.25  # how often a running stage is looked at for a progress NOTICE
HIDDEN_QUERY = "<insufficient privilege>"


class BackendState(enum.Enum):
    """pg_stat_activity.state."""

    ACTIVE = "active"
    IDLE = "idle"
    IDLE_IN_TRANSACTION = "idle in transaction"
    IDLE_IN_FAILED_TRANSACTION = "idle in transaction (aborted)"


_IDLE_STATES = {TransactionStatus.IDLE: BackendState.IDLE,
                TransactionStatus.IN_BLOCK: BackendState.IDLE_IN_TRANSACTION,
                TransactionStatus.FAILED: BackendState.IDLE_IN_FAILED_TRANSACTION}
# What pg_stat_activity shows of any backend (the rest only to roles with its privileges).
_ALWAYS_SHOWN = frozenset({"datid", "datname", "pid", "usesysid", "usename", "application_name",
                           "backend_xid", "backend_xmin"})
# pg_stat_activity's wait events: an idle backend waits for its client, an AI statement for
# the engine.
_CLIENT_READ = ("Client", "ClientRead")
_ENGINE = ("Extension", "AIEngine")


class Severity(enum.StrEnum):
    NOTICE = "NOTICE"
    WARNING = "WARNING"


class Peer(Protocol):
    """What a backend asks of its connection; callable from any thread."""

    def post_notice(self, severity: Severity, text: str) -> None: ...

    def post_cancel(self) -> None: ...

    def post_terminate(self) -> None: ...

    def post_ticks(self) -> None:
        """Call `Backend.tick` every `PROGRESS_TICK_S` until it returns False."""


@dataclass(frozen=True, slots=True)
class Client:
    """Where the client connects from (None for a Unix socket's address, port -1)."""

    address: str | None
    port: int


@dataclass(frozen=True, slots=True)
class _Running:
    """The latest snapshot of a running operator stage, and when it came."""

    progress: OperatorProgress
    at: float  # time.monotonic()


def _now() -> float:
    """Seconds since the epoch: what a backend notes at every message, turned into timestamps
    only when pg_stat_activity is read (`_timestamp`)."""
    return time.time()


def _timestamp(seconds: float | None) -> dt.datetime | None:
    return None if seconds is None else dt.datetime.fromtimestamp(seconds, dt.UTC)


class Backend:
    """One connection's entry (see the module contract)."""

    def __init__(self, pid: int, user: str, database: str, client: Client,
                 application_name: str, peer: Peer,
                 locks: LockTable | None = None) -> None:
        self.pid = pid
        self.token = secrets.token_hex(16)
        self.caller = Caller(pid, self.token)
        self.user = user
        self.database = database
        self.client = client
        self.peer = peer
        self.application_name = application_name  # the connection keeps it current
        self.started = _now()
        # None: no progress NOTICEs; else the seconds between two of one operator's
        self.progress_interval: float | None = None
        self.gone = threading.Event()  # set once the connection closed
        # Set while the session's statement is cancelled (the session puts its planner's here):
        # an advisory lock's wait gives up then.
        self.cancelled = threading.Event()
        self.locks = locks if locks is not None else LockTable()
        self.server_calls = 0  # the server's SQL functions this backend's statements called
        self.on_loop = False  # its statement runs on the event loop's thread: it must not wait
        self._lock = threading.Lock()
        self._state = BackendState.IDLE
        self._query = ""
        self._query_start: float | None = None
        self._state_change = self.started
        self._xact_start: float | None = None
        self._running: dict[str, _Running] = {}  # by operator marker
        self._noticed: dict[str, float] = {}  # elapsed seconds of a stage at its last NOTICE

    # -- state, from the connection (event loop) ---------------------------------------------

    def active(self, query: str) -> None:
        """A message of `query` starts being worked on."""
        now = _now()
        with self._lock:
            self._query, self._query_start = query, now
            if self._state is not BackendState.ACTIVE:
                self._state, self._state_change = BackendState.ACTIVE, now
            if self._xact_start is None:
                self._xact_start = now

    def idle(self, status: TransactionStatus) -> None:
        """ReadyForQuery: nothing runs; `status` is the transaction's."""
        now = _now()
        with self._lock:
            self._state, self._state_change = _IDLE_STATES[status], now
            if status is TransactionStatus.IDLE:
                self._xact_start = None
            self._running.clear()  # a statement that failed may not have said so
            self._noticed.clear()

    # -- progress, from the statement's thread ---------------------------------------------

    def report(self, progress: OperatorProgress) -> None:
        marker = progress.operator.marker
        running = progress.state is State.RUNNING
        with self._lock:
            started = running and marker not in self._running
            if running:
                self._running[marker] = _Running(progress, time.monotonic())
            else:
                self._running.pop(marker, None)
                self._noticed.pop(marker, None)
            interval = self.progress_interval
        if interval is None:
            return
        if started:
            self.peer.post_ticks()
        elif progress.state is State.DONE and progress.stage is Stage.ANSWERING:
            self.peer.post_notice(Severity.NOTICE, progress.describe())

    def tick(self) -> bool:
        """A NOTICE for each running stage whose interval passed since its last (or its start),
        with its latest counts as of now; whether stages still run, to be ticked again."""
        now = time.monotonic()
        due = []
        with self._lock:
            interval = self.progress_interval
            if interval is None or not self._running:
                return False
            for marker, running in self._running.items():
                progress = running.progress.later(now - running.at)
                if progress.elapsed - self._noticed.get(marker, 0.0) >= interval:
                    self._noticed[marker] = progress.elapsed
                    due.append(progress)
        for progress in due:
            self.peer.post_notice(Severity.NOTICE, progress.describe())
        return True

    # -- what the views show -----------------------------------------------------------------

    def row(self, role: Role | None, detailed: bool) -> BackendRow:
        """The backend's pg_stat_activity row; without `detailed`, only who it is (PostgreSQL
        shows no more to a role without the privileges of the backend's)."""
        with self._lock:
            waiting = _CLIENT_READ if self._state is not BackendState.ACTIVE else (
                _ENGINE if any(r.progress.requested is not None
                               for r in self._running.values()) else (None, None))
            row = BackendRow(
                datid=None, datname=self.database, pid=self.pid, leader_pid=None,
                usesysid=role.oid if role is not None else None, usename=self.user,
                application_name=self.application_name, client_addr=self.client.address,
                client_hostname=None, client_port=self.client.port,
                backend_start=_timestamp(self.started), xact_start=_timestamp(self._xact_start),
                query_start=_timestamp(self._query_start),
                state_change=_timestamp(self._state_change),
                wait_event_type=waiting[0], wait_event=waiting[1], state=self._state.value,
                backend_xid=None, backend_xmin=None, query_id=None, query=self._query,
                backend_type=BACKEND_TYPE)
        if detailed:
            return row
        return BackendRow(**{f.name: getattr(row, f.name) if f.name in _ALWAYS_SHOWN else None
                             for f in dataclasses.fields(row)} | {"query": HIDDEN_QUERY})

    def running(self) -> list[_Running]:
        with self._lock:
            return list(self._running.values())


class Activity:
    """Every client backend of one server (see the module contract)."""

    def __init__(self, roles: Roles, database: str) -> None:
        self.roles = roles
        self.database = database
        self._backends: dict[int, Backend] = {}
        self._lock = threading.Lock()
        self.locks = LockTable()  # the backends' advisory and table locks (pg_advisory)

    def open(self, pid: int, user: str, client: Client, application_name: str,
             peer: Peer) -> Backend:
        backend = Backend(pid, user, self.database, client, application_name, peer, self.locks)
        with self._lock:
            self._backends[pid] = backend
        return backend

    def close(self, backend: Backend) -> None:
        with self._lock:
            if self._backends.get(backend.pid) is backend:
                del self._backends[backend.pid]
        backend.gone.set()
        self.locks.release_all(backend.pid)  # (pg_advisory: a session's locks end with it)

    # -- pg_activity.Activity --------------------------------------------------------------

    def backends(self, caller: Caller) -> Sequence[BackendRow]:
        asking = self._role_of(caller)
        if asking is None:
            return []
        rows = []
        for backend in self._all():
            role = self.roles.get(backend.user)
            rows.append(backend.row(role, _may_see(asking, backend)))
        return rows

    def operators(self, caller: Caller) -> Sequence[OperatorRow]:
        asking = self._role_of(caller)
        if asking is None:
            return []
        running = [(backend, r) for backend in self._all() for r in backend.running()]
        in_flight = [r.progress for _, r in running if r.progress.requested is not None]
        queued = sorted((p.requested for p in in_flight if p.queued), key=float)
        now = time.monotonic()
        rows = []
        for backend, r in running:
            p = r.progress
            position = None
            if p.requested is not None:
                position = queued.index(p.requested) + 1 if p.queued else 0
            rows.append(_operator_row(backend.pid, p.later(now - r.at), position,
                                      len(in_flight), _may_see(asking, backend)))
        return rows

    def signal(self, caller: Caller, target: int, signal: Signal, timeout: float
               ) -> Outcome:
        asking = self._role_of(caller)
        with self._lock:
            backend = self._backends.get(target)
            calling = self._backends.get(caller.pid)
        if asking is None or calling is None:
            return Outcome.NOT_PERMITTED
        if backend is None:
            calling.peer.post_notice(Severity.WARNING,
                                     f"PID {target} is not a PostgreSQL backend process")
            return Outcome.NO_BACKEND
        target_role = self.roles.get(backend.user)
        if target_role is not None and target_role.superuser and not asking.superuser:
            return Outcome.SUPERUSER_ONLY
        if not _may_see(asking, backend):
            return Outcome.NOT_PERMITTED
        if signal is Signal.CANCEL:
            if backend is calling:
                return Outcome.OWN_STATEMENT
            backend.peer.post_cancel()
            return Outcome.SENT
        backend.peer.post_terminate()
        # (On the loop's thread the target cannot end before this statement does, which it
        # does right after: waiting would only stop the server for the timeout.)
        if timeout > 0 and backend is not calling and not calling.on_loop and (
                not backend.gone.wait(timeout)):
            calling.peer.post_notice(Severity.WARNING,
                                     f"backend with PID {target} did not terminate within "
                                     f"{round(timeout * 1000)} milliseconds")
            return Outcome.TIMED_OUT
        return Outcome.SENT

    # -- pg_advisory.Locks -----------------------------------------------------------------

    def advisory(self, caller: Caller, action: str, key: Key) -> bool:
        """`action` ("lock", "try", "unlock" with "shared" and "xact", or "unlock all") on an
        advisory lock, for the caller once its token checks out."""
        backend = self._caller_backend(caller)
        if backend is None or self.roles.get(backend.user) is None:
            return False
        verb, *modes = action.split()
        shared = "shared" in modes
        mode = Mode.SHARE if shared else Mode.EXCLUSIVE  # PostgreSQL's modes of advisory locks
        if verb == "unlock":
            if modes == ["all"]:
                self.locks.release_all(backend.pid, transaction_too=False)
                return True
            if self.locks.release(backend.pid, key, mode=mode):
                return True
            kind = "ShareLock" if shared else "ExclusiveLock"
            backend.peer.post_notice(Severity.WARNING, f"you don't own a lock of type {kind}")
            return False
        wait = verb == "lock"
        granted = self.locks.acquire(
            backend.pid, key, mode=mode, transaction="xact" in modes, wait=wait and (
                not backend.on_loop),
            stop=lambda: backend.cancelled.is_set() or backend.gone.is_set())
        if wait and not granted and backend.on_loop:
            # The loop's thread is what the holder's client needs to release it: waiting there
            # would stop the server. The statement now never runs there again.
            raise SqlError(SqlState.LOCK_NOT_AVAILABLE, "could not obtain advisory lock",
                           detail="The statement ran where it cannot wait for a lock.",
                           hint="Run it again: it will wait.")
        return granted

    def _all(self) -> list[Backend]:
        with self._lock:
            return sorted(self._backends.values(), key=lambda b: b.started)

    def _role_of(self, caller: Caller) -> Role | None:
        """The caller's role, once its token checks out."""
        backend = self._caller_backend(caller)
        return None if backend is None else self.roles.get(backend.user)

    def _caller_backend(self, caller: Caller) -> Backend | None:
        """The caller's backend, once its token checks out; the call counts in its
        `server_calls`."""
        with self._lock:
            backend = self._backends.get(caller.pid)
        if backend is None or not secrets.compare_digest(backend.token, caller.token):
            return None
        backend.server_calls += 1
        return backend


def _may_see(asking: Role, backend: Backend) -> bool:
    """Whether `asking` has the privileges of the backend's role (PostgreSQL's test for
    reading its details and signalling it)."""
    return asking.superuser or asking.name == backend.user


def _operator_row(pid: int, p: OperatorProgress, position: int | None, requests: int,
                  detailed: bool) -> OperatorRow:
    op = p.operator
    m = p.metrics
    shown = {"question": op.call.question(), "prompts_done": p.done, "prompts_total": p.total,
             "input_tokens": m.input_tokens, "fresh_tokens": m.fresh_tokens,
             "cached_tokens": m.cached_tokens, "tokens_per_second": p.tokens_per_second,
             "stage_start": dt.datetime.fromtimestamp(p.started, dt.UTC), "seconds": p.elapsed,
             "seconds_left": p.seconds_left}
    return OperatorRow(pid=pid, operator=op.label, function=op.call.spelling,
                       stage=p.stage.value, ordinal=p.ordinal, operators=p.operators,
                       queue_position=position, engine_requests=requests,
                       **{k: v if detailed else None for k, v in shown.items()})
