"""Ctrl-C at any moment of `ima`, start-up included: exit 130 and one line, no traceback.

Each moment is chosen by what the process has shown, never by a clock: which module it has
just imported (`python -X importtime` reports each import as it completes), what it has
printed, or what the run has stored. Where the SIGINT lands after that is up to the
machine, and the outcome must not depend on it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from conftest import turns_so_far

pytestmark = pytest.mark.slow


class Watched:
    """A process whose stdout and stderr are read line by line as they come."""

    def __init__(self, command: list[str], cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=env | {"COLUMNS": "200"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # As from a terminal, even when the suite itself runs as a background job
            # (which ignores SIGINT, and a child would inherit that).
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.cwd = cwd
        self.out: list[str] = []
        self.err: list[str] = []
        self.readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _read(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    def wait_for(self, seen: Callable[[Watched], bool], what: str) -> None:
        deadline = time.monotonic() + 120
        while not seen(self):
            assert self.proc.poll() is None, f"ended before {what}: {self.out} {self.err}"
            assert time.monotonic() < deadline, f"never saw {what}"
            time.sleep(0.005)

    def interrupt(self) -> tuple[int, list[str]]:
        """Ctrl-C; the exit code and what it said on stderr (import timings left out)."""
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(120)
        for reader in self.readers:
            reader.join(30)
        said = [line for line in self.err if line.strip() and not line.startswith("import time:")]
        return code, said


def _any_turn(db: Path) -> bool:
    """Whether a run of the evaluation has stored a checkpoint (it is running)."""
    if not db.exists():
        return False
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0] > 0
    except sqlite3.Error:  # not created yet
        return False


def imported(module: str) -> Callable[[Watched], bool]:
    return lambda w: any(line.rsplit("|", 1)[-1].strip() == module for line in w.err)


def printed(text: str) -> Callable[[Watched], bool]:
    return lambda w: any(text in line for line in w.out + w.err)


def ima(*args: str) -> list[str]:
    return [sys.executable, "-X", "importtime", "-m", "ima", *args]


RUN = ("run", "--model", "scripted:delay=0.2", "--no-long-term", "--thread", "t")
STARTING = [  # the commands are not loaded yet: nothing was done
    "ima.cli.entry",
    "typer",
    "langchain_core.messages",
    "langgraph.graph.state",
    "ima.runs.runner",
]


@pytest.mark.parametrize("module", STARTING)
def test_ctrl_c_while_ima_starts_is_one_line_and_exit_130(tmp_path, module):
    watched = Watched(ima(*RUN, "--db", "x.sqlite"), tmp_path)
    watched.wait_for(imported(module), f"the import of {module}")
    code, said = watched.interrupt()
    assert code == 130, said
    assert len(said) == 1 and said[0].startswith("interrupted"), said
    assert not any("Traceback" in line for line in watched.out + watched.err)


def test_ctrl_c_once_the_run_exists_says_how_to_resume_and_nothing_is_lost(tmp_path):
    db = str(tmp_path / "x.sqlite")
    watched = Watched(ima(*RUN, "--db", db), tmp_path)
    watched.wait_for(lambda w: turns_so_far(db, "t") >= 2, "two turns stored")
    code, said = watched.interrupt()
    assert code == 130, said
    assert said == ["interrupted: continue with `ima resume t`"]
    resumed = subprocess.run(
        [sys.executable, "-m", "ima", "resume", "t", "--db", db, "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr


def test_ctrl_c_in_a_long_command_is_its_own_line_and_exit_130(tmp_path):
    args = ("eval", "--model", "scripted:delay=0.2", "--judge-model", "scripted", "--out", "ev")
    watched = Watched(ima(*args), tmp_path)
    watched.wait_for(lambda w: _any_turn(w.cwd / "ev" / "ima.sqlite"), "the command at work")
    code, said = watched.interrupt()
    assert code == 130, said
    assert len(said) == 1 and said[0].startswith("interrupted: 0 runs are stored in"), said
    assert not any("Traceback" in line for line in watched.out + watched.err)


def test_ctrl_c_stops_a_worker_in_one_line_and_its_job_goes_back_to_the_queue(tmp_path, pg_url):
    """procrastinate's worker stops on SIGINT; the running job ends at its next step and
    is queued again (not failed), to resume from its checkpoint."""
    args = ("--model", "scripted:delay=0.2", "--pairs", "1", "--out", "ev", "--db", pg_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    queued = subprocess.run(ima("eval", *args), cwd=tmp_path, env=env, capture_output=True)
    assert queued.returncode == 0, queued.stderr
    watched = Watched(ima("worker", "--db", pg_url), tmp_path)
    watched.wait_for(printed("started ev · "), "a job running")
    code, said = watched.interrupt()
    assert code == 130, said
    assert said == [
        "stopped: its unfinished jobs are back in the queue and continue from their last checkpoint"
    ]
    assert not any("Traceback" in line for line in watched.out + watched.err)
    found = subprocess.run(
        [sys.executable, "-m", "ima", "eval", "status", "--db", pg_url, "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    counts = json.loads(found.stdout)["evaluations"]["ev"]
    assert (counts["queued"], counts["failed"], counts["stored"]) == (2, 0, 0)


def test_the_installed_program_is_the_entry_that_handles_ctrl_c_at_start_up():
    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "ima"]
    assert script.value == "ima.cli.entry:main"


def test_a_sigint_the_parent_made_us_ignore_stays_ignored(tmp_path):
    """A background job of a script ignores SIGINT (the shell's doing): ima keeps it so."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    proc = subprocess.Popen(
        ima("tasks"),
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # the commands are loading
        if line.rstrip().endswith("| typer"):
            break
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "data-pipeline" in out
