"""The `ima` command line."""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Sequence
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ima.cli import meeting, stored
from ima.cli.bench import bench_app
from ima.cli.errors import ERROR, INTERRUPTED, Interrupted, err, first_line, usage_line
from ima.cli.evaluate import eval_app
from ima.cli.memory import memory_app
from ima.cli.options import TaskOpt
from ima.cli.workers import cancel_command, retry_command, status_command, worker_command
from ima.core.errors import UserError
from ima.meeting.builder import compile_graph
from ima.runs.database import disk_full
from ima.tasks import available_tasks, load_task, load_task_file

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
for command in (meeting.run, meeting.resume, stored.export):
    app.command()(command)
app.command("runs")(stored.list_runs)
app.command()(stored.show)
app.command("view")(stored.view_run)


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
        code = app(args=args, prog_name="ima", standalone_mode=False)
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
                    f"the disk is full ({first_line(exc)}): free some space and run the "
                    "command again; nothing stored so far is damaged"
                )
            )
            return 1
        if not isinstance(exc, sqlite3.DatabaseError):
            raise
        err.print(
            ERROR
            + Text(
                f"database problem: {first_line(exc)}. The file given by --db (or IMA_DB) may "
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
