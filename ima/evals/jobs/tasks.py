"""The engine's tasks: every job that runs on a worker.

- `ima.evaluation_run`: an evaluation run with its judging (`ima eval --db URL`);
- `ima.bench_episode`: a benchmark episode (`ima bench ENV --db URL`); a cross-task
  chain's episode queues the next one once it is stored;
- `ima.queued_run`: a registered `ima run` (`ima run --queue --db URL`);
- `ima.retry_stalled_jobs`: periodic, queues again the jobs of dead workers.

A job holds its conversation's lease while it runs, so resuming from the last checkpoint is
the same for a job retried after its worker died and for `ima resume`. A job checks between
steps whether its worker is stopping (Ctrl-C, SIGTERM): then it ends there and goes back to
the queue. The retry policy: a job that failed is queued again `retries` times (its
argument, from --retries or IMA_JOB_RETRIES) after IMA_JOB_RETRY_SECONDS, unless the
failure is bad input, which no retry mends; a stopped worker or a stall is no failure.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from procrastinate import BaseRetryStrategy, JobContext, RetryDecision, exceptions
from procrastinate.jobs import Job

from ima.core.errors import UserError
from ima.evals.bench import jobs as bench_jobs
from ima.evals.bench.plan import plan_from_config as bench_plan
from ima.evals.bench.plan import upgraded
from ima.evals.jobs.engine import MAINTENANCE, SETTINGS, app, env_settings, retry_stalled
from ima.evals.jobs.queueing import (
    EPISODE_TASK,
    EVAL_TASK,
    RUN_TASK,
    Planned,
    defer_from_job,
    record_failure,
)
from ima.evals.runner import Evaluation, Event, plan_from_config
from ima.evals.shared import SharedEvaluation
from ima.runs.database import Database, open_database
from ima.runs.leases import LeaseLost
from ima.runs.registry import RunRegistry
from ima.runs.runner import FINISHED, RunEnded, execute

Listener = Callable[[str, str, dict[str, Any]], None]  # (kind, job label, detail)
_listeners: list[Listener] = []


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Tell `listener` what this process's jobs do (start, event, done, failed, stopped)."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def _tell(kind: str, label: str, detail: dict[str, Any]) -> None:
    for listener in list(_listeners):
        listener(kind, label, detail)


class JobFailed(Exception):
    """A job's failure as the retry policy sees it: how often this job has failed, and
    whether another attempt could help."""

    def __init__(self, error: str, failures: int, retryable: bool) -> None:
        super().__init__(error)
        self.failures = failures
        self.retryable = retryable


class Policy(BaseRetryStrategy):
    def get_retry_decision(self, *, exception: BaseException, job: Job) -> RetryDecision | None:
        if isinstance(exception, exceptions.JobAborted | LeaseLost):
            return RetryDecision(retry_in={"seconds": 0})  # its worker stopped, or lost it
        if not isinstance(exception, JobFailed) or not exception.retryable:
            return None  # bad input: no retry mends it
        if exception.failures > int(job.task_kwargs.get("retries") or 0):
            return None
        return RetryDecision(retry_in={"seconds": env_settings().retry_seconds})


POLICY = Policy()


def _run(context: JobContext, key: str, label: str, body: Callable[..., Any]) -> None:
    """Run `body(db, check)`; `check()` ends the job where it is if its worker stops."""
    db = open_database(context.additional_context.get("db") or os.environ.get("IMA_DB"))

    def check() -> None:
        if context.should_abort():
            raise exceptions.JobAborted

    _tell("start", label, {})
    try:
        row = body(db, check)
    except (exceptions.JobAborted, LeaseLost) as exc:
        _tell("stopped", label, {"error": str(exc) or "its worker stopped"})
        raise
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        job = context.job
        failures = record_failure(db, job.id or 0, job.queue, key, error)
        _tell("failed", label, {"error": error})
        raise JobFailed(error, failures, not isinstance(exc, UserError)) from exc
    _tell("done", label, {"row": row})


def _root(context: JobContext) -> Path | None:
    root = context.additional_context.get("root")
    return Path(root) if root else None


@app.task(name=EVAL_TASK, pass_context=True, retry=POLICY)
def evaluation_run(context: JobContext, evaluation: str, key: str, retries: int = 0) -> None:
    label = f"{evaluation} · {key}"

    def body(db: Database, check: Callable[[], None]) -> dict[str, Any]:
        shared = SharedEvaluation(db, evaluation)
        config = _config(shared)
        plan = plan_from_config(config)
        folder = _folder(_root(context), config, evaluation)
        run = next((r for r in plan.runs() if r.key == key), None)
        if run is None:
            raise RuntimeError(f"evaluation {evaluation} plans no run {key}")
        runner = Evaluation(plan, folder, shared)
        if runner.task.fingerprint != config["task"]["fingerprint"]:
            raise UserError(
                f"task {config['task']['ref']} differs on this machine (fingerprint "
                f"{runner.task.fingerprint}, queued with {config['task']['fingerprint']}): "
                "install the same ima version everywhere"
            )

        def notify(event: Event) -> None:
            check()
            _tell("event", label, {"kind": event.kind, **event.detail})

        return runner.run_job(run, notify, wait=True)

    _run(context, key, label, body)


@app.task(name=EPISODE_TASK, pass_context=True, retry=POLICY)
def bench_episode(context: JobContext, evaluation: str, key: str, retries: int = 0) -> None:
    label = f"{evaluation} · {key}"

    def body(db: Database, check: Callable[[], None]) -> dict[str, Any]:
        shared = SharedEvaluation(db, evaluation)
        config = upgraded(_config(shared))
        plan = bench_plan(config)
        episode = next((e for e in plan.episodes() if e.key == key), None)
        if episode is None:
            raise RuntimeError(f"benchmark {evaluation} plans no episode {key}")

        def progress(detail: dict[str, Any]) -> None:
            check()
            _tell("event", label, {"kind": "step", **detail})

        def follow(following: Any) -> None:
            thread = following.thread_id(evaluation, plan.env)
            defer_from_job(evaluation, EPISODE_TASK, Planned(following.key, thread), retries)

        return bench_jobs.run_job(shared, config, episode, progress, follow, wait=True)

    _run(context, key, label, body)


@app.task(name=RUN_TASK, pass_context=True, retry=POLICY)
def queued_run(context: JobContext, thread: str, retries: int = 0) -> None:
    def body(db: Database, check: Callable[[], None]) -> None:
        with RunRegistry(db) as registry:
            record = registry.get(thread)
        if record.status in FINISHED:
            return
        with contextlib.suppress(RunEnded):  # ended by another process meanwhile
            execute(record, db, lambda node, update: check(), wait=True)

    _run(context, thread, f"run {thread}", body)


@app.periodic(cron=f"* * * * * */{SETTINGS.sweep_every}", periodic_id="stalled")
@app.task(
    name="ima.retry_stalled_jobs",
    queue=MAINTENANCE,
    lock="ima.retry_stalled_jobs",
    queueing_lock="ima.retry_stalled_jobs",
    priority=100,
    pass_context=True,
)
async def retry_stalled_jobs(context: JobContext, timestamp: int) -> None:
    await retry_stalled(context.additional_context.get("stall_seconds") or SETTINGS.stall_seconds)


def _config(shared: SharedEvaluation) -> dict[str, Any]:
    config = shared.read_config()
    if config is None:
        raise RuntimeError(f"evaluation {shared.name} has no configuration")
    return config


def _folder(root: Path | None, config: dict[str, Any], name: str) -> Path:
    """Where an evaluation's run files go: under the root the worker was told (ROOT/NAME),
    else its `--out` as queued: an absolute one as it is, a relative one under this
    worker's folder."""
    if root is not None:
        return root / name
    return Path(config.get("out") or name)
