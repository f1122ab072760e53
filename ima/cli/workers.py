"""`ima worker` (run queued evaluation runs) and `ima eval status` (progress per evaluation
and per worker), for evaluations in a shared database (`ima eval --db ...`)."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from ima.cli.evaluate import _row_line
from ima.cli.options import JsonOpt, SharedDbOpt
from ima.evals.queue import Job, eval_name, progress
from ima.evals.worker import Worker
from ima.runs.database import open_database

console = Console()
err = Console(stderr=True, soft_wrap=True)


def worker_command(
    db: SharedDbOpt = None,
    evaluation: Annotated[
        str | None,
        typer.Option("--eval", metavar="DIR", help="Only runs of this evaluation (its --out)."),
    ] = None,
    out: Annotated[
        Path, typer.Option(help="Where run files go: OUT/EVALUATION/runs/THREAD/.")
    ] = Path("."),
    until_done: Annotated[
        bool,
        typer.Option(
            "--until-done", help="Exit once no run is queued or running (default: keep waiting)."
        ),
    ] = False,
    poll: Annotated[float, typer.Option(help="Seconds between looks at an empty queue.")] = 2.0,
) -> None:
    """Run queued evaluation runs: claim one, run or resume it, judge it, store the result.

    Start as many workers as you like, on any machine that reaches the database. A killed
    worker's run is taken over by another once its lease expires (IMA_LEASE_SECONDS,
    default 30) and continues from its last checkpoint.

    Examples:\n
      ima worker --db postgresql://ima@db-host:5432/ima\n
      ima worker --db postgresql://ima@db-host:5432/ima --until-done
    """
    database = open_database(db)
    only = eval_name(evaluation) if evaluation else None

    def notify(kind: str, job: Job, detail: dict[str, Any]) -> None:
        where = f"{job.eval} · {job.key}"
        if kind == "start":
            console.print(f"[dim]claimed[/dim] {where}", highlight=False)
        elif kind == "done":
            console.print(f"[green]✓[/green] {where}: {_row_line(detail['row'])}", highlight=False)
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
        tally = worker.run(until_done=until_done)
    except KeyboardInterrupt:
        err.print("stopped: a run it held is free again and continues on the next claim")
        raise typer.Exit(130) from None
    lost = f", {tally.lost} taken over by another worker" if tally.lost else ""
    console.print(f"done: {tally.done} run(s), {tally.failed} failed{lost}", highlight=False)


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
