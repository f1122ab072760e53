"""Command-line options that several commands share, declared once."""

from __future__ import annotations

from typing import Annotated

import typer

TaskOpt = Annotated[
    str, typer.Option(help="Task id (see `ima tasks`) or path to a task YAML file.")
]
JudgeAttemptsOpt = Annotated[
    int, typer.Option(help="Attempts per verdict before it is recorded as failed.")
]
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Where runs live: a SQLite file, or postgresql://USER@HOST:PORT/DBNAME to share "
        "them between machines (env IMA_DB; default runs/ima.sqlite).",
    ),
]
SharedDbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="The PostgreSQL database that holds the jobs: postgresql://USER@HOST:PORT/DBNAME "
        "(env IMA_DB).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout for scripts.")]
