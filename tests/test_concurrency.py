"""Four `ima run` processes at once on one SQLite file all finish: no "database is locked"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ima.runs.registry import RunRegistry
from ima.runs.runner import load_state

pytestmark = pytest.mark.slow

RUNS = 4
TURN_CAP = 60


def start_run(tmp_path: Path, db: Path, thread: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_") or k == "IMA_CACHE_DIR"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ima",
            "run",
            "--model",
            "scripted:delay=0.01,reject_rounds=100000",  # always rejected: runs to the cap
            "--turn-cap",
            str(TURN_CAP),
            "--db",
            str(db),
            "--thread",
            thread,
            "--out",
            str(tmp_path / "out"),
            "--json",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_four_runs_at_once_on_one_database_all_finish(tmp_path):
    db = tmp_path / "shared.sqlite"
    threads = [f"run-{k}" for k in range(RUNS)]
    procs = [start_run(tmp_path, db, t) for t in threads]
    outputs = [p.communicate(timeout=600) for p in procs]

    for thread, proc, (stdout, stderr) in zip(threads, procs, outputs, strict=True):
        assert "database is locked" not in stderr, f"{thread}: {stderr}"
        assert proc.returncode == 0, f"{thread} exited {proc.returncode}: {stderr[-2000:]}"
        record = json.loads(stdout)
        assert record["thread_id"] == thread
        assert record["status"] == "turn_cap"
        assert record["turns"] == TURN_CAP

    registry = RunRegistry(db)
    try:
        records = {r.thread_id: r for r in registry.all()}
    finally:
        registry.close()
    assert sorted(records) == threads
    # The runs really shared the file: the last one started before the first one ended.
    assert max(r.created_at for r in records.values()) < min(
        r.updated_at for r in records.values()
    ), "the runs did not overlap; the test proves nothing"
    for thread in threads:
        values = load_state(records[thread], db)
        assert len(values["transcript"]) == TURN_CAP
        assert [t["index"] for t in values["transcript"]] == list(range(1, TURN_CAP + 1))
        assert values["status"] == "turn_cap"
