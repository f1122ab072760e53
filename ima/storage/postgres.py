"""PostgreSQL connections: one pool per URL and process, and schema set-up once per
process, serialised across processes (concurrent CREATE TABLE IF NOT EXISTS, and
LangGraph's migrations, fail when two processes race on a new database)."""

from __future__ import annotations

import atexit
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from ima.core.errors import UserError
from ima.storage.sql import Sql
from ima.storage.targets import safe_url

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


def pool(url: str) -> Any:
    """The process's pool for `url`, opened on first use; UserError (one line) if the
    server cannot be used."""
    with _POOLS_LOCK:
        found = _POOLS.get(url)
        if found is not None:
            return found
        import psycopg
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        try:  # one plain connection first: its error names the problem, a pool's does not
            psycopg.connect(url, connect_timeout=10).close()
        except psycopg.Error as exc:
            raise connection_problem(url, exc) from None
        opened = ConnectionPool(
            url,
            min_size=1,
            max_size=8,
            # LangGraph's saver and store need autocommit and dict rows; prepared statements
            # are off so a pooler in transaction mode (PgBouncer) works too.
            kwargs={"autocommit": True, "prepare_threshold": None, "row_factory": dict_row},
            open=True,
            name="ima",
        )
        _POOLS[url] = opened
        return opened


def set_up(url: str, name: str, create: Callable[[Sql], None]) -> None:
    """Create one component's tables (idempotent statements in `create`) once per process,
    one process at a time."""
    ready = _READY.setdefault(url, set())  # per process: tables outlive objects
    if name in ready:
        return
    import psycopg

    try:
        with pool(url).connection() as conn:
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
            f"cannot create tables in PostgreSQL database {safe_url(url)}: {reason} (use a "
            "database the user owns, or grant it CREATE on schema public)"
        ) from None
    ready.add(name)


def close_pool(url: str) -> None:
    """Close the process's pool for `url` (the next use opens a new one)."""
    with _POOLS_LOCK:
        found = _POOLS.pop(url, None)
        _READY.pop(url, None)
    if found is not None:
        found.close(timeout=1)


@atexit.register
def _close_pools() -> None:
    with _POOLS_LOCK:
        for found in _POOLS.values():
            found.close(timeout=1)
        _POOLS.clear()
