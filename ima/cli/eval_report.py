"""`ima eval`'s report: report.md, the plots and the terminal summary, after the runs or
read back with `--report-only` (from the evaluation's folder or its PostgreSQL database)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from ima.core.errors import UserError
from ima.evals.bench.plan import is_bench
from ima.evals.calibration import find_calibration
from ima.evals.content_runs import fill_content
from ima.evals.jobs import queueing
from ima.evals.plan import plan_from_config
from ima.evals.report import write_report
from ima.evals.shared import SharedEvaluation, eval_name, in_order
from ima.evals.store import ResultsStore
from ima.evals.terminal import print_report
from ima.runs.database import Database, PostgresDatabase, open_database
from ima.storage.targets import is_url

console = Console()
err = Console(stderr=True)


def report(
    directory: Path,
    rows: list[dict[str, Any]],
    config: dict[str, Any] | None,
    calibration_file: Path | None,
) -> None:
    """report.md and plots, with content metrics filled in for older runs and the judge's
    calibration when one exists for the evaluation's judge model."""
    rows = fill_content(directory, rows, ((config or {}).get("task") or {}).get("ref"))
    judge_model = ((config or {}).get("judge") or {}).get("model")
    calibration, note = find_calibration(directory, judge_model, calibration_file)
    made = write_report(directory, rows, config, calibration, note)
    print_report(console, rows, calibration, note)
    _print_outputs(made)


def shared_database(db: str | None) -> Database | None:
    """The evaluation's database: --db, or IMA_DB when it is a postgresql:// URL (a local
    evaluation keeps its own SQLite file in its directory, as always). PostgreSQL: with
    procrastinate's tables of this version, applied on first use."""
    if db:
        database = open_database(db)
    elif is_url(os.environ.get("IMA_DB", "")):
        database = open_database(None)
    else:
        return None
    if isinstance(database, PostgresDatabase):
        queueing.engine_database(database)
    return database


def report_only(
    directory: Path, calibration_file: Path | None = None, db: str | None = None
) -> None:
    """`ima eval --report-only`: the report of the runs stored so far, none run."""
    database = shared_database(db)
    store: ResultsStore | SharedEvaluation
    if database is not None:
        store = SharedEvaluation(database, eval_name(str(directory)))
        config = store.read_config()
        if config is None:
            raise UserError(
                f"no evaluation {store.name} in {database.label}: see `ima eval status`"
            )
        if is_bench(config):
            raise UserError(
                f"{store.name} is a {config['kind']} benchmark: report it with `ima bench "
                f"{config['kind']} --report-only --out {directory} --db {database.label}`"
            )
    else:
        store = ResultsStore(directory)
        if not store.path.exists():
            raise UserError(f"no {store.path}: run `ima eval --out {directory}` first")
    rows = store.load()
    config = store.read_config()
    if isinstance(store, SharedEvaluation) and config is not None:
        rows = in_order(rows, [r.key for r in plan_from_config(config).runs()])
    if store.skipped_lines:
        err.print(
            f"[yellow]note:[/yellow] ignored {store.skipped_lines} unreadable line(s) in "
            f"{escape(str(store.path))}"
        )
    if not rows:
        raise UserError(f"{store.path} holds no finished runs yet")
    report(directory, rows, config, calibration_file)


def _print_outputs(made: dict[str, Any]) -> None:
    console.print(f"report: {made['report']}", highlight=False)
    for path in made["plots"]:
        console.print(f"plot: {path}", highlight=False)
