"""`ima eval`: paired runs of intrinsic memory and the baseline, judged, stored, reported;
run here (SQLite), or with a PostgreSQL `--db` queued as jobs for `ima worker`s (`ima eval
status`, `cancel` and `retry` manage them); `ima eval calibrate`: how well the judge tells
good designs from bad ones.

Register it on the `ima` app with `app.add_typer(eval_app, name="eval")`. `eval` is a group
whose callback is the evaluation itself (run when no sub-command follows), so `ima eval
--pairs 10` works as it always did and `ima eval calibrate` sits beside it in --help.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from ima.cli.calibrate import calibrate_command
from ima.cli.eval_jobs import enqueue, run_here
from ima.cli.eval_report import console, err, report, report_only, shared_database
from ima.cli.options import JudgeAttemptsOpt, TaskOpt
from ima.cli.settings_options import setting_option
from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.evals.jobs import queueing
from ima.evals.jobs.local import check_concurrency
from ima.evals.plan import EvalPlan
from ima.evals.runner import Evaluation
from ima.evals.shared import SharedEvaluation, eval_name, in_order
from ima.models import agent_model, describe_model, load_chat_model
from ima.runs.database import PostgresDatabase
from ima.tasks import load_task

# Agents sample at this temperature in an evaluation: at 0 a run ignores its seed, so ten
# "paired seeds" would be one run counted ten times.
EVAL_TEMPERATURE = 0.7
# The run settings an evaluation takes as they are (the others differ: see eval_command).
ModelOpt = setting_option("model")
MemoryModelOpt = setting_option("memory_model")
TurnCapOpt = setting_option("turn_cap")


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
    database = shared_database(db)
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
        enqueue(evaluation, database, shared, len(done), todo, retries)
        return
    if done:
        console.print(f"resuming: {len(done)} of {len(done) + len(todo)} runs already stored")
    errors = run_here(evaluation, len(done), len(done) + len(todo), settings.turn_cap, workers)
    rows = in_order(evaluation.store.load(), [r.key for r in plan.runs()])
    if rows:
        report(directory, rows, evaluation.store.read_config(), calibration_file)
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
