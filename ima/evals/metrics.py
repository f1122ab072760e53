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
    out += [
        Metric(m, LABELS[m], _judge(m), ",.2f", judge=True, short=SHORT.get(m, "")) for m in METRICS
    ]
    out.append(Metric("judge_mean", "Judge mean", _judge_mean, ",.2f", judge=True))
    return out
