"""`ima eval`'s runs: run here with a progress line per run, or queued in PostgreSQL as jobs
for `ima worker`s, with the commands that start and watch them."""

from __future__ import annotations

import shlex
from typing import Any

from rich.markup import escape
from rich.text import Text

from ima.cli.display import job_progress
from ima.cli.errors import Interrupted
from ima.cli.eval_report import console
from ima.evals.jobs import queueing
from ima.evals.judge import METRICS
from ima.evals.runner import Evaluation, Event
from ima.evals.shared import SharedEvaluation
from ima.runs.database import PostgresDatabase


def row_line(row: dict[str, Any]) -> str:
    """A finished run in one line: status, turns, tokens, time, coverage, the judge's scores."""
    tokens = (row.get("usage") or {}).get("total") or {}
    cov = row.get("coverage") or {}
    verdict = row.get("judge") or {}
    judged = (
        "/".join(str(verdict["scores"][m]) for m in METRICS)
        if verdict.get("status") == "ok"
        else f"[red]judge failed[/red] ({escape(str(verdict.get('error', '')))})"
    )
    coverage = (
        f"{len(cov.get('covered', []))}/{cov.get('checked', 0)}" if cov.get("checked") else "n/a"
    )
    return (
        f"{row['status']} · {row['turns']} turns · "
        f"{tokens.get('input_tokens', 0) + tokens.get('output_tokens', 0):,} tokens · "
        f"{row['wall_seconds']:.0f}s · coverage {coverage} · judge {judged}"
    )


def enqueue(
    evaluation: Evaluation,
    database: PostgresDatabase,
    shared: SharedEvaluation,
    done: int,
    todo: list,
    retries: int | None,
) -> None:
    """Queue the runs not stored yet as jobs, and print the commands that run and watch them."""
    planned = [queueing.Planned(r.key, evaluation.thread_id(r)) for r in todo]
    counts = queueing.enqueue(database, shared.name, queueing.EVAL_TASK, planned, retries)
    target = database.label
    console.print(
        f"queued in {escape(target)} as evaluation [bold]{escape(shared.name)}[/bold]: "
        f"{done} stored · {counts['queued']} queued · {counts['running']} running · "
        f"{counts['failed']} failed",
        highlight=False,
    )
    # Commands that work as printed: the --out as given (an absolute one stays absolute,
    # and names the same evaluation).
    report = shlex.join(["ima", "eval", "--report-only", str(evaluation.directory), "--db", target])
    console.print(
        Text(
            f"start workers (any machine): {shlex.join(['ima', 'worker', '--db', target])}\n"
            f"watch: {shlex.join(['ima', 'eval', 'status', '--db', target])}\n"
            f"report: {report}"
        ),
        soft_wrap=True,  # never broken across lines: they are meant to be copied
    )


def run_here(evaluation: Evaluation, done: int, total: int, cap: int, concurrency: int) -> int:
    """Run the runs not stored yet in this process, a line per finished run; the failures."""
    errors = 0
    progress = job_progress(console, "eval", "runs")

    def notify(event: Event) -> None:
        nonlocal errors
        label = event.run.label
        if event.kind == "start":
            doing = "resuming" if event.detail.get("resumed") else "starting"
            progress.doing = f"{label}: {doing}"
        elif event.kind == "turn":
            turn = event.detail["turn"]
            where = "writing the design" if turn is None else f"turn {turn}/{cap}"
            progress.doing = f"{label}: {where} · {event.detail['tokens']:,} tokens"
        elif event.kind == "judge":
            progress.doing = f"{label}: judging the design"
        elif event.kind == "done":
            progress.console.print(
                f"[green]✓[/green] {label}: {row_line(event.detail['row'])}", highlight=False
            )
            progress.advance(bar)
            progress.doing = ""
        elif event.kind == "error":
            errors += 1
            progress.console.print(
                f"[red]✗[/red] {label}: {escape(event.detail['error'])}", highlight=False
            )

    with progress:
        bar = progress.add_task("eval", total=total, completed=done)
        try:
            evaluation.run_all(notify, concurrency)
        except KeyboardInterrupt:
            progress.stop()
            stored = len(evaluation.store.load())
            raise Interrupted(
                f"interrupted: {stored} runs are stored in {evaluation.store.path}; run the same "
                f"command again to resume, or `ima eval --report-only {evaluation.directory}`"
            ) from None
    return errors
