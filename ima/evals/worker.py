"""A worker: claims queued evaluation runs from the shared database, runs (or resumes) each
with its checkpoints in that database, judges it and stores the result row there. A job of
a benchmark (`ima bench pddl|babyai|twc`) is an episode, run by ima.evals.bench.jobs.

Start as many as you like, on any machine pointing at the same database. A worker killed
mid-run loses nothing: once its lease on the conversation expires, another worker claims
the job and continues from the last checkpoint; a run that had already ended is judged, not
run again.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ima.evals.bench import jobs as bench_jobs
from ima.evals.bench.plan import is_bench
from ima.evals.queue import Job, SharedEvaluation, claim, pending, worker_id
from ima.evals.runner import Evaluation, Event, PlannedRun, plan_from_config
from ima.runs.database import Database
from ima.runs.leases import Lease, LeaseLost

Notify = Callable[[str, Job, dict[str, Any]], None]  # (start | event | done | failed | lost)


@dataclass
class Tally:
    done: int = 0
    failed: int = 0
    lost: int = 0  # runs another worker took over (this one lost the lease)


class Worker:
    def __init__(
        self,
        db: Database,
        *,
        only: str | None = None,
        root: Path | None = None,
        poll: float = 2.0,
        notify: Notify = lambda kind, job, detail: None,
    ) -> None:
        self.db = db
        self.only = only
        self.root = root  # told where: run files go to ROOT/EVALUATION/runs/THREAD/
        self.poll = poll
        self.notify = notify
        self.id = worker_id(socket.gethostname(), os.getpid())
        self.tally = Tally()

    def run(self, *, until_done: bool = False) -> Tally:
        """Claim and run jobs; with `until_done`, stop once no job is queued or running
        anywhere (else keep polling for new evaluations)."""
        while True:
            claimed = claim(self.db, self.id, self.only)
            if claimed is None:
                if until_done and pending(self.db, self.only) == 0:
                    break
                time.sleep(self.poll)  # another worker's run may stall (then it is ours)
                continue
            job, lease = claimed
            try:
                self.run_job(job, lease)
            finally:
                lease.release()
        return self.tally

    def run_job(self, job: Job, lease: Lease) -> None:
        shared = SharedEvaluation(self.db, job.eval)
        self.notify("start", job, {})
        try:
            config = shared.read_config()
            if config is None:
                raise RuntimeError(f"evaluation {job.eval} has no configuration")
            if is_bench(config):
                row = bench_jobs.run_job(shared, config, job, lease, self._progress(job))
            else:
                row = self._run_design(shared, config, job, lease)
        except LeaseLost as exc:  # another worker has the conversation now: not ours to mark
            self.tally.lost += 1
            self.notify("lost", job, {"error": str(exc)})
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            shared.finish(job, self.id, error)
            self.tally.failed += 1
            self.notify("failed", job, {"error": error})
        else:
            shared.finish(job, self.id)
            self.tally.done += 1
            self.notify("done", job, {"row": row})

    def _run_design(
        self, shared: SharedEvaluation, config: dict[str, Any], job: Job, lease: Lease
    ) -> dict[str, Any]:
        evaluation = Evaluation(plan_from_config(config), self.folder(config, job.eval), shared)
        if evaluation.task.fingerprint != config["task"]["fingerprint"]:
            raise RuntimeError(
                f"task {config['task']['ref']} differs on this machine (fingerprint "
                f"{evaluation.task.fingerprint}, queued with {config['task']['fingerprint']})"
            )
        return evaluation.run_one(PlannedRun(**job.run), lambda e: self._event(job, e), lease=lease)

    def folder(self, config: dict[str, Any], name: str) -> Path:
        """Where an evaluation's run files go: under the root this worker was told (ROOT/NAME),
        else its `--out` as queued: an absolute one as it is, a relative one under this
        worker's folder (an evaluation queued before it was stored: its name)."""
        if self.root is not None:
            return self.root / name
        return Path(config.get("out") or name)

    def _progress(self, job: Job) -> Callable[[dict[str, Any]], None]:
        return lambda detail: self.notify("event", job, {"kind": "step", **detail})

    def _event(self, job: Job, event: Event) -> None:
        self.notify("event", job, {"kind": event.kind, **event.detail})
