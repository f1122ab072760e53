"""The database every store uses, chosen once: a file path keeps runs in SQLite files, a
`postgresql://` URL puts them in PostgreSQL.

`open_database(--db or IMA_DB)` is the one place that decides; the run registry, the
checkpoints, the thread leases, long-term memory (unless `memory_store` names another place)
and evaluation results all take their connection from the `Database` it returns. Statements
are written once, with `%s` placeholders and `{now}` for the database's clock (seconds since
the epoch), and run unchanged on both engines.
"""

from __future__ import annotations

import atexit
import errno
import re
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ima.core.errors import UserError
from ima.runs.sqlite import connect, default_target

POSTGRES_SCHEMES = ("postgresql", "postgres")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
Row = dict[str, Any]


class Sql:
    """Statements on one connection: rows come back as dicts on both engines."""

    def __init__(self, conn: Any, postgres: bool) -> None:
        self.conn = conn
        self.postgres = postgres

    def _text(self, sql: str) -> str:
        now = (
            "EXTRACT(EPOCH FROM clock_timestamp())::float8"
            if self.postgres
            else "((julianday('now') - 2440587.5) * 86400.0)"
        )
        sql = sql.replace("{now}", now)
        return sql if self.postgres else sql.replace("%s", "?")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; the number of rows it changed."""
        cur = self.conn.execute(self._text(sql), tuple(params))
        return cur.rowcount

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        cur = self.conn.execute(self._text(sql), tuple(params))
        if self.postgres:
            return list(cur.fetchall())
        names = [d[0] for d in cur.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = self.all(sql, params)
        return rows[0] if rows else None


class Database(ABC):
    """Where runs live; `label` names it in messages (a URL without its password)."""

    kind: str
    label: str

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
    def long_term_backend(self, timeout: float = 30.0) -> tuple[Any, str]:
        """Long-term memory's store and revision log in this database, and where it is."""

    def long_term(self, memory_store: str = "", timeout: float = 30.0) -> tuple[Any, str]:
        """Long-term memory for runs kept here: `memory_store` (the setting, a SQLite file
        or a postgresql:// URL) if set, else this database."""
        if not memory_store:
            return self.long_term_backend(timeout)
        return open_memory_backend(memory_store, timeout)

    def set_up(self, name: str, create: Callable[[Sql], None]) -> None:
        """Create one component's tables (idempotent statements in `create`), once per
        process, serialised across processes: concurrent CREATE TABLE IF NOT EXISTS, and
        LangGraph's migrations, fail when two processes race on a new PostgreSQL database."""
        if name in self._ready():
            return
        self._set_up(create)
        self._ready().add(name)

    @abstractmethod
    def _ready(self) -> set[str]: ...

    @abstractmethod
    def _set_up(self, create: Callable[[Sql], None]) -> None: ...

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release what this object holds (pools stay for the process)."""

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SqliteDatabase(Database):
    """A SQLite file (WAL, busy timeout); memory.sqlite beside it holds long-term memory."""

    kind = "sqlite"

    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = path
        self.label = str(path)
        self.read_only = read_only  # never writes: for commands that only read
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()  # one connection, shared by a run and its heartbeat
        self._done: set[str] = set()

    def _ready(self) -> set[str]:
        return self._done  # per object: a file can be deleted and made again

    def _set_up(self, create: Callable[[Sql], None]) -> None:
        with self.transaction() as sql:  # SQLite's write lock serialises set-ups
            create(sql)

    def set_up(self, name: str, create: Callable[[Sql], None]) -> None:
        if not self.read_only:  # a read-only file has its tables, or nothing to read
            super().set_up(name, create)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = connect(self.path, autocommit=True, read_only=self.read_only)
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
    def checkpointer(self) -> Iterator[Any]:
        from ima.runs.checkpoints import open_sqlite_checkpointer

        with open_sqlite_checkpointer(self.path, self.read_only) as saver:
            yield saver

    def long_term_backend(self, timeout: float = 30.0) -> tuple[Any, str]:
        from ima.longterm.backend import open_sqlite

        path = self.path.parent / "memory.sqlite"
        return open_sqlite(path, timeout), str(path)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class PostgresDatabase(Database):
    """A PostgreSQL database, reached through a connection pool shared by the process."""

    kind = "postgres"

    def __init__(self, url: str) -> None:
        self.url = url
        self.label = safe_url(url)

    @property
    def pool(self) -> Any:
        return _pool(self.url)

    def _ready(self) -> set[str]:
        return _READY.setdefault(self.url, set())  # per process: tables outlive objects

    def _set_up(self, create: Callable[[Sql], None]) -> None:
        import psycopg

        try:
            with self.pool.connection() as conn:
                # Poll rather than wait inside a statement: LangGraph's CREATE INDEX
                # CONCURRENTLY waits for every running statement, a blocked lock call too.
                while not conn.execute(
                    "SELECT pg_try_advisory_lock(%s) AS ok", (_SETUP_LOCK,)
                ).fetchone()["ok"]:
                    time.sleep(0.05)
                try:
                    create(Sql(conn, postgres=True))
                finally:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))
        except psycopg.errors.InsufficientPrivilege as exc:
            reason = (str(exc).splitlines() or [""])[0]
            raise UserError(
                f"cannot create tables in PostgreSQL database {self.label}: {reason} (use a "
                "database the user owns, or grant it CREATE on schema public)"
            ) from None

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
        from ima.runs.checkpoints import postgres_checkpointer

        saver = postgres_checkpointer(self.pool)
        self.set_up("checkpoints", lambda sql: saver.setup())
        yield saver

    def long_term_backend(self, timeout: float = 30.0) -> tuple[Any, str]:
        from ima.longterm.backend import open_postgres

        backend = open_postgres(self.pool)
        self.set_up("long_term", lambda sql: backend.setup())
        return backend, self.label


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


def is_url(target: str) -> bool:
    return bool(_URL.match(target))


def safe_url(url: str) -> str:
    """The URL without its password, for messages and listings."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def open_database(
    target: str | Path | Database | None = None, *, read_only: bool = False
) -> Database:
    """The database named by --db (a path or a postgresql:// URL), else IMA_DB, else
    runs/ima.sqlite. Any other URL is refused in one line. `read_only` opens a SQLite file
    without writing to it (PostgreSQL permissions are the server's business)."""
    if isinstance(target, Database):
        return target
    text = str(target) if target is not None and str(target) != "" else default_target()
    match = _URL.match(text)
    if match is None:
        return SqliteDatabase(Path(text), read_only)
    if match.group(1).lower() not in POSTGRES_SCHEMES:
        raise UserError(
            f"unsupported database URL {safe_url(text)!r}: give a SQLite file path or "
            "postgresql://USER@HOST:PORT/DBNAME (--db or IMA_DB)"
        )
    return PostgresDatabase(text)


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


def memory_location(memory_store: str = "", db: str | None = None) -> str:
    """Where long-term memory lives: the memory_store setting, else beside the runs
    database (--db / IMA_DB): memory.sqlite next to a SQLite file, or the same PostgreSQL
    database."""
    if memory_store:
        return memory_store
    database = open_database(db)
    if isinstance(database, PostgresDatabase):
        return database.url
    return str(Path(database.label).parent / "memory.sqlite")


def open_memory_backend(
    location: str, timeout: float = 30.0, read_only: bool = False
) -> tuple[Any, str]:
    """Long-term memory at `location`, a SQLite file or a postgresql:// URL (`read_only`:
    a SQLite file is only read)."""
    if is_url(location):
        return open_database(location).long_term_backend(timeout)
    from ima.longterm.backend import open_sqlite

    return open_sqlite(Path(location), timeout, read_only), location


def open_memory_hub(
    location: str | Path, principal: str, *, read_only: bool = False, **kwargs: Any
) -> Any:
    """A MemoryHub on `location` (a SQLite file or a postgresql:// URL); close it after."""
    from ima.longterm.hub import MemoryHub

    timeout = kwargs.pop("timeout", 30.0)
    backend, _ = open_memory_backend(str(location), timeout, read_only)
    return MemoryHub.on_backend(backend, principal, **kwargs)


# -- PostgreSQL connections ----------------------------------------------------------------

_POOLS: dict[str, Any] = {}
_POOLS_LOCK = threading.Lock()
_READY: dict[str, set[str]] = {}
_SETUP_LOCK = 0x1A7A5E70  # any constant: the advisory lock id of schema set-up


def connection_problem(url: str, exc: Exception) -> UserError:
    """One line naming why PostgreSQL at `url` cannot be used, and what to do."""
    text = " ".join(str(exc).split())
    reason = text.rsplit(" failed: ", 1)[-1].replace("FATAL: ", "").strip()
    reason = re.sub(r"^connection (is bad|failed): ", "", reason)
    hint = "check --db / IMA_DB"
    if "refused" in reason.lower() or "resolve host" in reason.lower():
        hint = "is the server running and reachable? check host and port in --db / IMA_DB"
    elif "password" in reason.lower():
        hint = "check the user name and password in --db / IMA_DB"
    elif "does not exist" in reason.lower() and "database" in reason.lower():
        hint = "create it (createdb) or name an existing database in --db / IMA_DB"
    return UserError(f"cannot use PostgreSQL database {safe_url(url)}: {reason} ({hint})")


def _pool(url: str) -> Any:
    """The process's pool for `url`, opened (and its schema set up) on first use."""
    with _POOLS_LOCK:
        pool = _POOLS.get(url)
        if pool is not None:
            return pool
        import psycopg
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        try:  # one plain connection first: its error names the problem, a pool's does not
            psycopg.connect(url, connect_timeout=10).close()
        except psycopg.Error as exc:
            raise connection_problem(url, exc) from None
        pool = ConnectionPool(
            url,
            min_size=1,
            max_size=8,
            # LangGraph's saver and store need autocommit and dict rows; prepared statements
            # are off so a pooler in transaction mode (PgBouncer) works too.
            kwargs={"autocommit": True, "prepare_threshold": None, "row_factory": dict_row},
            open=True,
            name="ima",
        )
        _POOLS[url] = pool
        return pool


def close_pool(url: str) -> None:
    """Close the process's pool for `url` (the next use opens a new one)."""
    with _POOLS_LOCK:
        pool = _POOLS.pop(url, None)
        _READY.pop(url, None)
    if pool is not None:
        pool.close(timeout=1)


@atexit.register
def _close_pools() -> None:
    with _POOLS_LOCK:
        for pool in _POOLS.values():
            pool.close(timeout=1)
        _POOLS.clear()
