"""The table `benchmarks.embedded_run` prints: every figure per variant, then each one's
ratio to the first variant."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.embedded_measures import KINDS, short_name

Row = tuple[str, Callable[[dict[str, Any]], Any], str]


def rows() -> list[Row]:
    """Label, value, format of every printed row."""
    out: list[Row] = [
        ("wall time (s)", lambda f: f["wall_seconds"], ",.0f"),
        ("  at the reference speed (s)", lambda f: f["reference_seconds"], ",.0f"),
        ("machine: prompt tokens/s", lambda f: (f["speed"] or [None])[0], ",.0f"),
        ("machine: generated tokens/s", lambda f: (f["speed"] or [None, None])[1], ",.1f"),
        ("turns", lambda f: f["turns"], ",.0f"),
        ("generated tokens", lambda f: f["generated"], ",.0f"),
    ]
    out += [(f"  {k}", lambda f, k=k: f[f"generated {k}"], ",.0f") for k in KINDS]
    out += [("prompt tokens evaluated", lambda f: f["evaluated"], ",.0f")]
    out += [(f"  {k}", lambda f, k=k: f[f"evaluated {k}"], ",.0f") for k in KINDS]
    out += [("  floor (turns, memory updates)", lambda f: f["floor"], ",.0f")]
    out += [(f"    {k}", lambda f, k=k: f[f"floor {k}"], ",.0f") for k in KINDS[:2]]
    out += [("prompt tokens cached", lambda f: f["cached"], ",.0f")]
    out += [(f"  {k}", lambda f, k=k: f[f"cached {k}"], ",.0f") for k in KINDS]
    out += [(f"seconds {k}", lambda f, k=k: f[f"seconds {k}"], ",.0f") for k in KINDS]
    out += [
        ("memory updates", lambda f: f["memory_updates"], ",.0f"),
        ("  answers at the output cap", lambda f: f["answers_at_cap"], ",.0f"),
        ("  memories stored cut off", lambda f: f["stored_cut_off"], ",.0f"),
        ("  sections carried over", lambda f: f["repairs"]["carried_sections"], ",.0f"),
        ("  notes shortened", lambda f: f["repairs"]["shortened_notes"], ",.0f"),
        ("  notes dropped", lambda f: f["repairs"]["dropped_notes"], ",.0f"),
        ("  malformed edits", lambda f: f["repairs"]["malformed_edits"], ",.0f"),
        ("  unusable answers", lambda f: f["repairs"]["unusable"], ",.0f"),
        ("retention at the end (%)", lambda f: f["retention_end"], ",.1f"),
        ("retention over the run (%)", lambda f: f["retention_over_run"], ",.1f"),
        ("own items retained at the end (%)", lambda f: f["own_retention_end"], ",.1f"),
        ("own items in view, last turn (%)", lambda f: f["in_view_last_turn"], ",.1f"),
        ("memory parroting prompt (%)", lambda f: f["memory_parroting"], ",.1f"),
        ("design: figures stated", lambda f: f["figures_in_design"], ",.0f"),
        ("spec: figures stated", lambda f: f["figures_in_spec"], ",.0f"),
        ("requirement coverage (%)", lambda f: f["coverage"], ",.1f"),
        ("design parroting (%)", lambda f: f["parroting_design"], ",.1f"),
        ("design.md bytes", lambda f: f["design_bytes"], ",.0f"),
    ]
    return out


def table(names: list[str], figures: list[dict[str, Any]]) -> str:
    """Values per variant (numbered), then each one's ratio to the first ("2/1")."""
    width = max(14, *(len(n) + 5 for n in names))
    head = f"{'':30}" + "".join(f"{f'{i}. {n}':>{width}}" for i, n in enumerate(names, 1))
    head += "".join(f"{f'{i}/1':>8}" for i in range(2, len(names) + 1))
    lines = [head]
    for label, get, fmt in rows():
        values = [get(f) for f in figures]
        cells = "".join(f"{'n/a' if v is None else format(v, fmt):>{width}}" for v in values)
        first = values[0]
        for v in values[1:]:
            ratio = v / first if first and v is not None else None
            cells += f"{'' if ratio is None else f'{ratio:.2f}':>8}"
        lines.append(f"{label:30}{cells}")
    for key in ("weights", "status", "design_missing"):
        shown = [short_name(f[key]) if key == "weights" else f[key] for f in figures]
        lines.append(f"{key:30}" + "".join(f"{v!s:>{width}}" for v in shown))
    return "\n".join(lines)
