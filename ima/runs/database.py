"""The database every store uses, chosen once: a file path keeps runs in SQLite files, a
`postgresql://` URL puts them in PostgreSQL.

`open_database(--db or IMA_DB)` is the one place that decides; the run registry, the
checkpoints, the thread leases and evaluation results all take their connection from the
`Database` it returns (long-term memory too, where `ima.storage.targets.memory_location` says). Statements
are written once (`ima.storage.sql`) and run unchanged on both engines.
"""

from __future__ import annotations

import errno
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.longterm.backend import Backend, on_pool, open_sqlite
from ima.longterm.hub import MemoryHub
from ima.runs.checkpoints import Checkpointer, postgres_checkpointer, sqlite_checkpointer
from ima.storage import postgres
from ima.storage.sql import Sql
from ima.storage.sqlite import connect, connect_read_only
from ima.storage.targets import check_url, default_target, is_url, safe_url


class Database(ABC):
    """Where runs live; `label` names it in messages (a URL without its password) and
    `target` is what --db named (a path or the URL itself)."""

    kind: str
    label: str
    target: str

    @abstractmethod
    def session(self) -> Any:
        """`with db.session() as sql:` statements that each commit on their own."""

    @abstractmethod
    def transaction(self) -> Any:
        """`with db.transaction() as sql:` statements that commit together or not at all;
        on SQLite the write lock is taken at the start, so two never interleave."""

    @abstractmethod
    def exists(self) -> bool:
        """Whether anything was ever stored here (a missing SQLite file: no)."""

    @abstractmethod
    def checkpointer(self) -> Any:
        """`with db.checkpointer() as saver:` LangGraph's saver for this engine."""

    @abstractmethod
    def set_up(self, name: str, create: Callable[[Sql], None]) -> None:
        """Create one component's tables (idempotent statements in `create`), once per
        process, serialised across processes."""

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release what this object holds (pools stay for the process)."""

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sqlite_connection(
    path: Path, *, read_only: bool = False, autocommit: bool = False
) -> sqlite3.Connection:
    """A connection to a runs database file (WAL, busy timeout); UserError if the path is
    unusable. `read_only` never writes, so commands that only read work on a file nobody
    may write."""
    try:
        if read_only:
            return connect_read_only(path)
        return connect(path, autocommit=autocommit)
    except (OSError, sqlite3.Error) as exc:
        if read_only:
            raise UserError(f"cannot read database {path}: {exc} (choose another --db)") from None
        raise UserError(
            f"cannot open database {path}: {exc} (choose another path with --db)"
        ) from None


class SqliteDatabase(Database):
    """A SQLite file (WAL, busy timeout)."""

    kind = "sqlite"

    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = path
        self.label = self.target = str(path)
        self.read_only = read_only  # never writes: for commands that only read
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()  # one connection, shared by a run and its heartbeat
        self._done: set[str] = set()  # per object: a file can be deleted and made again

    def set_up(self, name: str, create: Callable[[Sql], None]) -> None:
        if self.read_only or name in self._done:  # read-only: its tables exist, or nothing
            return
        with self.transaction() as sql:  # SQLite's write lock serialises set-ups
            create(sql)
        self._done.add(name)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = sqlite_connection(self.path, read_only=self.read_only, autocommit=True)
        return self._conn

    @contextmanager
    def session(self) -> Iterator[Sql]:
        with self._lock:
            yield Sql(self._connection(), postgres=False)

    @contextmanager
    def transaction(self) -> Iterator[Sql]:
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield Sql(conn, postgres=False)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def exists(self) -> bool:
        return self.path.exists()

    @contextmanager
    def checkpointer(self) -> Iterator[Checkpointer]:
        conn = sqlite_connection(self.path, read_only=self.read_only)
        try:
            yield sqlite_checkpointer(conn, set_up=not self.read_only)
        finally:
            conn.close()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class PostgresDatabase(Database):
    """A PostgreSQL database, reached through a connection pool shared by the process."""

    kind = "postgres"

    def __init__(self, url: str) -> None:
        self.url = self.target = url
        self.label = safe_url(url)

    @property
    def pool(self) -> Any:
        return postgres.pool(self.url)

    def set_up(self, name: str, create: Callable[[Sql], None]) -> None:
        postgres.set_up(self.url, name, create)

    @contextmanager
    def session(self) -> Iterator[Sql]:
        with self.pool.connection() as conn:
            yield Sql(conn, postgres=True)

    @contextmanager
    def transaction(self) -> Iterator[Sql]:
        with self.pool.connection() as conn, conn.transaction():
            yield Sql(conn, postgres=True)

    def exists(self) -> bool:
        self.pool  # noqa: B018 - connects, or says in one line why it cannot
        return True

    @contextmanager
    def checkpointer(self) -> Iterator[Any]:
        saver = postgres_checkpointer(self.pool)
        self.set_up("checkpoints", lambda sql: saver.setup())
        yield saver


_SQLITE_FULL = 13  # sqlite3.SQLITE_FULL; its extended codes share the low byte
_PG_DISK_FULL = "53100"  # PostgreSQL's disk_full SQLSTATE


def disk_full(exc: BaseException | None) -> bool:
    """Whether `exc`, or an error that caused it, says a disk is full: SQLite's
    "database or disk is full", an OSError ENOSPC (or a quota), PostgreSQL's disk_full.
    An operational failure, not damage: nothing written before it is lost."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, sqlite3.Error) and (
            (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF == _SQLITE_FULL
            or "database or disk is full" in str(exc)
        ):
            return True
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if getattr(exc, "sqlstate", None) == _PG_DISK_FULL:
            return True
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return False


def open_database(
    target: str | Path | Database | None = None, *, read_only: bool = False
) -> Database:
    """The database named by --db (a path or a postgresql:// URL), else IMA_DB, else
    runs/ima.sqlite. Any other URL is refused in one line. `read_only` opens a SQLite file
    without writing to it (PostgreSQL permissions are the server's business)."""
    if isinstance(target, Database):
        return target
    text = str(target) if target is not None and str(target) != "" else default_target()
    if not is_url(text):
        return SqliteDatabase(Path(text), read_only)
    return PostgresDatabase(check_url(text))


@contextmanager
def using(target: str | Path | Database | None, *, read_only: bool = False) -> Iterator[Database]:
    """`target` as a Database for a `with` block: closed at the end if it was opened here,
    left open if the caller passed one it owns."""
    database = open_database(target, read_only=read_only)
    try:
        yield database
    finally:
        if database is not target:
            database.close()


def open_memory_backend(location: str, timeout: float = 30.0, read_only: bool = False) -> Backend:
    """Long-term memory at `location` (`ima.storage.targets.memory_location` says which): a
    SQLite file (`read_only`: only read), or a postgresql:// URL on the process's pool."""
    if not is_url(location):
        return open_sqlite(location, timeout, read_only)
    database = PostgresDatabase(check_url(location))
    backend = on_pool(database.pool, database.label)
    database.set_up("long_term", lambda sql: backend.setup())
    return backend


def open_memory_hub(
    location: str | Path, principal: str, *, read_only: bool = False, **kwargs: Any
) -> MemoryHub:
    """A MemoryHub on `location` (a SQLite file or a postgresql:// URL); close it after."""
    timeout = kwargs.pop("timeout", 30.0)
    backend = open_memory_backend(str(location), timeout, read_only)
    return MemoryHub.on_backend(backend, principal, **kwargs)
