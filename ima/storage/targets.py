"""What a storage target names, and where each store lives.

A target is a SQLite file path or a `postgresql://` URL (`--db`, `IMA_DB`, the
`memory_store` setting). Runs live in the runs database; long-term memory lives beside it
unless `memory_store` names another place: `memory.sqlite` next to a SQLite file, or the
same PostgreSQL database.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ima.core.errors import UserError

DEFAULT_DB = Path("runs") / "ima.sqlite"
STORE_FILE = "memory.sqlite"  # long-term memory beside a SQLite runs database
POSTGRES_SCHEMES = ("postgresql", "postgres")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def default_target() -> str:
    """IMA_DB (a SQLite path or a postgresql:// URL), else runs/ima.sqlite."""
    return os.environ.get("IMA_DB") or str(DEFAULT_DB)


def url_scheme(target: str) -> str | None:
    """The scheme of a URL target, lower-cased; None for a file path."""
    match = _URL.match(target)
    return match.group(1).lower() if match else None


def is_url(target: str) -> bool:
    return url_scheme(target) is not None


def check_url(url: str) -> str:
    """`url` if it names a PostgreSQL database; else UserError in one line."""
    if url_scheme(url) not in POSTGRES_SCHEMES:
        raise UserError(
            f"unsupported database URL {safe_url(url)!r}: give a SQLite file path or "
            "postgresql://USER@HOST:PORT/DBNAME (--db or IMA_DB)"
        )
    return url


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


def memory_location(memory_store: str = "", db: str | Path | None = None) -> str:
    """Where long-term memory lives: `memory_store` (the setting) if set, else beside the
    runs database `db` (default: IMA_DB, else runs/ima.sqlite): memory.sqlite next to a
    SQLite file, or the same PostgreSQL database."""
    if memory_store:
        return memory_store
    target = str(db) if db is not None and str(db) else default_target()
    return target if is_url(target) else str(Path(target).parent / STORE_FILE)
