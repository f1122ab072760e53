"""Whole default meetings on the embedded model over memory settings and seeds, for choosing
the default memory: memory budget x update mode, and the memoryless baseline on the same
seeds, each run in a fresh process, one after the other (never two llama.cpp processes).

    python -m benchmarks.memory_sweep run --out sweep/          # every run not done yet
    python -m benchmarks.memory_sweep run --out sweep/ --configs m256-edit --seeds 0 --temperatures 0
    python -m benchmarks.memory_sweep run --out sweep-q4_k_m/ --weights q4_k_m   # other weights
    python -m benchmarks.memory_sweep report --out sweep/       # the table, from the stored runs
    python -m benchmarks.memory_sweep compare --out sweep/ --against other/   # same meetings?

`run` keeps each run's database, record (run.json) and state in OUT, and skips runs whose
state is there: it resumes where it was stopped. `report` computes every figure with this
checkout's code from the stored states (so a metric added later covers earlier runs too):
a Markdown table per temperature and weights file, each configuration's mean ± standard
deviation over its seeds. `compare` says, for each run stored in both folders (say, the same
meeting on two commits), whether they are identical: every turn's text and token counts,
every memory version and the final document; otherwise the first thing that differs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks.embedded_measures import measure, short_name
from benchmarks.embedded_run import DUMP, ROOT, memory_prompts, probe_speed, python
from ima.core.settings import DEFAULT_WEIGHTS

CONFIGS: dict[str, tuple[str, ...]] = {
    "baseline": ("--memory", "none"),
    "m256-edit": ("--memory-tokens", "256", "--memory-update", "edit"),
    "m256-rewrite": ("--memory-tokens", "256", "--memory-update", "rewrite"),
    "m512-edit": ("--memory-tokens", "512", "--memory-update", "edit"),
    "m512-rewrite": ("--memory-tokens", "512", "--memory-update", "rewrite"),
}


def run_name(config: str, temperature: float, seed: int) -> str:
    return f"{config}-t{temperature:g}-s{seed}".replace(".", "")


def run_one(
    out: Path, config: str, temperature: float, seed: int, model: str, weights: str
) -> None:
    """One meeting; its record and state go to OUT/records and OUT/states."""
    name = run_name(config, temperature, seed)
    db = out / "db" / f"{name}.sqlite"
    db.parent.mkdir(parents=True, exist_ok=True)
    for stale in db.parent.glob(f"{name}.sqlite*"):
        stale.unlink()  # a run stopped half-way starts again
    speed = probe_speed(model, weights=weights)
    args = ["run", "--no-long-term", "--json", "--thread", name, "--db", str(db)]
    args += ["--out", str(out / "runs"), "--model", model, "--weights", weights]
    args += ["--seed", str(seed)]
    args += ["--temperature", str(temperature), *CONFIGS[config]]
    record = json.loads(python(ROOT, "-m", "ima", *args))
    state = json.loads(python(ROOT, "-c", DUMP, str(db), name))
    for path in (state["ima"], state.get("library")):
        if path and not Path(path).resolve().is_relative_to(ROOT.resolve()):
            raise SystemExit(f"{name}: ran {path}, not the code in {ROOT}")
    prompts = memory_prompts(ROOT)
    for folder, value in (
        ("records", record | {"speed": speed}),
        ("states", state | {"memory_prompts": prompts}),  # last: marks the run done
    ):
        (out / folder).mkdir(exist_ok=True)
        (out / folder / f"{name}.json").write_text(json.dumps(value), encoding="utf-8")
    print(f"{name}: {record['status']}, {record['turns']} turns", file=sys.stderr, flush=True)


def stored_runs(out: Path) -> list[tuple[str, dict[str, Any]]]:
    """(name, figures) of every finished run in OUT, measured by this checkout's code."""
    found = []
    for path in sorted((out / "states").glob("*.json")):
        state = json.loads(path.read_text(encoding="utf-8"))
        record = json.loads((out / "records" / path.name).read_text(encoding="utf-8"))
        result = {"record": record, "state": state, "memory_prompts": state["memory_prompts"]}
        figures = measure(result)
        extra = {
            "dropped_notes": figures["repairs"]["dropped_notes"],
            "temperature": record["settings"]["temperature"],
        }
        found.append((path.stem, figures | extra))
    return found


ROWS = (
    ("retention at the end (%)", "retention_end"),
    ("own items retained at the end (%)", "own_retention_end"),
    ("own items in view, last turn (%)", "in_view_last_turn"),
    ("retention over the run (%)", "retention_over_run"),
    ("requirement coverage (%)", "coverage"),
    ("generated tokens", "generated"),
    ("prompt tokens evaluated", "evaluated"),
    ("turns", "turns"),
    ("wall time (s)", "wall_seconds"),
    ("memories stored cut off", "stored_cut_off"),
    ("notes dropped for room", "dropped_notes"),
    ("memory-update generated tokens", "generated memory_update"),
    ("memory: pairs of notes that restate each other", "memory_restated_pairs"),
    ("memory: notes in a script the brief does not use", "memory_foreign_script"),
    ("consensus (share of runs)", "consensus"),
    ("design: lines that are votes, instructions or residue", "junk_lines"),
    ("design: components with a technology and a reason of their own", "components_justified"),
    ("design: requirements addressed in its own words (of 12)", "requirements_addressed"),
    ("design: requirements left open", "requirements_open"),
    ("design: key figures stated in its own words (of 24)", "figures_in_design"),
    ("design: figures in a unit of the wrong kind", "unit_errors"),
    ("design: figures breaking a limit of the brief", "figure_conflicts"),
    ("design: parroting (%)", "parroting_design"),
)


def report(out: Path) -> str:
    """A Markdown table per temperature and weights file (runs on different weights are
    never averaged together): each configuration's mean (and standard deviation, over
    seeds) of every row."""
    groups: dict[tuple[float, str], dict[str, list[dict[str, Any]]]] = {}
    for name, figures in stored_runs(out):
        config = name.rsplit("-", 2)[0]
        group = groups.setdefault((figures["temperature"], figures["weights"]), {})
        group.setdefault(config, []).append(figures)
    tables = []
    for (temperature, weights), configs in sorted(groups.items()):
        names = [c for c in CONFIGS if c in configs]
        seeds = {c: len(configs[c]) for c in names}
        head = " | ".join(f"{c} ({seeds[c]})" for c in names)
        tested = [c for c in names if c != "baseline"][:1] if "baseline" in names else []
        head += "".join(f" | p, {c} against the baseline" for c in tested)
        lines = [f"temperature {temperature:g}, weights {short_name(weights)} (runs)", ""]
        lines += [f"| | {head} |", "|---|" + "---|" * (len(names) + len(tested))]
        for label, key in ROWS:
            cells = []
            for config in names:
                values = [r[key] for r in configs[config] if r.get(key) is not None]
                mean = f"{statistics.mean(values):,.1f}" if values else "-"
                sd = f" ± {statistics.stdev(values):,.1f}" if len(values) > 1 else ""
                cells.append(mean + sd)
            cells += [rank_sum(configs[c], configs["baseline"], key) for c in tested]
            lines.append(f"| {label} | {' | '.join(cells)} |")
            if key == "in_view_last_turn" and "baseline" in configs:
                lines.append(against_baseline(configs, names))
        tables.append("\n".join(lines))
    return "\n\n".join(tables)


def rank_sum(runs: list[dict[str, Any]], baseline: list[dict[str, Any]], key: str) -> str:
    """The Wilcoxon rank-sum p-value of a setting's runs against the baseline's (the
    paper's test), or "-" with fewer than two runs a side or nothing to rank."""
    from scipy.stats import ranksums

    x = [r[key] for r in runs if r.get(key) is not None]
    y = [r[key] for r in baseline if r.get(key) is not None]
    if len(x) < 2 or len(y) < 2 or len(set(x + y)) < 2:
        return "-"
    return f"{ranksums(x, y).pvalue:.2f}"


def against_baseline(configs: dict[str, list[dict[str, Any]]], names: list[str]) -> str:
    """The row of issue 30's target: each setting's mean share of own items in view over the
    baseline's mean on the same temperature (a ratio of means, so a seed where the baseline
    holds nothing does not divide by zero)."""

    def mean(config: str) -> float:
        return statistics.mean(r["in_view_last_turn"] for r in configs[config])

    base = mean("baseline")
    cells = ["-" if c == "baseline" or not base else f"{mean(c) / base:.2f}x" for c in names]
    return f"| own items in view against the baseline | {' | '.join(cells)} |"


TOKEN_COUNTS = ("input_tokens", "output_tokens", "cached_tokens")


def first_difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    """The first thing that differs between two stored runs, or "" when they are identical."""
    for i, (x, y) in enumerate(zip(a["transcript"], b["transcript"], strict=False), 1):
        if x["content"] != y["content"]:
            return f"turn {i}'s text"
        if [x["usage"].get(k) for k in TOKEN_COUNTS] != [y["usage"].get(k) for k in TOKEN_COUNTS]:
            return f"turn {i}'s token counts"
    if len(a["transcript"]) != len(b["transcript"]):
        return f"the number of turns ({len(a['transcript'])} against {len(b['transcript'])})"
    fields = ("role", "version", "turn", "text")
    versions = [[[v.get(f) for f in fields] for v in s["memory_log"]] for s in (a, b)]
    for x, y in zip(*versions, strict=False):
        if x != y:
            return f"memory version {x[1]} of {x[0]}"
    if len(versions[0]) != len(versions[1]):
        return f"the number of memory versions ({len(versions[0])} against {len(versions[1])})"
    return "" if a["final"] == b["final"] else "the final document"


def compare(out: Path, other: Path) -> str:
    """A line per run stored in both folders: identical, or the first thing that differs."""
    lines = []
    for path in sorted((out / "states").glob("*.json")):
        twin = other / "states" / path.name
        if twin.exists():
            a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (path, twin))
            differs = first_difference(a, b)
            lines.append(
                f"{path.stem}: differs first at {differs}"
                if differs
                else f"{path.stem}: identical ({len(a['transcript'])} turns, "
                f"{len(a['memory_log'])} memory versions, the final document)"
            )
    return "\n".join(lines) or f"no run is stored in both {out} and {other}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory_sweep")
    parser.add_argument("action", choices=("run", "report", "compare"))
    parser.add_argument("--out", type=Path, required=True, help="folder of the sweep's runs")
    parser.add_argument("--against", type=Path, help="compare: the other sweep's folder")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--temperatures", default="0.7")
    parser.add_argument("--model", default="embedded")
    parser.add_argument(
        "--weights", default=DEFAULT_WEIGHTS, help="the embedded model's: q4_0 or q4_k_m"
    )
    args = parser.parse_args(argv)
    if args.action == "report":
        print(report(args.out))
        return 0
    if args.action == "compare":
        if args.against is None:
            parser.error("compare needs --against FOLDER: the other sweep's runs")
        print(compare(args.out, args.against))
        return 0
    configs = [c.strip() for c in args.configs.split(",")]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown config {unknown[0]!r}: use {', '.join(CONFIGS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for temperature in [float(t) for t in args.temperatures.split(",")]:
        for seed in [int(s) for s in args.seeds.split(",")]:
            for config in configs:
                if not (
                    args.out / "states" / f"{run_name(config, temperature, seed)}.json"
                ).exists():
                    run_one(args.out, config, temperature, seed, args.model, args.weights)
    print(report(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
