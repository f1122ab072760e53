"""What a fleet batch left in the database (benchmarks/fleet.py runs it): results, every
transcript's duplicated turns and gaps, the witness log of jobs run twice, job starts, and
the long-term supports that went missing."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

from ima.core.state import memory_slots
from ima.evals.jobs import queueing
from ima.evals.shared import SharedEvaluation
from ima.runs.database import open_memory_hub
from ima.runs.registry import RunRegistry
from ima.runs.runner import load_state


def turns(db: Any, thread: str) -> list[dict[str, Any]]:
    registry = RunRegistry(db)
    try:
        record = registry.find(thread)
    finally:
        registry.close()
    return list(load_state(record, db).get("transcript", [])) if record else []


def check(db: Any, name: str) -> dict[str, Any]:
    rows = SharedEvaluation(db, name).load()
    found = queueing.progress(db, name)
    counts = found["evaluations"].get(name, {})
    duplicated = gaps = 0
    transcripts: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        shown = turns(db, row["thread_id"])
        index = [t["index"] for t in shown]
        duplicated += len(index) - len(set(index))
        gaps += max(index, default=0) - len(set(index))
        transcripts[row["key"]] = [(t["speaker"], t["content"]) for t in shown]
    return {
        "results": len(rows),
        "done": counts.get("done", 0),
        "failed": counts.get("failed", 0),
        "errors": [f["error"] for f in found["failures"]],
        "duplicated_turns": duplicated,
        "gaps": gaps,
        "attempts": _attempts(db, name),
        **witness(db, name),
        **_long_term(db, name, rows),
        "_transcripts": transcripts,
    }


def _attempts(db: Any, name: str) -> dict[str, int]:
    """From procrastinate's job table: jobs started more than once (a kill, then the
    retry that resumed them), and all job starts."""
    with db.session() as sql:
        rows = sql.all(
            "SELECT attempts FROM procrastinate_jobs WHERE queue_name = %s",
            (queueing.queue_of(name),),
        )
    return {
        "jobs_started_again": sum(1 for r in rows if r["attempts"] > 1),
        "job_starts": sum(r["attempts"] for r in rows),
    }


def witness(db: Any, name: str) -> dict[str, Any]:
    """From the activity log: conversations two jobs advanced at overlapping times, results
    written twice, and turns done again after a kill (the step a killed job had not
    saved)."""
    prefix = name + "--"
    with db.session() as sql:
        rows = sql.all(
            "SELECT thread_id, who, turn, at FROM bench_activity WHERE thread_id LIKE %s",
            (prefix + "%",),
        )
        writes = sql.all(
            "SELECT key, COUNT(*) AS n FROM bench_results WHERE eval = %s AND written GROUP BY key",
            (name,),
        )
    spans: dict[str, dict[str, list[float]]] = defaultdict(dict)
    turns_by: dict[tuple[str, int], set[str]] = defaultdict(set)
    for r in rows:
        span = spans[r["thread_id"]].setdefault(r["who"], [r["at"], r["at"]])
        span[0], span[1] = min(span[0], r["at"]), max(span[1], r["at"])
        turns_by[(r["thread_id"], r["turn"])].add(r["who"])
    overlapping = 0
    for by_job in spans.values():
        ordered = sorted(by_job.values())
        overlapping += any(b[0] < a[1] for a, b in itertools.pairwise(ordered))
    return {
        "run_twice_at_once": overlapping,
        "results_written_twice": sum(r["n"] - 1 for r in writes),
        "jobs_per_conversation": max((len(p) for p in spans.values()), default=0),
        "turns_redone_after_kill": sum(1 for who in turns_by.values() if len(who) > 1),
    }


def _long_term(db: Any, name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Every finished intrinsic run supports the common lesson and its seed's lesson in
    the private memory of each role whose final memory holds them, and in the shared
    memory when enough roles do: count the supports that are missing."""
    from benchmarks.fleet_worker import COMMON_LESSON, seed_lesson

    expected: set[tuple[str, str, str]] = set()
    found: set[tuple[str, str, str]] = set()
    broken_chains = 0
    with open_memory_hub(db.url, name) as hub:
        for row in rows:
            if row["condition"]["memory_mode"] != "intrinsic":
                continue
            memories = memory_slots(load_state_of(db, row["thread_id"]))
            for lesson in (COMMON_LESSON, seed_lesson(row["condition"]["seed"])):
                holders = [r for r, m in memories.items() if lesson in m["text"]]
                expected.update((f"private:{r}", lesson, row["thread_id"]) for r in holders)
                if len(holders) >= hub.policies.limits.shared_min_agents:
                    expected.add(("shared", lesson, row["thread_id"]))
        scopes = hub.scopes()
        for scope in scopes:
            for item in hub.read(scope).items.values():
                found.update((_label(scope), item.text, support.thread) for support in item.support)
            revs = [r.rev for r in hub._log.history(_ns(hub, scope), "doc")]
            broken_chains += revs != list(range(1, len(revs) + 1))
    return {
        "long_term_updates": len(expected),
        "long_term_lost": len(expected - found),
        "long_term_scopes": len(scopes),
        "revision_chain_breaks": broken_chains,
    }


def _label(scope: Any) -> str:
    return "shared" if scope.kind == "shared" else f"private:{scope.token}"


def load_state_of(db: Any, thread: str) -> dict[str, Any]:
    registry = RunRegistry(db)
    try:
        return load_state(registry.get(thread), db)
    finally:
        registry.close()


def _ns(hub: Any, scope: Any) -> tuple[str, ...]:
    from ima.longterm.namespaces import namespace

    return namespace(hub.principal, scope)
