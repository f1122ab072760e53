"""The benchmark's report, like the paper's Table 4: per memory arm the reward (the
progress rate, averaged over the problems of a seed) as mean and standard deviation across
seeds, the success rate, steps and tokens per problem, with the paper's published figures
beside ours; a table per problem linking every episode's page; a plot like its Figure 2."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ima.core.files import write_text_atomic
from ima.evals.pddl.plots import reward_plot
from ima.planning import ARMS
from ima.view.episode import write_episode

EPISODES_DIR = "episodes"
REPORT_FILE = "report.md"
PLOT_FILE = "pddl_reward.png"


@dataclass(frozen=True)
class Published:
    """A figure the paper reports (Yuen et al., 2025, Table 4: PDDL, progress-rate reward,
    mean of 5 seeded runs, models served by Ollama)."""

    model: str
    memory: str  # as the paper names it
    arm: str  # our arm that implements it
    reward: float


PUBLISHED = (
    Published("Gemma3 12B", "intrinsic memory, generic template", "intrinsic-generic", 0.260),
    Published("Gemma3 12B", "intrinsic memory, LLM-written template", "intrinsic-llm", 0.254),
    Published("Gemma3 12B", "ChatDev (periodic summary)", "summary", 0.223),
    Published("Mistral 7B", "intrinsic memory", "intrinsic-generic", 0.064),
)


@dataclass(frozen=True)
class ArmSummary:
    arm: str
    episodes: int
    problems: int
    seeds: int
    reward_mean: float  # of the per-seed means
    reward_sd: float  # across seeds (0 with one seed)
    seed_means: tuple[float, ...]
    success_rate: float
    steps: float  # per episode
    tokens: float  # per episode (= per problem and seed)
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
                problems=len({r["problem"] for r in group}),
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
    """The episode page's path inside the benchmark's folder."""
    return f"{EPISODES_DIR}/{row['thread_id']}.html"


def _published_rows(summaries: list[ArmSummary], model: str) -> list[str]:
    ours = {s.arm: s for s in summaries}
    lines = [
        f"| paper's model | memory (paper) | paper's reward | our arm | ours ({model}) |",
        "|---|---|---:|---|---:|",
    ]
    for p in PUBLISHED:
        mine = ours.get(p.arm)
        value = f"{mine.reward_mean:.3f} ± {mine.reward_sd:.3f}" if mine else "not run"
        lines.append(f"| {p.model} | {p.memory} | {p.reward:.3f} | {p.arm} | {value} |")
    return lines


def _problem_rows(rows: list[dict[str, Any]], arms: list[str]) -> list[str]:
    cells: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    problems: list[str] = []
    for row in rows:
        cells[(row["problem"], row["arm"])].append(row)
        if row["problem"] not in problems:
            problems.append(row["problem"])
    lines = [
        "| problem | optimal | " + " | ".join(arms) + " |",
        "|---|---:|" + "---|" * len(arms),
    ]
    for problem in problems:
        optimal = next(r["optimal_length"] for r in rows if r["problem"] == problem)
        parts = []
        for arm in arms:
            group = sorted(cells.get((problem, arm), []), key=lambda r: r["seed"])
            if not group:
                parts.append("")
                continue
            links = " ".join(f"[s{r['seed']}]({episode_page(r)})" for r in group)
            solved = sum(r["success"] for r in group)
            parts.append(
                f"{_mean(r['reward'] for r in group):.2f} · {solved}/{len(group)} solved · "
                f"{_mean(r['steps'] for r in group):.0f} steps · {links}"
            )
        lines.append(f"| {problem} | {optimal} | " + " | ".join(parts) + " |")
    return lines


def markdown(rows: list[dict[str, Any]], config: dict[str, Any]) -> str:
    summaries = summarize(rows)
    settings = config.get("settings") or {}
    model = config.get("model", "?")
    lines = [
        "# PDDL planning benchmark",
        "",
        f"Model `{model}` at temperature {config.get('temperature')}; step limit "
        f"{settings.get('step_limit')}, token budget {settings.get('token_budget', settings.get('budget'))}, memory "
        f"{settings.get('memory_tokens')} tokens ({settings.get('memory_update')}), summary every "
        f"{settings.get('summary_every')} steps; {len(rows)} episodes.",
        "",
        "Reward: the progress rate (AgentBoard), the best fraction of the goal's facts reached "
        "in an episode, averaged over the problems of each seed; mean and standard deviation "
        "across seeds, as in the paper's Table 4. Tokens: every model call of an episode (agent "
        "turns, memory updates, summaries, templates), per problem; model s and wall s per "
        "problem too.",
        "",
        "| arm | episodes | seeds | reward | sd | success | steps | tokens per problem | "
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
        "",
        f"![reward per arm]({PLOT_FILE})",
        "",
        "## The paper's figures beside ours",
        "",
        "Yuen et al., 2025, Table 4 (PDDL, 5 seeded runs, Ollama). The paper's public code "
        "puts the whole trajectory in every prompt (our `full` arm); its ChatDev row is our "
        "`summary` arm. Compare like with like: the same model, problems and step limit.",
        "",
        *_published_rows(summaries, model),
        "",
        "## Per problem",
        "",
        "Mean reward over seeds, episodes solved, mean steps; each seed links to its episode "
        "page (every step, what each agent saw and did).",
        "",
        *_problem_rows(rows, [s.arm for s in summaries]),
        "",
    ]
    if config.get("command"):
        lines += ["## Command", "", f"    {config['command']}", ""]
    return "\n".join(lines)


def write_report(directory: Path, rows: list[dict[str, Any]], config: dict[str, Any]) -> dict:
    """report.md, the plot and one page per episode in `directory`; what was written."""
    directory.mkdir(parents=True, exist_ok=True)
    pages = [write_episode(row, directory / episode_page(row)) for row in rows]
    plot = reward_plot(summarize(rows), config.get("model", "?"), directory / PLOT_FILE, PUBLISHED)
    report = directory / REPORT_FILE
    write_text_atomic(report, markdown(rows, config))
    return {"report": report, "plot": plot, "pages": pages}
