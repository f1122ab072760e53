"""What one process holds while it advances a thread, as one context manager.

`with run_session(db, record) as run:` holds, for the block:

- the thread's lease: only its holder advances the thread (ThreadBusy otherwise), and every
  write below confirms it in the write's own transaction (LeaseLost once another process
  has taken the thread over);
- the run registry, and the record read again under the lease: what another process
  stored wins over the caller's copy, and a run that ended meanwhile raises RunEnded;
- the checkpointer, fenced by the lease;
- the run's long-term memory session.

Entering marks the run `running` in this process; leaving stores its status and the time
spent (`interrupted` when the block raised).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.longterm import LongTermSession, open_long_term
from ima.runs import leases
from ima.runs.database import Database, open_memory_backend, using
from ima.runs.leases import Holder, Lease, LeaseLost
from ima.runs.registry import RunRecord, RunRegistry

FINISHED = ("finalized", "turn_cap", "failed")
Target = Database | Path | str  # a Database, a SQLite path or a postgresql:// URL
Waiting = Callable[[Holder], None]


class RunEnded(UserError):
    """The run had already ended when this process got to it: it is never run again."""

    def __init__(self, record: RunRecord) -> None:
        self.record = record
        super().__init__(
            f"run {record.thread_id} already ended ({record.status}): see `ima show "
            f"{record.thread_id}`"
        )


@dataclass
class RunSession:
    """A held thread: its record and settings, the registry, and (inside the block) the
    checkpointer and long-term memory."""

    record: RunRecord
    lease: Lease
    registry: RunRegistry
    saver: Any = field(init=False)  # LangGraph's checkpointer, fenced by the lease
    long_term: LongTermSession = field(init=False)
    settings: RunContext = field(init=False)
    _spent: float = field(init=False)  # wall seconds of earlier sessions
    _started: float = field(init=False, default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        self.settings = self.record.run_context()
        self._spent = self.record.wall_seconds

    @property
    def config(self) -> Any:
        return {"configurable": {"thread_id": self.record.thread_id}}

    def save(self) -> None:
        """Store the record with the time spent so far (a killed process's share counts);
        LeaseLost, and nothing written, once the thread is another process's."""
        self.record.wall_seconds = self._spent + time.perf_counter() - self._started
        self.registry.save(self.record, self.lease)

    def _close(self, failed: bool) -> None:
        try:
            self.save()
        except LeaseLost:
            pass  # the thread is another process's now: its record is not ours to touch
        except Exception:
            if not failed:
                raise
            # else the error that stopped the run (a full disk, say) is the one to report


@contextmanager
def run_session(
    db: Target,
    record: RunRecord,
    *,
    lease: Lease | None = None,
    wait: bool = False,
    on_wait: Waiting | None = None,
) -> Iterator[RunSession]:
    """Hold the thread for the block (see the module's docstring). `lease`: already held
    by the caller (a job holds its thread while it runs, judges and stores); `wait`: poll
    while another process holds it, telling `on_wait` once."""
    with (
        using(db) as database,
        _holding(database, record.thread_id, lease, wait, on_wait) as held,
        RunRegistry(database) as registry,
    ):
        stored = registry.get(record.thread_id)
        if stored.status in FINISHED:
            raise RunEnded(stored)
        record.take_over(stored)
        record.pid, record.status = os.getpid(), "running"
        run = RunSession(record, held, registry)
        run.save()
        try:
            with (
                database.checkpointer() as saver,
                open_long_term(run.settings, database.target, opener=open_memory_backend) as lt,
            ):
                saver.fence = held  # checkpoints and compaction: refused once the lease is lost
                run.saver, run.long_term = saver, lt
                yield run
        except BaseException:
            record.status = "interrupted"
            run._close(failed=True)
            raise
        run._close(failed=False)


@contextmanager
def _holding(
    db: Database, thread_id: str, lease: Lease | None, wait: bool, on_wait: Waiting | None
) -> Iterator[Lease]:
    if lease is not None:  # claimed by the caller
        if lease.thread_id != thread_id:
            raise ValueError(f"lease is for {lease.thread_id}, not {thread_id}")
        yield lease
        return
    with leases.hold(db, thread_id, wait=wait, on_wait=on_wait) as held:
        yield held
