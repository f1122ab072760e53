"""Paired evaluation runs: both systems over the same seeds, judged and stored one by one.

Runs go through `ima.runs.runner` (create_run / execute), each on its own thread in the
evaluation's SQLite file and with its own outputs directory. A run is appended to
results.jsonl as soon as it is judged; on a new invocation, stored runs are skipped, a
finished-but-unjudged thread is judged without re-running, and an interrupted thread is
resumed from its last checkpoint.

In a database (`ima eval --db`, ima.evals.shared) the same class runs the jobs of the
evaluation: threads, configuration and results live in the database instead. On SQLite they
run in this process; on PostgreSQL they are jobs of the engine (ima.evals.jobs) that
workers on any machine run. Either way a job holds its run's thread while it runs, judges
and stores it, so a run is stored once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.core.files import write_json_atomic
from ima.core.settings import RunContext
from ima.evals.content_runs import read_design, run_content
from ima.evals.coverage import evidence_coverage, llm_coverage
from ima.evals.jobs.local import run_jobs
from ima.evals.judge import judge_design
from ima.evals.plan import EvalPlan, PlannedRun, check_compatible
from ima.evals.shared import SharedEvaluation, thread_prefix
from ima.evals.store import DB_FILE, RUNS_DIR, VIEW_FILE, ResultsStore
from ima.models import load_chat_model
from ima.runs import leases
from ima.runs.database import Database, using
from ima.runs.leases import Lease
from ima.runs.outputs import run_record, write_outputs
from ima.runs.registry import RunRecord, RunRegistry
from ima.runs.runner import (
    FINISHED,
    Listener,
    RunEnded,
    create_run,
    execute,
    load_state,
    validate_settings,
)
from ima.tasks import load_task
from ima.view import write_view


@dataclass
class Event:
    """Progress news for the display: a run starts, a turn lands, the judge works, a run ends."""

    kind: str  # skip | start | turn | judge | done | error
    run: PlannedRun
    detail: dict[str, Any]


class Evaluation:
    def __init__(
        self, plan: EvalPlan, directory: Path, shared: SharedEvaluation | None = None
    ) -> None:
        """Local: checkpoints in DIRECTORY/ima.sqlite, results in results.jsonl. Shared:
        both in `shared`'s database; DIRECTORY only holds the runs' files and reports."""
        self.plan = plan
        self.directory = directory
        self.db: Path | Database = shared.db if shared else directory / DB_FILE
        self.store: ResultsStore | SharedEvaluation = shared or ResultsStore(directory)
        self.prefix = thread_prefix(shared.name) if shared else ""
        self.task = load_task(plan.task_ref)
        self.brief = self.task.description

    def thread_id(self, run: PlannedRun) -> str:
        return self.prefix + run.thread_id(self.task.id)

    # -- setup

    def prepare(self) -> None:
        """Check the settings once, before any run, and write (or check) config.json."""
        if self.plan.pairs < 1:
            raise UserError("--pairs must be at least 1")
        if self.plan.judge_attempts < 1:
            raise UserError("--judge-attempts must be at least 1")
        seed = self.plan.base_seed
        for budget in self.plan.budgets:
            for run in [
                PlannedRun("none", None, budget, seed),
                *(PlannedRun("intrinsic", t, budget, seed) for t in self.plan.templates),
            ]:
                validate_settings(self.task, run.memory_mode, self._settings(run), self.brief)
        self.judge_model()  # a bad judge spec fails here, before anything is written
        config = self.plan.config(self.task)
        old = self.store.read_config()
        if old is not None:
            check_compatible(old, config, self.directory)
            config["pairs"] = max(config["pairs"], old.get("pairs", 0))
            config["templates"] = list(
                dict.fromkeys([*old.get("templates", []), *config["templates"]])
            )
            config["budgets"] = list(dict.fromkeys([*old.get("budgets", []), *config["budgets"]]))
        config["out"] = str(self.directory)  # as given: workers write an absolute one there
        config["updated_at"] = datetime.now().isoformat(timespec="seconds")
        self.store.write_config(config)

    def judge_model(self) -> Any:
        return load_chat_model(
            self.plan.judge_model,
            self.plan.judge_seed,
            0.0,
            self.plan.settings.call_timeout,
            weights=self.plan.settings.weights,
        )

    def _settings(self, run: PlannedRun) -> RunContext:
        values = {
            **self.plan.settings.to_dict(),
            "template": run.template or "generic",
            "token_budget": run.budget,
            "seed": run.seed,
        }
        values["review"] = False  # nobody answers a review question during an evaluation
        return RunContext(**values)

    # -- running

    def pending(self) -> tuple[list[PlannedRun], list[PlannedRun]]:
        """(already stored, still to do), in plan order."""
        stored = self.store.keys()
        runs = self.plan.runs()
        return [r for r in runs if r.key in stored], [r for r in runs if r.key not in stored]

    def run_all(
        self, notify: Callable[[Event], None] = lambda e: None, concurrency: int = 1
    ) -> None:
        """Run, judge and store every pending run in this process, `concurrency` at a time.
        Model or run errors are reported per run (notify 'error') and the others go on;
        Ctrl-C stops."""
        done, todo = self.pending()
        for run in done:
            notify(Event("skip", run, {}))

        def one(run: PlannedRun) -> list[PlannedRun]:
            row = self.run_job(run, notify)
            notify(Event("done", run, {"row": row}))
            return []

        def failed(run: PlannedRun, exc: Exception) -> None:
            notify(Event("error", run, {"error": f"{type(exc).__name__}: {exc}"}))

        run_jobs(todo, one, concurrency=concurrency, failed=failed)

    def run_job(
        self,
        run: PlannedRun,
        notify: Callable[[Event], None] = lambda e: None,
        *,
        wait: bool = False,
    ) -> dict[str, Any]:
        """One job: hold the run's thread while it is run (or resumed), judged and stored;
        a row stored before (by a job whose worker died before it could finish) is
        returned as it is. `wait`: for the thread while another process holds it (else
        ThreadBusy)."""
        with (
            using(self.db) as database,
            leases.hold(database, self.thread_id(run), wait=wait) as lease,
        ):
            stored = self.store.get(run.key)
            if stored is not None:
                return stored
            return self.run_one(run, notify, lease=lease)

    def run_one(
        self,
        run: PlannedRun,
        notify: Callable[[Event], None] = lambda e: None,
        lease: Lease | None = None,
    ) -> dict[str, Any]:
        """Run (or resume), judge and store one run. `lease`: the thread's, already held
        (a worker's claim); without it execute takes it, refusing a thread another process
        runs."""
        thread = self.thread_id(run)
        out_dir = str((self.directory / RUNS_DIR / thread).resolve())
        with RunRegistry(self.db) as registry:
            record = registry.find(thread)
            if record is not None and lease is not None and record.out_dir != out_dir:
                record.out_dir = out_dir  # resumed on another machine: files go here now
                registry.save(record, lease)  # only while the claimed lease is still ours
        notify(Event("start", run, {"thread": thread, "resumed": record is not None}))
        if record is None:
            record = create_run(
                task_ref=self.plan.task_ref,
                memory_mode=run.memory_mode,
                settings=self._settings(run),
                db=self.db,
                out_root=self.directory / RUNS_DIR,
                thread_id=thread,
            )
        try:
            if record.status in FINISHED:
                raise RunEnded(record)
            values = execute(record, self.db, self._listener(run, notify), lease=lease)
        except RunEnded as ended:  # ended before the last invocation could judge it
            record = ended.record
            values = load_state(record, self.db)
            if not (Path(record.out_dir) / "run.json").exists():
                write_outputs(Path(record.out_dir), run_record(record, values, self.task), values)
        if values.get("status") not in FINISHED:
            raise RuntimeError(f"run {thread} stopped with status {values.get('status')!r}")
        notify(Event("judge", run, {"thread": thread}))
        row = self.assess(run, record, values)
        self.store.append(row, lease)
        return row

    @staticmethod
    def _listener(run: PlannedRun, notify: Callable[[Event], None]) -> Listener:
        tokens = 0

        def listen(node: str, update: dict[str, Any]) -> None:
            nonlocal tokens
            for kinds in (update.get("usage") or {}).values():
                tokens += sum(u["input_tokens"] + u["output_tokens"] for u in kinds.values())
            for turn in update.get("transcript") or []:
                notify(Event("turn", run, {"turn": turn["index"], "tokens": tokens}))
            if node == "router" and update.get("next_speaker") == "documentation":
                notify(Event("turn", run, {"turn": None, "tokens": tokens}))

        return listen

    # -- assessment

    def assess(
        self, run: PlannedRun, record: RunRecord, values: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Judge the run's final design and measure it; the results.jsonl row. `values`,
        the run's final state, gives the content metrics its transcript."""
        out = Path(record.out_dir)
        info = json.loads((out / "run.json").read_text(encoding="utf-8"))
        design, spec = read_design(out)
        started = time.perf_counter()
        judge = self.judge_model()
        verdict = judge_design(
            judge,
            brief=self.brief,
            design=design,
            specification=spec,
            subject=record.thread_id,
            max_attempts=self.plan.judge_attempts,
        )
        verdict.update(model=self.plan.judge_model, seed=self.plan.judge_seed)
        verdict["seconds"] = round(time.perf_counter() - started, 3)
        coverage = evidence_coverage(self.task, design, spec)
        checked = None
        if self.plan.llm_coverage:
            checked = llm_coverage(
                judge, self.task, design, spec, record.thread_id, self.plan.judge_attempts
            )
        write_json_atomic(
            out / "judge.json", {"judge": verdict, "coverage": coverage, "coverage_llm": checked}
        )
        if values is not None:  # the run's page, linked from report.md
            roles = {r.id: r.name for r in self.task.roles}
            write_view(info | {"roles": roles}, values, out / VIEW_FILE, self.task)
        usage = info.get("usage") or {}
        return {
            "key": run.key,
            "thread_id": record.thread_id,
            "condition": {
                "memory_mode": run.memory_mode,
                "template": run.template,
                "token_budget": run.budget,
                "seed": run.seed,
            },
            "task": info.get("task"),
            "settings": info.get("settings"),
            "status": info.get("status"),
            "turns": info.get("turns"),
            "wall_seconds": info.get("wall_seconds"),
            "usage": {"total": usage.get("total"), "by_kind": usage.get("by_kind")},
            "design_checks": info.get("design_checks"),
            "coverage": coverage,
            "coverage_llm": checked,
            "content": run_content(self.task, out, values),
            "judge": verdict,
            "out_dir": str(out),
            "finished_at": datetime.now().isoformat(timespec="seconds"),
        }
