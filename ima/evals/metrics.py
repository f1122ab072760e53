"""The metrics compared between systems, read from one stored run (a results.jsonl line)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ima.evals.judge import LABELS, METRICS

# Call kinds in the order the report lists them (others follow alphabetically).
KIND_ORDER = ("agent_turn", "memory_update", "template_generation", "documentation")
KIND_SHORT = {
    "agent_turn": "turns",
    "memory_update": "memory",
    "template_generation": "templates",
    "documentation": "docs",
}
SHORT = {"cost_effectiveness": "Cost-eff.", "documentation": "Docs"}


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    get: Callable[[dict[str, Any]], float | None]
    fmt: str = ",.1f"
    judge: bool = False
    short: str = ""  # label in the terminal table

    @property
    def terminal_label(self) -> str:
        return self.short or self.label


def _tokens(row: dict[str, Any], kind: str | None = None) -> float | None:
    usage = row.get("usage") or {}
    bucket = usage.get("total") if kind is None else (usage.get("by_kind") or {}).get(kind)
    if bucket is None:
        return None if kind is None else 0.0
    return float(bucket.get("input_tokens", 0) + bucket.get("output_tokens", 0))


def _judge(metric: str) -> Callable[[dict[str, Any]], float | None]:
    def get(row: dict[str, Any]) -> float | None:
        verdict = row.get("judge") or {}
        if verdict.get("status") != "ok":
            return None  # failed verdicts are counted, never scored
        return float(verdict["scores"][metric])

    return get


def _judge_mean(row: dict[str, Any]) -> float | None:
    verdict = row.get("judge") or {}
    if verdict.get("status") != "ok":
        return None
    return sum(verdict["scores"][m] for m in METRICS) / len(METRICS)


def _coverage(field: str) -> Callable[[dict[str, Any]], float | None]:
    def get(row: dict[str, Any]) -> float | None:
        score = (row.get(field) or {}).get("score")
        return None if score is None else 100.0 * score

    return get


def _content(section: str, key: str) -> Callable[[dict[str, Any]], float | None]:
    """A content metric (ima.measures.content) of a row; None where it was not measured."""

    def get(row: dict[str, Any]) -> float | None:
        value = ((row.get("content") or {}).get(section) or {}).get(key)
        if isinstance(value, list):  # figure conflicts: a count, unless no figures are listed
            total = (row.get("content") or {}).get(section, {}).get("total")
            return float(len(value)) if total else None
        if value is None:
            return None
        return 100.0 * value

    return get


# name, label, terminal label, and where the value sits in a row's content metrics
CONTENT_METRICS = (
    ("figures_design", "Brief figures stated, design (%)", "Figures md %", "grounding", "design"),
    (
        "figure_conflicts",
        "Figures breaking a limit of the brief",
        "Conflicts",
        "grounding",
        "conflicts",
    ),
    ("parroting_turns", "Parroting, turns (%)", "Parroting %", "parroting", "turns"),
    ("parroting_design", "Parroting, final design (%)", "Parrot. design %", "parroting", "design"),
    ("repetition_turns", "Repetition of own turns (%)", "Repetition %", "repetition", "turns"),
    ("in_view_last_turn", "Own items in view at the last turn (%)", "In view %", "in_view", "mean"),
)


def _design(key: str) -> Callable[[dict[str, Any]], float | None]:
    """A measure of a row's final design (ima.measures.design_quality): a count (of the
    items of a list); None for a design that is not structured."""

    def get(row: dict[str, Any]) -> float | None:
        design = (row.get("content") or {}).get("design") or {}
        value = design.get(key)
        if value is None:
            return None
        return float(len(value) if isinstance(value, list) else value)

    return get


# name, label, terminal label, key in a row's content["design"]
DESIGN_METRICS = (
    ("design_addressed", "Requirements addressed in its own words", "Req. own words", "addressed"),
    ("design_open", "Requirements left open", "Req. open", "requirements_open"),
    (
        "design_justified",
        "Components with a technology and own reason",
        "Comp. ok",
        "components_justified",
    ),
    (
        "design_junk",
        "Design lines that are votes, instructions or residue",
        "Junk lines",
        "junk_lines",
    ),
)


def content_metrics_for(rows: list[dict[str, Any]]) -> list[Metric]:
    """Content metric rows, when any run has them (figure rows only for tasks with figures,
    design rows only for structured designs)."""
    if not any(r.get("content") for r in rows):
        return []
    figures = any(((r.get("content") or {}).get("grounding") or {}).get("total") for r in rows)
    metrics = [
        Metric(
            name,
            label,
            _content(section, key),
            ",.1f" if key != "conflicts" else ",.2f",
            short=short,
        )
        for name, label, short, section, key in CONTENT_METRICS
        if figures or section != "grounding"
    ]
    if any("addressed" in ((r.get("content") or {}).get("design") or {}) for r in rows):
        metrics += [
            Metric(name, label, _design(key), ",.2f", short=short)
            for name, label, short, key in DESIGN_METRICS
        ]
    return metrics


# name, label, terminal label, key in a row's content["memory"], percent (else a count)
MEMORY_METRICS = (
    (
        "memory_retention_end",
        "Memory retention at the end (%)",
        "Mem. kept end %",
        "retention_end",
        True,
    ),
    (
        "memory_retention_run",
        "Memory retention over the run (%)",
        "Mem. kept run %",
        "retention_over_run",
        True,
    ),
    (
        "memory_own_retention_end",
        "Memory retention of own items at the end (%)",
        "Mem. own end %",
        "own_retention_end",
        True,
    ),
    (
        "memory_own_retention_run",
        "Memory retention of own items over the run (%)",
        "Mem. own run %",
        "own_retention_over_run",
        True,
    ),
    ("memory_parroting", "Memory copied from its prompt (%)", "Mem. parrot %", "parroting", True),
    ("memory_cut_off", "Memory answers cut off at the cap", "Mem. cut off", "cut_off", False),
    ("memory_repairs", "Memory repairs before storing", "Mem. repairs", "repairs", False),
)


def _memory(key: str, percent: bool) -> Callable[[dict[str, Any]], float | None]:
    """A memory metric of a row (retention, repairs); None for runs without a memory."""

    def get(row: dict[str, Any]) -> float | None:
        value = ((row.get("content") or {}).get("memory") or {}).get(key)
        if value is None:
            return None
        return 100.0 * value if percent else float(value)

    return get


def memory_metrics_for(rows: list[dict[str, Any]]) -> list[Metric]:
    """Memory rows, when any run kept a memory: retention of the task's key figures and
    requirements, all and each agent's own (at the end, over the run), parroting of the
    memory prompt, repairs."""
    if not any((r.get("content") or {}).get("memory") for r in rows):
        return []
    return [
        Metric(name, label, _memory(key, percent), ",.1f" if percent else ",.2f", short=short)
        for name, label, short, key, percent in MEMORY_METRICS
    ]


def _input(row: dict[str, Any], part: str) -> float | None:
    """Input tokens the backend served from its prompt cache, or evaluated anew."""
    total = (row.get("usage") or {}).get("total")
    if not total:
        return None
    cached = float(total.get("cached_tokens", 0))
    return cached if part == "cached" else float(total.get("input_tokens", 0)) - cached


def kinds_in(rows: list[dict[str, Any]]) -> list[str]:
    found = {k for r in rows for k in ((r.get("usage") or {}).get("by_kind") or {})}
    return [k for k in KIND_ORDER if k in found] + sorted(found - set(KIND_ORDER))


def metrics_for(rows: list[dict[str, Any]]) -> list[Metric]:
    """The metric rows of a comparison table, for the runs at hand."""
    out = [Metric("tokens", "Tokens (total)", _tokens, ",.0f", short="Tokens")]
    for kind in kinds_in(rows):
        out.append(
            Metric(
                f"tokens_{kind}",
                f"Tokens, {kind.replace('_', ' ')}",
                lambda r, k=kind: _tokens(r, k),
                ",.0f",
                short=f" · {KIND_SHORT.get(kind, kind)}",
            )
        )
    if any(_input(r, "cached") for r in rows):  # only backends that report their cache
        out += [
            Metric(
                "input_evaluated",
                "Input tokens evaluated",
                lambda r: _input(r, "new"),
                ",.0f",
                short=" · evaluated",
            ),
            Metric(
                "input_cached",
                "Input tokens from cache",
                lambda r: _input(r, "cached"),
                ",.0f",
                short=" · cached",
            ),
        ]
    out += [
        Metric("turns", "Turns", lambda r: float(r["turns"]), ",.1f"),
        Metric(
            "wall_seconds",
            "Wall time (s)",
            lambda r: float(r["wall_seconds"]),
            ",.1f",
            short="Wall s",
        ),
        Metric(
            "coverage",
            "Requirement coverage, evidence (%)",
            _coverage("coverage"),
            ",.1f",
            short="Coverage %",
        ),
    ]
    if any(r.get("coverage_llm") for r in rows):
        out.append(
            Metric(
                "coverage_llm",
                "Requirement coverage, LLM check (%)",
                _coverage("coverage_llm"),
                short="Cov. % (LLM)",
            )
        )
    out += content_metrics_for(rows)
    out += memory_metrics_for(rows)
    out += [
        Metric(m, LABELS[m], _judge(m), ",.2f", judge=True, short=SHORT.get(m, "")) for m in METRICS
    ]
    out.append(Metric("judge_mean", "Judge mean", _judge_mean, ",.2f", judge=True))
    return out
