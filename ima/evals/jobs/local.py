"""Jobs in this process: one machine needs no queue. `ima eval` and `ima bench` on SQLite
run their pending jobs here, `concurrency` at a time; what is stored is the progress, so
the same command run again (after Ctrl-C, or a kill) continues where it stopped.

A job returns the jobs it makes ready (a cross-task chain's next episode). A failure is
reported and the other jobs go on; Ctrl-C and bad input stop everything.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import TypeVar

from ima.core.errors import UserError

J = TypeVar("J")
FATAL = (KeyboardInterrupt, UserError)


def run_jobs(
    first: Iterable[J],
    run: Callable[[J], Iterable[J]],
    *,
    concurrency: int = 1,
    failed: Callable[[J, Exception], None],
) -> None:
    """Run `first` and every job they make ready; `failed(job, error)` for each failure."""
    pending: deque[J] = deque(first)
    if concurrency <= 1:  # in this thread: Ctrl-C lands in the job itself
        while pending:
            job = pending.popleft()
            try:
                pending.extend(run(job))
            except FATAL:
                raise
            except Exception as exc:
                failed(job, exc)
        return
    _in_threads(pending, run, concurrency, failed)


def _in_threads(
    pending: deque[J],
    run: Callable[[J], Iterable[J]],
    concurrency: int,
    failed: Callable[[J, Exception], None],
) -> None:
    """Daemon threads: on Ctrl-C this process ends without waiting for them, as a killed
    one would (every run resumes from its last checkpoint)."""
    changed = threading.Condition()
    running = 0
    fatal: list[BaseException] = []

    def take() -> J | None:
        nonlocal running
        with changed:
            while not pending and running and not fatal:
                changed.wait()  # a running job may make another ready
            if not pending or fatal:
                return None
            running += 1
            return pending.popleft()

    def work() -> None:
        nonlocal running
        while (job := take()) is not None:
            ready: Iterable[J] = ()
            try:
                ready = list(run(job))
            except FATAL as exc:
                fatal.append(exc)
            except Exception as exc:
                failed(job, exc)
            with changed:
                pending.extend(ready)
                running -= 1
                changed.notify_all()

    threads = [
        threading.Thread(target=work, name=f"ima-job-{i}", daemon=True) for i in range(concurrency)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive() and not fatal:
            thread.join(0.2)  # wakes for Ctrl-C
    if fatal:
        raise fatal[0]


IN_PROCESS_MODELS = ("embedded", "gguf")


def check_concurrency(given: int | None, models: Iterable[str]) -> int:
    """Jobs to run at once here (--concurrency, else IMA_JOB_CONCURRENCY, else 1): one for
    the embedded model, which serves one call at a time on this machine's CPU."""
    from ima.evals.jobs.settings import job_settings

    concurrency = job_settings(concurrency=given).concurrency
    embedded = [m for m in models if m.partition(":")[0] in IN_PROCESS_MODELS]
    if concurrency > 1 and embedded:
        raise UserError(
            f"--concurrency {concurrency} with the in-process model {embedded[0]!r}: it runs one "
            "job at a time; use a model server for more (e.g. --model ollama:NAME)"
        )
    return concurrency
