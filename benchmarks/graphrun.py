"""One measured run of the real graph: N turns, a real SQLite checkpointer on a temp file,
the instant scripted model whose reviewer always rejects (so the run reaches the turn cap).

Runs in its own process (see `run.py`), so its peak memory is its own.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from ima.core.settings import RunContext
from ima.core.tokens import count_tokens
from ima.meeting.builder import compile_graph
from ima.models import agent_model
from ima.runs import checkpoints
from ima.runs.database import open_database
from ima.tasks import load_task

MODEL = "scripted:reject_rounds=100000"  # the reviewer rejects every vote: no consensus
WINDOW = 50  # turns in the "last window" of the per-turn time


def _rss_kib() -> int:
    """Current resident set size (Linux), else the peak so far."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _db_bytes(directory: Path) -> int:
    """The database file with its WAL and shared-memory files, if any are left."""
    return sum(p.stat().st_size for p in directory.iterdir() if p.name.startswith("bench.sqlite"))


def _live_bytes(conn: Any) -> int:
    """Bytes of the database's pages in use (WAL included, free pages not)."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    return (pages - free) * conn.execute("PRAGMA page_size").fetchone()[0]


def _compact_while_running(saver: Any, graph: Any, config: Any, steps: int) -> bool:
    """What `ima run` does after each step, if this version of ima compacts running runs."""
    compact = getattr(checkpoints, "compact_while_running", None)
    return bool(compact and compact(saver, graph, config, steps))


def _compact(saver: Any, graph: Any, config: Any) -> bool:
    """What `ima run` does when a run ends, if this version of ima compacts finished runs."""
    compact = getattr(checkpoints, "compact_thread", None)
    if compact is None:
        return False
    compact(saver, graph, config)
    return True


def run_graph(variant: str, turns: int, budget: int = 2048) -> dict[str, Any]:
    """Run `turns` turns of the data-pipeline task; `variant` is `ours` or `naive`."""
    task = load_task("data-pipeline")
    settings = RunContext(
        model=MODEL, turn_cap=turns, token_budget=budget, template="generic", seed=0
    )
    with tempfile.TemporaryDirectory(prefix="ima-bench-") as tmp:
        db = Path(tmp) / "bench.sqlite"
        with open_database(db).checkpointer() as saver:
            if variant == "naive":
                from benchmarks.naive import compile_naive_graph

                graph = compile_naive_graph(task, "intrinsic", checkpointer=saver)
            else:
                graph = compile_graph(task, "intrinsic", checkpointer=saver)  # type: ignore[arg-type]
            config: Any = {"configurable": {"thread_id": f"bench-{variant}-{turns}"}}
            count_tokens("warm up")  # the tokenizer's vocabulary is not the run's own memory
            agent_model(settings)
            rss_before = _rss_kib()
            stamps: list[float] = []  # wall clock at each agent turn
            cpu: list[float] = []  # process CPU time (all threads) at each agent turn
            turn_bytes = memory_bytes = memory_versions = 0
            steps = compactions = 0
            started = time.perf_counter()
            for chunk in graph.stream(
                {},
                config,
                context=settings,
                stream_mode="updates",
                durability="sync",  # as `ima run` does
            ):
                steps += 1
                if variant == "ours":  # the naive reference keeps every step, like --keep-history
                    compactions += _compact_while_running(saver, graph, config, steps)
                for node, update in chunk.items():
                    if not isinstance(update, dict):
                        continue
                    for turn in update.get("transcript") or []:
                        if node in task.speakers:
                            stamps.append(time.perf_counter())
                            cpu.append(time.process_time())
                        turn_bytes += len(turn["content"].encode())
                    for slot in (update.get("memories") or {}).values():
                        if slot.get("version", 0) > 0:  # a rewrite (setup writes empty slots)
                            memory_bytes += len(slot["text"].encode())
                            memory_versions += 1
            run_seconds = time.perf_counter() - started
            peak_run = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            live_bytes = _live_bytes(saver.conn)  # what an unfinished run holds at this point
            loaded = time.perf_counter()
            values = graph.get_state(config).values  # what `ima resume` / `ima show` load
            load_seconds = time.perf_counter() - loaded
            compacted = variant == "ours" and _compact(saver, graph, config)
            loaded = time.perf_counter()
            after = graph.get_state(config).values
            load_after_seconds = time.perf_counter() - loaded
        db_bytes = _db_bytes(Path(tmp))

    transcript = values["transcript"]
    intervals = [b - a for a, b in itertools.pairwise(stamps)]
    cpu_intervals = [b - a for a, b in itertools.pairwise(cpu)]
    window, cpu_window = intervals[-WINDOW:], cpu_intervals[-WINDOW:]
    history = 0
    ours_prompts: list[int] = []
    naive_prompts: list[int] = []
    for turn in transcript:  # a turn records the history tokens its prompt kept
        ours = turn["usage"]["input_tokens"]
        ours_prompts.append(ours)
        naive_prompts.append(ours - turn["context"]["history"] + history)
        history += turn["tokens"]
    usage = values.get("usage", {})
    memory_prompt_tokens = sum(
        kinds.get("memory_update", {}).get("input_tokens", 0) for kinds in usage.values()
    )
    digest = hashlib.sha1("\x00".join(t["content"] for t in transcript).encode()).hexdigest()
    return {
        "variant": variant,
        "turns": len(transcript),
        "status": values.get("status"),
        "budget": budget,
        "run_seconds": run_seconds,
        "ms_per_turn": 1000 * sum(intervals) / max(len(intervals), 1),
        "ms_per_turn_last": 1000 * sum(window) / max(len(window), 1),
        "cpu_ms_per_turn": 1000 * sum(cpu_intervals) / max(len(cpu_intervals), 1),
        "cpu_ms_per_turn_last": 1000 * sum(cpu_window) / max(len(cpu_window), 1),
        "cpu_ms_median_last": 1000 * statistics.median(cpu_window or [0.0]),
        "window": len(window),
        "load_seconds": load_seconds,
        "db_bytes": db_bytes,
        "live_bytes": live_bytes,
        "compacted": compacted,
        "compactions_while_running": compactions,
        "state_kept": after == values,
        "load_after_seconds": load_after_seconds,
        "raw_bytes": turn_bytes + memory_bytes,
        "turn_bytes": turn_bytes,
        "memory_bytes": memory_bytes,
        "memory_versions": memory_versions,
        "rss_before_kib": rss_before,
        "peak_rss_run_kib": peak_run,  # during the turns
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,  # with loading
        "prompt_tokens": sum(ours_prompts),
        "max_prompt_tokens": max(ours_prompts, default=0),
        "naive_prompt_tokens": sum(naive_prompts),
        "memory_prompt_tokens": memory_prompt_tokens,
        "instrumented_turns": sum("context" in t for t in transcript),
        "transcript_sha1": digest,
        "pid": os.getpid(),
    }
