"""The figures `python -m benchmarks.run` prints: one table per measure beside its naive
reference, and each target as a PASS/FAIL verdict (benchmarks/run.py measures)."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.table import Table

TIME_TARGET = 1.5  # per-turn time at the longest run against 50 turns
STORAGE_TARGET = 3.0  # checkpoint bytes against raw transcript + memory bytes
CONTEXT_TARGET = 1.5  # construction time at the longest history against the shortest
TOKENS_TARGET = 1.25  # prompt tokens per turn at the longest run against 200 turns
FORMATION_TARGET = 0.6  # wall time per turn, memory formed beside vs before the next turn

console = Console(width=150, highlight=False)


class Verdicts:
    def __init__(self) -> None:
        self.lines: list[tuple[bool, str]] = []

    def add(self, passed: bool, text: str) -> None:
        self.lines.append((passed, text))
        console.print(
            f"[bold {'green' if passed else 'red'}]{'PASS' if passed else 'FAIL'}[/] {text}"
        )

    @property
    def failed(self) -> bool:
        return not all(p for p, _ in self.lines)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


def _mb(n: float) -> str:
    return f"{n / 1e6:,.2f} MB"


def _mib(kib: float) -> str:
    return f"{kib / 1024:,.1f} MiB"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.3f} ms"


def _row(runs: dict[tuple[str, int], dict[str, Any]], turns: int) -> tuple[dict, dict]:
    return runs[("ours", turns)], runs[("naive", turns)]


def _table(title: str, columns: tuple[str, ...]) -> Table:
    """A figure's table: right-aligned columns, numbers all."""
    table = Table(title=title)
    for col in columns:
        table.add_column(col, justify="right")
    return table


def figure_time(runs: dict, sizes: tuple[int, ...], verdicts: Verdicts) -> None:
    table = _table(
        "1. Framework time per turn: agent turn + memory update + router + checkpoints "
        "(instant scripted model, SqliteSaver on disk, durability=sync); ms per turn",
        (
            "turns",
            "ours CPU, last 50 (median)",
            "ours CPU, all (mean)",
            "ours wall, last 50 (mean)",
            "naive CPU, last 50 (median)",
            "naive wall, last 50 (mean)",
            "naive/ours CPU",
            "run wall: ours / naive",
        ),
    )
    for n in sizes:
        ours, naive = _row(runs, n)
        table.add_row(
            f"{n:,}",
            f"{ours['cpu_ms_median_last']:.2f}",
            f"{ours['cpu_ms_per_turn']:.2f}",
            f"{ours['ms_per_turn_last']:.2f}",
            f"{naive['cpu_ms_median_last']:.2f}",
            f"{naive['ms_per_turn_last']:.2f}",
            _ratio(naive["cpu_ms_median_last"], ours["cpu_ms_median_last"]),
            f"{ours['run_seconds']:.1f}s / {naive['run_seconds']:.1f}s",
        )
    console.print(table)
    console.print(
        "CPU: process CPU time of all threads between consecutive agent turns; its median "
        "over the last 50 turns decides. Wall time also waits for the disk (fsync) and for "
        "other processes on the machine."
    )
    first, last = runs[("ours", sizes[0])], runs[("ours", sizes[-1])]
    naive_first, naive_last = runs[("naive", sizes[0])], runs[("naive", sizes[-1])]
    growth = last["cpu_ms_median_last"] / first["cpu_ms_median_last"]
    wall = last["ms_per_turn_last"] / first["ms_per_turn_last"]
    naive_growth = naive_last["cpu_ms_median_last"] / naive_first["cpu_ms_median_last"]
    verdicts.add(
        growth <= TIME_TARGET,
        f"time per turn at {sizes[-1]:,} turns (last 50) is {growth:.2f}x the time at "
        f"{sizes[0]} turns: {last['cpu_ms_median_last']:.2f} vs "
        f"{first['cpu_ms_median_last']:.2f} ms CPU (target <= {TIME_TARGET}x; wall {wall:.2f}x; "
        f"naive {naive_growth:.2f}x CPU)",
    )


def figure_storage(runs: dict, sizes: tuple[int, ...], verdicts: Verdicts) -> None:
    table = _table(
        "2. Checkpoint database after N turns against the raw bytes "
        "(utf-8 of every turn and of every memory version written)",
        (
            "turns",
            "raw bytes",
            "ours, last step",
            "ours/raw",
            "ours bytes/turn",
            "ours on disk, run ended",
            "end/raw",
            "naive, last step",
            "naive/raw",
            "naive/ours",
        ),
    )
    for n in sizes:
        ours, naive = _row(runs, n)
        table.add_row(
            f"{n:,}",
            _mb(ours["raw_bytes"]),
            _mb(ours["live_bytes"]),
            _ratio(ours["live_bytes"], ours["raw_bytes"]),
            f"{ours['live_bytes'] / n:,.0f}",
            _mb(ours["db_bytes"]),
            _ratio(ours["db_bytes"], ours["raw_bytes"]),
            _mb(naive["live_bytes"]),
            _ratio(naive["live_bytes"], naive["raw_bytes"]),
            _ratio(naive["live_bytes"], ours["live_bytes"]),
        )
    console.print(table)
    last, naive_last = runs[("ours", sizes[-1])], runs[("naive", sizes[-1])]
    compacted = last["compacted"]
    while_running = last.get("compactions_while_running", 0)
    console.print(
        "Last step: pages in use when the last turn is written (what an unfinished run "
        "holds"
        + (
            f"; ima compacted it {while_running} times on the way, as `ima run` does "
            "without --keep-history"
            if while_running
            else ""
        )
        + "). On disk, run ended: the file once the run has ended"
        + (
            ", after ima compacted the finished thread."
            if compacted
            else " (ima keeps every step)."
        )
    )
    factor = last["db_bytes"] / last["raw_bytes"]
    in_progress = last["live_bytes"] / last["raw_bytes"]
    verdicts.add(
        max(factor, in_progress) <= STORAGE_TARGET,
        f"checkpoint storage after {sizes[-1]:,} turns is {factor:.1f}x the raw transcript + "
        f"memory bytes: {_mb(last['db_bytes'])} on disk for {_mb(last['raw_bytes'])}"
        f"{' (finished run, compacted)' if compacted else ''}; at the last step "
        f"{in_progress:.1f}x, a run in progress (target <= {STORAGE_TARGET:.0f}x both; naive "
        f"{naive_last['live_bytes'] / naive_last['raw_bytes']:.1f}x)",
    )
    mid, naive_mid = runs[("ours", sizes[-2])], runs[("naive", sizes[-2])]
    per_turn = (last["live_bytes"] / sizes[-1]) / (mid["live_bytes"] / sizes[-2])
    naive_per_turn = (naive_last["live_bytes"] / sizes[-1]) / (naive_mid["live_bytes"] / sizes[-2])
    verdicts.add(
        per_turn <= 1.25,
        f"storage grows linearly: bytes per turn at {sizes[-1]:,} turns are {per_turn:.2f}x "
        f"those at {sizes[-2]:,} (target <= 1.25x; naive {naive_per_turn:.2f}x)",
    )
    console.print()
    loads = _table(
        "2b. Loading the latest state (graph.get_state: what ima resume, ima show and "
        "Studio do); DeltaChannels replay their writes",
        ("turns", "ours, last step", "ours, run ended", "naive", "ours/naive"),
    )
    for n in sizes:
        ours, naive = _row(runs, n)
        loads.add_row(
            f"{n:,}",
            _ms(ours["load_seconds"]),
            _ms(ours["load_after_seconds"]),
            _ms(naive["load_seconds"]),
            _ratio(ours["load_seconds"], naive["load_seconds"]),
        )
    console.print(loads)


def figure_context(rows: list[dict[str, Any]], verdicts: Verdicts) -> None:
    table = _table(
        "3. Context construction per call against history length (budget 2,048 tokens). "
        "ours: context = build_context, prompt = build_turn_prompt (the agent's whole "
        "prompt); naive: recount = every turn's tokens recounted at every call, whole = the "
        "whole history rendered and counted",
        (
            "history turns",
            "history tokens",
            "turns kept",
            "prompt tokens",
            "ours: context",
            "ours: prompt",
            "naive: recount",
            "naive: whole",
            "recount/ours",
            "whole/ours",
        ),
    )
    for r in rows:
        table.add_row(
            f"{r['history']:,}",
            f"{r['history_tokens']:,}",
            str(r["kept_turns"]),
            f"{r['prompt_tokens']:,}",
            _ms(r["ours_context_s"]),
            _ms(r["ours_prompt_s"]),
            _ms(r["naive_recount_s"]),
            _ms(r["naive_whole_s"]),
            _ratio(r["naive_recount_s"], r["ours_prompt_s"]),
            _ratio(r["naive_whole_s"], r["ours_prompt_s"]),
        )
    console.print(table)
    first, last = rows[0], rows[-1]
    growth = last["ours_prompt_growth"]
    verdicts.add(
        growth <= CONTEXT_TARGET and last["prompt_tokens"] <= 2048,
        f"context construction at {last['history']:,} turns takes {growth:.2f}x the time at "
        f"{first['history']:,} turns (median of back-to-back rounds; best "
        f"{_ms(last['ours_prompt_s'])} vs {_ms(first['ours_prompt_s'])}) "
        f"and its prompt stays within the budget ({last['prompt_tokens']:,} <= 2,048) "
        f"(target <= {CONTEXT_TARGET}x; naive recount: "
        f"{last['naive_recount_s'] / first['naive_recount_s']:.0f}x)",
    )


def figure_memory(runs: dict, sizes: tuple[int, ...], verdicts: Verdicts) -> None:
    table = _table(
        "4. Peak memory of a run (resident set size of the run's own process; "
        "growth = peak - RSS after imports, graph compilation and tokenizer loading)",
        (
            "turns",
            "ours RSS before run",
            "ours peak, turns",
            "ours peak, incl. loading state",
            "ours growth",
            "naive peak, turns",
            "naive growth",
            "naive/ours growth",
        ),
    )
    for n in sizes:
        ours, naive = _row(runs, n)
        grow_o = ours["peak_rss_run_kib"] - ours["rss_before_kib"]
        grow_n = naive["peak_rss_run_kib"] - naive["rss_before_kib"]
        table.add_row(
            f"{n:,}",
            _mib(ours["rss_before_kib"]),
            _mib(ours["peak_rss_run_kib"]),
            _mib(ours["peak_rss_kib"]),
            _mib(grow_o),
            _mib(naive["peak_rss_run_kib"]),
            _mib(grow_n),
            _ratio(grow_n, grow_o),
        )
    console.print(table)
    last = runs[("ours", sizes[-1])]
    console.print(
        f"INFO peak memory of a {sizes[-1]:,}-turn run: {_mib(last['peak_rss_run_kib'])} during "
        f"the turns, {_mib(last['peak_rss_kib'])} including loading the final state "
        f"({_mib(last['peak_rss_run_kib'] - last['rss_before_kib'])} above the process before "
        "the run); no target"
    )


def figure_tokens(runs: dict, sizes: tuple[int, ...], budget: int, verdicts: Verdicts) -> None:
    table = _table(
        "5. Prompt tokens per run (usage the graph records) against the whole history "
        "in every prompt (same transcript)",
        (
            "turns",
            "ours agent-turn prompts",
            "ours per turn",
            "largest prompt",
            "naive whole history",
            "naive per turn",
            "naive/ours",
            "ours memory-update prompts",
        ),
    )
    for n in sizes:
        ours = runs[("ours", n)]
        table.add_row(
            f"{n:,}",
            f"{ours['prompt_tokens']:,}",
            f"{ours['prompt_tokens'] / n:,.0f}",
            f"{ours['max_prompt_tokens']:,}",
            f"{ours['naive_prompt_tokens']:,}",
            f"{ours['naive_prompt_tokens'] / n:,.0f}",
            _ratio(ours["naive_prompt_tokens"], ours["prompt_tokens"]),
            f"{ours['memory_prompt_tokens']:,}",
        )
    console.print(table)
    ref = 200 if 200 in sizes[:-1] else sizes[0]
    last, mid = runs[("ours", sizes[-1])], runs[("ours", ref)]
    growth = (last["prompt_tokens"] / sizes[-1]) / (mid["prompt_tokens"] / ref)
    naive_growth = (last["naive_prompt_tokens"] / sizes[-1]) / (mid["naive_prompt_tokens"] / ref)
    verdicts.add(
        growth <= TOKENS_TARGET and last["max_prompt_tokens"] <= budget,
        f"prompt tokens grow linearly: per turn at {sizes[-1]:,} turns {growth:.2f}x those at "
        f"{ref} (target <= {TOKENS_TARGET}x; naive: {naive_growth:.2f}x), largest prompt "
        f"{last['max_prompt_tokens']:,} <= budget {budget:,}",
    )


def figure_concurrency(result: dict[str, Any], verdicts: Verdicts) -> None:
    shared, alone = result["shared"], result["alone"]
    table = _table(
        f"6. {shared['processes']} `ima run` processes at once on one SQLite file "
        f"(scripted:delay=0.01, {shared['turn_cap']} turns each)",
        ("run", "exit", "status", "finished after", "'database is locked'"),
    )
    for (thread, status), r in zip(shared["statuses"].items(), shared["results"], strict=True):
        table.add_row(
            thread,
            str(r["returncode"]),
            str(status),
            f"{r['seconds']:.1f}s",
            "yes" if r["locked"] else "no",
        )
    only = alone["results"][0]
    table.add_row(
        "one run alone",
        str(only["returncode"]),
        str(alone["statuses"]["run-0"]),
        f"{only['seconds']:.1f}s",
        "yes" if only["locked"] else "no",
    )
    console.print(table)
    ok = shared["all_finished"] and not shared["locked"] and shared["overlapping"]
    verdicts.add(
        ok,
        f"{shared['processes']} runs at once on one database file all finished "
        f"({'overlapping in time' if shared['overlapping'] else 'NOT overlapping'}, "
        f"{'no' if not shared['locked'] else 'a'} 'database is locked'): "
        f"{shared['wall_seconds']:.1f}s for all, {alone['wall_seconds']:.1f}s for one alone "
        f"({_ratio(shared['wall_seconds'], alone['wall_seconds'])} on {os.cpu_count()} CPUs)",
    )
    for r in shared["results"]:
        if r["returncode"] != 0:
            console.print(f"[red]{r['stderr']}[/red]")


def figure_formation(formation: dict[str, Any], verdicts: Verdicts) -> None:
    table = _table(
        f"7. Memory formation on a server (fake Ollama over HTTP: "
        f"{formation['latency']} s per call, {formation['parallel']} calls at once)",
        ("memory_concurrency", "turns", "seconds per turn"),
    )
    for run in formation["runs"]:
        table.add_row(str(run["concurrency"]), str(run["turns"]), f"{run['seconds_per_turn']:.3f}")
    console.print(table)
    ratio = formation["ratio"]
    verdicts.add(
        ratio <= FORMATION_TARGET,
        f"memory formed beside the next turn: {ratio:.2f}x the wall time per turn of forming "
        f"it before (target <= {FORMATION_TARGET})",
    )
