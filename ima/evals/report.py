"""The evaluation report (OUT/report.md): the Table-1-style comparison per cell, requirement
coverage per requirement, ablations across templates and budgets, the judge's calibration
and every run's settings, with the box plots."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

from ima.core.files import write_text_atomic
from ima.evals.calibration import calibration_md
from ima.evals.comparison import (
    PAPER_TABLE_1,
    SYSTEMS,
    Cell,
    calibration_line,
    cells,
    coverage_text,
    fmt,
    fmt_p,
    fmt_ratio,
    judge_failures,
    judge_warnings,
    mean_sd,
    scores_text,
    status_counts,
    system_of,
)
from ima.evals.judge import LABELS, METRICS

REPORT_FILE = "report.md"


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
        f"Runs: baseline {len(cell.baseline)} ({status_counts(cell.baseline)}); "
        f"intrinsic {len(cell.intrinsic)} ({status_counts(cell.intrinsic)}). "
        f"Failed judge verdicts (excluded from the judge rows): baseline "
        f"{judge_failures(cell.baseline)}, intrinsic {judge_failures(cell.intrinsic)}."
    )
    lines += ["", calibration_line(calibration, note) + "."]
    if calibration is not None and calibration["analysis"]["verdict"]["discriminates"] is False:
        lines += [
            "",
            "**Caution:** on the calibration set this judge cannot tell the reference design "
            "from degraded ones (see Judge calibration), so its rows below should not carry a "
            "conclusion; lean on the objective metrics.",
        ]
    warned = judge_warnings(cell.baseline) + judge_warnings(cell.intrinsic)
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
                + [mean_sd(comps[k].baseline, comps[k].metric.fmt) for k in keys]
            )
        body.append(
            [f"intrinsic · {cell.label}", str(len(cell.intrinsic))]
            + [
                f"{mean_sd(comps[k].intrinsic, comps[k].metric.fmt)} (p {fmt_p(comps[k].p)})"
                for k in keys
            ]
        )
    lines += _md_table(["Condition", "n", *labels], body)
    if "ablation" in plots:
        lines += ["", f"![Ablation]({plots['ablation']})"]
    return lines


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
        thread = f"`{r['thread_id']}`"
        body.append(
            [
                f"[{thread}]({r['view']})" if r.get("view") else thread,
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
                coverage_text(r)
                + (f" · LLM {coverage_text(r, 'coverage_llm')}" if r.get("coverage_llm") else ""),
                scores_text(r),
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
        lines += [
            f"<details><summary><code>{r['thread_id']}</code>: {scores_text(r)}</summary>",
            "",
        ]
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
        "model): brief figures stated (the task's key figures the design states in its own "
        "words; conflicts: figures breaking a limit of the brief), the design's requirements "
        "addressed in its own words (the evidence keywords found in what meets each one, "
        "copies of the brief left out), requirements left open, components with a technology "
        "and a reason of their own, lines that are votes, instructions or residue, "
        "parroting (share of word 8-grams copied verbatim from the brief, the instructions or "
        "earlier turns; per turn, averaged per run, and for the final design) and repetition "
        "(share of a turn's 8-grams repeating the same agent's earlier turns). Own items in "
        "view at the last turn: per agent, the share of the key figures and requirements its "
        "role owns that its last prompt held besides the brief (its memory and the recent "
        "turns; the baseline: the recent turns), as the mean over agents. Memory retention "
        "(intrinsic only): the share of the key items, and of each agent's own, its memory "
        "holds.",
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


def _view_link(directory: Path, row: dict[str, Any]) -> str:
    """The run's HTML page relative to the report, if it was written."""
    page = Path(row.get("out_dir") or "") / "view.html"
    return os.path.relpath(page, directory) if row.get("out_dir") and page.exists() else ""


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
    rows = [r | {"view": _view_link(directory, r)} for r in rows]
    report = directory / REPORT_FILE
    write_text_atomic(report, markdown_report(rows, config, made, calibration, note))
    return {"report": report, "plots": [directory / p for v in made.values() for p in v.values()]}
