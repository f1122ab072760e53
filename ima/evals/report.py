"""Analysis of stored runs: the Table-1-style comparison (terminal and Markdown), per
requirement coverage, ablations across templates and budgets, and every run's settings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ima.evals.calibration import calibration_md
from ima.evals.judge import LABELS, METRICS
from ima.evals.metrics import Metric, metrics_for
from ima.evals.stats import Summary, ranksum_p, ratio, summarize
from ima.evals.store import write_text_atomic

REPORT_FILE = "report.md"
SYSTEMS = ("baseline", "intrinsic")

# The paper's Table 1 (baseline, intrinsic memory), for orientation only: other models, tasks.
PAPER_TABLE_1 = {
    "tokens": (36077, 47830),
    "turns": (14.3, 16.0),
    "scalability": (3.75, 7.0),
    "reliability": (2.37, 4.9),
    "usability": (3.25, 4.9),
    "cost_effectiveness": (2.37, 4.7),
    "documentation": (3.87, 5.4),
}


def system_of(row: dict[str, Any]) -> str:
    return "intrinsic" if row["condition"]["memory_mode"] == "intrinsic" else "baseline"


@dataclass
class Comparison:
    metric: Metric
    baseline: Summary
    intrinsic: Summary
    p: float | None


@dataclass
class Cell:
    """One comparison: intrinsic memory with a template and budget against the baseline
    with the same budget (the baseline has no memory, so no template)."""

    template: str
    budget: int
    baseline: list[dict[str, Any]] = field(default_factory=list)
    intrinsic: list[dict[str, Any]] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"template {self.template} · budget {self.budget}"

    @property
    def suffix(self) -> str:
        return f"{self.template}-b{self.budget}"

    def runs(self, system: str) -> list[dict[str, Any]]:
        return self.baseline if system == "baseline" else self.intrinsic

    def compare(self) -> list[Comparison]:
        out = []
        for metric in metrics_for(self.baseline + self.intrinsic):
            b = [metric.get(r) for r in self.baseline]
            i = [metric.get(r) for r in self.intrinsic]
            b_vals = [v for v in b if v is not None]
            i_vals = [v for v in i if v is not None]
            out.append(
                Comparison(metric, summarize(b_vals), summarize(i_vals), ranksum_p(b_vals, i_vals))
            )
        return out

    def token_ratio(self) -> float | None:
        rows = {c.metric.name: c for c in self.compare()}
        tokens = rows["tokens"]
        return ratio(tokens.intrinsic.mean, tokens.baseline.mean)


def cells(rows: list[dict[str, Any]]) -> list[Cell]:
    """Comparison cells, one per (template, budget) of the intrinsic runs."""
    intrinsic = [r for r in rows if system_of(r) == "intrinsic"]
    baseline = [r for r in rows if system_of(r) == "baseline"]
    combos = sorted(
        {(r["condition"]["template"], r["condition"]["token_budget"]) for r in intrinsic}
    )
    if not combos:
        combos = sorted({("-", r["condition"]["token_budget"]) for r in baseline})
    found = []
    for template, budget in combos:
        cell = Cell(template, budget)
        cell.baseline = _by_seed([r for r in baseline if r["condition"]["token_budget"] == budget])
        cell.intrinsic = _by_seed(
            [
                r
                for r in intrinsic
                if (r["condition"]["template"], r["condition"]["token_budget"])
                == (template, budget)
            ]
        )
        found.append(cell)
    return found


def _by_seed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["condition"]["seed"])


# ----------------------------------------------------------------------------- formatting


def fmt(value: float | None, spec: str = ",.1f") -> str:
    return "n/a" if value is None else format(value, spec)


def fmt_p(p: float | None) -> str:
    if p is None:
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3g}"


def fmt_ratio(r: float | None) -> str:
    return "n/a" if r is None else f"{r:.2f} ({(r - 1) * 100:+.0f}%)"


def _status_counts(runs: Iterable[dict[str, Any]]) -> str:
    counts = Counter(r["status"] for r in runs)
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none"


def _judge_failures(runs: list[dict[str, Any]]) -> int:
    return sum((r.get("judge") or {}).get("status") != "ok" for r in runs)


def _judge_warnings(runs: list[dict[str, Any]]) -> int:
    return sum(
        bool((r.get("judge") or {}).get("warnings"))
        for r in runs
        if (r.get("judge") or {}).get("status") == "ok"
    )


def _scores(row: dict[str, Any]) -> str:
    verdict = row.get("judge") or {}
    if verdict.get("status") != "ok":
        return f"failed ({verdict.get('attempts', 0)} attempts)"
    mark = " ⚠" if verdict.get("warnings") else ""
    return "/".join(str(verdict["scores"][m]) for m in METRICS) + mark


def _cov(row: dict[str, Any], field_name: str = "coverage") -> str:
    c = row.get(field_name) or {}
    if c.get("score") is None:
        return "n/a"
    return f"{len(c['covered'])}/{c['checked']}"


# ----------------------------------------------------------------------------- terminal


def comparison_table(cell: Cell) -> Table:
    """Table 1 of the paper, for this cell: mean ± sd and median per system, p-value."""
    table = Table(
        title=f"Intrinsic memory vs baseline · {cell.label}",
        caption=(
            f"runs: baseline {len(cell.baseline)} ({_status_counts(cell.baseline)}), "
            f"intrinsic {len(cell.intrinsic)} ({_status_counts(cell.intrinsic)}) · "
            f"failed judge verdicts (excluded): {_judge_failures(cell.baseline)} baseline, "
            f"{_judge_failures(cell.intrinsic)} intrinsic · degenerate-looking verdicts: "
            f"{_judge_warnings(cell.baseline) + _judge_warnings(cell.intrinsic)} · "
            f"token ratio intrinsic/baseline {fmt_ratio(cell.token_ratio())} (paper +32%)"
        ),
    )
    table.add_column("Metric", no_wrap=True)
    table.add_column("Baseline\nmean ± sd", justify="right", no_wrap=True)
    table.add_column("Intrinsic\nmean ± sd", justify="right", no_wrap=True)
    table.add_column("median\nB / I", justify="right", no_wrap=True)
    table.add_column("p\nrank-sum", justify="right", no_wrap=True)
    for c in cell.compare():
        style = "bold" if c.metric.name in ("tokens", "coverage", "judge_mean") else None
        table.add_row(
            c.metric.terminal_label,
            _pm(c.baseline, c.metric.fmt),
            _pm(c.intrinsic, c.metric.fmt),
            f"{fmt(c.baseline.median, c.metric.fmt)} / {fmt(c.intrinsic.median, c.metric.fmt)}",
            fmt_p(c.p),
            style=style,
        )
    return table


def terminal_view(rows: list[dict[str, Any]]) -> Group:
    parts: list[Any] = [comparison_table(c) for c in cells(rows)]
    if not parts:
        parts = [Text("no finished runs stored yet")]
    return Group(*parts)


def calibration_line(calibration: dict[str, Any] | None, note: str = "") -> str:
    """One line on the judge's calibration, for beside its verdicts."""
    if calibration is None:
        return f"Judge calibration: none ({note})" if note else "Judge calibration: none"
    return f"Judge calibration ({calibration['judge']['model']}): {calibration['analysis']['verdict']['line']}"


def print_report(
    console: Console,
    rows: list[dict[str, Any]],
    calibration: dict[str, Any] | None = None,
    note: str = "",
) -> None:
    console.print(terminal_view(rows))
    if rows:
        fails = calibration is not None and not calibration["analysis"]["verdict"]["discriminates"]
        style = "bold red" if fails else "dim"
        console.print(calibration_line(calibration, note), style=style, highlight=False)


# ----------------------------------------------------------------------------- Markdown


def _md_table(header: list[str], body: list[list[str]], align: str = "") -> list[str]:
    aligns = align or "l" + "r" * (len(header) - 1)
    sep = ["---:" if a == "r" else "---" for a in aligns]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in body]
    return lines


def _comparison_md(
    cell: Cell,
    plots: dict[str, str],
    requirements: dict[str, str],
    calibration: dict[str, Any] | None = None,
    note: str = "",
) -> list[str]:
    lines = [f"## Results: {cell.label}", ""]
    lines.append(
        f"Runs: baseline {len(cell.baseline)} ({_status_counts(cell.baseline)}); "
        f"intrinsic {len(cell.intrinsic)} ({_status_counts(cell.intrinsic)}). "
        f"Failed judge verdicts (excluded from the judge rows): baseline "
        f"{_judge_failures(cell.baseline)}, intrinsic {_judge_failures(cell.intrinsic)}."
    )
    lines += ["", calibration_line(calibration, note) + "."]
    if calibration is not None and calibration["analysis"]["verdict"]["discriminates"] is False:
        lines += [
            "",
            "**Caution:** on the calibration set this judge cannot tell the reference design "
            "from degraded ones (see Judge calibration), so its rows below should not carry a "
            "conclusion; lean on the objective metrics.",
        ]
    warned = _judge_warnings(cell.baseline) + _judge_warnings(cell.intrinsic)
    if warned:
        lines += [
            "",
            f"**Caution:** {warned} scored verdict(s) look degenerate (marked ⚠ under Runs: "
            "their rationales restate the criteria or repeat each other), so the judge model "
            "may not be assessing the designs; prefer a stronger --judge-model, and lean on "
            "requirement coverage.",
        ]
    lines += [
        "",
        f"**Token ratio intrinsic/baseline: {fmt_ratio(cell.token_ratio())}** (paper: 1.33, +32%).",
        "",
    ]
    body = []
    for c in cell.compare():
        paper = PAPER_TABLE_1.get(c.metric.name)
        body.append(
            [
                c.metric.label,
                *(
                    fmt(v, c.metric.fmt)
                    for s in (c.baseline, c.intrinsic)
                    for v in (s.mean, s.median, s.std)
                ),
                f"{c.baseline.n}/{c.intrinsic.n}",
                fmt_p(c.p),
                f"{paper[0]:,g} → {paper[1]:,g}" if paper else "",
            ]
        )
    lines += _md_table(
        [
            "Metric",
            "Baseline mean",
            "median",
            "sd",
            "Intrinsic mean",
            "median",
            "sd",
            "n (B/I)",
            "p (rank-sum)",
            "Paper B → I",
        ],
        body,
    )
    for name, title in (("judge", "Judge scores"), ("objective", "Objective metrics")):
        if name in plots:
            lines += ["", f"![{title}, {cell.label}]({plots[name]})"]
    lines += ["", "### Requirement coverage per requirement (evidence check)", ""]
    reqs = _requirement_ids(cell.baseline + cell.intrinsic)
    body = []
    for rid in reqs:
        counts = []
        for system in SYSTEMS:
            runs = [
                r for r in cell.runs(system) if rid in (r.get("coverage") or {}).get("details", {})
            ]
            hit = sum(r["coverage"]["details"][rid]["covered"] for r in runs)
            counts.append(f"{hit}/{len(runs)}")
        if any(r.get("coverage_llm") for r in cell.baseline + cell.intrinsic):
            for system in SYSTEMS:
                runs = [r for r in cell.runs(system) if r.get("coverage_llm")]
                decided = [r["coverage_llm"]["details"].get(rid, {}).get("addressed") for r in runs]
                decided = [d for d in decided if d is not None]
                counts.append(f"{sum(decided)}/{len(decided)}")
        body.append([rid, _short(requirements.get(rid, "")), *counts])
    header = ["Req", "Requirement", "Baseline", "Intrinsic"]
    if any(r.get("coverage_llm") for r in cell.baseline + cell.intrinsic):
        header += ["Baseline (LLM)", "Intrinsic (LLM)"]
    lines += _md_table(header, body, "ll" + "r" * (len(header) - 2))
    return lines


def _requirement_ids(rows: list[dict[str, Any]]) -> list[str]:
    ids: dict[str, None] = {}
    for r in rows:
        for rid in (r.get("coverage") or {}).get("details", {}):
            ids[rid] = None
    return list(ids)


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _ablation_md(all_cells: list[Cell], plots: dict[str, str]) -> list[str]:
    lines = ["## Ablation: templates and budgets", ""]
    lines.append(
        "Means ± sample standard deviation. Each intrinsic row is compared with the baseline "
        "of the same budget (p: rank-sum, intrinsic vs that baseline)."
    )
    lines.append("")
    keys = ["tokens", "turns", "coverage", "judge_mean", *METRICS]
    labels = ["Tokens", "Turns", "Coverage (%)", "Judge mean", *(LABELS[m] for m in METRICS)]
    body = []
    seen_baselines: set[int] = set()
    for cell in all_cells:
        comps = {c.metric.name: c for c in cell.compare()}
        if cell.budget not in seen_baselines:
            seen_baselines.add(cell.budget)
            body.append(
                [f"baseline · budget {cell.budget}", str(len(cell.baseline))]
                + [_pm(comps[k].baseline, comps[k].metric.fmt) for k in keys]
            )
        body.append(
            [f"intrinsic · {cell.label}", str(len(cell.intrinsic))]
            + [
                f"{_pm(comps[k].intrinsic, comps[k].metric.fmt)} (p {fmt_p(comps[k].p)})"
                for k in keys
            ]
        )
    lines += _md_table(["Condition", "n", *labels], body)
    if "ablation" in plots:
        lines += ["", f"![Ablation]({plots['ablation']})"]
    return lines


def _pm(s: Summary, spec: str) -> str:
    if s.mean is None:
        return "n/a"
    return f"{fmt(s.mean, spec)} ± {fmt(s.std, spec)}" if s.std is not None else fmt(s.mean, spec)


def _config_md(config: dict[str, Any] | None, rows: list[dict[str, Any]]) -> list[str]:
    lines = ["## Configuration", ""]
    if config:
        settings = config.get("settings", {})
        items = [
            (
                "task",
                f"{config['task']['id']} v{config['task']['version']} "
                f"(fingerprint {config['task']['fingerprint']})",
            ),
            ("agent model", settings.get("model", "")),
            ("memory model", settings.get("memory_model") or "(the agents' model)"),
            (
                "judge model",
                f"{config['judge']['model']} (temperature 0, seed {config['judge']['seed']}, "
                f"up to {config['judge']['attempts']} attempts per verdict)",
            ),
            ("seeds (pairs)", _seeds(rows)),
            ("templates", ", ".join(config["templates"])),
            ("token budgets", ", ".join(str(b) for b in config["budgets"])),
            ("turn cap", str(settings.get("turn_cap", ""))),
            (
                "requirement coverage",
                "evidence keywords (primary)"
                + (
                    " and an LLM yes/no check per requirement" if config.get("llm_coverage") else ""
                ),
            ),
            (
                "other run settings",
                ", ".join(
                    f"{k}={v}"
                    for k, v in sorted(settings.items())
                    if k
                    not in ("model", "memory_model", "turn_cap", "template", "token_budget", "seed")
                ),
            ),
        ]
        if config.get("command"):
            items.insert(0, ("command", f"`{config['command']}`"))
        lines += _md_table(["Setting", "Value"], [[k, v] for k, v in items], "ll")
    judge_tokens = sum(
        ((r.get("judge") or {}).get("usage") or {}).get("input_tokens", 0)
        + ((r.get("judge") or {}).get("usage") or {}).get("output_tokens", 0)
        for r in rows
    )
    check_tokens = sum(
        ((r.get("coverage_llm") or {}).get("usage") or {}).get("input_tokens", 0)
        + ((r.get("coverage_llm") or {}).get("usage") or {}).get("output_tokens", 0)
        for r in rows
    )
    lines += [
        "",
        f"Evaluation cost, not counted in the systems' tokens: judge {judge_tokens:,} "
        f"tokens, LLM requirement checks {check_tokens:,} tokens.",
    ]
    return lines


def _seeds(rows: list[dict[str, Any]]) -> str:
    seeds = sorted({r["condition"]["seed"] for r in rows})
    return f"{len(seeds)}: {', '.join(map(str, seeds))}" if seeds else "none yet"


def _runs_md(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["## Runs", ""]
    body = []
    for r in sorted(
        rows,
        key=lambda r: (
            r["condition"]["token_budget"],
            r["condition"]["seed"],
            system_of(r),
            r["condition"].get("template") or "",
        ),
    ):
        c, s = r["condition"], r.get("settings", {})
        tokens = (r.get("usage") or {}).get("total") or {}
        body.append(
            [
                f"`{r['thread_id']}`",
                system_of(r),
                c.get("template") or "-",
                str(c["token_budget"]),
                str(c["seed"]),
                s.get("model", ""),
                str(s.get("turn_cap", "")),
                r["status"],
                str(r["turns"]),
                f"{tokens.get('input_tokens', 0) + tokens.get('output_tokens', 0):,}",
                f"{r['wall_seconds']:.1f}",
                _cov(r) + (f" · LLM {_cov(r, 'coverage_llm')}" if r.get("coverage_llm") else ""),
                _scores(r),
            ]
        )
    lines += _md_table(
        [
            "Thread",
            "System",
            "Template",
            "Budget",
            "Seed",
            "Model",
            "Turn cap",
            "Status",
            "Turns",
            "Tokens",
            "Wall s",
            "Coverage",
            "Judge S/R/U/C/D",
        ],
        body,
        "lllrrlrlrrrrl",
    )
    warned = [r for r in rows if (r.get("judge") or {}).get("warnings")]
    if warned:
        lines += ["", "### Judge verdicts with warnings (scored, marked ⚠)", ""]
        for r in warned:
            lines.append(f"- `{r['thread_id']}`: {'; '.join(r['judge']['warnings'])}")
    failed = [r for r in rows if (r.get("judge") or {}).get("status") != "ok"]
    if failed:
        lines += ["", "### Failed judge verdicts", ""]
        for r in failed:
            v = r.get("judge") or {}
            lines.append(
                f"- `{r['thread_id']}`: {v.get('attempts', 0)} attempts; {v.get('error', '')}"
            )
    lines += ["", "### Judge rationales", ""]
    for r in rows:
        v = r.get("judge") or {}
        if v.get("status") != "ok":
            continue
        lines += [f"<details><summary><code>{r['thread_id']}</code>: {_scores(r)}</summary>", ""]
        lines += [f"- **{LABELS[m]} {v['scores'][m]}**: {v['rationales'][m]}" for m in METRICS]
        lines += ["", "</details>", ""]
    return lines


def markdown_report(
    rows: list[dict[str, Any]],
    config: dict[str, Any] | None,
    plots: dict[str, dict[str, str]],
    calibration: dict[str, Any] | None = None,
    note: str = "",
) -> str:
    all_cells = cells(rows)
    title = "Evaluation: intrinsic memory agents vs the memoryless baseline"
    if config:
        title += f" on {config['task']['id']}"
    lines = [
        f"# {title}",
        "",
        f"Generated {datetime.now():%Y-%m-%d %H:%M} from {len(rows)} stored runs.",
    ]
    lines += [
        "",
        "Each comparison holds paired runs (the same seeds) of both systems. Statistics: mean, "
        "median and sample standard deviation (n-1); p-values from the two-sided Wilcoxon "
        "rank-sum test (scipy.stats.ranksums, normal approximation), as in the paper. "
        "Requirement coverage (primary: the deterministic evidence check of the task's keyword "
        "groups) is the share of the task's requirements the final design addresses. Judge "
        "scores are 1-10; failed verdicts are counted and left out. Content metrics (no "
        "model): brief figures stated (the task's key figures found in design.md, in "
        "design.json, in both; conflicts: the spec's field for a figure holds another number), "
        "parroting (share of word 8-grams copied verbatim from the brief, the instructions or "
        "earlier turns; per turn, averaged per run, and for the final design) and repetition "
        "(share of a turn's 8-grams repeating the same agent's earlier turns).",
        "",
    ]
    lines += _config_md(config, rows)
    lines += ["", *_calibration_section(calibration, note)]
    for cell in all_cells:
        requirements = (config or {}).get("requirements", {})
        lines += [
            "",
            *_comparison_md(cell, plots.get(cell.suffix, {}), requirements, calibration, note),
        ]
    if len(all_cells) > 1:
        lines += ["", *_ablation_md(all_cells, plots.get("_all", {}))]
    lines += ["", *_runs_md(rows)]
    return "\n".join(lines).rstrip() + "\n"


def _calibration_section(calibration: dict[str, Any] | None, note: str) -> list[str]:
    if calibration is None:
        return ["## Judge calibration", "", f"None: {note or 'no calibration file'}."]
    return calibration_md(calibration, level=2)


def write_report(
    directory: Path,
    rows: list[dict[str, Any]],
    config: dict[str, Any] | None,
    calibration: dict[str, Any] | None = None,
    note: str = "",
) -> dict[str, Any]:
    """report.md and the PNG plots in `directory`; returns their paths."""
    from ima.evals import plots as plotting

    all_cells = cells(rows)
    made: dict[str, dict[str, str]] = {}
    single = len(all_cells) == 1
    for cell in all_cells:
        suffix = "" if single else f"-{cell.suffix}"
        made[cell.suffix] = {
            "judge": plotting.judge_boxplot(cell, directory / f"judge_scores{suffix}.png"),
            "objective": plotting.objective_boxplot(cell, directory / f"objective{suffix}.png"),
        }
    if len(all_cells) > 1:
        made["_all"] = {
            "ablation": plotting.ablation_boxplot(all_cells, directory / "ablation.png")
        }
    made = {k: {n: p for n, p in v.items() if p} for k, v in made.items()}
    report = directory / REPORT_FILE
    write_text_atomic(report, markdown_report(rows, config, made, calibration, note))
    return {"report": report, "plots": [directory / p for v in made.values() for p in v.values()]}
