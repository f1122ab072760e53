"""The figures `python -m benchmarks.run` prints: one table per measure beside its naive
reference, and each target as a PASS/FAIL verdict (benchmarks/run.py measures)."""

from __future__ import annotations

import os
from collections.abc import Callable
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


def _per_turn(total: float, turns: int) -> str:
    return f"{total / turns:,.0f}"


Run = dict[str, Any]  # one measured run's figures, as benchmarks/run.py measures them
Row = dict[str, str]  # one line of a figure's table: column header -> cell


def _print_rows(title: str, rows: list[Row]) -> None:
    """A figure's table, its columns named by the rows' keys: right-aligned, numbers all."""
    table = Table(title=title)
    for header in rows[0]:
        table.add_column(header, justify="right")
    for row in rows:
        table.add_row(*row.values())
    console.print(table)


def _per_size(
    runs: dict[tuple[str, int], Run], sizes: tuple[int, ...], cells: Callable[[int, Run, Run], Row]
) -> list[Row]:
    """One row per run length: its turns, then the cells of ours and naive at that length."""
    return [{"turns": f"{n:,}", **cells(n, runs[("ours", n)], runs[("naive", n)])} for n in sizes]


def _time_cells(n: int, ours: Run, naive: Run) -> Row:
    """Figure 1 at one run length: ms per turn, CPU and wall."""
    return {
        "ours CPU, last 50 (median)": f"{ours['cpu_ms_median_last']:.2f}",
        "ours CPU, all (mean)": f"{ours['cpu_ms_per_turn']:.2f}",
        "ours wall, last 50 (mean)": f"{ours['ms_per_turn_last']:.2f}",
        "naive CPU, last 50 (median)": f"{naive['cpu_ms_median_last']:.2f}",
        "naive wall, last 50 (mean)": f"{naive['ms_per_turn_last']:.2f}",
        "naive/ours CPU": _ratio(naive["cpu_ms_median_last"], ours["cpu_ms_median_last"]),
        "run wall: ours / naive": f"{ours['run_seconds']:.1f}s / {naive['run_seconds']:.1f}s",
    }


def figure_time(runs: dict, sizes: tuple[int, ...], verdicts: Verdicts) -> None:
    _print_rows(
        "1. Framework time per turn: agent turn + memory update + router + checkpoints "
        "(instant scripted model, SqliteSaver on disk, durability=sync); ms per turn",
        _per_size(runs, sizes, _time_cells),
    )
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


def _storage_cells(n: int, ours: Run, naive: Run) -> Row:
    """Figure 2 at one run length: checkpoint bytes against the raw bytes."""
    return {
        "raw bytes": _mb(ours["raw_bytes"]),
        "ours, last step": _mb(ours["live_bytes"]),
        "ours/raw": _ratio(ours["live_bytes"], ours["raw_bytes"]),
        "ours bytes/turn": _per_turn(ours["live_bytes"], n),
        "ours on disk, run ended": _mb(ours["db_bytes"]),
        "end/raw": _ratio(ours["db_bytes"], ours["raw_bytes"]),
        "naive, last step": _mb(naive["live_bytes"]),
        "naive/raw": _ratio(naive["live_bytes"], naive["raw_bytes"]),
        "naive/ours": _ratio(naive["live_bytes"], ours["live_bytes"]),
    }


def _load_cells(n: int, ours: Run, naive: Run) -> Row:
    """Figure 2b at one run length: time to load the latest state."""
    return {
        "ours, last step": _ms(ours["load_seconds"]),
        "ours, run ended": _ms(ours["load_after_seconds"]),
        "naive": _ms(naive["load_seconds"]),
        "ours/naive": _ratio(ours["load_seconds"], naive["load_seconds"]),
    }


def figure_storage(runs: dict, sizes: tuple[int, ...], verdicts: Verdicts) -> None:
    _print_rows(
        "2. Checkpoint database after N turns against the raw bytes "
        "(utf-8 of every turn and of every memory version written)",
        _per_size(runs, sizes, _storage_cells),
    )
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
    _print_rows(
        "2b. Loading the latest state (graph.get_state: what ima resume, ima show and "
        "Studio do); DeltaChannels replay their writes",
        _per_size(runs, sizes, _load_cells),
    )


def _context_cells(r: dict[str, Any]) -> Row:
    """Figure 3 at one history length: prompt size and construction time."""
    return {
        "history turns": f"{r['history']:,}",
        "history tokens": f"{r['history_tokens']:,}",
        "turns kept": str(r["kept_turns"]),
        "prompt tokens": f"{r['prompt_tokens']:,}",
        "ours: context": _ms(r["ours_context_s"]),
        "ours: prompt": _ms(r["ours_prompt_s"]),
        "naive: recount": _ms(r["naive_recount_s"]),
        "naive: whole": _ms(r["naive_whole_s"]),
        "recount/ours": _ratio(r["naive_recount_s"], r["ours_prompt_s"]),
        "whole/ours": _ratio(r["naive_whole_s"], r["ours_prompt_s"]),
    }


def figure_context(rows: list[dict[str, Any]], verdicts: Verdicts) -> None:
    _print_rows(
        "3. Context construction per call against history length (budget 2,048 tokens). "
        "ours: context = build_context, prompt = build_turn_prompt (the agent's whole "
        "prompt); naive: recount = every turn's tokens recounted at every call, whole = the "
        "whole history rendered and counted",
        [_context_cells(r) for r in rows],
    )
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


def _memory_cells(n: int, ours: Run, naive: Run) -> Row:
    """Figure 4 at one run length: peak resident memory and its growth."""
    grow_o = ours["peak_rss_run_kib"] - ours["rss_before_kib"]
    grow_n = naive["peak_rss_run_kib"] - naive["rss_before_kib"]
    return {
        "ours RSS before run": _mib(ours["rss_before_kib"]),
        "ours peak, turns": _mib(ours["peak_rss_run_kib"]),
        "ours peak, incl. loading state": _mib(ours["peak_rss_kib"]),
        "ours growth": _mib(grow_o),
        "naive peak, turns": _mib(naive["peak_rss_run_kib"]),
        "naive growth": _mib(grow_n),
        "naive/ours growth": _ratio(grow_n, grow_o),
    }


def figure_memory(runs: dict, sizes: tuple[int, ...], verdicts: Verdicts) -> None:
    _print_rows(
        "4. Peak memory of a run (resident set size of the run's own process; "
        "growth = peak - RSS after imports, graph compilation and tokenizer loading)",
        _per_size(runs, sizes, _memory_cells),
    )
    last = runs[("ours", sizes[-1])]
    console.print(
        f"INFO peak memory of a {sizes[-1]:,}-turn run: {_mib(last['peak_rss_run_kib'])} during "
        f"the turns, {_mib(last['peak_rss_kib'])} including loading the final state "
        f"({_mib(last['peak_rss_run_kib'] - last['rss_before_kib'])} above the process before "
        "the run); no target"
    )


def _token_cells(n: int, ours: Run, naive: Run) -> Row:
    """Figure 5 at one run length, from ours only: each of its runs also counts what the whole
    history in every prompt would have cost."""
    return {
        "ours agent-turn prompts": f"{ours['prompt_tokens']:,}",
        "ours per turn": _per_turn(ours["prompt_tokens"], n),
        "largest prompt": f"{ours['max_prompt_tokens']:,}",
        "naive whole history": f"{ours['naive_prompt_tokens']:,}",
        "naive per turn": _per_turn(ours["naive_prompt_tokens"], n),
        "naive/ours": _ratio(ours["naive_prompt_tokens"], ours["prompt_tokens"]),
        "ours memory-update prompts": f"{ours['memory_prompt_tokens']:,}",
    }


def figure_tokens(runs: dict, sizes: tuple[int, ...], budget: int, verdicts: Verdicts) -> None:
    _print_rows(
        "5. Prompt tokens per run (usage the graph records) against the whole history "
        "in every prompt (same transcript)",
        _per_size(runs, sizes, _token_cells),
    )
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


def _process_cells(run: str, result: dict[str, Any], status: Any) -> Row:
    """Figure 6, one `ima run` process: how it ended and whether it met a lock."""
    return {
        "run": run,
        "exit": str(result["returncode"]),
        "status": str(status),
        "finished after": f"{result['seconds']:.1f}s",
        "'database is locked'": "yes" if result["locked"] else "no",
    }


def figure_concurrency(result: dict[str, Any], verdicts: Verdicts) -> None:
    shared, alone = result["shared"], result["alone"]
    rows = [
        _process_cells(thread, r, status)
        for (thread, status), r in zip(shared["statuses"].items(), shared["results"], strict=True)
    ]
    rows.append(_process_cells("one run alone", alone["results"][0], alone["statuses"]["run-0"]))
    _print_rows(
        f"6. {shared['processes']} `ima run` processes at once on one SQLite file "
        f"(scripted:delay=0.01, {shared['turn_cap']} turns each)",
        rows,
    )
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
    rows = [
        {
            "memory_concurrency": str(run["concurrency"]),
            "turns": str(run["turns"]),
            "seconds per turn": f"{run['seconds_per_turn']:.3f}",
        }
        for run in formation["runs"]
    ]
    _print_rows(
        f"7. Memory formation on a server (fake Ollama over HTTP: "
        f"{formation['latency']} s per call, {formation['parallel']} calls at once)",
        rows,
    )
    ratio = formation["ratio"]
    verdicts.add(
        ratio <= FORMATION_TARGET,
        f"memory formed beside the next turn: {ratio:.2f}x the wall time per turn of forming "
        f"it before (target <= {FORMATION_TARGET})",
    )
