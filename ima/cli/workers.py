"""`ima worker` (procrastinate's worker with ima's jobs: evaluation runs, benchmark episodes,
queued `ima run`s) and `ima eval status | cancel | retry`, for jobs in a PostgreSQL
database (`ima eval --db URL`, `ima bench ENV --db URL`, `ima run --queue --db URL`)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ima.cli.bench import episode_line
from ima.cli.errors import Interrupted
from ima.cli.evaluate import _row_line
from ima.cli.options import JsonOpt, SharedDbOpt
from ima.core.errors import UserError
from ima.evals.bench.plan import is_bench
from ima.evals.bench.plan import plan_from_config as bench_plan
from ima.evals.jobs import engine, queueing, tasks
from ima.evals.jobs.settings import job_settings
from ima.evals.runner import plan_from_config
from ima.evals.shared import SharedEvaluation, eval_name, evaluation_names, thread_prefix
from ima.runs.database import PostgresDatabase, open_database

console = Console()
STATES = ("stored", "done", "queued", "running", "stalled", "failed", "cancelled")


def _engine(db: str | None) -> PostgresDatabase:
    return queueing.engine_database(open_database(db))


def worker_command(
    db: SharedDbOpt = None,
    evaluation: Annotated[
        str | None,
        typer.Option("--eval", metavar="DIR", help="Only jobs of this evaluation (its --out)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where run files go: OUT/EVALUATION/runs/THREAD/ (default: the evaluation's "
            "--out as queued: an absolute one as it is, a relative one under this folder)."
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            help="Jobs at once (default 1, or IMA_JOB_CONCURRENCY): more only for a model "
            "server that serves several calls at once, like Ollama."
        ),
    ] = None,
    stall_seconds: Annotated[
        float | None,
        typer.Option(
            help="A worker silent this long is dead: its jobs are queued again and resume "
            "from their last checkpoint (default 30, or IMA_JOB_STALL_SECONDS; give every "
            "worker the same)."
        ),
    ] = None,
    until_done: Annotated[
        bool,
        typer.Option(
            "--until-done", help="Exit once no job is queued or running (default: keep waiting)."
        ),
    ] = False,
) -> None:
    """Run queued jobs: evaluation runs (run or resume, judge, store), benchmark episodes and
    queued `ima run`s, with procrastinate's worker on the PostgreSQL database.

    Start as many as you like, on any machine that reaches the database; `procrastinate
    --app ima.evals.jobs.app worker` (with IMA_DB set) is the same worker. A killed
    worker's jobs are queued again once it has been silent for the stall timeout, and
    continue from their last checkpoint. Ctrl-C stops a worker: its running jobs end at
    their next step and go back to the queue.

    Examples:\n
      ima worker --db postgresql://ima@db-host:5432/ima\n
      ima worker --db postgresql://ima@db-host:5432/ima --concurrency 4   (a model server)\n
      ima worker --db postgresql://ima@db-host:5432/ima --until-done\n
      ima worker --db postgresql://ima@db-host:5432/ima --out /data/evals   (run files there)
    """
    database = queueing.engine_database(
        open_database(db), "worker", "run `ima eval` itself (or `ima bench ...`)"
    )
    settings = job_settings(concurrency=concurrency, stall_seconds=stall_seconds)
    only = eval_name(evaluation) if evaluation else None
    waiting = _nothing_to_do(database, only, until_done)
    tally = {"done": 0, "failed": 0, "stopped": 0}

    def tell(kind: str, label: str, detail: dict[str, Any]) -> None:
        where = escape(label)
        if kind == "start":
            console.print(f"[dim]started[/dim] {where}", highlight=False)
        elif kind == "done":
            row = detail["row"]
            line = (
                ""
                if row is None
                else ": " + (episode_line(row) if is_bench(row) else _row_line(row))
            )
            console.print(f"[green]✓[/green] {where}{line}", highlight=False)
        elif kind == "failed":
            console.print(f"[red]✗[/red] {where}: {escape(detail['error'])}", highlight=False)
        elif kind == "stopped":
            console.print(f"[yellow]![/yellow] {where}: back in the queue", highlight=False)
        if kind in tally:
            tally[kind] += 1

    console.print(
        f"worker on {database.label} · concurrency {settings.concurrency} · stall timeout "
        f"{settings.stall_seconds:g} s" + (f" · evaluation {only}" if only else " · every queue"),
        highlight=False,
    )
    if waiting:
        console.print(Text(waiting))
    _quiet_logs()
    try:
        with tasks.listening(tell):
            finished = asyncio.run(
                engine.work(
                    database.url,
                    settings,
                    queues=[queueing.queue_of(only)] if only else None,
                    root=str(out) if out else None,
                    until_done=until_done,
                )
            )
    except KeyboardInterrupt:
        finished = False
    if not finished:
        raise Interrupted(
            "stopped: its unfinished jobs are back in the queue and continue from their "
            "last checkpoint"
        )
    console.print(f"done: {tally['done']} job(s), {tally['failed']} failed", highlight=False)


def _quiet_logs() -> None:
    """procrastinate logs every job; the worker prints its own lines. Keep its errors (a
    lost database, say) as one line each, without a traceback (IMA_DEBUG=1: all of it)."""
    if os.environ.get("IMA_DEBUG"):
        logging.basicConfig(level=logging.INFO)
        return
    handler = logging.StreamHandler()
    handler.setFormatter(_OneLine())
    handler.addFilter(lambda record: getattr(record, "action", "") != "job_error")  # printed
    log = logging.getLogger("procrastinate")
    log.handlers[:] = [handler]
    log.setLevel(logging.ERROR)
    log.propagate = False


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"procrastinate: {record.getMessage()}"


def _nothing_to_do(database: PostgresDatabase, only: str | None, until_done: bool) -> str:
    """Refuse an evaluation that is not there, or cancelled, and (with --until-done) a
    database where nothing was ever queued: a worker pointed at the wrong place must not
    sit idle, or exit 0, in silence. Without --until-done a worker may start before
    anything is queued: the line it prints while it waits."""
    names = evaluation_names(database)
    found = queueing.progress(database, only)["evaluations"]
    if only is not None and only not in names:
        known = f" (it has {', '.join(names)})" if names else ""
        raise UserError(f"no evaluation {only} in {database.label}{known}: check --eval and --db")
    if only is not None and found.get(only, {}).get("cancelled"):
        queueing.refuse_cancelled(database, only)
    if found:
        return ""
    problem = f"nothing queued in {database.label}" + (f" for {only}" if only else "")
    fix = f"queue an evaluation with `ima eval --db {database.label} --out DIR`"
    if until_done:
        raise UserError(f"{problem}: {fix}, or check --db and --eval")
    return f"waiting: {problem} yet ({fix})"


def status_command(
    db: SharedDbOpt = None,
    out: Annotated[
        str | None,
        typer.Option("--out", metavar="DIR", help="Only this evaluation (its --out)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Progress of the queued evaluations, benchmarks and runs, from procrastinate's job
    table: results stored, jobs done, queued, running, stalled (their worker died: queued
    again after the stall timeout), failed (with their error) and cancelled; what each
    worker runs now."""
    database = _engine(db)
    found = queueing.progress(database, eval_name(out) if out else None)
    if as_json:
        print(json.dumps(found, indent=2))
        return
    if not found["evaluations"]:
        console.print(f"nothing queued in {database.label}: queue with `ima eval --db`")
        return
    table = Table(title=f"Jobs in {database.label}")
    table.add_column("evaluation")
    for col in STATES:
        table.add_column(col, justify="right")
    for name, counts in found["evaluations"].items():
        table.add_row(name, *(str(counts.get(k, "-")) for k in STATES))
    console.print(table)
    if found["workers"]:
        workers = Table(title="Workers")
        workers.add_column("worker")
        workers.add_column("running now")
        for worker, entry in sorted(found["workers"].items()):
            workers.add_row(
                worker, ", ".join(f"{r['eval']} · {r['key']}" for r in entry["running"])
            )
        console.print(workers)
    if any(c["stalled"] for c in found["evaluations"].values()):
        console.print(
            "stalled: its worker stopped; the job is queued again after the stall timeout and "
            "continues from its checkpoint"
        )
    for failure in found["failures"]:
        console.print(
            f"[red]failed[/red] {escape(failure['eval'])} · {escape(str(failure['key']))}: "
            f"{escape(failure['error'])}",
            highlight=False,
        )
    if found["failures"]:
        console.print(Text("queue failed jobs again: ima eval retry NAME --db " + database.label))


NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The evaluation (its --out).")]


def cancel_command(name: NameArg, db: SharedDbOpt = None) -> None:
    """Cancel a queued evaluation or benchmark: its jobs that have not started are
    cancelled; running ones go on to their end (stop their workers to stop them).
    `ima eval retry NAME` queues it again."""
    database = _engine(db)
    evaluation = eval_name(name)
    counts = queueing.cancel(database, evaluation)
    console.print(
        f"cancelled {evaluation}: {counts['cancelled']} job(s) that had not started; "
        f"{counts['running']} running go on to their end",
        highlight=False,
    )


def retry_command(
    name: NameArg,
    db: SharedDbOpt = None,
    retries: Annotated[
        int | None,
        typer.Option(help="Times a job that fails again is queued again (default 2)."),
    ] = None,
) -> None:
    """Queue again what an evaluation or benchmark has not stored: its failed and cancelled
    jobs (and a cancelled chain's next episodes)."""
    database = _engine(db)
    evaluation = eval_name(name)
    shared = SharedEvaluation(database, evaluation)
    config = shared.read_config()
    if config is None:
        raise UserError(f"no evaluation {evaluation} in {database.label}: see `ima eval status`")
    task, planned = _planned(evaluation, config, shared.keys())
    counts = queueing.enqueue(database, evaluation, task, planned, retries, again=True)
    console.print(
        f"{evaluation}: {counts['queued']} queued · {counts['running']} running · "
        f"{counts['failed']} failed",
        highlight=False,
    )


def _planned(
    name: str, config: dict[str, Any], stored: set[str]
) -> tuple[str, list[queueing.Planned]]:
    """The jobs a stored evaluation still needs (a chain's episode once its previous one
    is stored), and their task."""
    if is_bench(config):
        plan = bench_plan(config)
        ready = [e for e in plan.episodes() if not e.after or e.after in stored]
        return queueing.EPISODE_TASK, [
            queueing.Planned(e.key, e.thread_id(name, plan.env)) for e in ready
        ]
    task_id = config["task"]["id"]
    runs = plan_from_config(config).runs()
    return queueing.EVAL_TASK, [
        queueing.Planned(r.key, thread_prefix(name) + r.thread_id(task_id)) for r in runs
    ]
