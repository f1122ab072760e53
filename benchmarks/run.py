"""Speed and scale benchmarks for the real graph: `python -m benchmarks.run`.

Every figure is printed beside a naive reference measured in the same run, with the ratio,
and each target as a PASS/FAIL line. `--quick` runs 50 and 200 turns instead of 50, 200
and 1,000; `--tiny` runs every figure on tiny inputs (it checks the benchmark runs, not the
targets). Nothing here asserts: `--strict` makes the exit code 1 when a target fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.run_figures import (
    Verdicts,
    console,
    figure_concurrency,
    figure_context,
    figure_formation,
    figure_memory,
    figure_storage,
    figure_time,
    figure_tokens,
)

ROOT = Path(__file__).resolve().parent.parent
FULL_TURNS = (50, 200, 1000)
QUICK_TURNS = (50, 200)
VARIANTS = ("ours", "naive")
CONTEXT_LENGTHS = (100, 1000, 10000)
# --tiny: every figure on inputs small enough for the test suite (seconds, no verdict holds)
TINY = {"turns": (4, 8), "context": (10, 20, 40), "processes": 2, "turn_cap": 4, "formation": 4}

progress = Console(stderr=True, highlight=False)


def _worker_env() -> dict[str, str]:
    """Benchmarks use the defaults: no IMA_* settings or ./ima.toml from the caller."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_") or k == "IMA_CACHE_DIR"}
    env["IMA_CONFIG"] = os.devnull
    return env


def graph_run(variant: str, turns: int, budget: int) -> dict[str, Any]:
    """One measured run in a fresh process (clean peak memory, no shared caches)."""
    progress.print(f"[dim]· {variant} graph, {turns} turns ...[/dim]", end="")
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "_graph", variant, str(turns), str(budget)],
        cwd=ROOT,
        env=_worker_env(),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        progress.print(" failed")
        raise SystemExit(f"benchmark worker failed ({variant}, {turns} turns):\n{proc.stderr}")
    progress.print(f"[dim] {time.perf_counter() - started:.1f}s[/dim]")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def sqlite_settings() -> str:
    """The pragmas the runs database's checkpointer really sets."""
    from ima.runs.database import open_database

    with (
        tempfile.TemporaryDirectory() as tmp,
        open_database(Path(tmp) / "p.sqlite").checkpointer() as saver,
    ):
        conn = saver.conn
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        sync = conn.execute("PRAGMA synchronous").fetchone()[0]
        busy = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    return f"journal_mode={mode}, synchronous={names.get(sync, sync)}, busy_timeout={busy} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="50 and 200 turns (not 1,000)")
    parser.add_argument("--tiny", action="store_true", help="tiny inputs: does it all run?")
    parser.add_argument("--budget", type=int, default=2048, help="token budget (default 2048)")
    parser.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target fails")
    args = parser.parse_args(argv)

    from benchmarks import concurrency, contextbench, memory_formation
    from ima.tasks import load_task

    sizes = TINY["turns"] if args.tiny else QUICK_TURNS if args.quick else FULL_TURNS
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    started = time.perf_counter()
    console.print(
        f"[bold]ima benchmarks[/bold] ({mode}): Python "
        f"{platform.python_version()}, langgraph {version('langgraph')}, "
        f"langgraph-checkpoint-sqlite {version('langgraph-checkpoint-sqlite')}, SQLite "
        f"{sqlite3.sqlite_version} ({sqlite_settings()}), {os.cpu_count()} CPUs"
    )
    runs: dict[tuple[str, int], dict[str, Any]] = {}
    for n in sizes:
        for variant in VARIANTS:
            runs[(variant, n)] = graph_run(variant, n, args.budget)
    progress.print("[dim]· context construction ...[/dim]")
    lengths = TINY["context"] if args.tiny else CONTEXT_LENGTHS
    context_rows = contextbench.measure(load_task("data-pipeline"), list(lengths), args.budget)
    progress.print("[dim]· concurrent runs ...[/dim]")
    shared = (
        concurrency.measure(TINY["processes"], TINY["turn_cap"])
        if args.tiny
        else concurrency.measure()
    )
    progress.print("[dim]· memory formation on a fake server ...[/dim]")
    formation = (
        memory_formation.measure(TINY["formation"], latency=0.02)
        if args.tiny
        else memory_formation.measure()
    )

    verdicts = Verdicts()
    same = all(
        runs[("ours", n)]["transcript_sha1"] == runs[("naive", n)]["transcript_sha1"]
        and all(
            runs[(v, n)]["turns"] == n and runs[(v, n)]["status"] == "turn_cap" for v in VARIANTS
        )
        and all(runs[(v, n)]["state_kept"] for v in VARIANTS)
        for n in sizes
    )
    console.print()
    verdicts.add(
        same,
        "every run reached its turn cap with its state intact when it ended, and ours and "
        "the naive graph produced the same transcript (sha1) at every size",
    )
    console.print()
    figure_time(runs, sizes, verdicts)
    console.print()
    figure_storage(runs, sizes, verdicts)
    console.print()
    figure_context(context_rows, verdicts)
    console.print()
    figure_memory(runs, sizes, verdicts)
    console.print()
    figure_tokens(runs, sizes, args.budget, verdicts)
    console.print()
    figure_concurrency(shared, verdicts)
    console.print()
    figure_formation(formation, verdicts)
    console.print()
    passed = sum(p for p, _ in verdicts.lines)
    console.print(
        f"[bold]{passed} of {len(verdicts.lines)} targets pass[/bold] · "
        f"benchmark took {time.perf_counter() - started:.0f}s"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "sizes": sizes,
                    "runs": [runs[k] for k in sorted(runs)],
                    "context": context_rows,
                    "concurrency": shared,
                    "memory_formation": formation,
                    "verdicts": [{"pass": p, "text": t} for p, t in verdicts.lines],
                },
                indent=2,
            )
        )
    return 1 if args.strict and verdicts.failed else 0


def _worker(argv: list[str]) -> int:
    from benchmarks.graphrun import run_graph

    variant, turns, budget = argv[0], int(argv[1]), int(argv[2])
    print(json.dumps(run_graph(variant, turns, budget)))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["_graph"]:
        sys.exit(_worker(sys.argv[2:]))
    sys.exit(main())
