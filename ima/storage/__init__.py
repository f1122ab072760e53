"""The storage toolkit under every layer that keeps data: statements written once for
SQLite and PostgreSQL, SQLite connections set up for several processes, PostgreSQL
connection pools, and where each store lives. (Its atomic file writer sits one layer lower,
in `ima.core.files`, so the core's own caches use it too.)

It knows nothing of runs, memories or evaluations: `ima.runs.database` (runs, checkpoints,
leases, evaluation queues) and `ima.longterm.backend` (long-term memory) build on it.
"""

from ima.storage.sql import Sql
from ima.storage.targets import default_target, is_url, memory_location, safe_url

__all__ = [
    "Sql",
    "default_target",
    "is_url",
    "memory_location",
    "safe_url",
]
