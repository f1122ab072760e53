"""An evaluation in a shared database: its configuration, its queue of planned runs and
their results, so workers on any machine can run them and any machine can report.

The queue is a table claimed with `SELECT ... FOR UPDATE SKIP LOCKED` (PostgreSQL; on
SQLite the write lock serialises claims). A claim takes the job and its conversation's
lease in one transaction: a job is claimable while it is queued, or running with no live
lease (its worker died: it resumes from the last checkpoint). Exactly-once execution rests
on the lease (ima.runs.leases), which `ima run` and `ima resume` honour too; the queue only
hands out work.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ima.core.errors import UserError
from ima.runs import leases
from ima.runs.database import Database
from ima.runs.leases import Lease, lease_settings
from ima.storage.sql import Sql

EVALS, JOBS, RESULTS = "ima_evals", "ima_eval_jobs", "ima_eval_results"
STATES = ("queued", "running", "done", "failed")
_DDL = (
    f"CREATE TABLE IF NOT EXISTS {EVALS} (name TEXT PRIMARY KEY, config TEXT NOT NULL, "
    "updated_at DOUBLE PRECISION NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {JOBS} (eval TEXT NOT NULL, key TEXT NOT NULL, "
    "thread_id TEXT NOT NULL, position BIGINT NOT NULL, run TEXT NOT NULL, "
    "status TEXT NOT NULL, worker TEXT NOT NULL DEFAULT '', attempts BIGINT NOT NULL DEFAULT 0, "
    "error TEXT NOT NULL DEFAULT '', updated_at DOUBLE PRECISION NOT NULL, "
    "PRIMARY KEY (eval, key))",
    f"CREATE TABLE IF NOT EXISTS {RESULTS} (eval TEXT NOT NULL, key TEXT NOT NULL, "
    "row TEXT NOT NULL, PRIMARY KEY (eval, key))",
)
# Queued, or running without a live lease (the worker died or stopped before marking it).
_CLAIMABLE = f"""
SELECT j.eval, j.key, j.thread_id, j.run FROM {JOBS} j
LEFT JOIN {leases.TABLE} l ON l.thread_id = j.thread_id AND l.expires >= {{now}}
WHERE j.status IN ('queued', 'running') AND l.thread_id IS NULL {{only}}
ORDER BY j.position LIMIT 1 {{lock}}
"""


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


@dataclass(frozen=True)
class Job:
    eval: str
    key: str
    thread_id: str
    run: dict[str, Any]  # PlannedRun fields


class SharedEvaluation:
    """One evaluation's rows in the shared database: config, jobs, results."""

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
            rows = sql.all(
                f"SELECT r.row FROM {RESULTS} r LEFT JOIN {JOBS} j ON j.eval = r.eval "
                "AND j.key = r.key WHERE r.eval = %s ORDER BY j.position, r.key",
                (self.name,),
            )
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

    def append(self, row: dict[str, Any]) -> None:
        """Store a judged run (again: the newer row wins, as in results.jsonl)."""
        with self.db.session() as sql:
            sql.execute(
                f"INSERT INTO {RESULTS} VALUES (%s, %s, %s) ON CONFLICT (eval, key) "
                "DO UPDATE SET row = excluded.row",
                (self.name, row["key"], json.dumps(row, ensure_ascii=False)),
            )

    # -- the queue

    def enqueue(self, planned: list[tuple[str, str, dict[str, Any]]]) -> dict[str, int]:
        """Add (key, thread, run) jobs in plan order; failed ones are queued again, the
        others keep their state. Counts of what the queue now holds for this evaluation."""
        with self.db.transaction() as sql:
            top = sql.one(
                f"SELECT COALESCE(MAX(position), 0) AS n FROM {JOBS} WHERE eval = %s",
                (self.name,),
            )
            position = int(top["n"]) if top else 0
            for key, thread, run in planned:
                position += 1
                sql.execute(
                    f"INSERT INTO {JOBS} (eval, key, thread_id, position, run, status, "
                    f"updated_at) VALUES (%s, %s, %s, %s, %s, 'queued', {{now}}) "
                    "ON CONFLICT (eval, key) DO UPDATE SET status = 'queued', error = '', "
                    f"updated_at = excluded.updated_at WHERE {JOBS}.status = 'failed'",
                    (self.name, key, thread, position, json.dumps(run)),
                )
        return self.counts()

    def counts(self) -> dict[str, int]:
        with self.db.session() as sql:
            rows = sql.all(
                f"SELECT status, COUNT(*) AS n FROM {JOBS} WHERE eval = %s GROUP BY status",
                (self.name,),
            )
        found = {r["status"]: int(r["n"]) for r in rows}
        return {s: found.get(s, 0) for s in STATES}

    def finish(self, job: Job, worker: str, error: str = "") -> None:
        with self.db.session() as sql:
            sql.execute(
                f"UPDATE {JOBS} SET status = %s, worker = %s, error = %s, updated_at = {{now}} "
                "WHERE eval = %s AND key = %s",
                ("failed" if error else "done", worker, error[:2000], job.eval, job.key),
            )


def evaluation_names(db: Database) -> list[str]:
    """The evaluations queued in the database, creating nothing: a worker pointed at the
    wrong database must say so, not leave an empty queue there."""
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


def claim(db: Database, worker: str, only: str | None = None) -> tuple[Job, Lease] | None:
    """The next claimable job of any evaluation (or of `only`) with its thread's lease,
    both taken in one transaction; None when nothing is claimable now."""
    set_up(db)
    settings = lease_settings()
    for _ in range(20):  # a race on the lease: look again
        with db.transaction() as sql:
            text = _CLAIMABLE.replace("{only}", "AND j.eval = %s" if only else "").replace(
                "{lock}", "FOR UPDATE OF j SKIP LOCKED" if sql.postgres else ""
            )
            row = sql.one(text, (only,) if only else ())
            if row is None:
                return None
            lease = Lease(db, row["thread_id"], settings)
            if not leases.claim_in(sql, lease):
                continue
            sql.execute(
                f"UPDATE {JOBS} SET status = 'running', worker = %s, attempts = attempts + 1, "
                "updated_at = {now} WHERE eval = %s AND key = %s",
                (worker, row["eval"], row["key"]),
            )
        job = Job(row["eval"], row["key"], row["thread_id"], json.loads(row["run"]))
        return job, leases.started(lease)
    return None


def pending(db: Database, only: str | None = None) -> int:
    """Jobs not finished (queued or running) in any evaluation, or in `only`."""
    set_up(db)
    with db.session() as sql:
        row = sql.one(
            f"SELECT COUNT(*) AS n FROM {JOBS} WHERE status IN ('queued', 'running')"
            + (" AND eval = %s" if only else ""),
            (only,) if only else (),
        )
    return int(row["n"]) if row else 0


def progress(db: Database, only: str | None = None) -> dict[str, Any]:
    """Per evaluation: done / running / queued / failed; per worker: what it did and what
    it runs now (from the live leases)."""
    set_up(db)
    with db.session() as sql:
        jobs = sql.all(
            f"SELECT eval, key, thread_id, status, worker, attempts, error, updated_at "
            f"FROM {JOBS}" + (" WHERE eval = %s" if only else "") + " ORDER BY eval, position",
            (only,) if only else (),
        )
    live = leases.holders(db)
    evals: dict[str, dict[str, int]] = {}
    workers: dict[str, dict[str, Any]] = {}
    failures: list[dict[str, Any]] = []
    for job in jobs:
        counts = evals.setdefault(job["eval"], {s: 0 for s in (*STATES, "stalled")})
        state = job["status"]
        holder = live.get(job["thread_id"])
        if state == "running" and holder is None:
            state = "stalled"  # its worker died: the next claim resumes it
        counts[state] += 1
        if job["worker"]:
            entry = workers.setdefault(
                job["worker"], {"done": 0, "failed": 0, "running": [], "last": 0.0}
            )
            entry["last"] = max(entry["last"], job["updated_at"])
            if state in ("done", "failed"):
                entry[state] += 1
        if state == "running" and holder is not None:
            entry = workers.setdefault(
                _worker_of(holder), {"done": 0, "failed": 0, "running": [], "last": 0.0}
            )
            entry["running"].append({"eval": job["eval"], "key": job["key"], "since": holder.since})
        if state == "failed":
            failures.append({"eval": job["eval"], "key": job["key"], "error": job["error"]})
    return {"evaluations": evals, "workers": workers, "failures": failures}


def _worker_of(holder: leases.Holder) -> str:
    return worker_id(holder.host, holder.pid)


def worker_id(host: str, pid: int) -> str:
    return f"{host}:{pid}"
