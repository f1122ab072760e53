"""`ima bench pddl|babyai|twc`: the planning benchmark (the paper's Table 4) on any
environment with an adapter, in one command each; the commands differ only in how tasks
are chosen and in their defaults.

Register it on the `ima` app with `app.add_typer(bench_app, name="bench")`.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from intrinsic_memory import DEFAULT_MEMORY_TOKENS
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ima.cli.display import job_progress
from ima.cli.errors import Interrupted
from ima.cli.settings_options import setting_option
from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.environments.pddl import list_domains
from ima.evals.bench.bench import Bench
from ima.evals.bench.plan import BenchPlan, Episode, select_tasks
from ima.evals.bench.report import summarize, summarize_oracle
from ima.evals.jobs import queueing
from ima.evals.jobs.local import check_concurrency
from ima.models import describe_model, load_chat_model
from ima.planning import ARMS, SolverSettings, get_adapter, parse_arms
from ima.runs.database import PostgresDatabase, open_database

console = Console()
bench_app = typer.Typer(
    help="Benchmarks with a checker instead of a judge: PDDL (the paper's Table 4), BabyAI, "
    "TextWorld Commonsense.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
# Agents sample, as in `ima eval`: at temperature 0 every seed would be the same episode.
BENCH_TEMPERATURE = 0.7
ALL_ARMS = ",".join(ARMS)

ModelOpt = setting_option("model")
ArmsOpt = Annotated[
    str,
    typer.Option(
        help="Memory arms, comma-separated: none (the newest steps that fit the budget), full "
        "(every step in every prompt, as the paper's code), summary (ChatDev's periodic "
        "summary), intrinsic-generic, intrinsic-manual, intrinsic-llm (each agent's own memory "
        "with the generic, the environment's or a model-written template), intrinsic-cross "
        "(generic, carried from one task of a family to the next).",
    ),
]
SeedsOpt = Annotated[int, typer.Option(help="Seeded runs of every episode (the paper: 5).")]
SeedOpt = Annotated[int, typer.Option(help="The first seed.")]
TaskLimitOpt = Annotated[
    int | None,
    typer.Option(
        "--step-limit",
        help="Steps every episode gets (default: each task's own, from the catalog: twice "
        "its oracle path, and at least 10 to spare).",
    ),
]
BudgetOpt = Annotated[
    int,
    typer.Option(
        "--budget",
        "--token-budget",
        help="Tokens of task, memory and earlier steps an agent sees (none, intrinsic).",
    ),
]
MemoryTokensOpt = Annotated[
    int, typer.Option(help="Tokens of an intrinsic memory, and of a summary.")
]
MemoryUpdateOpt = Annotated[
    str, typer.Option(help="edit (a few operations a turn) or rewrite (the paper: all again).")
]
SummaryEveryOpt = Annotated[
    int, typer.Option(help="The summary arm rewrites its summary every N steps.")
]
TemperatureOpt = Annotated[
    float, typer.Option(help="Sampling temperature (0 makes every seed the same episode).")
]
OutOpt = Annotated[
    Path, typer.Option(help="The benchmark's folder: report.md, plot, episode pages.")
]
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="A PostgreSQL database (postgresql://USER@HOST:PORT/DBNAME): queue the episodes "
        "there for `ima worker`s on any machine. A SQLite file: run them here, stored there "
        "(default OUT/ima.sqlite).",
    ),
]
ConcurrencyOpt = Annotated[
    int | None,
    typer.Option(
        help="Episodes run at once in this process (default 1, or IMA_JOB_CONCURRENCY): more "
        "only for a model server that serves several calls at once, like Ollama.",
    ),
]
RetriesOpt = Annotated[
    int | None,
    typer.Option(
        help="With a PostgreSQL --db: times a failed episode is queued again (default 2, or "
        "IMA_JOB_RETRIES).",
    ),
]
ReportOnlyOpt = Annotated[
    bool, typer.Option("--report-only", help="Write the report from what is stored; run nothing.")
]


@dataclass(frozen=True)
class Options:
    """What every benchmark command takes."""

    model: str | None
    arms: str
    seeds: int
    seed: int
    step_limit: int | None
    token_budget: int
    memory_tokens: int
    memory_update: str
    summary_every: int
    temperature: float
    out: Path
    db: str | None
    concurrency: int | None
    retries: int | None
    report_only: bool


def episode_line(row: dict[str, Any]) -> str:
    """One line for a finished episode (the terminal, `ima worker`)."""
    outcome = "[green]solved[/green]" if row["success"] else "not solved"
    tokens = row["input_tokens"] + row["output_tokens"]
    return (
        f"reward {row['reward']:.2f} · {outcome} · {row['steps']} steps · {tokens:,} tokens · "
        f"{row['model_seconds']:.0f} s"
    )


@bench_app.command("pddl")
def pddl_command(
    model: ModelOpt = None,
    arms: ArmsOpt = ALL_ARMS,
    problems: Annotated[
        str | None,
        typer.Option(help="Problem ids, comma-separated, e.g. blocksworld-01,gripper-03."),
    ] = None,
    domains: Annotated[
        str | None,
        typer.Option(
            help="Every problem of these domains: "
            + ", ".join(d.name for d in list_domains())
            + " (default: all 50 problems)."
        ),
    ] = None,
    seeds: SeedsOpt = 5,
    seed: SeedOpt = 0,
    step_limit: Annotated[
        int, typer.Option(help="Steps before an episode ends unsolved (G-Memory: 30).")
    ] = 30,
    token_budget: BudgetOpt = 1024,
    memory_tokens: MemoryTokensOpt = DEFAULT_MEMORY_TOKENS,
    memory_update: MemoryUpdateOpt = "edit",
    summary_every: SummaryEveryOpt = 10,
    temperature: TemperatureOpt = BENCH_TEMPERATURE,
    out: OutOpt = Path("evals/pddl"),
    db: DbOpt = None,
    concurrency: ConcurrencyOpt = None,
    retries: RetriesOpt = None,
    report_only: ReportOnlyOpt = False,
) -> None:
    """Run the paper's PDDL planning benchmark: memory arms x problems x seeds, then a report
    like its Table 4 (reward mean and sd across seeds, success, steps, tokens per problem),
    the oracle's row (the optimal plans), a plot like its Figure 2, its published figures
    beside ours, and a page per episode.

    A planner proposes the next action, a helper steps in when it repeats itself, and the
    environment checks every action; the reward is the progress rate. Every finished episode
    is stored at once and every step is checkpointed: the same command run again continues.

    Examples:\n
      ima bench pddl --model ollama:gemma3:12b --seeds 5          (the paper's table)\n
      ima bench pddl --domains blocksworld --arms none,full,intrinsic-generic --seeds 2\n
      ima bench pddl --problems blocksworld-03 --seeds 1 --step-limit 10\n
      ima bench pddl --domains gripper --arms intrinsic-generic,intrinsic-cross --seeds 3\n
      ima bench pddl --report-only --out evals/pddl\n
      ima bench pddl --model ollama:gemma3:12b --concurrency 4   (4 episodes at once)\n
      ima bench pddl --db postgresql://ima@db-host/ima   (then: ima worker, ima eval status)
    """
    # every parameter but the choice of tasks (the first statement: locals() holds just them)
    options = Options(**{k: v for k, v in locals().items() if k not in ("problems", "domains")})
    _bench("pddl", problems, domains, ("--problems", "--domains"), options)


@bench_app.command("babyai")
def babyai_command(
    model: ModelOpt = None,
    arms: ArmsOpt = ALL_ARMS,
    tasks: Annotated[
        str | None,
        typer.Option(
            help="Task ids, comma-separated, e.g. babyai-gotolocal-s0,babyai-synthloc-s2."
        ),
    ] = None,
    levels: Annotated[
        str | None,
        typer.Option(
            help="Every task of these levels, e.g. GoToLocal,UnlockLocal (default: all 24)."
        ),
    ] = None,
    seeds: SeedsOpt = 5,
    seed: SeedOpt = 0,
    step_limit: TaskLimitOpt = None,
    token_budget: BudgetOpt = 1024,
    memory_tokens: MemoryTokensOpt = DEFAULT_MEMORY_TOKENS,
    memory_update: MemoryUpdateOpt = "edit",
    summary_every: SummaryEveryOpt = 10,
    temperature: TemperatureOpt = BENCH_TEMPERATURE,
    out: OutOpt = Path("evals/babyai"),
    db: DbOpt = None,
    concurrency: ConcurrencyOpt = None,
    retries: RetriesOpt = None,
    report_only: ReportOnlyOpt = False,
) -> None:
    """Run the BabyAI benchmark (in the paper authors' newer public code): the bundled
    tasks (8 levels from GoToRedBall to SynthLoc, 3 level seeds each), the same team, arms
    and report as `ima bench pddl`, with BabyAI's bot as the oracle row.

    The grid is told in words; actions are words (turn left, go forward, pick up, toggle,
    ...), and an impossible one is told why. The reward is success (BabyAI has no partial
    credit); each task has its own step limit from the catalog.

    Examples:\n
      ima bench babyai --model ollama:gemma3:12b --seeds 5\n
      ima bench babyai --levels GoToLocal,PickupLoc --arms none,intrinsic-generic --seeds 2\n
      ima bench babyai --tasks babyai-gotolocal-s0 --seeds 1 --step-limit 8\n
      ima bench babyai --levels UnlockLocal --arms intrinsic-generic,intrinsic-cross\n
      ima bench babyai --report-only --out evals/babyai
    """
    # every parameter but the choice of tasks (the first statement: locals() holds just them)
    options = Options(**{k: v for k, v in locals().items() if k not in ("tasks", "levels")})
    _bench("babyai", tasks, levels, ("--tasks", "--levels"), options)


@bench_app.command("twc")
def twc_command(
    model: ModelOpt = None,
    arms: ArmsOpt = ALL_ARMS,
    tasks: Annotated[
        str | None,
        typer.Option(help="Task ids, comma-separated, e.g. twc-rooms1-items2-s20000."),
    ] = None,
    settings: Annotated[
        str | None,
        typer.Option(
            "--settings",
            help="Every task of these game settings, e.g. twc-rooms1-items1,twc-rooms2-items3 "
            "(default: all 15).",
        ),
    ] = None,
    seeds: SeedsOpt = 5,
    seed: SeedOpt = 0,
    step_limit: TaskLimitOpt = None,
    token_budget: BudgetOpt = 1024,
    memory_tokens: MemoryTokensOpt = DEFAULT_MEMORY_TOKENS,
    memory_update: MemoryUpdateOpt = "edit",
    summary_every: SummaryEveryOpt = 10,
    temperature: TemperatureOpt = BENCH_TEMPERATURE,
    out: OutOpt = Path("evals/twc"),
    db: DbOpt = None,
    concurrency: ConcurrencyOpt = None,
    retries: RetriesOpt = None,
    report_only: ReportOnlyOpt = False,
) -> None:
    """Run the TextWorld Commonsense benchmark (the closest offline cousin of the paper's
    ALFWorld): put each object where it belongs in a house of 1 or 2 rooms; 15 bundled
    tasks (5 settings x 3 games), the same team, arms and report as `ima bench pddl`, with
    the game's gold path as the oracle. Needs Java 17.

    The reward is the game's own score at the end of an episode (0..1); each task has its
    own step limit from the catalog.

    Examples:\n
      ima bench twc --model ollama:gemma3:12b --seeds 5\n
      ima bench twc --settings twc-rooms1-items1 --arms none,intrinsic-generic --seeds 2\n
      ima bench twc --tasks twc-rooms1-items2-s20000 --seeds 1\n
      ima bench twc --settings twc-rooms2-items3 --arms intrinsic-generic,intrinsic-cross\n
      ima bench twc --report-only --out evals/twc
    """
    # every parameter but the choice of tasks (the first statement: locals() holds just them)
    options = Options(**{k: v for k, v in locals().items() if k not in ("tasks", "settings")})
    _bench("twc", tasks, settings, ("--tasks", "--settings"), options)


def _bench(
    env: str, tasks: str | None, families: str | None, names: tuple[str, str], o: Options
) -> None:
    database = open_database(o.db) if o.db else None
    bench = Bench(env, o.out, database)
    engine = isinstance(bench.db, PostgresDatabase)
    if engine:
        queueing.engine_database(bench.db)
    if o.report_only:
        if not bench.db.exists():
            raise UserError(f"no {env} benchmark at {bench.where}: check --out and --db")
        _report(bench)
        return
    settings = SolverSettings(
        step_limit=o.step_limit,
        token_budget=o.token_budget,
        memory_tokens=o.memory_tokens,
        memory_update=o.memory_update,
        summary_every=o.summary_every,
    ).check()
    plan = BenchPlan(
        env=env,
        model=o.model or RunContext().model,
        arms=tuple(a.name for a in parse_arms(o.arms)),
        tasks=select_tasks(env, tasks, families, names),
        seeds=o.seeds,
        base_seed=o.seed,
        temperature=o.temperature,
        settings=settings,
        command=shlex.join(["ima", *sys.argv[1:]]) if sys.argv[1:2] == ["bench"] else "",
    )
    concurrency = check_concurrency(o.concurrency, [plan.model])
    if engine:
        queueing.refuse_cancelled(bench.db, bench.name)  # type: ignore[arg-type]
    bench.prepare(plan)
    done, todo = bench.pending(plan)
    total = len(done) + len(todo)
    limit = f"step limit {o.step_limit}" if o.step_limit else "each task's own step limit"
    console.print(
        f"benchmark [bold]{escape(bench.where)}[/bold] · {len(plan.arms)} arms x "
        f"{len(plan.tasks)} tasks x {o.seeds} seeds = {total} episodes · {limit}",
        highlight=False,
    )
    agents = load_chat_model(plan.model, plan.base_seed, plan.temperature, plan.call_timeout)
    console.print(f"agents: {describe_model(agents)}", highlight=False)
    if engine:
        _queued(bench, len(done), bench.enqueue(todo, o.retries))
        return
    if done:
        console.print(f"continuing: {len(done)} of {total} episodes already stored")
    tally = _work(bench, todo, len(done), total, concurrency)
    _report(bench)
    if tally.failed:
        console.print(
            f"[red]{tally.failed} episode(s) failed[/red] (see above); run the same command "
            "again to retry them: stored episodes are kept"
        )
        raise typer.Exit(1)


def _queued(bench: Bench, done: int, counts: dict[str, int]) -> None:
    waiting = (
        f" · {counts['waiting']} waiting for their chain (queued as it goes)"
        if counts["waiting"]
        else ""
    )
    console.print(
        f"queued in {escape(bench.db.label)} as [bold]{escape(bench.name)}[/bold]: {done} "
        f"stored · {counts['queued']} queued · {counts['running']} running · "
        f"{counts['failed']} failed{waiting}",
        highlight=False,
    )
    target = bench.db.label
    report = ["ima", "bench", bench.env, "--report-only", "--out", str(bench.directory)]
    console.print(
        Text(
            f"start workers (any machine): {shlex.join(['ima', 'worker', '--db', target])}\n"
            f"watch: {shlex.join(['ima', 'eval', 'status', '--db', target])}\n"
            f"report: {shlex.join([*report, '--db', target])}"
        ),
        soft_wrap=True,
    )


def _work(bench: Bench, todo: list[Episode], done: int, total: int, concurrency: int) -> Any:
    progress = job_progress(console, bench.env, "episodes")

    def notify(kind: str, episode: Episode, detail: dict[str, Any]) -> None:
        label = episode.label
        if kind == "start":
            progress.doing = f"{label}: starting"
        elif kind == "event":
            progress.doing = (
                f"{label}: step {detail['step']}/{detail['limit']} · {detail['tokens']:,} tokens"
            )
        elif kind == "done":
            progress.console.print(
                f"[green]✓[/green] {label}: {episode_line(detail['row'])}", highlight=False
            )
            progress.advance(bar)
            progress.doing = ""
        elif kind == "failed":
            progress.console.print(
                f"[red]✗[/red] {label}: {escape(detail['error'])}", highlight=False
            )

    with progress:
        bar = progress.add_task(bench.env, total=total, completed=done)
        try:
            return bench.run_here(todo, notify, concurrency)
        except KeyboardInterrupt:
            progress.stop()
            stored = len(bench.shared.keys())
            raise Interrupted(
                f"interrupted: {stored} episodes are stored in {bench.where}; run the same "
                "command again to continue (an episode resumes from its last step)"
            ) from None


def _report(bench: Bench) -> None:
    made = bench.report()
    config, summaries = made["config"], summarize(made["rows"])
    adapter = get_adapter(bench.env)
    oracle = summarize_oracle(made["oracle"])
    table = Table(
        title=f"{adapter.title} benchmark · {config['model']} · {len(made['rows'])} episodes",
        caption="reward: mean and sd across seeds; tokens and wall s per task; "
        f"oracle: {adapter.oracle_note}",
    )
    columns = ("arm", "episodes", "reward", "sd", "success", "steps", "tokens", "wall s")
    for col in columns:
        arm = col == "arm"
        table.add_column(col, justify="left" if arm else "right", no_wrap=arm)
    for s in summaries:
        table.add_row(
            s.arm,
            str(s.episodes),
            f"{s.reward_mean:.3f}",
            f"{s.reward_sd:.3f}",
            f"{s.success_rate:.0%}",
            f"{s.steps:.1f}",
            f"{s.tokens:,.0f}",
            f"{s.wall_seconds:.1f}",
        )
    table.add_row(
        "oracle",
        f"{oracle.tasks} tasks",
        f"{oracle.reward:.3f}",
        "-",
        f"{oracle.success_rate:.0%}",
        f"{oracle.steps:.1f}",
        "-",
        "-",
    )
    console.print(table)
    if adapter.published:
        paper = Table(title="The paper's figures (Yuen et al., 2025, Table 4)")
        for col in ("model", "memory", "reward", "our arm"):
            paper.add_column(col, justify="right" if col == "reward" else "left")
        for p in adapter.published:
            paper.add_row(p.model, p.memory, f"{p.reward:.3f}", p.arm)
        console.print(paper)
    console.print(f"report: {made['report']}", highlight=False)
    console.print(f"plot: {made['plot']}", highlight=False)
    pages = bench.directory / "episodes"
    console.print(f"episode pages: {pages}/ ({len(made['pages'])})", highlight=False)
