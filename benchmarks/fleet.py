"""Load and fault benchmark: evaluation workers on one PostgreSQL, and resumes racing on
one SQLite file. Prints its figures; exits 1 if a correctness figure is not 0.

    python -m benchmarks.fleet                     # private PostgreSQL server, full size
    python -m benchmarks.fleet --conversations 6   # smaller
    python -m benchmarks.fleet --db postgresql://USER@HOST:PORT/DBNAME

PostgreSQL: `ima eval --db` queues N scripted conversations (half intrinsic memory, half
baseline, long-term memory on) and `ima worker` processes run them:

1. one worker, then 3 workers: throughput ratio (conversations per minute);
2. 3 workers, one killed with SIGKILL mid-conversation: every conversation finishes, and
   the transcripts show 0 duplicated turns and 0 gaps and equal the uninterrupted ones;
   a witness log (benchmarks/fleet_worker.py) shows 0 conversations advanced by two
   processes at once; long-term memory lost 0 of the updates the runs made concurrently.

SQLite: a run killed with SIGKILL, then 10 `ima resume` of it at once: exactly one runs,
the others are refused, and the result equals an uninterrupted run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ima.evals.queue import SharedEvaluation, progress

from ima.runs import leases
from ima.runs.database import open_database, open_memory_hub
from ima.runs.registry import RunRegistry
from ima.runs.runner import load_state

ROOT = Path(__file__).resolve().parent.parent


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    env["IMA_CONFIG"] = os.devnull  # no ./ima.toml
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def _popen(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _turns(db: Any, thread: str) -> list[dict[str, Any]]:
    registry = RunRegistry(db)
    try:
        record = registry.find(thread)
    finally:
        registry.close()
    return list(load_state(record, db).get("transcript", [])) if record else []


# -- PostgreSQL: workers -------------------------------------------------------------------


def batch(
    url: str,
    workdir: Path,
    name: str,
    *,
    conversations: int,
    workers: int,
    delay: float,
    turn_cap: int,
    lease_seconds: float,
    kill: bool,
) -> dict[str, Any]:
    """Queue `conversations` runs as evaluation `name`, run them with `workers` workers
    (killing one mid-conversation if `kill`), and check everything they stored."""
    env = _env(IMA_PRINCIPAL=name, IMA_LEASE_SECONDS=str(lease_seconds))
    queue = _popen(
        [
            "ima",
            "eval",
            "--model",
            f"scripted:delay={delay}",
            "--pairs",
            str(conversations // 2),
            "--turn-cap",
            str(turn_cap),
            "--long-term",
            "--out",
            name,
            "--db",
            url,
        ],
        workdir,
        env,
    )
    out, err = queue.communicate(timeout=300)
    if queue.returncode:
        raise RuntimeError(f"ima eval failed: {err or out}")
    db = open_database(url)
    started = time.perf_counter()
    procs = [
        _popen(
            [
                "benchmarks.fleet_worker",
                "--db",
                url,
                "--eval",
                name,
                "--until-done",
                "--poll",
                "0.2",
            ],
            workdir,
            env,
        )
        for _ in range(workers)
    ]
    killed: dict[str, Any] = {}
    if kill:
        killed = _kill_one_mid_conversation(db, name, procs[0], conversations)
    survivors = procs[1:] if kill else procs
    logs = [p.communicate(timeout=1800) for p in survivors]
    seconds = time.perf_counter() - started
    failed = [p.returncode for p in survivors if p.returncode]
    if failed:
        raise RuntimeError(f"a worker failed: {logs}")
    figures = {
        "name": name,
        "workers": workers,
        "conversations": conversations,
        "seconds": round(seconds, 1),
        "per_minute": round(conversations / seconds * 60, 2),
        **killed,
        **_check(db, name, conversations),
    }
    db.close()
    return figures


def _kill_one_mid_conversation(
    db: Any, name: str, victim: subprocess.Popen[str], conversations: int
) -> dict[str, Any]:
    """SIGKILL the first worker once a third of the runs are done and it is at least
    three turns into a conversation."""
    deadline = time.monotonic() + 1200
    while time.monotonic() < deadline:
        time.sleep(0.2)
        done = progress(db, name)["evaluations"].get(name, {}).get("done", 0)
        held = [h for h in leases.holders(db).values() if h.pid == victim.pid]
        if done >= conversations // 3 and held:
            turns = len(_turns(db, held[0].thread_id))
            if turns >= 3:
                victim.send_signal(signal.SIGKILL)
                victim.wait()
                return {"killed": {"thread": held[0].thread_id, "at_turn": turns, "done": done}}
    raise RuntimeError("the victim never held a conversation mid-way")


def _check(db: Any, name: str, conversations: int) -> dict[str, Any]:
    shared = SharedEvaluation(db, name)
    rows = shared.load()
    counts = progress(db, name)["evaluations"][name]
    duplicated = gaps = 0
    transcripts: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        turns = _turns(db, row["thread_id"])
        index = [t["index"] for t in turns]
        duplicated += len(index) - len(set(index))
        gaps += max(index, default=0) - len(set(index))
        transcripts[row["key"]] = [(t["speaker"], t["content"]) for t in turns]
    with db.session() as sql:  # why runs failed, for the printout
        errors = [
            r["error"]
            for r in sql.all(
                "SELECT error FROM ima_eval_jobs WHERE eval = %s AND status = 'failed'", (name,)
            )
        ]
    return {
        "finished": counts["done"],
        "failed": counts["failed"],
        "errors": errors,
        "results": len(rows),
        "duplicated_turns": duplicated,
        "gaps": gaps,
        **_witness(db, name),
        **_long_term(db, name, rows),
        "_transcripts": transcripts,
    }


def _witness(db: Any, name: str) -> dict[str, Any]:
    """From the activity log: conversations two processes advanced at overlapping times,
    and turns done again after a kill (the step a killed process had not saved)."""
    prefix = name + "--"
    with db.session() as sql:
        rows = sql.all(
            "SELECT thread_id, pid, turn, at FROM bench_activity WHERE thread_id LIKE %s",
            (prefix + "%",),
        )
    spans: dict[str, dict[int, list[float]]] = defaultdict(dict)
    turns_by: dict[tuple[str, int], set[int]] = defaultdict(set)
    for r in rows:
        span = spans[r["thread_id"]].setdefault(r["pid"], [r["at"], r["at"]])
        span[0], span[1] = min(span[0], r["at"]), max(span[1], r["at"])
        turns_by[(r["thread_id"], r["turn"])].add(r["pid"])
    overlapping = 0
    for by_pid in spans.values():
        ordered = sorted(by_pid.values())
        overlapping += any(b[0] < a[1] for a, b in itertools.pairwise(ordered))
    return {
        "run_twice_at_once": overlapping,
        "processes_per_conversation": max((len(p) for p in spans.values()), default=0),
        "turns_redone_after_kill": sum(1 for pids in turns_by.values() if len(pids) > 1),
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
            memories = load_state_of(db, row["thread_id"]).get("memories") or {}
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


# -- SQLite: resumes racing ----------------------------------------------------------------


def sqlite_resumes(workdir: Path, resumes: int = 10, delay: float = 0.05) -> dict[str, Any]:
    db = str(workdir / "race.sqlite")
    env = _env()
    run = ["--model", f"scripted:delay={delay}", "--seed", "5", "--no-long-term", "--db", db]
    victim = _popen(["ima", "run", "--thread", "t", *run, "--json"], workdir, env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.1)
        if Path(db).exists() and len(_turns(db, "t")) >= 8:
            break
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    killed_at = len(_turns(db, "t"))
    procs = [
        _popen(["ima", "resume", "t", "--db", db, "--json"], workdir, env) for _ in range(resumes)
    ]
    outcomes = [(p.wait(600), *p.communicate()) for p in procs]
    ran = sum(1 for code, _, _ in outcomes if code == 0)
    refused = sum(1 for code, _, err in outcomes if code == 2 and "is being run by" in err)
    reference = _popen(["ima", "run", "--thread", "ref", *run, "--json"], workdir, env)
    reference.communicate(timeout=600)

    def shown(thread: str) -> list[tuple[int, str, str]]:
        return [(t["index"], t["speaker"], t["content"]) for t in _turns(db, thread)]

    return {
        "resumes": resumes,
        "killed_at_turn": killed_at,
        "ran": ran,
        "refused": refused,
        "other_outcomes": resumes - ran - refused,
        "equals_uninterrupted": shown("t") == shown("ref"),
        "turns": len(shown("t")),
    }


# -- report --------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ima-fleet-")))
        url = args.db
        if url is None:
            from benchmarks.pgcluster import private_cluster

            url = stack.enter_context(private_cluster()).new_database("fleet")
        common = {
            "conversations": args.conversations,
            "delay": args.delay,
            "turn_cap": args.turn_cap,
            "lease_seconds": args.lease_seconds,
        }
        stamp = f"{int(time.time())}"
        one = batch(url, workdir, f"fleet-1w-{stamp}", workers=1, kill=False, **common)
        three = batch(url, workdir, f"fleet-3w-{stamp}", workers=3, kill=False, **common)
        fault = batch(url, workdir, f"fleet-kill-{stamp}", workers=3, kill=True, **common)
        reference = one.pop("_transcripts")
        three.pop("_transcripts")
        differing = [k for k, t in fault.pop("_transcripts").items() if reference.get(k) != t]
        fault["differ_from_uninterrupted"] = len(differing)
        sqlite = sqlite_resumes(workdir, args.resumes)
    return {
        "one_worker": one,
        "three_workers": three,
        "throughput_ratio_3_vs_1": round(one["seconds"] / three["seconds"], 2),
        "three_workers_one_killed": fault,
        "sqlite_resumes": sqlite,
    }


def verdicts(figures: dict[str, Any]) -> list[tuple[str, bool]]:
    fault, race = figures["three_workers_one_killed"], figures["sqlite_resumes"]
    return [
        (
            f"all {fault['conversations']} finish",
            fault["finished"] == fault["results"] == fault["conversations"],
        ),
        ("0 duplicated turns", fault["duplicated_turns"] == 0),
        ("0 gaps", fault["gaps"] == 0),
        ("0 conversations run twice at once", fault["run_twice_at_once"] == 0),
        ("0 lost long-term updates", fault["long_term_lost"] == 0),
        ("transcripts equal the uninterrupted ones", fault["differ_from_uninterrupted"] == 0),
        ("SQLite: exactly one resume runs", race["ran"] == 1 and race["other_outcomes"] == 0),
        ("SQLite: result equals an uninterrupted run", race["equals_uninterrupted"]),
    ]


def print_report(figures: dict[str, Any]) -> None:
    one, three, fault = (
        figures["one_worker"],
        figures["three_workers"],
        figures["three_workers_one_killed"],
    )
    race = figures["sqlite_resumes"]
    print("PostgreSQL: evaluation workers (scripted model, long-term memory on)")
    for f in (one, three, fault):
        print(
            f"  {f['workers']} worker(s){' (one killed)' if 'killed' in f else '':13}"
            f" {f['conversations']} conversations in {f['seconds']:.1f}s "
            f"({f['per_minute']:.1f}/min)"
        )
    print(f"  throughput 3 workers vs 1: {figures['throughput_ratio_3_vs_1']:.2f}x")
    k = fault["killed"]
    print(
        f"  killed: worker holding {k['thread']} at turn {k['at_turn']} "
        f"({k['done']} runs done by then)"
    )
    print(
        f"  finished {fault['finished']}/{fault['conversations']} · failed {fault['failed']} · "
        f"duplicated turns {fault['duplicated_turns']} · gaps {fault['gaps']} · "
        f"run twice at once {fault['run_twice_at_once']} · transcripts differing from the "
        f"uninterrupted batch {fault['differ_from_uninterrupted']}"
    )
    for error in sorted(set(fault.get("errors", []))):
        print(f"  failed run: {error}")
    print(
        f"  turns redone after the kill (a step the killed worker had not saved): "
        f"{fault['turns_redone_after_kill']}"
    )
    print(
        f"  long-term memory: {fault['long_term_updates']} expected supports in "
        f"{fault['long_term_scopes']} scopes, lost {fault['long_term_lost']}, revision chain "
        f"breaks {fault['revision_chain_breaks']}"
    )
    print(
        f"SQLite: {race['resumes']} `ima resume` at once of a run killed at turn {race['killed_at_turn']}"
    )
    print(
        f"  ran {race['ran']} · refused {race['refused']} · other {race['other_outcomes']} · "
        f"equals the uninterrupted run: {race['equals_uninterrupted']} ({race['turns']} turns)"
    )
    for label, ok in verdicts(figures):
        print(f"{'PASS' if ok else 'FAIL'}  {label}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a PostgreSQL URL (default: start a private server)")
    parser.add_argument("--conversations", type=int, default=24)
    parser.add_argument("--delay", type=float, default=0.1, help="seconds per model call")
    parser.add_argument("--turn-cap", type=int, default=16)
    parser.add_argument("--lease-seconds", type=float, default=5.0)
    parser.add_argument("--resumes", type=int, default=10)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    figures = run(args)
    print_report(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if all(ok for _, ok in verdicts(figures)) else 1


if __name__ == "__main__":
    sys.exit(main())
