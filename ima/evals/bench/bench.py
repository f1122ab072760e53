"""A benchmark in a database: its configuration, its episodes queued as jobs of the
evaluation queue, their results, and the report.

Locally (no --db) the queue lives in OUT/ima.sqlite and this process is its worker; with a
shared database (--db), `ima worker`s on any machine claim the episodes. Either way each
episode is a checkpointed thread: an interrupted benchmark continues where it stopped, and
the same command run again finishes it (failed episodes are queued again). A cross-task
episode is queued once its chain's previous episode is stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.evals.bench.plan import BenchPlan, Episode, is_bench, merged_config, upgraded
from ima.evals.bench.report import write_report
from ima.evals.queue import Job, SharedEvaluation, eval_name
from ima.evals.worker import Tally, Worker
from ima.models import load_chat_model
from ima.runs.database import Database, open_database

DB_FILE = "ima.sqlite"
Notify = Callable[[str, Job, dict[str, Any]], None]


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

    def enqueue(self, episodes: list[Episode]) -> dict[str, int]:
        """Queue the episodes that can start (a cross-task one once its chain's previous
        episode is stored: its worker queues it otherwise); failed ones are queued again,
        others keep their state. The queue's counts, and `waiting`: episodes held back."""
        stored = self.shared.keys()
        ready = [e for e in episodes if not e.after or e.after in stored]
        counts = self.shared.enqueue([(e.key, self.thread_id(e), asdict(e)) for e in ready])
        return counts | {"waiting": len(episodes) - len(ready)}

    def work(self, notify: Notify, poll: float = 0.5) -> Tally:
        """Run this benchmark's queued episodes in this process until none is left."""
        worker = Worker(self.db, only=self.name, poll=poll, notify=notify)
        return worker.run(until_done=True)

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
        return [r for r in rows if r["arm"] in arms and r["task"] in tasks]

    def report(self) -> dict[str, Any]:
        """report.md, the plot and the episode pages in the benchmark's folder."""
        config = self.config()
        rows = self.rows()
        if not rows:
            raise UserError(f"no finished episode at {self.where} yet")
        return write_report(self.directory, rows, config) | {"rows": rows, "config": config}


def _upgraded_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row in today's terms (a PDDL episode stored before the harness)."""
    if "problem" not in row:
        return row
    renamed = {"problem": "task", "optimal_length": "oracle_length", "domain": "family"}
    return {renamed.get(k, k): v for k, v in row.items()} | {"env": row["kind"]}
