"""A planning benchmark in a database: its configuration, its episodes queued as jobs of the
evaluation queue, their results, and the report.

Locally (no --db) the queue lives in OUT/ima.sqlite and this process is its worker; with a
shared database (--db), `ima worker`s on any machine claim the episodes. Either way each
episode is a checkpointed thread: an interrupted benchmark continues where it stopped, and
the same command run again finishes it (failed episodes are queued again).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.evals.pddl.plan import BenchPlan, Episode, merged_config
from ima.evals.pddl.report import write_report
from ima.evals.queue import Job, SharedEvaluation, eval_name, thread_prefix
from ima.evals.worker import Tally, Worker
from ima.models import load_chat_model
from ima.runs.database import Database, open_database

DB_FILE = "ima.sqlite"
Notify = Callable[[str, Job, dict[str, Any]], None]


class PddlBench:
    """The benchmark stored under `directory` (its --out) in `database`, or locally."""

    def __init__(self, directory: Path, database: Database | None = None) -> None:
        self.directory = directory
        self.local = database is None
        self.db = database or open_database(directory / DB_FILE)
        self.name = eval_name(str(directory))
        self.prefix = thread_prefix(self.name)
        self._shared: SharedEvaluation | None = None

    @property
    def shared(self) -> SharedEvaluation:
        if self._shared is None:  # creates the tables: only once the input is known good
            if self.local:
                self.directory.mkdir(parents=True, exist_ok=True)
            self._shared = SharedEvaluation(self.db, self.name)
        return self._shared

    def exists(self) -> bool:
        return self.db.exists() and self.shared.read_config() is not None

    def thread_id(self, episode: Episode) -> str:
        return self.prefix + episode.thread_suffix

    def prepare(self, plan: BenchPlan) -> dict[str, Any]:
        """Check the plan (a bad setting, problem or model spec fails here, before anything
        is written) and store its configuration, merged with what is already there."""
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
        """Queue the episodes; failed ones are queued again, others keep their state."""
        return self.shared.enqueue([(e.key, self.thread_id(e), vars(e)) for e in episodes])

    def work(self, notify: Notify, poll: float = 0.5) -> Tally:
        """Run this benchmark's queued episodes in this process until none is left."""
        worker = Worker(self.db, only=self.name, root=self.directory, poll=poll, notify=notify)
        return worker.run(until_done=True)

    def rows(self) -> list[dict[str, Any]]:
        config = self.shared.read_config() or {}
        arms, problems = set(config.get("arms", [])), set(config.get("problems", []))
        return [r for r in self.shared.load() if r["arm"] in arms and r["problem"] in problems]

    def report(self) -> dict[str, Any]:
        """report.md, the plot and the episode pages in the benchmark's folder."""
        config = self.shared.read_config()
        if config is None:
            raise UserError(f"no PDDL benchmark at {self.where}: run `ima bench pddl` first")
        if config.get("kind") != "pddl":
            raise UserError(
                f"{self.where} holds an `ima eval` evaluation, not a PDDL benchmark: "
                f"use `ima eval --report-only {self.directory}`"
            )
        rows = self.rows()
        if not rows:
            raise UserError(f"no finished episode at {self.where} yet")
        return write_report(self.directory, rows, config) | {"rows": rows, "config": config}
