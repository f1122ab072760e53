"""`ima bench pddl`: the paper's planning benchmark (Table 4) in one command.

Register it on the `ima` app with `app.add_typer(bench_app, name="bench")`.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ima.cli.display import job_progress
from ima.cli.errors import Interrupted
from ima.cli.settings_options import setting_option
from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.evals.pddl.bench import PddlBench
from ima.evals.pddl.plan import BenchPlan, Episode
from ima.evals.pddl.report import PUBLISHED, summarize
from ima.evals.queue import Job
from ima.models import describe_model, load_chat_model
from ima.pddl import get_problem, list_domains, list_problems
from ima.planning import ARMS, SolverSettings, parse_arms
from ima.runs.database import is_url, open_database

console = Console()
bench_app = typer.Typer(
    help="Benchmarks with a checker instead of a judge.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
# Agents sample, as in `ima eval`: at temperature 0 every seed would be the same episode.
BENCH_TEMPERATURE = 0.7


def _items(text: str, what: str) -> list[str]:
    items = list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    if not items:
        raise UserError(f"empty {what} list: give at least one, comma-separated")
    return items


def select_problems(problems: str | None, domains: str | None) -> tuple[str, ...]:
    """The problem ids chosen by --problems or --domains (all bundled problems by default)."""
    if problems and domains:
        raise UserError("give --problems or --domains, not both")
    if problems:
        return tuple(get_problem(p).id for p in _items(problems, "problem"))
    names = _items(domains, "domain") if domains else [d.name for d in list_domains()]
    return tuple(p.id for name in names for p in list_problems(name))


def episode_line(row: dict[str, Any]) -> str:
    """One line for a finished episode (the terminal, `ima worker`)."""
    outcome = "[green]solved[/green]" if row["success"] else "not solved"
    tokens = row["input_tokens"] + row["output_tokens"]
    return (
        f"reward {row['reward']:.2f} · {outcome} · {row['steps']} steps · {tokens:,} tokens · "
        f"{row['model_seconds']:.0f} s"
    )


ModelOpt = setting_option("model")


@bench_app.command("pddl")
def pddl_command(
    model: ModelOpt = None,
    arms: Annotated[
        str,
        typer.Option(
            help="Memory arms, comma-separated: none (the newest steps that fit the budget), full "
            "(every step in every prompt, as the paper's code), summary (ChatDev's periodic "
            "summary), intrinsic-generic, intrinsic-manual, intrinsic-llm (each agent's own "
            "memory with the generic, the domain's or a model-written template).",
        ),
    ] = ",".join(ARMS),
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
    seeds: Annotated[int, typer.Option(help="Seeded runs of every episode (the paper: 5).")] = 5,
    seed: Annotated[int, typer.Option(help="The first seed.")] = 0,
    step_limit: Annotated[
        int, typer.Option(help="Steps before an episode ends unsolved (G-Memory: 30).")
    ] = 30,
    token_budget: Annotated[
        int,
        typer.Option(
            "--budget",
            "--token-budget",
            help="Tokens of task, memory and earlier steps an agent sees (none, intrinsic).",
        ),
    ] = 1024,
    memory_tokens: Annotated[
        int, typer.Option(help="Tokens of an intrinsic memory, and of a summary.")
    ] = 256,
    memory_update: Annotated[
        str,
        typer.Option(help="edit (a few operations a turn) or rewrite (the paper: all again)."),
    ] = "edit",
    summary_every: Annotated[
        int, typer.Option(help="The summary arm rewrites its summary every N steps.")
    ] = 10,
    temperature: Annotated[
        float,
        typer.Option(help="Sampling temperature (0 makes every seed the same episode)."),
    ] = BENCH_TEMPERATURE,
    out: Annotated[
        Path, typer.Option(help="The benchmark's folder: report.md, plot, episode pages.")
    ] = Path("evals/pddl"),
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Queue the episodes in a shared database (postgresql://USER@HOST:PORT/DBNAME, "
            "or a SQLite file) for `ima worker`s, instead of running them here.",
        ),
    ] = None,
    report_only: Annotated[
        bool,
        typer.Option("--report-only", help="Write the report from what is stored; run nothing."),
    ] = False,
) -> None:
    """Run the paper's PDDL planning benchmark: memory arms x problems x seeds, then a report
    like its Table 4 (reward mean and sd across seeds, success, steps, tokens per problem),
    a plot like its Figure 2, its published figures beside ours, and a page per episode.

    A planner proposes the next action, a helper steps in when it repeats itself, and the
    environment checks every action; the reward is the progress rate. Every finished episode
    is stored at once and every step is checkpointed: the same command run again continues.

    Examples:\n
      ima bench pddl --model ollama:gemma3:12b --seeds 5          (the paper's table)\n
      ima bench pddl --domains blocksworld --arms none,full,intrinsic-generic --seeds 2\n
      ima bench pddl --problems blocksworld-03 --seeds 1 --step-limit 10\n
      ima bench pddl --report-only --out evals/pddl\n
      ima bench pddl --db postgresql://ima@db-host/ima   (then: ima worker, ima eval status)
    """
    database = open_database(db) if db else None
    bench = PddlBench(out, database)
    if report_only:
        if not bench.db.exists():
            raise UserError(f"no PDDL benchmark at {bench.where}: check --out and --db")
        _report(bench)
        return
    settings = SolverSettings(
        step_limit=step_limit,
        token_budget=token_budget,
        memory_tokens=memory_tokens,
        memory_update=memory_update,
        summary_every=summary_every,
    ).check()
    plan = BenchPlan(
        model=model or RunContext().model,
        arms=tuple(a.name for a in parse_arms(arms)),
        problems=select_problems(problems, domains),
        seeds=seeds,
        base_seed=seed,
        temperature=temperature,
        settings=settings,
        command=shlex.join(["ima", *sys.argv[1:]]) if sys.argv[1:2] == ["bench"] else "",
    )
    bench.prepare(plan)
    done, todo = bench.pending(plan)
    total = len(done) + len(todo)
    console.print(
        f"benchmark [bold]{escape(bench.where)}[/bold] · {len(plan.arms)} arms x "
        f"{len(plan.problems)} problems x {seeds} seeds = {total} episodes · step limit "
        f"{step_limit}",
        highlight=False,
    )
    agents = load_chat_model(plan.model, plan.base_seed, plan.temperature, plan.call_timeout)
    console.print(f"agents: {describe_model(agents)}", highlight=False)
    counts = bench.enqueue(todo)
    if not bench.local:
        _queued(bench, len(done), counts)
        return
    if done:
        console.print(f"continuing: {len(done)} of {total} episodes already stored")
    tally = _work(bench, len(done), total, step_limit)
    _report(bench)
    if tally.failed:
        console.print(
            f"[red]{tally.failed} episode(s) failed[/red] (see above); run the same command "
            "again to retry them: stored episodes are kept"
        )
        raise typer.Exit(1)


def _queued(bench: PddlBench, done: int, counts: dict[str, int]) -> None:
    console.print(
        f"queued in {escape(bench.db.label)}: {done} stored · {counts['queued']} queued · "
        f"{counts['running']} running · {counts['failed']} failed",
        highlight=False,
    )
    target = bench.db.label if is_url(bench.db.label) else str(Path(bench.db.label).resolve())
    report = [
        "ima",
        "bench",
        "pddl",
        "--report-only",
        "--out",
        str(bench.directory),
        "--db",
        target,
    ]
    console.print(
        Text(
            f"start workers (any machine): {shlex.join(['ima', 'worker', '--db', target])}\n"
            f"watch: {shlex.join(['ima', 'eval', 'status', '--db', target])}\n"
            f"report: {shlex.join(report)}"
        ),
        soft_wrap=True,
    )


def _work(bench: PddlBench, done: int, total: int, limit: int) -> Any:
    progress = job_progress(console, "pddl", "episodes")

    def notify(kind: str, job: Job, detail: dict[str, Any]) -> None:
        label = Episode(**job.run).label
        if kind == "start":
            progress.doing = f"{label}: starting"
        elif kind == "event":
            progress.doing = f"{label}: step {detail['step']}/{limit} · {detail['tokens']:,} tokens"
        elif kind == "done":
            progress.console.print(
                f"[green]✓[/green] {label}: {episode_line(detail['row'])}", highlight=False
            )
            progress.advance(bar)
            progress.doing = ""
        elif kind in ("failed", "lost"):
            progress.console.print(
                f"[red]✗[/red] {label}: {escape(detail['error'])}", highlight=False
            )

    with progress:
        bar = progress.add_task("pddl", total=total, completed=done)
        try:
            return bench.work(notify)
        except KeyboardInterrupt:
            progress.stop()
            stored = len(bench.shared.keys())
            raise Interrupted(
                f"interrupted: {stored} episodes are stored in {bench.where}; run the same "
                "command again to continue (an episode resumes from its last step)"
            ) from None


def _report(bench: PddlBench) -> None:
    made = bench.report()
    config, summaries = made["config"], summarize(made["rows"])
    table = Table(
        title=f"PDDL benchmark · {config['model']} · {len(made['rows'])} episodes",
        caption="reward: progress rate, mean and sd across seeds; tokens and wall s per problem",
    )
    columns = ("arm", "episodes", "reward", "sd", "success", "steps", "tokens", "wall s")
    for col in columns:
        table.add_column(col, justify="left" if col == "arm" else "right")
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
    console.print(table)
    paper = Table(title="The paper's figures (Yuen et al., 2025, Table 4)")
    for col in ("model", "memory", "reward", "our arm"):
        paper.add_column(col, justify="right" if col == "reward" else "left")
    for p in PUBLISHED:
        paper.add_row(p.model, p.memory, f"{p.reward:.3f}", p.arm)
    console.print(paper)
    console.print(f"report: {made['report']}", highlight=False)
    console.print(f"plot: {made['plot']}", highlight=False)
    pages = bench.directory / "episodes"
    console.print(f"episode pages: {pages}/ ({len(made['pages'])})", highlight=False)
