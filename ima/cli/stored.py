"""The commands on stored runs: `ima runs` lists them, `ima show` prints one, `ima view`
writes its page, `ima export` writes its outputs again; and how the commands find a run."""

from __future__ import annotations

import json
import webbrowser
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from ima.cli import display, measures_display
from ima.cli.errors import err
from ima.cli.options import DbOpt, JsonOpt, ThreadArg
from ima.core.errors import UserError
from ima.measures.content import content_summary, state_content
from ima.measures.memory_quality import memory_report
from ima.runs.database import Database, open_database
from ima.runs.outputs import OutputsNotWritten, run_record
from ima.runs.registry import RunRecord, RunRegistry
from ima.runs.runner import export_outputs, load_state
from ima.tasks import load_task
from ima.view import write_view

console = Console()


def open_db(db: str | None, must_exist: bool = False, read_only: bool = False) -> Database:
    database = open_database(db, read_only=read_only)
    if must_exist and not database.exists():
        raise UserError(
            f"no runs database at {database.label}: start a run with `ima run`, or pass --db"
        )
    return database


def registered(thread: str, db: str | None, read_only: bool = True) -> tuple[RunRecord, Database]:
    """A registered run and the database it lives in (which must exist)."""
    database = open_db(db, must_exist=True, read_only=read_only)
    with RunRegistry(database) as registry:
        return registry.get(thread), database


def export_again(record: RunRecord, db: Database, out: Path | None) -> None:
    try:
        target = export_outputs(record, db, out)
    except OutputsNotWritten as exc:
        raise UserError(f"{exc} (choose another --out)") from None
    console.print(Text(f"outputs of {record.thread_id} written to {target}"))


def export(
    thread: ThreadArg,
    db: DbOpt = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Write to OUT/THREAD/ instead of the run's own output folder."),
    ] = None,
) -> None:
    """Write a run's outputs (design.md, design.json, run.json) again from its checkpoint.

    For a run whose files were lost or could not be written (full disk, wrong --out), or to
    copy them elsewhere. Works for unfinished runs too (what exists so far)."""
    record, path = registered(thread, db)
    export_again(record, path, out)


def list_runs(db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """List runs with their status (finalized, turn_cap, failed, running, interrupted)."""
    with RunRegistry(open_db(db, must_exist=True, read_only=True)) as registry:
        records = registry.all()
    if as_json:
        rows = [
            {
                "thread_id": r.thread_id,
                "task": r.task_id,
                "memory_mode": r.memory_mode,
                "status": r.shown_status,
            }
            for r in records
        ]
        print(json.dumps(rows, indent=2))
    else:
        console.print(display.runs_table(records, console.width))


def show(
    thread: ThreadArg,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a run's transcript, every agent's memory, token usage, memory retention per
    agent (key figures and requirements each version holds, all and the role's own) and
    repairs, the own items each agent's last turn had in view, content metrics (figures of
    the brief the design states, parroting, repetition) and status."""
    record, path = registered(thread, db)
    values = load_state(record, path)
    task = load_task(record.task_ref)
    metrics = state_content(task, values)
    content = content_summary(metrics)
    memory = memory_report(task, values)
    if as_json:
        extra = {"content": content, "memory": memory, "in_view_last_turn": metrics["in_view"]}
        print(json.dumps(display.show_json(record, values) | extra, indent=2))
    else:
        console.print(display.show_view(record, values))
        if memory["repairs"]["updates"]:
            console.print(measures_display.memory_table(memory))
        if metrics["in_view"]["agents"]:
            console.print(measures_display.in_view_table(metrics["in_view"]))
        console.print(measures_display.content_table(content))


def view_run(
    thread: ThreadArg,
    db: DbOpt = None,
    out: Annotated[
        Path | None,
        typer.Option(help="HTML file to write (default: view.html in the run's output folder)."),
    ] = None,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the page in your web browser.")
    ] = False,
) -> None:
    """Write one self-contained HTML page of a run: the meeting, every agent's memory as it
    evolved (with diffs), what each prompt was made of, token usage and the outcome.

    Works for finished, interrupted and running runs; the page needs no network.

    Examples:\n
      ima view THREAD --open\n
      ima view THREAD --out /tmp/run.html
    """
    record, path = registered(thread, db)
    values = load_state(record, path)
    task = load_task(record.task_ref)
    roles = {r.id: r.name for r in task.roles}
    target = out or Path(record.out_dir) / "view.html"
    if out is None:
        target.parent.mkdir(parents=True, exist_ok=True)
    write_view(run_record(record, values, task) | {"roles": roles}, values, target, task)
    console.print(Text(f"view: {target}"))
    if open_browser and not webbrowser.open(target.resolve().as_uri()):
        err.print(Text(f"no web browser found: open {target} yourself"))
