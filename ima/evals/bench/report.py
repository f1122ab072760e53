"""A benchmark's report, like the paper's Table 4: per memory arm the reward (the
environment's progress, averaged over the tasks of a seed) as mean and standard deviation
across seeds, the success rate, steps, tokens and time per task; the oracle's row (its path
replayed within the step limit: what the arms aim at); the paper's published figures beside
ours where it reports the benchmark; a table per task linking every episode's page; a plot
like its Figure 2."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ima.core.files import write_text_atomic
from ima.evals.bench.oracle import oracle_rows
from ima.evals.bench.plan import plan_from_config
from ima.evals.bench.plots import reward_plot
from ima.planning import ARMS, Adapter, get_adapter
from ima.view.episode import write_episode

EPISODES_DIR = "episodes"
REPORT_FILE = "report.md"


def plot_file(env: str) -> str:
    return f"{env}_reward.png"


@dataclass(frozen=True)
class ArmSummary:
    arm: str
    episodes: int
    tasks: int
    seeds: int
    reward_mean: float  # of the per-seed means
    reward_sd: float  # across seeds (0 with one seed)
    seed_means: tuple[float, ...]
    success_rate: float
    steps: float  # per episode
    tokens: float  # per episode (= per task and seed)
    input_tokens: float
    model_seconds: float  # per episode: the model calls' own time
    wall_seconds: float  # per episode, as run (a resumed episode: since its resumption)


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.fmean(values) if values else 0.0


def summarize(rows: list[dict[str, Any]]) -> list[ArmSummary]:
    """One summary per arm present, in the order of ARMS."""
    by_arm: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_arm[row["arm"]].append(row)
    out = []
    for arm in sorted(by_arm, key=lambda a: ARMS.index(a) if a in ARMS else len(ARMS)):
        group = by_arm[arm]
        by_seed: dict[int, list[float]] = defaultdict(list)
        for row in group:
            by_seed[row["seed"]].append(row["reward"])
        seed_means = tuple(_mean(v) for _, v in sorted(by_seed.items()))
        out.append(
            ArmSummary(
                arm=arm,
                episodes=len(group),
                tasks=len({r["task"] for r in group}),
                seeds=len(seed_means),
                reward_mean=_mean(seed_means),
                reward_sd=statistics.stdev(seed_means) if len(seed_means) > 1 else 0.0,
                seed_means=seed_means,
                success_rate=_mean(r["success"] for r in group),
                steps=_mean(r["steps"] for r in group),
                tokens=_mean(r["input_tokens"] + r["output_tokens"] for r in group),
                input_tokens=_mean(r["input_tokens"] for r in group),
                model_seconds=_mean(r["model_seconds"] for r in group),
                wall_seconds=_mean(r["wall_seconds"] for r in group),
            )
        )
    return out


def episode_page(row: dict[str, Any]) -> str:
    """The episode page's path inside the benchmark's folder: by arm, task and seed."""
    return f"{EPISODES_DIR}/{row['arm']}-{row['task']}-s{row['seed']}.html"


@dataclass(frozen=True)
class OracleSummary:
    tasks: int
    reward: float  # mean over the tasks
    success_rate: float
    steps: float  # per task
    within_limit: int  # tasks it solves within their step limit


def summarize_oracle(oracle: list[dict[str, Any]]) -> OracleSummary:
    return OracleSummary(
        tasks=len(oracle),
        reward=_mean(r["reward"] for r in oracle),
        success_rate=_mean(r["success"] for r in oracle),
        steps=_mean(r["steps"] for r in oracle),
        within_limit=sum(r["success"] for r in oracle),
    )


def _published_rows(adapter: Adapter, summaries: list[ArmSummary], model: str) -> list[str]:
    ours = {s.arm: s for s in summaries}
    lines = [
        f"| paper's model | memory (paper) | paper's reward | our arm | ours ({model}) |",
        "|---|---|---:|---|---:|",
    ]
    for p in adapter.published:
        mine = ours.get(p.arm)
        value = f"{mine.reward_mean:.3f} ± {mine.reward_sd:.3f}" if mine else "not run"
        lines.append(f"| {p.model} | {p.memory} | {p.reward:.3f} | {p.arm} | {value} |")
    return lines


def _oracle_cell(row: dict[str, Any]) -> str:
    if row["success"]:
        return f"{row['reward']:.2f} · {row['steps']} steps"
    return f"{row['reward']:.2f} · not solved in {row['steps']} steps (path {row['oracle_length']})"


def _task_rows(
    rows: list[dict[str, Any]], arms: list[str], oracle: list[dict[str, Any]]
) -> list[str]:
    cells: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        cells[(row["task"], row["arm"])].append(row)
    lines = [
        "| task | step limit | oracle | " + " | ".join(arms) + " |",
        "|---|---:|---|" + "---|" * len(arms),
    ]
    for best in oracle:
        parts = []
        for arm in arms:
            group = sorted(cells.get((best["task"], arm), []), key=lambda r: r["seed"])
            if not group:
                parts.append("")
                continue
            links = " ".join(f"[s{r['seed']}]({episode_page(r)})" for r in group)
            solved = sum(r["success"] for r in group)
            parts.append(
                f"{_mean(r['reward'] for r in group):.2f} · {solved}/{len(group)} solved · "
                f"{_mean(r['steps'] for r in group):.0f} steps · {links}"
            )
        lines.append(
            f"| {best['task']} | {best['step_limit']} | {_oracle_cell(best)} | "
            + " | ".join(parts)
            + " |"
        )
    return lines


def _limits(settings: dict[str, Any], oracle: list[dict[str, Any]]) -> str:
    if settings.get("step_limit") is not None:
        return f"step limit {settings['step_limit']}"
    limits = [r["step_limit"] for r in oracle]
    return f"each task's own step limit ({min(limits)} to {max(limits)}, from the catalog)"


def markdown(
    rows: list[dict[str, Any]],
    config: dict[str, Any],
    oracle: list[dict[str, Any]],
    jobs: dict[str, Any] | None = None,
) -> str:
    adapter = get_adapter(config["kind"])
    summaries = summarize(rows)
    best = summarize_oracle(oracle)
    settings = config.get("settings") or {}
    model = config.get("model", "?")
    budget = settings.get("token_budget", settings.get("budget"))
    lines = [
        f"# {adapter.title} benchmark",
        "",
        f"Model `{model}` at temperature {config.get('temperature')}; {_limits(settings, oracle)}, "
        f"token budget {budget}, memory {settings.get('memory_tokens')} tokens "
        f"({settings.get('memory_update')}), summary every {settings.get('summary_every')} "
        f"steps; {len(rows)} episodes.",
        "",
        f"Reward: {adapter.reward_note}, averaged over the tasks of each seed; mean and "
        "standard deviation across seeds, as in the paper's Table 4. Tokens: every model call "
        "of an episode (agent turns, memory updates, summaries, templates), per task; model s "
        f"and wall s per task too. The oracle row is {adapter.oracle_note}, replayed through the "
        f"environment within the step limit: {best.within_limit} of {best.tasks} tasks solved "
        "by it, the bar the arms aim at.",
        "",
        "| arm | episodes | seeds | reward | sd | success | steps | tokens per task | "
        "input tokens | model s | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summaries:
        lines.append(
            f"| {s.arm} | {s.episodes} | {s.seeds} | {s.reward_mean:.3f} | {s.reward_sd:.3f} | "
            f"{s.success_rate:.0%} | {s.steps:.1f} | {s.tokens:,.0f} | {s.input_tokens:,.0f} | "
            f"{s.model_seconds:.1f} | {s.wall_seconds:.1f} |"
        )
    lines += [
        f"| oracle | {best.tasks} | - | {best.reward:.3f} | - | {best.success_rate:.0%} | "
        f"{best.steps:.1f} | - | - | - | - |",
        "",
        f"![reward per arm]({plot_file(adapter.name)})",
        "",
    ]
    if adapter.published:
        lines += [
            "## The paper's figures beside ours",
            "",
            "Yuen et al., 2025, Table 4 (PDDL, 5 seeded runs, Ollama). The paper's public code "
            "puts the whole trajectory in every prompt (our `full` arm); its ChatDev row is our "
            "`summary` arm. Compare like with like: the same model, problems and step limit.",
            "",
            *_published_rows(adapter, summaries, model),
            "",
        ]
    lines += [
        "## Per task",
        "",
        "The oracle's reward and steps; per arm the mean reward over seeds, episodes solved, "
        "mean steps; each seed links to its episode page (every step, what each agent saw and "
        "did).",
        "",
        *_task_rows(rows, [s.arm for s in summaries], oracle),
        "",
    ]
    if jobs is not None:
        lines += _job_lines(jobs)
    if config.get("command"):
        lines += ["## Command", "", f"    {config['command']}", ""]
    return "\n".join(lines)


def _job_lines(jobs: dict[str, Any]) -> list[str]:
    """The benchmark's jobs as the engine's job table has them (failed ones with their
    error), so a report written before the end says what is missing and why."""
    counts = jobs["counts"]
    states = ("done", "queued", "running", "stalled", "failed", "cancelled")
    lines = [
        "## Jobs",
        "",
        "From the job table: " + ", ".join(f"{counts.get(s, 0)} {s}" for s in states) + ".",
        "",
    ]
    for failure in jobs["failures"]:
        lines.append(f"- `{failure['key']}` failed: {failure['error'] or 'no error recorded'}")
    return [*lines, ""] if jobs["failures"] else lines


def write_report(
    directory: Path,
    rows: list[dict[str, Any]],
    config: dict[str, Any],
    jobs: dict[str, Any] | None = None,
) -> dict:
    """report.md, the plot and one page per episode in `directory`; what was written.
    `jobs`: the benchmark's jobs on the engine (their states, failures and errors)."""
    directory.mkdir(parents=True, exist_ok=True)
    plan = plan_from_config(config)
    ran = {row["task"] for row in rows}  # the oracle over the tasks the arms played
    oracle = oracle_rows(plan.env, [t for t in plan.tasks if t in ran], plan.settings)
    pages = [write_episode(row, directory / episode_page(row)) for row in rows]
    adapter = get_adapter(plan.env)
    plot = reward_plot(
        summarize(rows),
        summarize_oracle(oracle).reward,
        config.get("model", "?"),
        directory / plot_file(plan.env),
        adapter.published,
    )
    report = directory / REPORT_FILE
    write_text_atomic(report, markdown(rows, config, oracle, jobs))
    return {"report": report, "plot": plot, "pages": pages, "oracle": oracle}
