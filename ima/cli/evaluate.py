"""`ima eval`: paired runs of intrinsic memory and the baseline, judged, stored, reported;
run here (SQLite), or with a PostgreSQL `--db` queued as jobs for `ima worker`s (`ima eval
status`, `cancel` and `retry` manage them); `ima eval calibrate`: how well the judge tells
good designs from bad ones.

Register it on the `ima` app with `app.add_typer(eval_app, name="eval")`. `eval` is a group
whose callback is the evaluation itself (run when no sub-command follows), so `ima eval
--pairs 10` works as it always did and `ima eval calibrate` sits beside it in --help.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from ima.cli.calibrate import calibrate_command
from ima.cli.display import job_progress
from ima.cli.errors import Interrupted
from ima.cli.options import JudgeAttemptsOpt, TaskOpt
from ima.cli.settings_options import setting_option
from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.evals.bench.plan import is_bench
from ima.evals.calibration import find_calibration
from ima.evals.content_runs import fill_content
from ima.evals.jobs import queueing
from ima.evals.jobs.local import check_concurrency
from ima.evals.judge import METRICS
from ima.evals.report import write_report
from ima.evals.runner import EvalPlan, Evaluation, Event, plan_from_config
from ima.evals.shared import SharedEvaluation, eval_name, in_order
from ima.evals.store import ResultsStore
from ima.evals.terminal import print_report
from ima.models import agent_model, describe_model, load_chat_model
from ima.runs.database import Database, PostgresDatabase, open_database
from ima.storage.targets import is_url
from ima.tasks import load_task

# Agents sample at this temperature in an evaluation: at 0 a run ignores its seed, so ten
# "paired seeds" would be one run counted ten times.
EVAL_TEMPERATURE = 0.7
# The run settings an evaluation takes as they are (the others differ: see eval_command).
ModelOpt = setting_option("model")
MemoryModelOpt = setting_option("memory_model")
TurnCapOpt = setting_option("turn_cap")
console = Console()
err = Console(stderr=True)


def _split(text: str | None, convert: Any, what: str) -> tuple[Any, ...] | None:
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    try:
        values = tuple(dict.fromkeys(convert(t) for t in items))
    except ValueError:
        raise UserError(f"bad {what} list {text!r}: write comma-separated values") from None
    if not values:
        raise UserError(f"empty {what} list: give at least one value")
    return values


def _row_line(row: dict[str, Any]) -> str:
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


def _report(
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


def _shared_database(db: str | None) -> Database | None:
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
    database = _shared_database(db)
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
    _report(directory, rows, config, calibration_file)


def _print_outputs(made: dict[str, Any]) -> None:
    console.print(f"report: {made['report']}", highlight=False)
    for path in made["plots"]:
        console.print(f"plot: {path}", highlight=False)


def eval_command(
    ctx: typer.Context,
    task: TaskOpt = "data-pipeline",
    pairs: Annotated[
        int, typer.Option("--pairs", "-n", help="Paired runs per condition (seeds SEED..SEED+N-1).")
    ] = 10,
    seed: Annotated[int, typer.Option(help="First seed of the pairs.")] = 0,
    model: ModelOpt = None,
    memory_model: MemoryModelOpt = None,
    temperature: Annotated[
        float,
        typer.Option(
            help="Sampling temperature of the agents (each pair has its own seed, so pairs "
            "differ); the judge always uses 0.",
        ),
    ] = EVAL_TEMPERATURE,
    judge_model: Annotated[
        str | None, typer.Option(help="Model that judges the designs (default: the agents' model).")
    ] = None,
    judge_seed: Annotated[
        int, typer.Option(help="Seed of the judge (temperature is always 0).")
    ] = 0,
    judge_attempts: JudgeAttemptsOpt = 3,
    template: Annotated[
        str | None,
        typer.Option(
            "--template",
            "--templates",
            help="Memory template(s) of the intrinsic runs, comma-separated: generic, manual, llm "
            "(e.g. generic,llm for the paper's Appendix B ablation).",
        ),
    ] = None,
    budget: Annotated[
        str | None,
        typer.Option(
            "--budget",
            "--budgets",
            help="Token budget(s) of each agent's context, comma-separated.",
        ),
    ] = None,
    turn_cap: TurnCapOpt = None,
    llm_coverage: Annotated[
        bool,
        typer.Option(
            "--llm-coverage",
            help="Also ask the judge model, per requirement, whether the design addresses it.",
        ),
    ] = False,
    long_term: Annotated[
        bool,
        typer.Option(
            "--long-term/--no-long-term",
            help="Let runs learn from earlier runs through long-term memory. Off by default: "
            "the paper's runs are independent, and the order of runs must not matter.",
        ),
    ] = False,
    out: Annotated[
        Path | None, typer.Option(help="Evaluation directory (default: evals/TASK).")
    ] = None,
    report_only_dir: Annotated[
        Path | None,
        typer.Option(
            "--report-only", metavar="DIR", help="Re-analyse a stored evaluation; run nothing."
        ),
    ] = None,
    calibration_file: Annotated[
        Path | None,
        typer.Option(
            "--calibration",
            metavar="FILE",
            help="calibration.json to show in the report (default: OUT/calibration.json).",
        ),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="A PostgreSQL database (postgresql://USER@HOST:PORT/DBNAME; also IMA_DB when it "
            "is a URL): queue the runs there as jobs for `ima worker`s on any machine. A "
            "SQLite file: run them here, stored there. With --report-only: read the results "
            "from it.",
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            help="Runs at once in this process (default 1, or IMA_JOB_CONCURRENCY): more only "
            "for a model server that serves several calls at once, like Ollama.",
        ),
    ] = None,
    retries: Annotated[
        int | None,
        typer.Option(
            help="With a PostgreSQL --db: times a failed run is queued again (default 2, or "
            "IMA_JOB_RETRIES).",
        ),
    ] = None,
) -> None:
    """Compare intrinsic memory with the memoryless baseline: paired runs, an LLM judge,
    objective metrics, rank-sum statistics, box plots and a Markdown report.

    Every finished run is stored in OUT/results.jsonl at once, so running the same command
    again resumes an interrupted evaluation. OUT also holds config.json, report.md, the PNG
    plots, the runs' outputs (OUT/runs/THREAD/) and their checkpoints (OUT/ima.sqlite).

    Examples:\n
      ima eval --pairs 10\n
      ima eval --model ollama:qwen2.5:7b --judge-model ollama:qwen2.5:14b\n
      ima eval --templates generic,manual,llm --budgets 1024,2048\n
      ima eval --report-only evals/data-pipeline\n
      ima eval --pairs 10 --model ollama:qwen2.5:7b --concurrency 4\n
      ima eval --pairs 10 --db postgresql://ima@db-host/ima   (then: ima worker, ima eval status)\n
      ima eval calibrate --judge-model ollama:qwen2.5:14b
    """
    if ctx.invoked_subcommand is not None:
        _no_options_before(ctx)
        return
    if calibration_file is not None and not calibration_file.is_file():
        raise UserError(f"calibration file {calibration_file} not found: check --calibration")
    if report_only_dir is not None:
        report_only(report_only_dir, calibration_file, db)
        return
    overrides = {
        "model": model,
        "memory_model": memory_model,
        "turn_cap": turn_cap,
        "temperature": temperature,
    }
    settings = RunContext(**{k: v for k, v in overrides.items() if v is not None})
    settings.long_term = long_term
    templates = _split(template, str, "template") or (settings.template,)
    budgets = _split(budget, int, "budget") or (settings.token_budget,)
    task_def = load_task(task)
    directory = out or Path("evals") / task_def.id
    plan = EvalPlan(
        task_ref=task,
        settings=settings,
        judge_model=judge_model or settings.model,
        judge_seed=judge_seed,
        pairs=pairs,
        base_seed=seed,
        templates=templates,
        budgets=budgets,
        llm_coverage=llm_coverage,
        judge_attempts=judge_attempts,
        command=shlex.join(["ima", *sys.argv[1:]]) if sys.argv[1:2] == ["eval"] else "",
    )
    models = [settings.model, settings.memory_model or settings.model, plan.judge_model]
    workers = check_concurrency(concurrency, models)
    database = _shared_database(db)
    shared = SharedEvaluation(database, eval_name(str(directory))) if database else None
    if isinstance(database, PostgresDatabase) and shared is not None:
        queueing.refuse_cancelled(database, shared.name)
    evaluation = Evaluation(plan, directory, shared)
    evaluation.prepare()
    done, todo = evaluation.pending()
    console.print(
        f"evaluation [bold]{escape(str(directory))}[/bold] · task {task_def.id} v{task_def.version} · "
        f"{pairs} pairs (seeds {seed}..{seed + pairs - 1}) · templates {', '.join(templates)} · "
        f"budgets {', '.join(map(str, budgets))} · turn cap {settings.turn_cap}",
        highlight=False,
    )
    console.print(f"agents: {describe_model(agent_model(settings))}", highlight=False)
    judge = load_chat_model(
        plan.judge_model, judge_seed, 0.0, settings.call_timeout, weights=settings.weights
    )
    console.print(
        f"judge: {describe_model(judge)} · temperature 0 · seed {judge_seed}", highlight=False
    )
    if isinstance(database, PostgresDatabase) and shared is not None:
        _enqueue(evaluation, database, shared, len(done), todo, retries)
        return
    if done:
        console.print(f"resuming: {len(done)} of {len(done) + len(todo)} runs already stored")
    errors = _run(evaluation, len(done), len(done) + len(todo), settings.turn_cap, workers)
    rows = in_order(evaluation.store.load(), [r.key for r in plan.runs()])
    if rows:
        _report(directory, rows, evaluation.store.read_config(), calibration_file)
    if errors:
        err.print(
            f"[red]{errors} run(s) failed[/red] (see above); run the same command again to "
            "resume them: stored runs are kept"
        )
        raise typer.Exit(1)


def _no_options_before(ctx: typer.Context) -> None:
    """`ima eval --judge-model X calibrate` would silently drop X: refuse it."""
    given = [
        p.opts[0]
        for p in ctx.command.params
        # by name: typer ships its own copy of click, whose enum is another class
        if p.name and getattr(ctx.get_parameter_source(p.name), "name", "") == "COMMANDLINE"
    ]
    if given:
        sub = ctx.invoked_subcommand
        raise UserError(
            f"{', '.join(given)} given before `{sub}`: put options after it "
            f"(`ima eval {sub} {given[0]} ...`; see `ima eval {sub} --help`)"
        )


eval_app = typer.Typer(no_args_is_help=False)
eval_app.callback(invoke_without_command=True)(eval_command)
eval_app.command("calibrate")(calibrate_command)


def _enqueue(
    evaluation: Evaluation,
    database: PostgresDatabase,
    shared: SharedEvaluation,
    done: int,
    todo: list,
    retries: int | None,
) -> None:
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


def _run(evaluation: Evaluation, done: int, total: int, cap: int, concurrency: int) -> int:
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
                f"[green]✓[/green] {label}: {_row_line(event.detail['row'])}", highlight=False
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
