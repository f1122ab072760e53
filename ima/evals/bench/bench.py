"""A benchmark in a database: its configuration, its episodes (jobs), their results, and
the report.

On SQLite (OUT/ima.sqlite, or --db FILE) this process runs the episodes; on PostgreSQL
(--db URL) they are jobs of the engine that `ima worker`s on any machine run. Either way
each episode is a checkpointed thread: an interrupted benchmark continues where it
stopped, and the same command run again finishes it (failed episodes run again). A
cross-task episode starts once its chain's previous episode is stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.evals.bench.jobs import run_job
from ima.evals.bench.plan import (
    BenchPlan,
    Episode,
    is_bench,
    merged_config,
    plan_from_config,
    upgraded,
)
from ima.evals.bench.report import write_report
from ima.evals.jobs import queueing
from ima.evals.jobs.local import run_jobs
from ima.evals.shared import SharedEvaluation, eval_name, in_order
from ima.models import load_chat_model
from ima.runs.database import Database, PostgresDatabase, open_database

DB_FILE = "ima.sqlite"
Notify = Callable[[str, Episode, dict[str, Any]], None]  # (start | event | done | failed)


@dataclass
class Tally:
    done: int = 0
    failed: int = 0


class Bench:
    """The `env` benchmark stored under `directory` (its --out) in `database`, or locally."""

    def __init__(self, env: str, directory: Path, database: Database | None = None) -> None:
        self.env = env
        self.directory = directory
        self.local = database is None
        self.db = database or open_database(directory / DB_FILE)
        self.name = eval_name(str(directory))
        self._shared: SharedEvaluation | None = None

    @property
    def shared(self) -> SharedEvaluation:
        if self._shared is None:  # creates the tables: only once the input is known good
            if self.local:
                self.directory.mkdir(parents=True, exist_ok=True)
            self._shared = SharedEvaluation(self.db, self.name)
        return self._shared

    def thread_id(self, episode: Episode) -> str:
        return episode.thread_id(self.name, self.env)

    def prepare(self, plan: BenchPlan) -> dict[str, Any]:
        """Check the plan (a bad setting, task or model spec fails here, before anything is
        written) and store its configuration, merged with what is already there."""
        plan.check()
        load_chat_model(plan.model, plan.base_seed, plan.temperature, plan.call_timeout)
        config = merged_config(self.shared.read_config(), plan.config(), self.where)
        self.shared.write_config(config)
        return config

    @property
    def where(self) -> str:
        return str(self.directory) if self.local else f"{self.db.label} ({self.name})"

    def pending(self, plan: BenchPlan) -> tuple[list[Episode], list[Episode]]:
        """(stored, still to run), in the plan's order."""
        stored = self.shared.keys()
        episodes = plan.episodes()
        return [e for e in episodes if e.key in stored], [
            e for e in episodes if e.key not in stored
        ]

    def ready(self, episodes: list[Episode]) -> list[Episode]:
        """The episodes that can start now: a cross-task one once its chain's previous
        episode is stored (its job starts it otherwise)."""
        stored = self.shared.keys()
        return [e for e in episodes if not e.after or e.after in stored]

    def enqueue(self, episodes: list[Episode], retries: int | None = None) -> dict[str, int]:
        """Queue the episodes that can start as jobs of the engine (PostgreSQL); the
        benchmark's counts, and `waiting`: episodes held back until their chain gets there."""
        db = queueing.engine_database(self.db)
        ready = self.ready(episodes)
        planned = [queueing.Planned(e.key, self.thread_id(e)) for e in ready]
        counts = queueing.enqueue(db, self.name, queueing.EPISODE_TASK, planned, retries)
        return counts | {"waiting": len(episodes) - len(ready)}

    def run_here(self, episodes: list[Episode], notify: Notify, concurrency: int = 1) -> Tally:
        """Run the episodes in this process, `concurrency` at a time; a chain's next episode
        starts once its previous one is stored."""
        config = self.config()
        tally = Tally()
        todo = {e.key for e in episodes}

        def one(episode: Episode) -> list[Episode]:
            notify("start", episode, {})
            following: list[Episode] = []
            row = run_job(
                self.shared,
                config,
                episode,
                lambda detail: notify("event", episode, detail),
                lambda e: following.append(e) if e.key in todo else None,
            )
            tally.done += 1
            notify("done", episode, {"row": row})
            return following

        def failed(episode: Episode, exc: Exception) -> None:
            tally.failed += 1
            notify("failed", episode, {"error": f"{type(exc).__name__}: {exc}"})

        run_jobs(self.ready(episodes), one, concurrency=concurrency, failed=failed)
        return tally

    def config(self) -> dict[str, Any]:
        """The stored configuration; a UserError when there is no such benchmark here."""
        config = self.shared.read_config()
        if config is None:
            raise UserError(
                f"no {self.env} benchmark at {self.where}: run `ima bench {self.env}` first"
            )
        if not is_bench(config):
            raise UserError(
                f"{self.where} holds an `ima eval` evaluation, not a benchmark: "
                f"use `ima eval --report-only {self.directory}`"
            )
        if config["kind"] != self.env:
            raise UserError(
                f"{self.where} holds a {config['kind']} benchmark: use "
                f"`ima bench {config['kind']} --report-only`"
            )
        return upgraded(config)

    def rows(self) -> list[dict[str, Any]]:
        config = upgraded(self.shared.read_config() or {})
        arms, tasks = set(config.get("arms", [])), set(config.get("tasks", []))
        rows = [_upgraded_row(r) for r in self.shared.load()]
        order = [e.key for e in plan_from_config(config).episodes()] if config else []
        return in_order([r for r in rows if r["arm"] in arms and r["task"] in tasks], order)

    def report(self) -> dict[str, Any]:
        """report.md, the plot and the episode pages in the benchmark's folder."""
        config = self.config()
        rows = self.rows()
        if not rows:
            raise UserError(f"no finished episode at {self.where} yet")
        jobs = self.jobs()
        made = write_report(self.directory, rows, config, jobs)
        return made | {"rows": rows, "config": config, "jobs": jobs}

    def jobs(self) -> dict[str, Any] | None:
        """The benchmark's jobs on the engine (None on SQLite): counts per state, and the
        failed ones with their errors."""
        if not isinstance(self.db, PostgresDatabase):
            return None
        found = queueing.progress(queueing.engine_database(self.db), self.name)
        return {"counts": found["evaluations"].get(self.name, {}), "failures": found["failures"]}


def _upgraded_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row in today's terms (a PDDL episode stored before the harness)."""
    if "problem" not in row:
        return row
    renamed = {"problem": "task", "optimal_length": "oracle_length", "domain": "family"}
    return {renamed.get(k, k): v for k, v in row.items()} | {"env": row["kind"]}
