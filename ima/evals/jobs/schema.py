"""procrastinate's tables in the shared database: procrastinate's own schema, applied on
first use, and checked against this procrastinate version whenever a command starts.

procrastinate versions its SQL functions (`procrastinate_fetch_job_v2`, ...) and changes
its schema through numbered migrations, each adding the functions the new version calls.
So a database is this version's exactly when it has every function this version's schema
defines; one made by an older release lacks some until its migrations are applied.
"""

from __future__ import annotations

import importlib.metadata
import re
from functools import cache

from procrastinate.schema import SchemaManager

from ima.core.errors import UserError
from ima.runs.database import PostgresDatabase

_APPLY_LOCK = 0x1A7A5E71  # advisory lock: two first uses never apply the schema twice
_CHECKED: set[str] = set()


def version() -> str:
    return importlib.metadata.version("procrastinate")


@cache
def _functions() -> frozenset[str]:
    """The SQL functions this version's schema defines."""
    return frozenset(re.findall(r"CREATE FUNCTION (\w+)", SchemaManager.get_schema()))


def ensure_schema(db: PostgresDatabase) -> None:
    """Apply procrastinate's schema to a database that has none; refuse, in one line, one
    whose schema is another version's."""
    if db.url in _CHECKED:
        return
    with db.pool.connection() as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_APPLY_LOCK,))
        found = conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS ok")
        if not found.fetchone()["ok"]:
            conn.execute(SchemaManager.get_schema())
        rows = conn.execute(
            "SELECT proname FROM pg_proc WHERE proname LIKE 'procrastinate%'"
        ).fetchall()
    missing = sorted(_functions() - {r["proname"] for r in rows})
    if missing:
        raise UserError(
            f"the job tables in {db.label} come from another procrastinate version (no "
            f"{missing[0]}; this ima uses procrastinate {version()}): apply procrastinate's "
            "migrations up to it (`procrastinate schema --migrations-path` lists them; "
            "see docs/many-machines.md)"
        )
    _CHECKED.add(db.url)
