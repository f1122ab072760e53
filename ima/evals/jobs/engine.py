"""The job engine: procrastinate on the shared PostgreSQL database, and its workers.

`app` is the procrastinate application (its tasks: ima.evals.jobs.tasks). Its database is
the usual one: `--db` for `ima` commands, IMA_DB for `procrastinate --app
ima.evals.jobs.app worker`. A worker sends a heartbeat every IMA_JOB_STALL_SECONDS / 4;
one silent for IMA_JOB_STALL_SECONDS is dead, and a periodic task queues its jobs again
(they resume from their last checkpoint).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from procrastinate import App, JobContext, PsycopgConnector
from procrastinate.worker import Worker

from ima.evals.jobs.settings import JobSettings
from ima.storage.targets import is_url

TASKS = "ima.evals.jobs.tasks"
MAINTENANCE = "ima-maintenance"  # the queue of the periodic sweep for dead workers' jobs


def connector(url: str) -> PsycopgConnector:
    """procrastinate's connection pool for `url` ("" : libpq's PG* variables)."""
    return PsycopgConnector(conninfo=url, min_size=1, max_size=8)


async def _enough_threads(
    call_next: Callable[[], Awaitable[Any]], context: JobContext, worker: Worker
) -> Any:
    """Jobs are synchronous and run in the event loop's default executor, whose size
    (CPUs + 4) would cap a worker's concurrency: size it to the worker's."""
    loop = asyncio.get_running_loop()
    if getattr(loop, "_ima_threads", 0) < worker.concurrency:
        loop.set_default_executor(
            ThreadPoolExecutor(worker.concurrency + 2, thread_name_prefix="ima-job")
        )
        loop._ima_threads = worker.concurrency  # type: ignore[attr-defined]
    return await call_next()


def worker_options(settings: JobSettings, url: str, root: str | None = None) -> dict[str, Any]:
    """A worker's settings: concurrency, heartbeat and stall timeout from `settings`; the
    database and the folder for run files (None: each evaluation's own) for its jobs. On
    stop (Ctrl-C, SIGTERM) running jobs end at their next step and go back to the queue."""
    return {
        "concurrency": settings.concurrency,
        "update_heartbeat_interval": settings.heartbeat,
        "stalled_worker_timeout": settings.stall_seconds,
        "fetch_job_polling_interval": min(5.0, settings.heartbeat),
        "shutdown_graceful_timeout": 0,
        "additional_context": {"db": url, "root": root, "stall_seconds": settings.stall_seconds},
        "worker_middleware": [_enough_threads],
    }


def env_settings() -> JobSettings:
    """IMA_JOB_* as a worker's jobs see them: the defaults where a value is bad (`ima
    worker` says so in one line when it starts)."""
    try:
        return JobSettings()
    except ValueError:
        return JobSettings.model_construct()


_url = os.environ.get("IMA_DB", "")
SETTINGS = env_settings()  # at import: what `procrastinate --app` starts with
app = App(
    connector=connector(_url if is_url(_url) else ""),
    import_paths=[TASKS],
    worker_defaults=worker_options(SETTINGS, _url),  # type: ignore[arg-type]
)


@contextlib.asynccontextmanager
async def opened(url: str) -> AsyncIterator[App]:
    """`app` connected to the PostgreSQL database at `url` for the block."""
    with app.replace_connector(connector(url)):
        async with app.open_async():
            yield app


async def retry_stalled(stall_seconds: float) -> list[int]:
    """Queue again the jobs of workers silent for `stall_seconds` (killed, or on a lost
    machine); the ids of the jobs queued again. A stalled sweep is dropped (the next one
    replaces it)."""
    from procrastinate import exceptions
    from procrastinate.jobs import Status

    requeued = []
    stalled = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=stall_seconds)
    for job in stalled:
        try:
            if job.queue == MAINTENANCE:
                await app.job_manager.finish_job(job, status=Status.FAILED, delete_job=True)
            else:
                await app.job_manager.retry_job(job)
                requeued.append(job.id)
        except exceptions.ConnectorException:
            continue  # another sweep got to it first
    await app.job_manager.delete_old_jobs(nb_hours=0, queue=MAINTENANCE)
    return [i for i in requeued if i is not None]


async def pending(queues: Iterable[str] | None) -> int:
    """Jobs queued or running in `queues` (None: every queue but the sweep's)."""
    wanted = set(queues) if queues is not None else None
    counts = await app.job_manager.list_queues_async()
    return sum(
        q["todo"] + q["doing"]
        for q in counts
        if q["name"] != MAINTENANCE and (wanted is None or q["name"] in wanted)
    )


async def work(
    url: str,
    settings: JobSettings,
    *,
    queues: list[str] | None,
    root: str | None,
    until_done: bool,
) -> bool:
    """Run a worker on `queues` (None: all) until it is stopped (Ctrl-C, SIGTERM) or, with
    `until_done`, until none of their jobs is queued or running; whether it ran until done.
    Dead workers' jobs are queued again first."""
    async with opened(url):
        await retry_stalled(settings.stall_seconds)
        listened = None if queues is None else [*queues, MAINTENANCE]
        options = worker_options(settings, url, root)
        worker = asyncio.create_task(app.run_worker_async(queues=listened, **options))
        watched = asyncio.create_task(_until_done(queues)) if until_done else None
        waiting = {worker} | ({watched} if watched else set())
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if watched is not None and watched in done:
            worker.cancel()  # a graceful stop: nothing runs by now
            with contextlib.suppress(asyncio.CancelledError):
                await worker
            return True
        if watched is not None:
            watched.cancel()
        worker.result()
        return False


async def _until_done(queues: list[str] | None) -> None:
    while True:
        await asyncio.sleep(0.5)
        if await pending(queues) == 0:
            return
