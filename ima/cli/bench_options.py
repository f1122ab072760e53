"""The options of `ima bench pddl|babyai|twc`, declared once: each command takes them all,
with its own choice of tasks after the arms (`parameters`). The solver's settings are one
option per `SolverSettings` field (its description the help, its default the default)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any, Literal, get_origin

import typer

from ima.cli.settings_options import setting_option
from ima.environments.pddl import list_domains
from ima.planning import ARMS, SolverSettings

# Agents sample, as in `ima eval`: at temperature 0 every seed would be the same episode.
BENCH_TEMPERATURE = 0.7


def option(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


def solver_option(name: str) -> inspect.Parameter:
    """The option of a `SolverSettings` field: its help is the field's description, its
    default the field's (the settings check the value, in one line)."""
    field = SolverSettings.model_fields[name]
    kind: Any = str if get_origin(field.annotation) is Literal else field.annotation
    flags = ("--budget", "--token-budget") if name == "token_budget" else ()
    return option(
        name, Annotated[kind, typer.Option(*flags, help=field.description)], field.default
    )


# The options every benchmark command takes, declared once: the model and arms first, then
# (after the command's own choice of tasks) the runs, the settings, where and how they run.
FIRST = [
    option("model", setting_option("model"), None),
    option(
        "arms",
        Annotated[
            str,
            typer.Option(
                help="Memory arms, comma-separated: none (the newest steps that fit the budget), "
                "full (every step in every prompt, as the paper's code), summary (ChatDev's "
                "periodic summary), intrinsic-generic, intrinsic-manual, intrinsic-llm (each "
                "agent's own memory with the generic, the environment's or a model-written "
                "template), intrinsic-cross (generic, carried from one task of a family to the "
                "next).",
            ),
        ],
        ",".join(ARMS),
    ),
]
RUNS = [
    option(
        "seeds",
        Annotated[int, typer.Option(help="Seeded runs of every episode (the paper: 5).")],
        5,
    ),
    option("seed", Annotated[int, typer.Option(help="The first seed.")], 0),
]
SETTINGS = [solver_option(name) for name in SolverSettings.model_fields if name != "step_limit"]
REST = [
    option(
        "temperature",
        Annotated[
            float, typer.Option(help="Sampling temperature (0 makes every seed the same episode).")
        ],
        BENCH_TEMPERATURE,
    ),
    option(
        "out",
        Annotated[
            Path, typer.Option(help="The benchmark's folder: report.md, plot, episode pages.")
        ],
        None,  # the command's own
    ),
    option(
        "db",
        Annotated[
            str | None,
            typer.Option(
                "--db",
                help="A PostgreSQL database (postgresql://USER@HOST:PORT/DBNAME): queue the "
                "episodes there for `ima worker`s on any machine. A SQLite file: run them here, "
                "stored there (default OUT/ima.sqlite).",
            ),
        ],
        None,
    ),
    option(
        "concurrency",
        Annotated[
            int | None,
            typer.Option(
                help="Episodes run at once in this process (default 1, or IMA_JOB_CONCURRENCY): "
                "more only for a model server that serves several calls at once, like Ollama.",
            ),
        ],
        None,
    ),
    option(
        "retries",
        Annotated[
            int | None,
            typer.Option(
                help="With a PostgreSQL --db: times a failed episode is queued again (default 2, "
                "or IMA_JOB_RETRIES).",
            ),
        ],
        None,
    ),
    option(
        "report_only",
        Annotated[
            bool,
            typer.Option(
                "--report-only", help="Write the report from what is stored; run nothing."
            ),
        ],
        False,
    ),
]
# BabyAI's and TWC's tasks each have their own step limit; PDDL's share G-Memory's.
TASK_LIMIT = option(
    "step_limit",
    Annotated[
        int | None,
        typer.Option(
            "--step-limit",
            help="Steps every episode gets (default: each task's own, from the catalog: twice "
            "its oracle path, and at least 10 to spare).",
        ),
    ],
    None,
)


# Each command's choice of tasks: ids, or every task of some families.
CHOICES = {
    "pddl": (
        option(
            "problems",
            Annotated[
                str | None,
                typer.Option(help="Problem ids, comma-separated, e.g. blocksworld-01,gripper-03."),
            ],
            None,
        ),
        option(
            "domains",
            Annotated[
                str | None,
                typer.Option(
                    help="Every problem of these domains: "
                    + ", ".join(d.name for d in list_domains())
                    + " (default: all 50 problems)."
                ),
            ],
            None,
        ),
    ),
    "babyai": (
        option(
            "tasks",
            Annotated[
                str | None,
                typer.Option(
                    help="Task ids, comma-separated, e.g. babyai-gotolocal-s0,babyai-synthloc-s2."
                ),
            ],
            None,
        ),
        option(
            "levels",
            Annotated[
                str | None,
                typer.Option(
                    help="Every task of these levels, e.g. GoToLocal,UnlockLocal (default: all 24)."
                ),
            ],
            None,
        ),
    ),
    "twc": (
        option(
            "tasks",
            Annotated[
                str | None,
                typer.Option(help="Task ids, comma-separated, e.g. twc-rooms1-items2-s20000."),
            ],
            None,
        ),
        option(
            "settings",
            Annotated[
                str | None,
                typer.Option(
                    "--settings",
                    help="Every task of these game settings, e.g. twc-rooms1-items1,twc-rooms2-items3 "
                    "(default: all 15).",
                ),
            ],
            None,
        ),
    ),
}


def parameters(env: str) -> list[inspect.Parameter]:
    """The options of `ima bench ENV`, in the order its help shows them."""
    limit = solver_option("step_limit") if env == "pddl" else TASK_LIMIT
    out = REST[1].replace(default=Path("evals") / env)
    return [*FIRST, *CHOICES[env], *RUNS, limit, *SETTINGS, REST[0], out, *REST[2:]]
