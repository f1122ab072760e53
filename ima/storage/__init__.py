"""The storage toolkit under every layer that keeps data: statements written once for
SQLite and PostgreSQL, SQLite connections set up for several processes, PostgreSQL
connection pools, one atomic file writer, and where each store lives.

It knows nothing of runs, memories or evaluations: `ima.runs.database` (runs, checkpoints,
leases), `ima.longterm.backend` (long-term memory), `ima.evals`, `ima.view` and
`ima.models.weights` build on it.
"""

from ima.storage.files import atomic_writer, write_json_atomic, write_text_atomic
from ima.storage.sql import Sql
from ima.storage.targets import default_target, is_url, memory_location, safe_url

__all__ = [
    "Sql",
    "atomic_writer",
    "default_target",
    "is_url",
    "memory_location",
    "safe_url",
    "write_json_atomic",
    "write_text_atomic",
]
