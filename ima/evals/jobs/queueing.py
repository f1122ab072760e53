"""Evaluations and benchmarks on the engine: queue their jobs, cancel, retry, and read
their progress from procrastinate's job table.

Each evaluation (or benchmark) has its own queue, `eval:NAME`, so a worker can serve one
(`ima worker --eval NAME`) and procrastinate's shell lists them apart; queued `ima run`s
share the queue `ima-runs`. A job's lock is its conversation's thread and its queueing
lock the job key (`NAME:KEY`): procrastinate refuses a second job of a key while one
waits, and queueing again skips keys stored, waiting or running, so re-queueing a finished
evaluation queues nothing and a stopped one gets only what is missing.

Why a job failed is not kept by procrastinate: the task writes it to `ima_job_errors`
(one row per failure), where `ima eval status` and the retry policy read it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from procrastinate import exceptions, utils
from procrastinate.jobs import Job

from ima.core.errors import UserError
from ima.evals.jobs.engine import app, opened
from ima.evals.jobs.schema import ensure_schema
from ima.evals.jobs.settings import job_settings
from ima.evals.shared import SharedEvaluation
from ima.runs.database import Database, PostgresDatabase

EVAL_TASK, EPISODE_TASK, RUN_TASK = "ima.evaluation_run", "ima.bench_episode", "ima.queued_run"
RUNS_QUEUE = "ima-runs"
ERRORS = "ima_job_errors"
_DDL = (
    f"CREATE TABLE IF NOT EXISTS {ERRORS} (job_id BIGINT NOT NULL, queue TEXT NOT NULL, "
    "key TEXT NOT NULL, error TEXT NOT NULL, at DOUBLE PRECISION NOT NULL)"
)
WAITING, RUNNING = "todo", "doing"


def queue_of(name: str) -> str:
    return f"eval:{name}"


def job_key(name: str, key: str) -> str:
    return f"{name}:{key}"


@dataclass(frozen=True)
class Planned:
    """A job to queue: its run's key and its conversation's thread."""

    key: str
    thread: str


def engine_database(
    db: Database,
    needs: str = "job queue",
    instead: str = "`ima eval` and `ima bench` run their jobs themselves there",
) -> PostgresDatabase:
    """`db` if it is PostgreSQL with procrastinate's tables of this version (applied on
    first use); else one line: one machine needs no `needs`, do `instead`."""
    if not isinstance(db, PostgresDatabase):
        raise UserError(
            f"one machine needs no {needs}: {instead}; the job queue lives in a shared "
            "PostgreSQL database (--db postgresql://USER@HOST:PORT/DBNAME)"
        )
    db.exists()  # connects, or says in one line why it cannot
    ensure_schema(db)
    db.set_up("jobs", lambda sql: sql.execute(_DDL))
    return db


# -- queueing ------------------------------------------------------------------------------


def enqueue(
    db: PostgresDatabase,
    name: str,
    task: str,
    planned: list[Planned],
    retries: int | None = None,
    *,
    again: bool = False,
) -> dict[str, int]:
    """Queue `planned` jobs of evaluation `name` in plan order: none for a key stored,
    waiting or running; a failed one runs again. A cancelled evaluation is refused unless
    `again` (`ima eval retry`). The evaluation's counts afterwards."""
    times = job_settings(retries=retries).retries
    shared = SharedEvaluation(engine_database(db), name)
    return asyncio.run(_enqueue(db, shared, task, planned, times, again))


def refuse_cancelled(db: PostgresDatabase, name: str) -> None:
    """One line, before anything is written, if the evaluation was cancelled."""
    engine_database(db)

    async def go() -> None:
        async with opened(db.url):
            jobs = await app.job_manager.list_jobs_async(queue=queue_of(name))
        _refuse_cancelled(db, name, jobs)

    asyncio.run(go())


def _refuse_cancelled(db: PostgresDatabase, name: str, jobs: Iterable[Job]) -> None:
    if any(j.status == "cancelled" for j in _latest(jobs).values()):
        raise UserError(
            f"evaluation {name} was cancelled: queue it again with `ima eval retry {name} "
            f"--db {db.label}`, or choose another --out"
        )


async def _enqueue(
    db: PostgresDatabase,
    shared: SharedEvaluation,
    task: str,
    planned: list[Planned],
    retries: int,
    again: bool,
) -> dict[str, int]:
    async with opened(db.url):
        jobs = await app.job_manager.list_jobs_async(queue=queue_of(shared.name))
        if not again:
            _refuse_cancelled(db, shared.name, jobs)
        latest = _latest(jobs)
        stored = shared.keys()
        for item in planned:
            job = latest.get(item.key)
            if item.key in stored or (job is not None and job.status in (WAITING, RUNNING)):
                continue
            if job is not None and job.status == "failed":
                await app.job_manager.retry_job_by_id_async(job.id, retry_at=utils.utcnow())  # type: ignore[arg-type]
                continue
            await defer(shared.name, task, item, retries)
        return await _counts(shared.name, stored)


async def defer(name: str, task: str, item: Planned, retries: int) -> None:
    """One job on the engine; a job of the key already waiting is not a second one."""
    with contextlib.suppress(exceptions.AlreadyEnqueued):
        await app.configure_task(
            task, lock=item.thread, queueing_lock=job_key(name, item.key), queue=queue_of(name)
        ).defer_async(evaluation=name, key=item.key, retries=retries)


def defer_from_job(name: str, task: str, item: Planned, retries: int) -> None:
    """`defer` from a running job (a worker's thread): a chain's next episode, unless the
    evaluation was cancelled meanwhile."""
    jobs = app.job_manager.list_jobs(queue=queue_of(name))
    if any(j.status == "cancelled" for j in _latest(jobs).values()):
        return
    with contextlib.suppress(exceptions.AlreadyEnqueued):
        app.configure_task(
            task, lock=item.thread, queueing_lock=job_key(name, item.key), queue=queue_of(name)
        ).defer(evaluation=name, key=item.key, retries=retries)


def queue_run(db: PostgresDatabase, thread: str, retries: int | None = None) -> int:
    """A registered `ima run` as a job for the workers; its job id."""
    engine_database(db)

    async def go() -> int:
        async with opened(db.url):
            return await app.configure_task(
                RUN_TASK, lock=thread, queueing_lock=f"run:{thread}", queue=RUNS_QUEUE
            ).defer_async(thread=thread, retries=job_settings(retries=retries).retries)

    return asyncio.run(go())


# -- cancel --------------------------------------------------------------------------------


def cancel(db: PostgresDatabase, name: str) -> dict[str, int]:
    """Cancel the evaluation's jobs that have not started; counts of what was cancelled
    and of what still runs (to its end)."""
    engine_database(db)

    async def go() -> dict[str, int]:
        async with opened(db.url):
            jobs = _latest(await app.job_manager.list_jobs_async(queue=queue_of(name)))
            if not jobs:
                raise UserError(f"no queued evaluation {name} in {db.label}: see `ima eval status`")
            if any(j.status == "cancelled" for j in jobs.values()):
                raise UserError(
                    f"evaluation {name} is cancelled already: `ima eval retry {name}` "
                    "queues it again"
                )
            cancelled = 0
            for job in jobs.values():
                if job.status == WAITING:
                    cancelled += await app.job_manager.cancel_job_by_id_async(job.id)  # type: ignore[arg-type]
            running = sum(j.status == RUNNING for j in jobs.values())
            return {"cancelled": cancelled, "running": running}

    return asyncio.run(go())


# -- progress ------------------------------------------------------------------------------


def progress(db: PostgresDatabase, only: str | None = None) -> dict[str, Any]:
    """From procrastinate's job table: per evaluation, its jobs done (and results stored),
    queued, running, stalled (their worker stopped sending heartbeats: they are queued
    again within IMA_JOB_STALL_SECONDS), failed and cancelled; what each worker runs now;
    failed jobs with their last error. Queued `ima run`s count as the evaluation `runs`."""
    stall = job_settings().stall_seconds
    engine_database(db)
    found = asyncio.run(_jobs(db.url, stall))
    jobs, stalled = found
    errors = _last_errors(db)
    evaluations: dict[str, dict[str, int]] = {}
    workers: dict[str, dict[str, Any]] = {}
    failures: list[dict[str, Any]] = []
    for job in _latest(jobs, by_queue=True).values():
        name = _evaluation_of(job)
        if name is None or (only is not None and name != only):
            continue
        counts = evaluations.setdefault(
            name, dict.fromkeys(("done", "queued", "running", "stalled", "failed", "cancelled"), 0)
        )
        key = job.task_kwargs.get("key") or job.task_kwargs.get("thread")
        state = {
            "succeeded": "done",
            WAITING: "queued",
            RUNNING: "stalled" if job.id in stalled else "running",
            "failed": "failed",
        }.get(job.status or "", "cancelled")
        counts[state] += 1
        if state == "running":
            entry = workers.setdefault(str(job.worker_id), {"running": []})
            entry["running"].append({"eval": name, "key": key, "attempts": job.attempts})
        if state == "failed":
            failures.append(
                {
                    "eval": name,
                    "key": key,
                    "attempts": job.attempts,
                    "error": errors.get(job.id or 0, ""),
                }
            )
    for name, counts in evaluations.items():
        if name != "runs":
            counts["stored"] = len(SharedEvaluation(db, name).keys())
    return {"evaluations": evaluations, "workers": workers, "failures": failures}


async def _jobs(url: str, stall: float) -> tuple[list[Job], set[int]]:
    async with opened(url):
        jobs = await app.job_manager.list_jobs_async()
        stalled = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=stall)
    return list(jobs), {j.id for j in stalled if j.id is not None}


def _evaluation_of(job: Job) -> str | None:
    if job.queue == RUNS_QUEUE:
        return "runs"
    if job.queue.startswith("eval:"):
        return job.queue.removeprefix("eval:")
    return None  # the sweep, or another application's jobs


def _latest(jobs: Iterable[Job], by_queue: bool = False) -> dict[Any, Job]:
    """The newest job of each key (a key is queued again after a failure or a cancel)."""
    newest: dict[Any, Job] = {}
    for job in sorted(jobs, key=lambda j: j.id or 0):
        key = job.task_kwargs.get("key") or job.task_kwargs.get("thread")
        newest[(job.queue, key) if by_queue else key] = job
    return newest


async def _counts(name: str, stored: set[str]) -> dict[str, int]:
    latest = _latest(await app.job_manager.list_jobs_async(queue=queue_of(name)))
    counts = {"queued": 0, "running": 0, "failed": 0}
    for key, job in latest.items():
        state = {WAITING: "queued", RUNNING: "running", "failed": "failed"}.get(job.status or "")
        if state and key not in stored:
            counts[state] += 1
    return counts


# -- failures ------------------------------------------------------------------------------


def record_failure(db: Database, job_id: int, queue: str, key: str, error: str) -> int:
    """Keep why a job failed; how many times it has failed."""
    with db.session() as sql:
        sql.execute(
            f"INSERT INTO {ERRORS} VALUES (%s, %s, %s, %s, {{now}})",
            (job_id, queue, key, error[:2000]),
        )
        row = sql.one(f"SELECT COUNT(*) AS n FROM {ERRORS} WHERE job_id = %s", (job_id,))
    return int(row["n"]) if row else 1


def _last_errors(db: Database) -> dict[int, str]:
    with db.session() as sql:
        rows = sql.all(f"SELECT job_id, error FROM {ERRORS} ORDER BY at")
    return {r["job_id"]: r["error"] for r in rows}
