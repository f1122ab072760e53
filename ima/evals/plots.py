"""PNG box plots (matplotlib, Agg backend): judge scores per system like the paper's
Figure 3, the objective metrics, and an ablation view across templates and budgets."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ima.core.files import atomic_writer
from ima.evals.judge import LABELS, METRICS
from ima.evals.metrics import metrics_for

if TYPE_CHECKING:
    from ima.evals.comparison import Cell

COLORS = {"baseline": "#8c9bb5", "intrinsic": "#e39b3c"}
EXTRA_COLORS = ("#e39b3c", "#6cae75", "#b57bc4", "#d9665b", "#4fa3c7")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _values(metric_name: str, rows: list[dict[str, Any]]) -> list[float]:
    metric = next((m for m in metrics_for(rows) if m.name == metric_name), None)
    if metric is None:  # not measured for these runs (e.g. content metrics of old runs)
        return []
    return [v for v in (metric.get(r) for r in rows) if v is not None]


def _boxes(
    ax: Any,
    groups: Sequence[tuple[str, list[float]]],
    positions: Sequence[float],
    colors: Sequence[str],
    width: float,
    seed: str,
) -> None:
    """Boxes with every run drawn as a dot (few runs: the dots matter more than the box)."""
    rng = random.Random(seed)
    for (_, values), pos, color in zip(groups, positions, colors, strict=True):
        if not values:
            continue
        box = ax.boxplot(
            [values],
            positions=[pos],
            widths=width,
            patch_artist=True,
            showfliers=False,
            medianprops={"color": "black"},
        )
        for patch in box["boxes"]:
            patch.set_facecolor(color)
            patch.set_alpha(0.75)
        xs = [pos + rng.uniform(-width / 4, width / 4) for _ in values]
        ax.scatter(xs, values, s=12, color="black", alpha=0.6, zorder=3)


def _save(fig: Any, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with atomic_writer(path, binary=True) as out:
            fig.savefig(out, format="png", dpi=110, bbox_inches="tight")
    finally:
        _pyplot().close(fig)
    return path.name


def _legend(ax: Any, labels: Sequence[str], colors: Sequence[str]) -> None:
    from matplotlib.patches import Patch

    ax.legend(
        handles=[
            Patch(facecolor=c, alpha=0.75, label=lab) for lab, c in zip(labels, colors, strict=True)
        ],
        loc="upper right",
        fontsize=8,
    )


def judge_boxplot(cell: Cell, path: Path) -> str | None:
    """The five judge scores, baseline and intrinsic side by side (paper, Figure 3)."""
    if not any(_values(m, cell.baseline + cell.intrinsic) for m in METRICS):
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for i, metric in enumerate(METRICS):
        groups = [(s, _values(metric, cell.runs(s))) for s in ("baseline", "intrinsic")]
        _boxes(
            ax, groups, [i * 3, i * 3 + 1], [COLORS["baseline"], COLORS["intrinsic"]], 0.8, metric
        )
    ax.set_xticks([i * 3 + 0.5 for i in range(len(METRICS))])
    ax.set_xticklabels([LABELS[m] for m in METRICS])
    ax.set_ylim(0.5, 10.5)
    ax.set_yticks(range(1, 11))
    ax.set_ylabel("Judge score (1-10)")
    ax.grid(axis="y", alpha=0.3)
    nb = len(_values("judge_mean", cell.baseline))
    ni = len(_values("judge_mean", cell.intrinsic))
    ax.set_title(f"Judge scores · {cell.label} · baseline n={nb}, intrinsic n={ni}")
    _legend(
        ax, ["Baseline (no memory)", "Intrinsic memory"], [COLORS["baseline"], COLORS["intrinsic"]]
    )
    return _save(fig, path)


def objective_boxplot(cell: Cell, path: Path) -> str | None:
    """Tokens, turns, requirement coverage and the content metrics (figures stated,
    parroting, own items in view at the last turn) per system."""
    rows = cell.baseline + cell.intrinsic
    if not rows:
        return None
    plt = _pyplot()
    panels = [
        ("tokens", "Tokens per run"),
        ("turns", "Turns"),
        ("coverage", "Requirement coverage (%)"),
    ]
    panels += [
        (name, title)
        for name, title in (
            ("figures_design", "Brief figures in design (%)"),
            ("parroting_turns", "Parroting, turns (%)"),
            ("in_view_last_turn", "Own items in view, last turn (%)"),
        )
        if _values(name, rows)
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3.6))
    for ax, (name, title) in zip(axes, panels, strict=True):
        groups = [(s, _values(name, cell.runs(s))) for s in ("baseline", "intrinsic")]
        _boxes(ax, groups, [0, 1], [COLORS["baseline"], COLORS["intrinsic"]], 0.6, name)
        ax.set_xticks([0, 1])
        ax.set_xticklabels(["Baseline", "Intrinsic"])
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        if name in ("coverage", "figures_design", "parroting_turns", "in_view_last_turn"):
            ax.set_ylim(-5, 105)
        else:
            ax.yaxis.get_major_locator().set_params(integer=True)
    fig.suptitle(cell.label, fontsize=10, y=1.03)
    return _save(fig, path)


def ablation_boxplot(all_cells: list[Cell], path: Path) -> str | None:
    """Judge mean and requirement coverage for every condition (templates, budgets)."""
    groups: list[tuple[str, list[dict[str, Any]]]] = []
    seen: set[int] = set()
    for cell in all_cells:
        if cell.budget not in seen:
            seen.add(cell.budget)
            groups.append((f"baseline\nb{cell.budget}", cell.baseline))
        groups.append((f"intrinsic/{cell.template}\nb{cell.budget}", cell.intrinsic))
    colors = [
        COLORS["baseline"] if label.startswith("baseline") else EXTRA_COLORS[i % len(EXTRA_COLORS)]
        for i, (label, _) in enumerate(groups)
    ]
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 1.6 * len(groups)), 3.8))
    for ax, (name, title) in zip(
        axes,
        [("judge_mean", "Judge mean score"), ("coverage", "Requirement coverage (%)")],
        strict=True,
    ):
        data = [(label, _values(name, rows)) for label, rows in groups]
        _boxes(ax, data, list(range(len(groups))), colors, 0.6, name)
        ax.set_xticks(list(range(len(groups))))
        ax.set_xticklabels([label for label, _ in groups], fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        if name == "judge_mean":
            ax.set_ylim(0.5, 10.5)
        else:
            ax.set_ylim(-5, 105)
    fig.suptitle(
        "Ablation: memory templates and token budgets (intrinsic vs baseline)", fontsize=10
    )
    return _save(fig, path)
