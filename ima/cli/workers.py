"""`ima worker` (run queued evaluation runs and benchmark episodes) and `ima eval status`
(progress per evaluation and per worker), for evaluations in a shared database (`ima eval
--db ...`, `ima bench pddl|babyai|twc --db ...`)."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ima.cli.bench import episode_line
from ima.cli.errors import Interrupted
from ima.cli.evaluate import _row_line
from ima.cli.options import JsonOpt, SharedDbOpt
from ima.core.errors import UserError
from ima.evals.bench.plan import is_bench
from ima.evals.queue import Job, eval_name, evaluation_names, progress
from ima.evals.worker import Worker
from ima.runs.database import Database, open_database

console = Console()
err = Console(stderr=True, soft_wrap=True)


def worker_command(
    db: SharedDbOpt = None,
    evaluation: Annotated[
        str | None,
        typer.Option("--eval", metavar="DIR", help="Only runs of this evaluation (its --out)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where run files go: OUT/EVALUATION/runs/THREAD/ (default: the evaluation's "
            "--out as queued: an absolute one as it is, a relative one under this folder)."
        ),
    ] = None,
    until_done: Annotated[
        bool,
        typer.Option(
            "--until-done", help="Exit once no run is queued or running (default: keep waiting)."
        ),
    ] = False,
    poll: Annotated[float, typer.Option(help="Seconds between looks at an empty queue.")] = 2.0,
) -> None:
    """Run queued evaluation runs: claim one, run or resume it, judge it, store the result
    (and queued `ima bench pddl|babyai|twc` episodes: run or resume one, store its result).

    Start as many workers as you like, on any machine that reaches the database. A killed
    worker's run is taken over by another once its lease expires (IMA_LEASE_SECONDS,
    default 30) and continues from its last checkpoint.

    Examples:\n
      ima worker --db postgresql://ima@db-host:5432/ima\n
      ima worker --db postgresql://ima@db-host:5432/ima --until-done\n
      ima worker --db postgresql://ima@db-host:5432/ima --out /data/evals   (run files there)
    """
    database = open_database(db)
    only = eval_name(evaluation) if evaluation else None
    waiting = _nothing_to_do(database, only, until_done)

    def notify(kind: str, job: Job, detail: dict[str, Any]) -> None:
        where = f"{job.eval} · {job.key}"
        if kind == "start":
            console.print(f"[dim]claimed[/dim] {where}", highlight=False)
        elif kind == "done":
            row = detail["row"]
            line = episode_line(row) if is_bench(row) else _row_line(row)
            console.print(f"[green]✓[/green] {where}: {line}", highlight=False)
        elif kind == "failed":
            console.print(f"[red]✗[/red] {where}: {detail['error']}", highlight=False)
        elif kind == "lost":
            console.print(f"[yellow]![/yellow] {where}: {detail['error']}", highlight=False)

    worker = Worker(database, only=only, root=out, poll=poll, notify=notify)
    console.print(
        f"worker {worker.id} on {database.label}"
        + (f" · evaluation {only}" if only else " · every evaluation"),
        highlight=False,
    )
    try:
        if waiting:
            console.print(Text(waiting))
        tally = worker.run(until_done=until_done)
    except KeyboardInterrupt:
        raise Interrupted(
            "stopped: a run it held is free again and continues on the next claim"
        ) from None
    lost = f", {tally.lost} taken over by another worker" if tally.lost else ""
    console.print(f"done: {tally.done} run(s), {tally.failed} failed{lost}", highlight=False)


def _nothing_to_do(database: Database, only: str | None, until_done: bool) -> str:
    """Refuse a database that does not exist, or (with --until-done) holds no evaluation to
    work on: a worker pointed at the wrong place must not sit idle, or exit 0, in silence.
    Without --until-done a worker may start before the evaluation is queued: the line it
    prints while it waits."""
    if not database.exists():
        raise UserError(
            f"no database at {database.label}: check --db (or IMA_DB), or queue an evaluation "
            f"there first with `ima eval --db {database.label}`"
        )
    names = evaluation_names(database)
    if only is None and not names:
        problem = f"no evaluation queue in {database.label}"
    elif only is not None and only not in names:
        known = f" (it has {', '.join(names)})" if names else ""
        problem = f"no evaluation {only} in {database.label}{known}"
    else:
        return ""
    fix = f"queue one with `ima eval --db {database.label} --out DIR`"
    if until_done:
        raise UserError(f"{problem}: {fix}, or check --db and --eval")
    return f"waiting: {problem} yet ({fix})"


def _ago(ts: float) -> str:
    seconds = max(0.0, time.time() - ts)
    if seconds < 120:
        return f"{seconds:.0f}s ago"
    return f"{seconds / 60:.0f} min ago"


def status_command(
    db: SharedDbOpt = None,
    out: Annotated[
        str | None,
        typer.Option("--out", metavar="DIR", help="Only this evaluation (its --out)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Progress of evaluations in a shared database: done / running / queued / failed, and
    what each worker did and runs now."""
    database = open_database(db)
    if not database.exists():
        raise UserError(f"no database at {database.label}: check --db (or IMA_DB)")
    found = progress(database, eval_name(out) if out else None)
    if as_json:
        print(json.dumps(found, indent=2))
        return
    if not found["evaluations"]:
        console.print(f"no queued evaluation in {database.label}: start one with `ima eval --db`")
        return
    table = Table(title=f"Evaluations in {database.label}")
    for col in ("evaluation", "done", "running", "queued", "stalled", "failed"):
        table.add_column(col, justify="left" if col == "evaluation" else "right")
    for name, c in found["evaluations"].items():
        table.add_row(
            name, *(str(c[k]) for k in ("done", "running", "queued", "stalled", "failed"))
        )
    console.print(table)
    workers = Table(title="Workers")
    for col in ("worker", "done", "failed", "running now", "last change"):
        workers.add_column(col)
    for name, w in sorted(found["workers"].items()):
        now = ", ".join(
            f"{r['key']} (since {datetime.fromtimestamp(r['since']):%H:%M:%S})"
            for r in w["running"]
        )
        workers.add_row(name, str(w["done"]), str(w["failed"]), now or "-", _ago(w["last"]))
    console.print(workers)
    if any(c["stalled"] for c in found["evaluations"].values()):
        console.print(
            "stalled: its worker stopped; the next free worker continues it from its checkpoint"
        )
    for failure in found["failures"]:
        console.print(
            f"[red]failed[/red] {failure['eval']} · {failure['key']}: {failure['error']}",
            highlight=False,
        )
