"""An evaluation in a database: its configuration and its results, so jobs on any machine
can run its runs and any machine can report.

A result is keyed by (evaluation, run key) and written once, fenced by the lease of the
run's conversation (ima.runs.leases): a job that has lost its thread to another process
writes nothing, and a second job of the same run (delivery is at-least-once) finds the
row stored and stops. Jobs themselves are procrastinate's (ima.evals.jobs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from ima.core.errors import UserError
from ima.runs import leases
from ima.runs.database import Database
from ima.runs.leases import Lease
from ima.storage.sql import Sql

EVALS, RESULTS = "ima_evals", "ima_eval_results"
_DDL = (
    f"CREATE TABLE IF NOT EXISTS {EVALS} (name TEXT PRIMARY KEY, config TEXT NOT NULL, "
    "updated_at DOUBLE PRECISION NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {RESULTS} (eval TEXT NOT NULL, key TEXT NOT NULL, "
    "row TEXT NOT NULL, PRIMARY KEY (eval, key))",
)


def set_up(db: Database) -> None:
    leases.set_up(db)

    def create(sql: Sql) -> None:
        for statement in _DDL:
            sql.execute(statement)

    db.set_up("evals", create)


def eval_name(directory: str) -> str:
    """The evaluation's name in the database: its --out path as given, normalised."""
    parts = [p for p in re.split(r"[\\/]+", directory.strip()) if p not in ("", ".")]
    if not parts:
        raise UserError("an evaluation needs a name: give --out DIR")
    return "/".join(parts)


def thread_prefix(name: str) -> str:
    """Threads of evaluations sharing one database must not collide: prefix the name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") + "--"


def in_order(rows: list[dict[str, Any]], keys: Iterable[str]) -> list[dict[str, Any]]:
    """`rows` in the order of `keys` (a plan's), rows of other keys last."""
    position = {key: i for i, key in enumerate(keys)}
    return sorted(rows, key=lambda r: position.get(r["key"], len(position)))


class SharedEvaluation:
    """One evaluation's rows in the database: configuration and results."""

    def __init__(self, db: Database, name: str) -> None:
        self.db = db
        self.name = name
        set_up(db)

    # -- configuration

    def read_config(self) -> dict[str, Any] | None:
        with self.db.session() as sql:
            row = sql.one(f"SELECT config FROM {EVALS} WHERE name = %s", (self.name,))
        return json.loads(row["config"]) if row else None

    def write_config(self, config: dict[str, Any]) -> None:
        with self.db.session() as sql:
            sql.execute(
                f"INSERT INTO {EVALS} VALUES (%s, %s, {{now}}) ON CONFLICT (name) "
                "DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at",
                (self.name, json.dumps(config)),
            )

    # -- results (the same interface as the results.jsonl store)

    @property
    def path(self) -> str:
        return f"{self.db.label} (evaluation {self.name})"

    skipped_lines = 0

    def load(self) -> list[dict[str, Any]]:
        with self.db.session() as sql:
            rows = sql.all(f"SELECT row FROM {RESULTS} WHERE eval = %s ORDER BY key", (self.name,))
        return [json.loads(r["row"]) for r in rows]

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored row of one key (None: not stored)."""
        with self.db.session() as sql:
            row = sql.one(
                f"SELECT row FROM {RESULTS} WHERE eval = %s AND key = %s", (self.name, key)
            )
        return json.loads(row["row"]) if row else None

    def keys(self) -> set[str]:
        with self.db.session() as sql:
            rows = sql.all(f"SELECT key FROM {RESULTS} WHERE eval = %s", (self.name,))
        return {r["key"] for r in rows}

    def append(self, row: dict[str, Any], lease: Lease | None = None) -> bool:
        """Store a finished run once: False (and nothing written) if its key is stored
        already. `lease`: the run's thread, confirmed in the same transaction, so a job
        that lost the thread to another process writes nothing (LeaseLost)."""
        with self.db.transaction() as sql:
            if lease is not None:
                lease.confirm(sql)
            written = sql.execute(
                f"INSERT INTO {RESULTS} VALUES (%s, %s, %s) ON CONFLICT (eval, key) DO NOTHING",
                (self.name, row["key"], json.dumps(row, ensure_ascii=False)),
            )
        return written == 1


def evaluation_names(db: Database) -> list[str]:
    """The evaluations stored in the database, creating nothing: a command pointed at the
    wrong database must say so, not leave empty tables there."""
    with db.session() as sql:
        if sql.postgres:
            found = sql.one("SELECT to_regclass(%s) IS NOT NULL AS ok", (EVALS,))
        else:
            found = sql.one(
                "SELECT COUNT(*) > 0 AS ok FROM sqlite_master WHERE type = 'table' AND name = %s",
                (EVALS,),
            )
        if not (found and found["ok"]):
            return []
        return [r["name"] for r in sql.all(f"SELECT name FROM {EVALS} ORDER BY name")]
