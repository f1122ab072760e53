"""Several `ima run` processes at once on one SQLite file (WAL + busy timeout).

The same check is a test (tests/test_concurrency.py); here it is also timed against one
run alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ima.runs.registry import RunRegistry

LOCKED = "database is locked"


def _command(db: Path, out: Path, thread: str, turn_cap: int, delay: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ima",
        "run",
        "--model",
        f"scripted:delay={delay},reject_rounds=100000",
        "--turn-cap",
        str(turn_cap),
        "--db",
        str(db),
        "--thread",
        thread,
        "--out",
        str(out),
        "--json",
    ]


def _env() -> dict[str, str]:
    """No IMA_* settings from the caller's environment leak into the runs (the token cache
    location may stay)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_") or k == "IMA_CACHE_DIR"}
    env["IMA_CONFIG"] = os.devnull  # an empty config file: ./ima.toml is not read
    return env


def run_at_once(
    workdir: Path, processes: int = 4, turn_cap: int = 60, delay: float = 0.01
) -> dict[str, Any]:
    """Start `processes` runs together on one database file and wait for all of them."""
    db, out = workdir / "shared.sqlite", workdir / "out"
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            _command(db, out, f"run-{k}", turn_cap, delay),
            cwd=workdir,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(processes)
    ]
    results = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        results.append(
            {
                "returncode": proc.returncode,
                "seconds": time.perf_counter() - started,
                "locked": LOCKED in stderr or LOCKED in stdout,
                "stderr": stderr.strip()[-2000:],
            }
        )
    with RunRegistry(db) as registry:
        records = {r.thread_id: r for r in registry.all()}
    statuses = {
        f"run-{k}": getattr(records.get(f"run-{k}"), "status", None) for k in range(processes)
    }
    # All runs were inside the database at the same time: the last start precedes the first end.
    spans = [(r.created_at, r.updated_at) for r in records.values()]
    overlapping = bool(spans) and max(s for s, _ in spans) < min(e for _, e in spans)
    return {
        "processes": processes,
        "turn_cap": turn_cap,
        "wall_seconds": time.perf_counter() - started,
        "results": results,
        "statuses": statuses,
        "overlapping": overlapping,
        "all_finished": all(s == "turn_cap" for s in statuses.values())
        and all(r["returncode"] == 0 for r in results),
        "locked": any(r["locked"] for r in results),
    }


def measure(processes: int = 4, turn_cap: int = 60, delay: float = 0.01) -> dict[str, Any]:
    """One run alone, then `processes` runs at once, each on a fresh database file."""
    with tempfile.TemporaryDirectory(prefix="ima-bench-alone-") as tmp:
        alone = run_at_once(Path(tmp), 1, turn_cap, delay)
    with tempfile.TemporaryDirectory(prefix="ima-bench-shared-") as tmp:
        shared = run_at_once(Path(tmp), processes, turn_cap, delay)
    return {"alone": alone, "shared": shared}
