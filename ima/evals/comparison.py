"""The comparison of the two systems: runs grouped into cells (one per memory template and
token budget), each metric summarised per system with a rank-sum p-value, and how those
numbers are written (shared by the terminal table and the Markdown report)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ima.evals.judge import METRICS
from ima.evals.metrics import Metric, metrics_for
from ima.evals.stats import Summary, ranksum_p, ratio, summarize

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


def fmt(value: float | None, spec: str = ",.1f") -> str:
    return "n/a" if value is None else format(value, spec)


def fmt_p(p: float | None) -> str:
    if p is None:
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3g}"


def fmt_ratio(r: float | None) -> str:
    return "n/a" if r is None else f"{r:.2f} ({(r - 1) * 100:+.0f}%)"


def status_counts(runs: Iterable[dict[str, Any]]) -> str:
    counts = Counter(r["status"] for r in runs)
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none"


def judge_failures(runs: list[dict[str, Any]]) -> int:
    return sum((r.get("judge") or {}).get("status") != "ok" for r in runs)


def judge_warnings(runs: list[dict[str, Any]]) -> int:
    return sum(
        bool((r.get("judge") or {}).get("warnings"))
        for r in runs
        if (r.get("judge") or {}).get("status") == "ok"
    )


def scores_text(row: dict[str, Any]) -> str:
    verdict = row.get("judge") or {}
    if verdict.get("status") != "ok":
        return f"failed ({verdict.get('attempts', 0)} attempts)"
    mark = " ⚠" if verdict.get("warnings") else ""
    return "/".join(str(verdict["scores"][m]) for m in METRICS) + mark


def coverage_text(row: dict[str, Any], field_name: str = "coverage") -> str:
    c = row.get(field_name) or {}
    if c.get("score") is None:
        return "n/a"
    return f"{len(c['covered'])}/{c['checked']}"


def mean_sd(s: Summary, spec: str) -> str:
    if s.mean is None:
        return "n/a"
    return f"{fmt(s.mean, spec)} ± {fmt(s.std, spec)}" if s.std is not None else fmt(s.mean, spec)


def calibration_line(calibration: dict[str, Any] | None, note: str = "") -> str:
    """One line on the judge's calibration, for beside its verdicts."""
    if calibration is None:
        return f"Judge calibration: none ({note})" if note else "Judge calibration: none"
    return f"Judge calibration ({calibration['judge']['model']}): {calibration['analysis']['verdict']['line']}"
