"""The revision log: the arbiter of conditional writes, which the Store API lacks.

A writer stores its new document body under a fresh key first, then claims revision
`read + 1`. A claim succeeds for exactly one writer per revision; the loser deletes its
body, re-reads and re-merges. Readers follow claims only, so they never see a body that
lost, and a claimed body always exists (it was written before the claim).

- `TableRevisionLog`: a table in the store's own database (the SQLite file on a connection
  of its own, or PostgreSQL, whose LangGraph store has no compare-and-set); the claim is
  one INSERT ... ON CONFLICT DO NOTHING on the (namespace, key, rev) primary key, atomic
  across threads, processes and machines.
- `StoreRevisionLog`: for any other BaseStore (e.g. the LangGraph server's); claims are
  items in the store, serialised by a lock, so it is sound within one process only.
"""

from __future__ import annotations

import json
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Protocol

from langgraph.store.base import BaseStore

from ima.storage.sql import SqlSession


@dataclass(frozen=True)
class Revision:
    rev: int
    body: str  # store key of this revision's document
    writer: str
    at: float


Namespace = tuple[str, ...]


class RevisionLog(Protocol):
    def head(self, namespace: Namespace, key: str) -> Revision | None: ...

    def claim(self, namespace: Namespace, key: str, revision: Revision) -> bool: ...

    def history(self, namespace: Namespace, key: str) -> list[Revision]: ...


def _ns(namespace: Namespace) -> str:
    return json.dumps(list(namespace))  # unambiguous, unlike joining labels with a separator


class TableRevisionLog:
    """Claims as rows of one table, through `session` (`ima.storage.sql`: a SQLite
    connection of its own, or a PostgreSQL pool)."""

    TABLE = "ima_longterm_revisions"
    DDL = (
        f"CREATE TABLE IF NOT EXISTS {TABLE} ("
        "namespace TEXT NOT NULL, key TEXT NOT NULL, rev BIGINT NOT NULL, "
        "body TEXT NOT NULL, writer TEXT NOT NULL, at DOUBLE PRECISION NOT NULL, "
        "PRIMARY KEY (namespace, key, rev))"
    )
    _SELECT = f"SELECT rev, body, writer, at FROM {TABLE} WHERE namespace = %s AND key = %s"

    def __init__(self, session: SqlSession) -> None:
        self.session = session

    def setup(self) -> None:
        """Create the table (idempotent)."""
        with self.session() as sql:
            sql.execute(self.DDL)

    def head(self, namespace: Namespace, key: str) -> Revision | None:
        with self.session() as sql:
            row = sql.one(f"{self._SELECT} ORDER BY rev DESC LIMIT 1", (_ns(namespace), key))
        return Revision(**row) if row else None

    def claim(self, namespace: Namespace, key: str, revision: Revision) -> bool:
        with self.session() as sql:
            added = sql.execute(
                f"INSERT INTO {self.TABLE} VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (_ns(namespace), key, revision.rev, revision.body, revision.writer, revision.at),
            )
        return added == 1  # 0: another writer claimed this revision first

    def history(self, namespace: Namespace, key: str) -> list[Revision]:
        with self.session() as sql:
            rows = sql.all(f"{self._SELECT} ORDER BY rev", (_ns(namespace), key))
        return [Revision(**r) for r in rows]


_LOCKS: weakref.WeakKeyDictionary[BaseStore, threading.Lock] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


class StoreRevisionLog:
    """Claims as store items `<key>#<rev>` plus a `<key>#head` pointer, under a per-store lock."""

    def __init__(self, store: BaseStore) -> None:
        self.store = store
        with _LOCKS_GUARD:
            self.lock = _LOCKS.setdefault(store, threading.Lock())

    def head(self, namespace: Namespace, key: str) -> Revision | None:
        item = self.store.get(namespace, f"{key}#head")
        return Revision(**item.value) if item else None

    def claim(self, namespace: Namespace, key: str, revision: Revision) -> bool:
        with self.lock:
            if self.store.get(namespace, f"{key}#{revision.rev:08d}") is not None:
                return False
            value = {
                "rev": revision.rev,
                "body": revision.body,
                "writer": revision.writer,
                "at": revision.at,
            }
            self.store.put(namespace, f"{key}#{revision.rev:08d}", value, index=False)
            self.store.put(namespace, f"{key}#head", value, index=False)
        return True

    def history(self, namespace: Namespace, key: str) -> list[Revision]:
        head = self.head(namespace, key)
        out = []
        for rev in range(1, head.rev + 1 if head else 1):
            item = self.store.get(namespace, f"{key}#{rev:08d}")
            if item:
                out.append(Revision(**item.value))
        return out


_REGISTERED: weakref.WeakKeyDictionary[BaseStore, RevisionLog] = weakref.WeakKeyDictionary()


def register(store: BaseStore, log: RevisionLog) -> None:
    """Remember the log that goes with `store`, so a node holding only the graph's store
    (runtime.store) gets the cross-process log, not the in-process fallback."""
    _REGISTERED[store] = log


def log_for(store: BaseStore) -> RevisionLog:
    return _REGISTERED.get(store) or StoreRevisionLog(store)


def writer_id() -> str:
    """Who claimed a revision (process and thread), for the log; never memory content."""
    return f"pid{os.getpid()}-t{threading.get_ident()}"
