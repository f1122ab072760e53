"""A conversation is advanced by exactly one process at a time, on both backends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import start_ima, turns_so_far

from ima.core.settings import RunContext
from ima.runs import leases
from ima.runs.database import open_database
from ima.runs.leases import LeaseLost, LeaseSettings, ThreadBusy
from ima.runs.registry import RunRegistry
from ima.runs.runner import create_run, execute, load_state

SHORT = LeaseSettings(seconds=0.6)


def test_a_second_claim_is_refused_with_who_holds_it(db_target):
    db = open_database(db_target)
    with leases.hold(db, "t") as held:
        with pytest.raises(ThreadBusy) as refused, leases.hold(db, "t"):
            pass
        message = str(refused.value)
        assert message.startswith(
            f"thread t is being run by process {os.getpid()} on host {os.uname().nodename} since "
        )
        assert "--wait" in message
        held.check()  # still ours
    with leases.hold(db, "t"):  # released: free again
        pass
    db.close()


def test_heartbeats_keep_a_lease_past_its_term(db_target):
    db = open_database(db_target)
    with leases.hold(db, "t", settings=SHORT) as held:
        time.sleep(3 * SHORT.seconds)
        with pytest.raises(ThreadBusy), leases.hold(db, "t", settings=SHORT):
            pass
        held.check()
    db.close()


def test_a_silent_holder_expires_and_cannot_write_afterwards(db_target):
    """A holder that stops heartbeating (a lost machine) loses the thread after the term;
    the new holder's lease survives the old one's release."""
    db = open_database(db_target)
    old = leases.Lease(db, "t", SHORT)
    leases.set_up(db)
    assert old.claim() is None
    old._stop.set()  # the heartbeat dies, the process does not know yet
    old._beat.join()
    with pytest.raises(ThreadBusy), leases.hold(db, "t", settings=SHORT):
        pass
    time.sleep(SHORT.seconds + 0.2)
    with leases.hold(db, "t", settings=SHORT) as new:
        with pytest.raises(LeaseLost):
            old.check()  # not renewed for most of its term: it must not write
        old.lost = old.lost or "expired"
        old.release()  # must not delete the new holder's row
        assert leases.holders(db)["t"].holder == new.holder
    db.close()


def test_wait_takes_the_lease_when_the_holder_releases_it(db_target):
    db = open_database(db_target)
    told = []
    with leases.hold(db, "t"):
        order = []

        def second() -> None:
            with leases.hold(open_database(db_target), "t", wait=True, on_wait=told.append):
                order.append("second")

        waiter = threading.Thread(target=second)
        waiter.start()
        time.sleep(1.5)
        order.append("first done")
    waiter.join(30)
    assert order == ["first done", "second"]
    assert [h.pid for h in told] == [os.getpid()]
    db.close()


HOLD = (
    "import sys, time; from ima.runs import leases; from ima.runs.database import open_database\n"
    "with leases.hold(open_database(sys.argv[1]), 't'):\n"
    "    print('held', flush=True); time.sleep(600)\n"
)


def test_a_holder_killed_on_this_machine_is_void_at_once(db_target):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, db_target], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"held"
    db = open_database(db_target)
    with pytest.raises(ThreadBusy, match=f"process {proc.pid} "), leases.hold(db, "t"):
        pass
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with leases.hold(db, "t"):  # no need to wait for the 30 s term
        pass
    db.close()


def _run(db_target: str, tmp_path: Path, thread: str, **settings) -> None:
    create_run(
        task_ref="data-pipeline",
        memory_mode="intrinsic",
        settings=RunContext(model="scripted", long_term=False, **settings),
        db=db_target,
        out_root=tmp_path / "out",
        thread_id=thread,
    )


def test_a_run_that_lost_its_lease_stops_before_writing_and_leaves_the_new_holders_record(
    db_target, tmp_path, monkeypatch
):
    monkeypatch.setenv("IMA_LEASE_SECONDS", "0.6")
    _run(db_target, tmp_path, "t", turn_cap=60)
    monkeypatch.setenv("IMA_MODEL", "scripted:delay=0.05")
    registry = RunRegistry(db_target)
    record = registry.get("t")
    record.settings["model"] = "scripted:delay=0.05"
    registry.save(record)
    turns: list[int] = []
    failure: list[BaseException] = []

    def listen(node: str, update: dict) -> None:
        turns.extend(t["index"] for t in update.get("transcript") or [])
        if len(turns) == 5:  # another process takes the thread over (as after an expiry)
            db = open_database(db_target)
            with db.session() as sql:
                sql.execute("UPDATE ima_leases SET holder = 'usurper' WHERE thread_id = 't'")
            db.close()

    def run() -> None:
        try:
            execute(registry.get("t"), db_target, listen)
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(60)
    assert failure and isinstance(failure[0], LeaseLost), failure
    assert len(turns) < 9  # stopped within a few steps of losing the lease
    stored = registry.get("t")
    assert stored.status == "running"  # our process did not mark it interrupted
    assert len(load_state(stored, db_target)["transcript"]) <= len(turns)
    registry.close()


def _transcript(db_target: str, thread: str) -> list[tuple[int, str, str]]:
    registry = RunRegistry(db_target)
    try:
        values = load_state(registry.get(thread), db_target)
    finally:
        registry.close()
    return [(t["index"], t["speaker"], t["content"]) for t in values["transcript"]]


@pytest.mark.slow
def test_two_resumes_at_once_one_runs_the_other_is_refused_or_waits(db_target, tmp_path):
    """The data-loss bug two racing resumes caused: a run killed with -9, then two `ima resume` at once.
    Before leases both ran it, and the thread could end with 0 turns."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    common = ["--db", db_target, "--json"]
    run = ["--model", "scripted:delay=0.05", "--seed", "3", "--no-long-term", *common]
    killed = start_ima("run", "--thread", "t", *run, cwd=tmp_path, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and turns_so_far(db_target, "t") < 8:
        time.sleep(0.2)
    killed.send_signal(signal.SIGKILL)
    killed.wait()

    resumes = [start_ima("resume", "t", *common, cwd=tmp_path, env=env) for _ in range(2)]
    outcomes = [(p.wait(300), *p.communicate()) for p in resumes]
    codes = sorted(code for code, _, _ in outcomes)
    assert codes == [0, 2], outcomes
    refused = next(err for code, _, err in outcomes if code == 2)
    assert "thread t is being run by process" in refused, refused

    reference = start_ima("run", "--thread", "ref", *run, cwd=tmp_path, env=env)
    assert reference.wait(300) == 0, reference.communicate()
    assert _transcript(db_target, "t") == _transcript(db_target, "ref")

    # --wait: the second waits, then finds the run ended and never runs it again
    again = [start_ima("resume", "t", "--wait", *common, cwd=tmp_path, env=env) for _ in range(2)]
    for proc in again:
        assert proc.wait(300) == 2
        assert "run t already ended (finalized)" in proc.communicate()[1]
    assert _transcript(db_target, "t") == _transcript(db_target, "ref")
    shown = json.loads(
        subprocess.run(
            [sys.executable, "-m", "ima", "show", "t", *common],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        ).stdout
    )
    assert shown["status"] == "finalized" and shown["usage"]["total"]["calls"] > 0


def test_a_bad_lease_term_is_one_line_before_anything_is_written(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("IMA_LEASE_SECONDS", "soon")
    db = tmp_path / "x.sqlite"
    code, _, err = cli("run", "--model", "scripted", "--no-long-term", "--db", str(db))
    assert code == 2 and "IMA_LEASE_SECONDS='soon' is invalid" in err
    assert not db.exists()
