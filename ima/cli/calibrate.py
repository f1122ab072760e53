"""`ima eval calibrate`: score the task's calibration set with a judge model and report
whether the judge can tell the reference design from its degraded variants."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ima.cli.errors import Interrupted
from ima.cli.options import JudgeAttemptsOpt
from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.evals import calibration
from ima.evals.calibration import REFERENCE, JudgeEvent
from ima.evals.judge import MAX_ATTEMPTS, METRICS
from ima.models import describe_model, load_chat_model

# criteria as the terminal table names them (it must fit 80 columns)
SHORT = {
    "scalability": "scal.",
    "reliability": "rel.",
    "usability": "usab.",
    "cost_effectiveness": "cost",
    "documentation": "docs",
}
console = Console()
err = Console(stderr=True)


def calibrate_command(
    judge_model: Annotated[
        str | None,
        typer.Option(help="Judge model to calibrate (default: the agents' model, env IMA_MODEL)."),
    ] = None,
    repeats: Annotated[
        int, typer.Option("--repeats", "-r", help="Verdicts per design (repeat r: seed SEED+r).")
    ] = 3,
    task: Annotated[
        str, typer.Option(help="Task id or task YAML file; its calibration set is used.")
    ] = "data-pipeline",
    judge_seed: Annotated[int, typer.Option(help="Seed of the first repeat.")] = 0,
    judge_attempts: JudgeAttemptsOpt = MAX_ATTEMPTS,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Directory for calibration.json and calibration.md (default: evals/TASK, "
            "where `ima eval` reports pick it up)."
        ),
    ] = None,
) -> None:
    """Can the judge tell a strong design from degraded ones? Accuracy, spread, agreement.

    Scores the task's reference design and its degraded variants (no face blurring, over
    budget, no costs, no figures, a contradicting JSON spec, no safety-event path,
    boilerplate) and reports pairwise accuracy, score spread and agreement between
    repeats, with a verdict on whether the judge can discriminate.

    The set lives beside the task file (ima/tasks/calibration/TASK/). Results go to
    OUT/calibration.json (one entry per judge model) and OUT/calibration.md; `ima eval`
    shows them in report.md beside the judge's verdicts.

    Examples:\n
      ima eval calibrate --judge-model ollama:qwen2.5:14b\n
      ima eval calibrate --judge-model embedded --repeats 2
    """
    settings = RunContext()
    model_spec = judge_model or settings.model
    cal = calibration.load_set(task)
    directory = out or Path("evals") / cal.task.id
    if repeats < 1:
        raise UserError("--repeats must be at least 1")
    if judge_attempts < 1:
        raise UserError("--judge-attempts must be at least 1")

    def judge_for(repeat: int) -> Any:
        return load_chat_model(
            model_spec, judge_seed + repeat, 0.0, settings.call_timeout, weights=settings.weights
        )

    first = judge_for(0)  # a bad model spec fails here, before any work
    console.print(
        f"calibrating [bold]{model_spec}[/bold] ({describe_model(first)}) on "
        f"{cal.task.id} v{cal.task.version}: reference + {len(cal.variants)} variants x "
        f"{repeats} repeat(s) · temperature 0",
        highlight=False,
    )
    total = len(cal.designs) * repeats
    progress = Progress(
        TextColumn("calibrate"),
        BarColumn(bar_width=30),
        MofNCompleteColumn(),
        TextColumn("verdicts ·"),
        TimeElapsedColumn(),
        TextColumn("{task.description}", style="dim"),
        console=console,
    )

    def notify(event: JudgeEvent) -> None:
        if event.verdict is None:
            progress.update(bar, description=f"judging {event.design} (repeat {event.repeat + 1})")
            return
        v = event.verdict
        scores = (
            "/".join(str(v["scores"][m]) for m in METRICS)
            if v["status"] == "ok"
            else f"[red]failed[/red] ({v.get('error', '')})"
        )
        progress.console.print(
            f"  {event.design} · repeat {event.repeat + 1}: {scores} · {v['seconds']:.0f}s",
            highlight=False,
        )
        progress.advance(bar)

    with progress:
        bar = progress.add_task("", total=total)
        try:
            entry = calibration.calibrate(
                cal,
                judge_for,
                judge_model=model_spec,
                judge_seed=judge_seed,
                repeats=repeats,
                attempts=judge_attempts,
                notify=notify,
            )
        except KeyboardInterrupt:
            progress.stop()
            raise Interrupted("interrupted: nothing written") from None
    json_path, md_path = calibration.write_calibration(directory, entry)
    console.print(_table(entry))
    line = entry["analysis"]["verdict"]["line"]
    style = "green" if entry["analysis"]["verdict"]["discriminates"] else "bold red"
    console.print(f"[{style}]verdict: {line}[/{style}]", highlight=False)
    console.print(f"calibration: {json_path}\nsection: {md_path}", highlight=False)


def _pct(t: dict[str, Any]) -> str:
    acc = t["accuracy"]
    return "n/a" if acc is None else f"{acc:.0%} ({t['wins']}/{t['ties']}/{t['losses']})"


def _table(entry: dict[str, Any]) -> Table:
    a = entry["analysis"]
    spread, agree = a["spread"], a["agreement"]
    table = Table(
        title=f"Judge calibration · {entry['judge']['model']}",
        caption=(
            "accuracy: reference above the variant (wins/ties/losses, a tie counts half) · "
            f"spread sd {_fmt(spread['sd_of_design_means'])} · agreement between repeats "
            f"{'n/a' if agree['exact'] is None else format(agree['exact'], '.0%')} · "
            f"failed verdicts {a['failed_verdicts']}/{a['verdicts']} · degenerate-looking "
            f"{entry['warned_verdicts']}"
        ),
    )
    for col, justify in (
        ("Design", "left"),
        ("Should lower", "left"),
        ("Accuracy on them", "right"),
        ("Accuracy on mean", "right"),
        ("Mean score", "right"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    table.add_row(REFERENCE, "", "", "", _fmt(a["designs"][REFERENCE]["mean"]))
    for v in a["variants"]:
        table.add_row(
            v["id"],
            ", ".join(SHORT.get(c, c) for c in v["lowers"]),
            _pct(v["targeted"]),
            _pct(v["overall"]),
            _fmt(v["mean"]),
        )
    table.add_row(
        "all", "", _pct(a["accuracy"]["targeted"]), _pct(a["accuracy"]["overall"]), "", style="bold"
    )
    return table


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"
