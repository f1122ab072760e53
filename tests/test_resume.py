"""A run killed with SIGKILL mid-conversation resumes without losing or repeating a turn,
on both backends (SQLite file, PostgreSQL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import turns_so_far

from ima.runs.registry import RunRegistry

pytestmark = pytest.mark.slow


def ima(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ima", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def made(db: str) -> bool:
    """A SQLite file exists once the run created it (reading it earlier would create it)."""
    return "://" in db or Path(db).exists()


# Concurrent edit-mode updates are the strictest case (each edit applies to the version
# before it); one writer rewriting is the default. Each case runs a meeting twice on both
# backends, about two minutes on CI, so the matrix stays at these two.
@pytest.mark.parametrize(("concurrency", "update"), [("1", "rewrite"), ("2", "edit")])
def test_sigkill_then_resume_gives_the_uninterrupted_transcript(
    tmp_path, db_target, concurrency, update
):
    """Also with edit-mode memories: each edit applies to the version before it, so a lost
    or repeated update would show in the final memories."""
    db = db_target
    common = ["--model", "scripted:delay=0.05", "--seed", "7", "--json", "--db", db]
    common += ["--memory-concurrency", concurrency, "--memory-update", update]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ima", "run", "--thread", "killed", *common],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not made(db) or turns_so_far(db, "killed") < 9):
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = turns_so_far(db, "killed")
    assert 9 <= killed_at < 31, "killed mid-conversation"

    # killed on this machine: shown as interrupted at once, resumable without waiting
    listed = json.loads(ima("runs", "--json", "--db", db, cwd=tmp_path).stdout)
    assert listed[0]["status"] == "interrupted"
    registry = RunRegistry(db)
    spent_before_kill = registry.get("killed").wall_seconds  # kept step by step
    registry.close()
    assert spent_before_kill >= 9 * 0.05

    resumed = ima("resume", "killed", "--json", "--db", db, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    record = json.loads(resumed.stdout)
    assert record["status"] == "finalized"
    assert record["wall_seconds"] >= spent_before_kill + (record["turns"] - killed_at) * 0.05

    reference = ima("run", "--thread", "reference", *common, cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr

    killed, kept = (
        json.loads(ima("show", thread, "--json", "--db", db, cwd=tmp_path).stdout)
        for thread in ("killed", "reference")
    )

    def transcript(shown: dict) -> list[tuple[int, str, str]]:
        return [(t["turn"], t["speaker"], t["content"]) for t in shown["transcript"]]

    resumed_turns = transcript(killed)
    assert [t[0] for t in resumed_turns] == list(range(1, len(resumed_turns) + 1))
    assert resumed_turns == transcript(kept)
    assert killed["memories"] == kept["memories"]
    assert killed["memory"] == kept["memory"]  # every version, repairs
