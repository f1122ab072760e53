"""The report's sections on how the evaluation ran (ima/evals/report.py puts them together):
its configuration and what judging cost, and every run with its judge's verdict."""

from __future__ import annotations

from typing import Any

from ima.evals.comparison import coverage_text, scores_text, system_of
from ima.evals.judge import LABELS, METRICS


def md_table(header: list[str], body: list[list[str]], align: str = "") -> list[str]:
    """A Markdown table's lines; `align` per column: l (default for the first) or r."""
    aligns = align or "l" + "r" * (len(header) - 1)
    sep = ["---:" if a == "r" else "---" for a in aligns]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in body]
    return lines


def config_md(config: dict[str, Any] | None, rows: list[dict[str, Any]]) -> list[str]:
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
        lines += md_table(["Setting", "Value"], [[k, v] for k, v in items], "ll")
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


def runs_md(rows: list[dict[str, Any]]) -> list[str]:
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
    lines += md_table(
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
