"""The evaluation in the terminal: Table 1 of the paper per comparison cell, and the
judge's calibration beside it."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ima.evals.comparison import (
    Cell,
    calibration_line,
    cells,
    fmt,
    fmt_p,
    fmt_ratio,
    judge_failures,
    judge_warnings,
    mean_sd,
    status_counts,
)


def comparison_table(cell: Cell) -> Table:
    """Table 1 of the paper, for this cell: mean ± sd and median per system, p-value."""
    table = Table(
        title=f"Intrinsic memory vs baseline · {cell.label}",
        caption=(
            f"runs: baseline {len(cell.baseline)} ({status_counts(cell.baseline)}), "
            f"intrinsic {len(cell.intrinsic)} ({status_counts(cell.intrinsic)}) · "
            f"failed judge verdicts (excluded): {judge_failures(cell.baseline)} baseline, "
            f"{judge_failures(cell.intrinsic)} intrinsic · degenerate-looking verdicts: "
            f"{judge_warnings(cell.baseline) + judge_warnings(cell.intrinsic)} · "
            f"token ratio intrinsic/baseline {fmt_ratio(cell.token_ratio())} (paper +32%)"
        ),
    )
    table.add_column("Metric", min_width=12, overflow="fold")
    table.add_column("Baseline\nmean ± sd", justify="right", overflow="fold")
    table.add_column("Intrinsic\nmean ± sd", justify="right", overflow="fold")
    table.add_column("median\nB / I", justify="right", overflow="fold")
    table.add_column("p\nrank-sum", justify="right", overflow="fold")
    for c in cell.compare():
        style = "bold" if c.metric.name in ("tokens", "coverage", "judge_mean") else None
        table.add_row(
            c.metric.terminal_label,
            mean_sd(c.baseline, c.metric.fmt),
            mean_sd(c.intrinsic, c.metric.fmt),
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
