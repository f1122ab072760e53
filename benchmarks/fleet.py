"""Load and fault benchmark of the job engine (procrastinate on PostgreSQL), and resumes
racing on one SQLite file. Prints its figures; exits 1 if a correctness figure fails.

    python -m benchmarks.fleet                          # private PostgreSQL server, full size
    python -m benchmarks.fleet --jobs 8 --kills 4 --sizes 1,2   # a quick look
    python -m benchmarks.fleet --db postgresql://USER@HOST:PORT/DBNAME --json fleet.json

PostgreSQL: `ima eval --db` queues N jobs (scripted conversations on `scripted:delay=0.5`,
half intrinsic memory, half baseline, long-term memory on) and `ima worker` processes run
them (benchmarks/fleet_worker.py: the real command with a witness log):

1. throughput: the same N jobs with 1, 2, 4 and 8 worker processes, then with one worker
   process of concurrency 1, 2, 4 and 8; each against 1 worker;
2. faults: the N jobs on 4 workers while a killer SIGKILLs a random worker that is running
   a job, K times, starting a new worker after each kill. Counted: results stored (each job
   once), duplicated turns and gaps in every transcript, transcripts that differ from the
   uninterrupted batch, jobs run twice (the witness: a conversation advanced by two jobs at
   overlapping times, or a result written twice), long-term supports lost.

SQLite: a run killed with SIGKILL, then 10 `ima resume` of it at once: exactly one runs,
the others are refused, and the result equals an uninterrupted run.

What a batch stored is checked in benchmarks/fleet_checks.py; the printout and the verdicts
are benchmarks/fleet_report.py.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from benchmarks import fleet_checks
from benchmarks.fleet_report import print_report, verdicts
from ima.evals.jobs import queueing
from ima.evals.shared import SharedEvaluation
from ima.runs import leases
from ima.runs.database import open_database

ROOT = Path(__file__).resolve().parent.parent
# Bounds on every wait, so a stuck batch fails with what it saw instead of holding CI for
# its hour (12-07: the fleet test hung twice in eight local runs).
WAIT_SECONDS = 900
KILLING_SECONDS = 600


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


# -- PostgreSQL: workers -------------------------------------------------------------------


def batch(
    url: str,
    workdir: Path,
    name: str,
    *,
    jobs: int,
    workers: int,
    concurrency: int,
    delay: float,
    turn_cap: int,
    stall: float,
    kills: int = 0,
    seed: int = 0,
) -> dict[str, Any]:
    """Start `workers` processes of `concurrency`, queue `jobs` runs as evaluation `name`,
    let them run (SIGKILLing a busy worker `kills` times, a new one started after each),
    stop the workers (SIGTERM) and check everything stored. The time is the job table's:
    from the first job queued to the last one done, so worker start-up is not counted
    (but a replacement's is)."""
    env = _env(IMA_PRINCIPAL=name, IMA_JOB_STALL_SECONDS=str(stall), IMA_LEASE_SECONDS="10")
    db = queueing.engine_database(open_database(url))  # procrastinate's schema, first use
    command = ["benchmarks.fleet_worker", "--db", url, "--concurrency", str(concurrency)]

    def spawn() -> subprocess.Popen[str]:
        return _popen(command, workdir, env)

    before = _latest_worker(db)
    procs = [spawn() for _ in range(workers)]
    _wait(lambda: _registered_since(db, before) >= workers, "the workers to start", procs)
    model = ["--model", f"scripted:delay={delay}", "--pairs", str(jobs // 2)]
    where = ["--out", name, "--db", url]
    queue = _popen(
        ["ima", "eval", *model, "--turn-cap", str(turn_cap), "--long-term", *where], workdir, env
    )
    out, err = queue.communicate(timeout=300)
    if queue.returncode:
        raise RuntimeError(f"ima eval failed: {err or out}")
    shared = SharedEvaluation(db, name)
    killed = _kill_randomly(db, name, procs, spawn, kills, jobs, random.Random(seed))
    _wait(lambda: _settled(db, name), "the jobs to end", procs)
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # a graceful stop: nothing is running
    logs = [p.communicate(timeout=300) for p in procs if p.returncode is None]
    # Ctrl-C's code (a worker's on SIGTERM), SIGTERM's (a replacement still starting), the killed
    stopped = (130, -signal.SIGTERM, -signal.SIGKILL)
    if any(p.returncode not in stopped for p in procs):
        raise RuntimeError(f"a worker failed: {logs}")
    seconds = _span(db, name)
    return {
        "name": name,
        "workers": workers,
        "concurrency": concurrency,
        "jobs": jobs,
        "seconds": round(seconds, 1),
        "per_minute": round(jobs / seconds * 60, 2),
        "kills": killed,
        "stored": len(shared.keys()),
        **fleet_checks.check(db, name),
    }


def _latest_worker(db: Any) -> int:
    """The id of the last worker procrastinate registered (0 before any)."""
    with db.session() as sql:
        row = sql.one("SELECT COALESCE(MAX(id), 0) AS n FROM procrastinate_workers")
    return int(row["n"]) if row else 0


def _registered_since(db: Any, latest: int) -> int:
    """Workers registered after the one with id `latest`. Counted by id, not in all: a new
    worker prunes the rows of killed ones, and a total that counted those before never
    grew enough (12-07: the fleet test waited its hour, one new worker for three rows)."""
    with db.session() as sql:
        row = sql.one("SELECT COUNT(*) AS n FROM procrastinate_workers WHERE id > %s", (latest,))
    return int(row["n"]) if row else 0


def _settled(db: Any, name: str) -> bool:
    """Whether none of the evaluation's jobs is queued or running any more."""
    with db.session() as sql:
        row = sql.one(
            "SELECT COUNT(*) AS n FROM procrastinate_jobs WHERE queue_name = %s "
            "AND status IN ('todo', 'doing')",
            (queueing.queue_of(name),),
        )
    return row is not None and row["n"] == 0


def _wait(done: Any, what: str, procs: list[subprocess.Popen[str]]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not done():
        if all(p.poll() is not None for p in procs):
            raise RuntimeError(f"every worker ended before {what}: {procs[0].communicate()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"waited {WAIT_SECONDS} s for {what}")
        time.sleep(0.2)


def _span(db: Any, name: str) -> float:
    """Seconds from the first job queued to the last one done, by the database's clock."""
    with db.session() as sql:
        row = sql.one(
            "SELECT EXTRACT(EPOCH FROM MAX(e.at) FILTER (WHERE e.type = 'succeeded') "
            "- MIN(e.at) FILTER (WHERE e.type = 'deferred'))::float8 AS s "
            "FROM procrastinate_events e JOIN procrastinate_jobs j ON j.id = e.job_id "
            "WHERE j.queue_name = %s",
            (queueing.queue_of(name),),
        )
    return float(row["s"]) if row and row["s"] else float("nan")


def _kill_randomly(
    db: Any,
    name: str,
    procs: list[subprocess.Popen[str]],
    spawn: Any,
    kills: int,
    jobs: int,
    rng: random.Random,
) -> list[dict[str, Any]]:
    """SIGKILL a random worker that is in a conversation (one turn or more stored), `kills`
    times, conversations not yet hit first (a resumed one is at once in the running
    again), every 2-4 s: about as long as a new worker takes to start, which follows each
    kill (faster kills would only ever hit the few workers still up)."""
    shared = SharedEvaluation(db, name)
    prefix = name + "--"
    killed: list[dict[str, Any]] = []
    deadline = time.monotonic() + KILLING_SECONDS
    # ends when the jobs have: a job that failed stores no result, and none is held again
    while len(killed) < kills and len(shared.keys()) < jobs and not _settled(db, name):
        if time.monotonic() > deadline:
            break  # fewer kills than asked: the report's verdict says so
        live = {p.pid: p for p in procs if p.poll() is None}
        held = [
            (h, turns)
            for h in leases.holders(db).values()
            if h.pid in live
            and h.thread_id.startswith(prefix)
            and (turns := len(fleet_checks.turns(db, h.thread_id))) > 0
        ]
        if not held:
            time.sleep(0.1)
            continue
        hit = {k["thread"] for k in killed}
        holder, turns = rng.choice([h for h in held if h[0].thread_id not in hit] or held)
        live[holder.pid].send_signal(signal.SIGKILL)
        live[holder.pid].wait()
        procs.append(spawn())
        killed.append({"thread": holder.thread_id, "at_turn": turns})
        time.sleep(rng.uniform(2.0, 4.0))
    return killed


# -- SQLite: resumes racing ----------------------------------------------------------------


def sqlite_resumes(workdir: Path, resumes: int = 10, delay: float = 0.05) -> dict[str, Any]:
    db = str(workdir / "race.sqlite")
    env = _env()
    run = ["--model", f"scripted:delay={delay}", "--seed", "5", "--no-long-term", "--db", db]
    victim = _popen(["ima", "run", "--thread", "t", *run, "--json"], workdir, env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.1)
        if Path(db).exists() and len(fleet_checks.turns(db, "t")) >= 8:
            break
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    killed_at = len(fleet_checks.turns(db, "t"))
    procs = [
        _popen(["ima", "resume", "t", "--db", db, "--json"], workdir, env) for _ in range(resumes)
    ]
    deadline = time.monotonic() + WAIT_SECONDS  # one for all: they run at once
    outcomes = [_outcome(p, deadline) for p in procs]
    ran = sum(1 for code, _, _ in outcomes if code == 0)
    # refused while the run goes on, or (started late on a loaded machine) once it has ended
    refused = sum(1 for code, _, err in outcomes if code == 2 and _refused(err))
    reference = _popen(["ima", "run", "--thread", "ref", *run, "--json"], workdir, env)
    reference.communicate(timeout=600)

    def shown(thread: str) -> list[tuple[int, str, str]]:
        return [(t["index"], t["speaker"], t["content"]) for t in fleet_checks.turns(db, thread)]

    return {
        "resumes": resumes,
        "killed_at_turn": killed_at,
        "ran": ran,
        "refused": refused,
        "other_outcomes": resumes - ran - refused,
        "other_said": [
            f"exit {code}: {err.strip().splitlines()[-1] if err.strip() else out[:80]}"
            for code, out, err in outcomes
            if not (code == 0 or (code == 2 and _refused(err)))
        ],
        "equals_uninterrupted": shown("t") == shown("ref"),
        "turns": len(shown("t")),
    }


def _outcome(proc: subprocess.Popen[str], deadline: float) -> tuple[int, str, str]:
    """A resume's exit code and output; one still running at `deadline` is killed and
    reported as hung (exit -9), not waited for."""
    try:
        out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err += f"\nhung: killed after {WAIT_SECONDS} s"
    return proc.returncode, out, err


def _refused(err: str) -> bool:
    return "is being run by" in err or "already ended" in err


def run(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [int(n) for n in args.sizes.split(",")]
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ima-fleet-")))
        url = args.db
        if url is None:
            from benchmarks.pgcluster import private_cluster

            url = stack.enter_context(private_cluster()).new_database("fleet")
        common = {
            "jobs": args.jobs,
            "delay": args.delay,
            "turn_cap": args.turn_cap,
            "stall": args.stall_seconds,
        }
        stamp = f"{int(time.time())}"
        scaling = []
        for workers, concurrency in [(n, 1) for n in sizes] + [(1, n) for n in sizes if n > 1]:
            name = f"fleet-{workers}w{concurrency}c-{stamp}"
            figures = batch(url, workdir, name, workers=workers, concurrency=concurrency, **common)
            scaling.append(figures)
            print(
                f"  {workers} worker(s) x concurrency {concurrency}: {figures['seconds']:.1f} s",
                flush=True,
            )
        fault = batch(
            url,
            workdir,
            f"fleet-kills-{stamp}",
            workers=args.fault_workers,
            concurrency=1,
            kills=args.kills,
            seed=args.seed,
            **common,
        )
        reference = scaling[0]["_transcripts"]
        differing = [k for k, t in fault.pop("_transcripts").items() if reference.get(k) != t]
        fault["differ_from_uninterrupted"] = len(differing)
        for figures in scaling:
            figures.pop("_transcripts")
            figures["speedup"] = round(scaling[0]["seconds"] / figures["seconds"], 2)
        sqlite = sqlite_resumes(workdir, args.resumes)
    return {"scaling": scaling, "kills": fault, "sqlite_resumes": sqlite}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a PostgreSQL URL (default: start a private server)")
    parser.add_argument("--jobs", type=int, default=32)
    parser.add_argument("--sizes", default="1,2,4,8", help="workers, and concurrencies")
    parser.add_argument("--delay", type=float, default=0.5, help="seconds per model call")
    parser.add_argument("--turn-cap", type=int, default=6)
    parser.add_argument("--stall-seconds", type=float, default=4.0)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--fault-workers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0, help="of the killer's choices")
    parser.add_argument("--resumes", type=int, default=10)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    figures = run(args)
    print_report(figures, args.kills)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if all(ok for _, ok in verdicts(figures, args.kills)) else 1


if __name__ == "__main__":
    sys.exit(main())
