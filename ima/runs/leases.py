"""One process at a time per conversation: a lease row per thread, on both engines.

A process claims a thread with one atomic statement (insert the row, or take it over only
if it has expired), renews it from a heartbeat thread, and deletes it when done. A holder
killed with -9, or on a lost machine, stops renewing; its lease expires and the thread can
be resumed. Times come from the database's clock, so machines need not agree on theirs. On
the holder's own machine (same boot and process namespace) a dead holder is seen at once,
so a killed run there can be resumed without waiting for the expiry.

Every write a run makes is fenced by the lease row itself, not by what this process last
heard: `Lease.confirm` runs inside the write's own transaction and refuses unless the row
still names this holder (on SQLite the transaction holds the file's write lock; on
PostgreSQL it locks the row FOR SHARE), so a takeover commits either before the check (the
write is refused) or after the write. A process paused past its term (SIGSTOP, a VM
migration, a clock step) therefore writes nothing once another has taken the thread over,
however late it wakes. A row that is still ours after its expiry, with nobody having taken
over, is safe to write: the heartbeat renews it. The heartbeat is for liveness only.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from ima.core.errors import UserError
from ima.core.processes import process_alive
from ima.runs.database import Database
from ima.storage.sql import Sql

TABLE = "ima_leases"
_DDL = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
    "thread_id TEXT PRIMARY KEY, holder TEXT NOT NULL, pid BIGINT NOT NULL, "
    "host TEXT NOT NULL, node TEXT NOT NULL, since DOUBLE PRECISION NOT NULL, "
    "heartbeat DOUBLE PRECISION NOT NULL, expires DOUBLE PRECISION NOT NULL)"
)
# Insert, or take over an expired lease; a live one stays untouched (ON CONFLICT ... WHERE
# is atomic on PostgreSQL and on SQLite >= 3.24).
_CLAIM = f"""
INSERT INTO {TABLE} (thread_id, holder, pid, host, node, since, heartbeat, expires)
VALUES (%s, %s, %s, %s, %s, {{now}}, {{now}}, {{now}} + %s)
ON CONFLICT (thread_id) DO UPDATE SET holder = excluded.holder, pid = excluded.pid,
    host = excluded.host, node = excluded.node, since = excluded.since,
    heartbeat = excluded.heartbeat, expires = excluded.expires
WHERE {TABLE}.expires < {{now}}
"""
_RENEW = (
    f"UPDATE {TABLE} SET heartbeat = {{now}}, expires = {{now}} + %s "
    "WHERE thread_id = %s AND holder = %s"
)


class LeaseSettings(BaseSettings):
    """How long a lease lasts without a heartbeat (IMA_LEASE_SECONDS, default 30)."""

    model_config = SettingsConfigDict(env_prefix="IMA_LEASE_")

    seconds: float = Field(30.0, gt=0)

    @property
    def heartbeat(self) -> float:
        return self.seconds / 4  # three missed beats still leave time before expiry


def lease_settings() -> LeaseSettings:
    """The lease term from IMA_LEASE_SECONDS; a bad value is one UserError line."""
    try:
        return LeaseSettings()
    except ValidationError:
        given = os.environ.get("IMA_LEASE_SECONDS", "")
        raise UserError(
            f"IMA_LEASE_SECONDS={given!r} is invalid: give a positive number of seconds"
        ) from None


def set_up(db: Database) -> None:
    db.set_up("leases", lambda sql: sql.execute(_DDL))


def _node() -> str:
    """This machine's boot and process namespace: two processes with the same node see the
    same pids, so one can tell whether the other is alive. Empty where unknown."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}/{os.stat('/proc/self/ns/pid').st_ino}"
    except OSError:
        return ""


NODE = _node()


@dataclass(frozen=True)
class Holder:
    """Who holds a thread's lease, as the lease row says."""

    thread_id: str
    holder: str
    pid: int
    host: str
    node: str
    since: float
    heartbeat: float
    expires: float

    @property
    def dead(self) -> bool:
        """Certainly dead: a process of this machine that no longer exists."""
        return bool(NODE) and self.node == NODE and not process_alive(self.pid)

    def describe(self) -> str:
        started = datetime.fromtimestamp(self.since).strftime("%Y-%m-%d %H:%M:%S")
        return f"process {self.pid} on host {self.host} since {started}"


class ThreadBusy(UserError):
    """Another process holds the thread's lease."""

    def __init__(self, holder: Holder) -> None:
        self.holder = holder
        super().__init__(
            f"thread {holder.thread_id} is being run by {holder.describe()}: "
            "wait for it with --wait, or stop that process"
        )


class LeaseLost(RuntimeError):
    """This process no longer holds the thread (it expired and another process took it
    over, or its row is gone): it must stop writing."""


def holders(db: Database, threads: list[str] | None = None) -> dict[str, Holder]:
    """Live leases (unexpired), by thread."""
    set_up(db)
    try:
        with db.session() as sql:
            query = f"SELECT * FROM {TABLE} WHERE expires >= {{now}}"
            if threads is None:
                rows = sql.all(query)
            elif threads:
                marks = ", ".join(["%s"] * len(threads))
                rows = sql.all(f"{query} AND thread_id IN ({marks})", threads)
            else:
                rows = []
    except sqlite3.OperationalError as exc:  # a read-only database from before leases
        if "no such table" not in str(exc):
            raise
        rows = []
    found = (Holder(**r) for r in rows)
    return {h.thread_id: h for h in found if not h.dead}


class Lease:
    """A held lease: renewed by a heartbeat thread until `release`."""

    def __init__(self, db: Database, thread_id: str, settings: LeaseSettings) -> None:
        self.db = db
        self.thread_id = thread_id
        self.settings = settings
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lost: str = ""  # why the lease is gone ("" while held)
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def claim(self) -> Holder | None:
        """Take the lease if it is free or expired; else who holds it."""
        with self.db.session() as sql:
            sql.execute(
                _CLAIM,
                (
                    self.thread_id,
                    self.holder,
                    os.getpid(),
                    socket.gethostname(),
                    NODE,
                    self.settings.seconds,
                ),
            )
            row = sql.one(f"SELECT * FROM {TABLE} WHERE thread_id = %s", (self.thread_id,))
            if row is not None and row["holder"] != self.holder and Holder(**row).dead:
                # killed on this machine: its lease is void now, not only after expiry
                sql.execute(
                    f"DELETE FROM {TABLE} WHERE thread_id = %s AND holder = %s",
                    (self.thread_id, row["holder"]),
                )
                row = None
        if row is None:  # released (or void) between our statements: try again
            return self.claim()
        if row["holder"] == self.holder:
            self._start_heartbeat()
            return None
        return Holder(**row)

    def _start_heartbeat(self) -> None:
        self._beat = threading.Thread(
            target=self._heartbeat, name=f"lease-{self.thread_id}", daemon=True
        )
        self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.settings.heartbeat):
            try:
                with self.db.session() as sql:
                    kept = sql.execute(_RENEW, (self.settings.seconds, self.thread_id, self.holder))
            except Exception:  # unreachable for now: keep trying; the fence guards every write
                continue
            if kept != 1:
                self._lose("it expired and another process took the thread over")
                return

    def _lose(self, why: str) -> None:
        self.lost = self.lost or why

    def check(self) -> None:
        """Raise LeaseLost if this process already knows the lease is gone: a cheap early
        stop. It proves nothing about the database; `confirm` does."""
        if self.lost:
            raise LeaseLost(f"lost the lease on thread {self.thread_id}: {self.lost}")

    def confirm(self, sql: Sql) -> None:
        """Raise LeaseLost unless the lease row still names this holder. Call it inside the
        transaction of the write it guards (SQLite: after BEGIN IMMEDIATE), so no takeover
        can commit between this check and that write."""
        self.check()
        lock = " FOR SHARE" if sql.postgres else ""
        row = sql.one(f"SELECT holder FROM {TABLE} WHERE thread_id = %s{lock}", (self.thread_id,))
        if row is None or row["holder"] != self.holder:
            self._lose("it expired and another process took the thread over")
            self.check()

    def release(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        if self.lost:
            return  # another process may hold it now: its row is not ours to delete
        try:
            with self.db.session() as sql:
                sql.execute(
                    f"DELETE FROM {TABLE} WHERE thread_id = %s AND holder = %s",
                    (self.thread_id, self.holder),
                )
        except Exception:
            # Best effort (a full disk, a lost server): the row is void as soon as this
            # process ends on this machine and expires elsewhere; the error that stopped
            # the run, if any, is the one to report.
            pass


@contextmanager
def hold(
    db: Database,
    thread_id: str,
    *,
    wait: bool = False,
    on_wait: Callable[[Holder], None] | None = None,
    settings: LeaseSettings | None = None,
) -> Iterator[Lease]:
    """Hold the thread's lease for the block: ThreadBusy if another process holds it, or,
    with `wait`, poll until it is released or expires."""
    set_up(db)
    lease = Lease(db, thread_id, settings or lease_settings())
    told = False
    while (holder := lease.claim()) is not None:
        if not wait:
            raise ThreadBusy(holder)
        if on_wait and not told:
            on_wait(holder)
            told = True
        time.sleep(min(1.0, lease.settings.heartbeat))
    try:
        yield lease
    finally:
        lease.release()
