"""The `ima` command line."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import webbrowser
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.prompt import Prompt
from rich.table import Table
from rich.text import Text

from ima.cli import display
from ima.cli.bench import bench_app
from ima.cli.errors import INTERRUPTED, Interrupted, usage_line
from ima.cli.evaluate import eval_app
from ima.cli.memory import memory_app
from ima.cli.options import DbOpt, JsonOpt, TaskOpt
from ima.cli.settings_options import GivenSettings, with_run_settings
from ima.cli.workers import cancel_command, retry_command, status_command, worker_command
from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.evals.jobs import queueing
from ima.measures.content import content_summary, state_content
from ima.measures.memory_quality import memory_report
from ima.meeting.builder import compile_graph
from ima.models import agent_model, describe_model, memory_model
from ima.models.errors import describe
from ima.runs.database import Database, disk_full, open_database
from ima.runs.leases import Holder, LeaseLost
from ima.runs.outputs import OutputsNotWritten, outputs_missing, run_record
from ima.runs.registry import RunRecord, RunRegistry
from ima.runs.runner import (
    FINISHED,
    Reviewer,
    create_run,
    execute,
    export_outputs,
    load_state,
    pending_review,
    resumable,
)
from ima.tasks import available_tasks, load_task, load_task_file
from ima.view import write_view

app = typer.Typer(
    help="Intrinsic Memory Agents on LangGraph: role agents with private structured memory "
    "design a solution together.\n\nStart with `ima run` (the data-pipeline design task), "
    "then `ima runs` and `ima show THREAD`.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
)
app.add_typer(memory_app, name="memory")
eval_app.command("status")(status_command)
eval_app.command("cancel")(cancel_command)
eval_app.command("retry")(retry_command)
app.add_typer(eval_app, name="eval")
app.add_typer(bench_app, name="bench")
console = Console()
err = Console(stderr=True, soft_wrap=True, highlight=False)  # errors stay on one line
ERROR = Text("error: ", style="red")


def _db(db: str | None, must_exist: bool = False, read_only: bool = False) -> Database:
    database = open_database(db, read_only=read_only)
    if must_exist and not database.exists():
        raise UserError(
            f"no runs database at {database.label}: start a run with `ima run`, or pass --db"
        )
    return database


def _registered(thread: str, db: str | None, read_only: bool = True) -> tuple[RunRecord, Database]:
    """A registered run and the database it lives in (which must exist)."""
    database = _db(db, must_exist=True, read_only=read_only)
    with RunRegistry(database) as registry:
        return registry.get(thread), database


def _finish(record: RunRecord, values: dict[str, Any], as_json: bool) -> None:
    out = Path(record.out_dir)
    if as_json:
        print((out / "run.json").read_text())
        return
    console.print(display.Panel(display.final_view(values), title="Final design"))
    console.print(display.usage_table(values.get("usage", {})))
    console.print(
        Text("status ")
        + display.status_text(str(values.get("status", "?")))
        + Text(
            f" · {len(values.get('transcript', []))} turns · {record.wall_seconds:.1f}s · "
            f"outputs in {out}"
        )
    )
    console.print(
        Text(f"see the meeting and every memory: ima view {record.thread_id} --open"),
        soft_wrap=True,
    )


def _reviewer(approve: bool, as_json: bool, view: display.LiveView | None) -> Reviewer | None:
    """Who answers a review: automatic approval, the person at the terminal, or nobody."""
    if approve:
        return lambda payload: {"approve": True}
    if as_json or not sys.stdin.isatty():
        return None

    def ask(payload: dict[str, Any]) -> dict[str, Any]:
        if view:
            view.pause()
        console.print(display.review_panel(payload))
        text = Prompt.ask(
            "Press Enter to approve, or type feedback for the agents",
            default="",
            show_default=False,
        )
        if view:
            view.resume()
        return {"feedback": text} if text.strip() else {"approve": True}

    return ask


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [""])[0]


def _stopped(record: RunRecord, why: str, fix: str = "fix the cause and") -> NoReturn:
    err.print(
        ERROR
        + Text(
            f"run stopped: {why}. Nothing is lost: {fix} continue with "
            f"`ima resume {record.thread_id}` (IMA_DEBUG=1 shows the traceback)"
        )
    )
    raise typer.Exit(1)


def _interrupted(record: RunRecord) -> Interrupted:
    return Interrupted(f"interrupted: continue with `ima resume {record.thread_id}`")


@contextmanager
def _resumable(record: RunRecord) -> Iterator[None]:
    """Ctrl-C once the run exists (also while models load): say how to continue it."""
    try:
        yield
    except KeyboardInterrupt:
        raise _interrupted(record) from None


def _waiting(holder: Holder) -> None:
    err.print(Text(f"waiting: thread {holder.thread_id} is being run by {holder.describe()}"))


def _execute(
    record: RunRecord,
    db: Database,
    as_json: bool,
    verbose: bool = False,
    approve: bool = False,
    answer: dict[str, Any] | None = None,
    wait: bool = False,
) -> None:
    lease = {"wait": wait, "on_wait": _waiting}
    try:
        if as_json:
            reviewer = _reviewer(approve, True, None)
            values = execute(record, db, reviewer=reviewer, answer=answer, **lease)
        else:
            with display.LiveView(console, record, verbose) as view:
                reviewer = _reviewer(approve, False, view)
                values = execute(record, db, view, reviewer=reviewer, answer=answer, **lease)
    except KeyboardInterrupt:
        raise _interrupted(record) from None
    except UserError:
        raise
    except LeaseLost as exc:
        err.print(ERROR + Text(f"{exc}; this process stopped and wrote nothing more"))
        raise typer.Exit(1) from None
    except OutputsNotWritten as exc:
        err.print(
            ERROR
            + Text(
                f"run {record.thread_id} ended ({record.status}) but its outputs were not "
                f"written: {exc}. Nothing is lost: write them with `ima export "
                f"{record.thread_id} --out DIR`"
            )
        )
        raise typer.Exit(1) from None
    except Exception as exc:
        if os.environ.get("IMA_DEBUG"):
            raise
        if disk_full(exc):  # an operational failure: nothing is damaged
            _stopped(record, f"the disk is full ({_first_line(exc)})", "free some space, then")
        if isinstance(exc, sqlite3.DatabaseError):
            if "locked" not in str(exc):
                raise  # a damaged or unwritable database: resuming would not help
            _stopped(record, f"the database stayed locked ({exc})")
        _stopped(record, describe(exc) or f"{type(exc).__name__}: {_first_line(exc)}")
    if record.status == "awaiting_review":
        message = (
            f"waiting for review: approve with `ima resume {record.thread_id} --approve`, "
            f'or send feedback with `ima resume {record.thread_id} --feedback "..."`'
        )
        if as_json:
            print(
                json.dumps(
                    {
                        "thread_id": record.thread_id,
                        "status": record.status,
                        "review": pending_review(record, db),
                    },
                    indent=2,
                )
            )
        err.print(Text(message))
        return
    _finish(record, values, as_json)
    if values.get("status") == "failed":
        raise typer.Exit(1)


@app.command()
@with_run_settings
def run(
    task: TaskOpt = "data-pipeline",
    memory: Annotated[
        str, typer.Option(help="intrinsic (the method) or none (the memoryless baseline).")
    ] = "intrinsic",
    settings: GivenSettings = None,  # an option per run setting (ima/core/settings.py)
    brief_file: Annotated[
        Path | None, typer.Option(help="A text file whose brief replaces the task's description.")
    ] = None,
    thread: Annotated[
        str | None, typer.Option(help="Name of the run's thread (default: generated).")
    ] = None,
    out: Annotated[
        Path, typer.Option(help="Directory for outputs; each run writes OUT/THREAD/.")
    ] = Path("runs"),
    db: DbOpt = None,
    show_memory: Annotated[
        bool, typer.Option("--show-memory", help="Print every memory rewrite in full.")
    ] = False,
    approve: Annotated[
        bool,
        typer.Option("--approve", help="Review step on, approved automatically (for scripts)."),
    ] = False,
    keep_history: Annotated[
        bool,
        typer.Option(
            "--keep-history",
            help="Keep every step's checkpoint (for time travel); by default a run keeps "
            "only its newest steps while it runs and its final state once it ends.",
        ),
    ] = False,
    queue: Annotated[
        bool,
        typer.Option(
            "--queue",
            help="Register the run and queue it for `ima worker`s (a PostgreSQL --db) "
            "instead of running it here.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run a task: agents discuss in phases, vote, and the finaliser writes the design.

    Outputs: OUT/THREAD/design.md, design.json and run.json. Stop any time with Ctrl-C and
    continue with `ima resume THREAD`. Every run setting is an option here, an IMA_<NAME>
    variable and a key of ./ima.toml (or $IMA_CONFIG).

    Examples:\n
      ima run\n
      ima run --memory none --seed 3\n
      ima run --model ollama:qwen2.5:7b --template llm --budget 4096\n
      ima run --queue --db postgresql://ima@db-host/ima   (a worker runs it)
    """
    given = dict(settings or {})
    if approve:
        given["review"] = True
    settings = RunContext(**given)
    brief = ""
    if brief_file:
        try:
            brief = brief_file.read_text(encoding="utf-8").strip()
        except UnicodeDecodeError:
            raise UserError(
                f"brief file {brief_file} is not UTF-8 text: give a text file"
            ) from None
        except OSError as exc:
            raise UserError(f"cannot read brief file {brief_file}: {exc.strerror}") from None
        if not brief:
            raise UserError(f"brief file {brief_file} is empty")
    path = _db(db)
    if queue:
        queueing.engine_database(path, "queue", "run `ima run` without --queue")  # first
    record = create_run(
        task_ref=task,
        memory_mode=memory,
        settings=settings,
        db=path,
        out_root=out,
        thread_id=thread,
        brief=brief,
        keep_history=keep_history,
    )
    if queue:
        _queue(record, path, as_json)
        return
    with _resumable(record):
        if not as_json:
            console.print(
                Text("thread ")
                + Text(record.thread_id, style="bold")
                + Text(
                    f" · task {record.task_id} v{record.task_version} · memory {memory} · "
                    f"template {settings.template} · budget {settings.token_budget} · "
                    f"turn cap {settings.turn_cap} · seed {settings.seed}"
                )
            )
            _print_models(settings)
        _execute(record, path, as_json, show_memory, approve)


def _queue(record: RunRecord, db: Database, as_json: bool) -> None:
    record.status = "queued"
    with RunRegistry(db) as registry:
        registry.save(record)
    job = queueing.queue_run(db, record.thread_id)  # type: ignore[arg-type]
    if as_json:
        print(json.dumps({"thread_id": record.thread_id, "status": "queued", "job": job}))
        return
    console.print(
        Text(
            f"queued {record.thread_id} in {db.label} (job {job})\n"
            f"start workers (any machine): ima worker --db {db.label}\n"
            f"watch: ima eval status --db {db.label}; then ima show {record.thread_id} "
            f"--db {db.label}"
        ),
        soft_wrap=True,
    )


def _print_models(settings: RunContext) -> None:
    console.print(Text(f"agents: {describe_model(agent_model(settings))}"))
    if settings.memory_model:
        console.print(Text(f"memory updates: {describe_model(memory_model(settings))}"))


@app.command()
def resume(
    thread: Annotated[
        str, typer.Argument(help="Thread id of an interrupted run (see `ima runs`).")
    ],
    db: DbOpt = None,
    approve: Annotated[
        bool, typer.Option("--approve", help="Approve the pending review (and any later one).")
    ] = False,
    feedback: Annotated[
        str | None, typer.Option(help="Answer the pending review with feedback for the agents.")
    ] = None,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait", help="If another process is running the thread, wait until it stops."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Continue an interrupted run from its last checkpoint; completed turns are not repeated.

    A run waiting for review continues with --approve or --feedback TEXT (or a prompt).
    One process at a time runs a thread: a second one is refused (or waits with --wait)."""
    record, path = _registered(thread, db, read_only=False)
    if record.status in FINISHED and outputs_missing(
        Path(record.out_dir), load_state(record, path)
    ):
        _export(record, path, None)  # the run ended but its files were lost or never written
        return
    resumable(record, path, wait=wait)
    answer = {"feedback": feedback} if feedback and feedback.strip() else None
    if answer and pending_review(record, path) is None:
        raise UserError(
            f"run {thread} is not waiting for review, so there is nothing to send feedback to: "
            f"continue it with `ima resume {thread}` (feedback is asked for before FINALIZE)"
        )
    with _resumable(record):
        if not as_json:
            console.print(Text("resuming ") + Text(thread, style="bold"))
            _print_models(record.run_context())
        _execute(record, path, as_json, approve=approve, answer=answer, wait=wait)


def _export(record: RunRecord, db: Database, out: Path | None) -> None:
    try:
        target = export_outputs(record, db, out)
    except OutputsNotWritten as exc:
        raise UserError(f"{exc} (choose another --out)") from None
    console.print(Text(f"outputs of {record.thread_id} written to {target}"))


@app.command()
def export(
    thread: Annotated[str, typer.Argument(help="Thread id (see `ima runs`).")],
    db: DbOpt = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Write to OUT/THREAD/ instead of the run's own output folder."),
    ] = None,
) -> None:
    """Write a run's outputs (design.md, design.json, run.json) again from its checkpoint.

    For a run whose files were lost or could not be written (full disk, wrong --out), or to
    copy them elsewhere. Works for unfinished runs too (what exists so far)."""
    record, path = _registered(thread, db)
    _export(record, path, out)


@app.command("runs")
def list_runs(db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """List runs with their status (finalized, turn_cap, failed, running, interrupted)."""
    with RunRegistry(_db(db, must_exist=True, read_only=True)) as registry:
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


@app.command()
def show(
    thread: Annotated[str, typer.Argument(help="Thread id (see `ima runs`).")],
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a run's transcript, every agent's memory, token usage, memory retention per
    agent (key figures and requirements each version holds, all and the role's own) and
    repairs, the own items each agent's last turn had in view, content metrics (figures of
    the brief the design states, parroting, repetition) and status."""
    record, path = _registered(thread, db)
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
            console.print(display.memory_table(memory))
        if metrics["in_view"]["agents"]:
            console.print(display.in_view_table(metrics["in_view"]))
        console.print(display.content_table(content))


@app.command("view")
def view_run(
    thread: Annotated[str, typer.Argument(help="Thread id (see `ima runs`).")],
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
    record, path = _registered(thread, db)
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


@app.command()
def tasks() -> None:
    """List the bundled tasks (copy one of the files to define your own)."""
    table = Table(title="Tasks")
    for col in ("id", "version", "title", "roles", "file"):
        table.add_column(col)
    for task_id, path in available_tasks().items():
        t = load_task_file(path)
        table.add_row(task_id, str(t.version), t.title, ", ".join(r.id for r in t.roles), str(path))
    console.print(table)


@app.command()
def graph(
    task: TaskOpt = "data-pipeline",
    memory: Annotated[str, typer.Option(help="intrinsic or none.")] = "intrinsic",
) -> None:
    """Print the graph as Mermaid text (paste it into any Mermaid viewer)."""
    if memory not in ("intrinsic", "none"):
        raise UserError(f"unknown memory mode {memory!r}: use intrinsic or none")
    print(compile_graph(load_task(task), memory).get_graph().draw_mermaid())  # type: ignore[arg-type]


app.command("worker")(worker_command)  # listed after eval in --help


def run_command(args: Sequence[str] | None = None) -> int:
    """Run the command `args` (default: the process's arguments); the exit code. Whatever
    goes wrong ends in one line on stderr: bad input 2, a failure 1, Ctrl-C 130."""
    try:
        code = app(args=args, standalone_mode=False)
    except Interrupted as exc:
        return _interruption(str(exc))
    except UserError as exc:
        err.print(ERROR + Text(str(exc)))
        return 2
    except typer.Abort as exc:  # a prompt was answered no, or interrupted
        if isinstance(exc.__context__, KeyboardInterrupt):
            return _interruption("interrupted: nothing was changed")
        err.print(Text("aborted: nothing was changed"))
        return 1
    except typer.TyperException as exc:  # typer's usage errors: --budget abc, a missing THREAD
        if type(exc).__name__ != "NoArgsIsHelpError":  # that one has printed the help
            err.print(ERROR + Text(usage_line(exc)))
        return int(getattr(exc, "exit_code", 2))
    except Exception as exc:
        if os.environ.get("IMA_DEBUG"):
            raise
        if disk_full(exc):
            err.print(
                ERROR
                + Text(
                    f"the disk is full ({_first_line(exc)}): free some space and run the "
                    "command again; nothing stored so far is damaged"
                )
            )
            return 1
        if not isinstance(exc, sqlite3.DatabaseError):
            raise
        err.print(
            ERROR
            + Text(
                f"database problem: {_first_line(exc)}. The file given by --db (or IMA_DB) may "
                "be damaged or not an ima database: restore it from a backup or choose another "
                "--db (IMA_DEBUG=1 shows the traceback)"
            )
        )
        return 2
    if code == INTERRUPTED:  # typer's own handling of a Ctrl-C between our handlers
        return _interruption("interrupted")
    return code if isinstance(code, int) else 0


def _interruption(line: str) -> int:
    err.print(Text(line))
    return INTERRUPTED


def main() -> None:
    """`ima` in this process (the tests); the installed program is ima.cli.entry:main."""
    sys.exit(run_command())
