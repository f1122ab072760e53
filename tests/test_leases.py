"""A conversation is advanced by exactly one process at a time, on both backends.

Whether a write is allowed is decided by the lease row in the database, inside the write's
own transaction; no test here lets a sleep decide an outcome: expiry is set in the database
or waited for as a condition."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import start_ima, turns_so_far
from langgraph.checkpoint.base import empty_checkpoint

from ima.core.settings import RunContext
from ima.runs import leases
from ima.runs.database import Database, open_database
from ima.runs.leases import LeaseLost, LeaseSettings, ThreadBusy
from ima.runs.registry import RunRegistry
from ima.runs.runner import create_run, execute, load_state


def _wait_for(condition, what: str, timeout: float = 120.0) -> None:
    """Poll until `condition()` holds; a generous timeout only catches a hang."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _lease_row(db: Database, thread: str) -> dict:
    with db.session() as sql:
        return sql.one(
            f"SELECT holder, expires, {{now}} AS now FROM {leases.TABLE} WHERE thread_id = %s",
            (thread,),
        )


def _expire(db: Database, thread: str) -> None:
    """The lease's term is over (as after a long pause), without waiting for it."""
    with db.session() as sql:
        sql.execute(
            f"UPDATE {leases.TABLE} SET expires = {{now}} - 1 WHERE thread_id = %s", (thread,)
        )


def _paused(lease: leases.Lease) -> leases.Lease:
    """A holder whose heartbeat stopped (a paused or lost process): it does not know yet."""
    lease._stop.set()
    lease._beat.join()
    return lease


def _stored(db_target: str, thread: str) -> list:
    """Every checkpoint row of a thread, in full: any write shows as a difference."""
    db = open_database(db_target)
    tables = (
        ["checkpoints", "checkpoint_writes", "checkpoint_blobs"]
        if db.kind == "postgres"
        else ["checkpoints", "writes"]
    )
    try:
        with db.session() as sql:
            return [
                sorted(map(repr, sql.all(f"SELECT * FROM {t} WHERE thread_id = %s", (thread,))))
                for t in tables
            ]
    finally:
        db.close()


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


def test_heartbeats_renew_a_lease_whose_term_ran_out(db_target):
    db = open_database(db_target)
    with leases.hold(db, "t", settings=LeaseSettings(seconds=5)) as held:
        _expire(db, "t")  # as if the term ran out: the next heartbeat renews it
        _wait_for(lambda: (row := _lease_row(db, "t"))["expires"] > row["now"], "a renewal")
        with pytest.raises(ThreadBusy), leases.hold(db, "t"):
            pass
        assert _lease_row(db, "t")["holder"] == held.holder
    db.close()


def _fenced_writes(db: Database, lease: leases.Lease, thread: str) -> None:
    """A checkpoint, its writes and the run record, each written under `lease`."""
    with db.checkpointer() as saver:
        saver.fence = lease
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        saved = saver.put(config, empty_checkpoint(), {}, {})
        saver.put_writes(saved, [("transcript", "a turn")], "task-1")


def test_a_holder_that_lost_its_lease_can_write_nothing_however_late_it_wakes(db_target, tmp_path):
    """The old holder never heard that it lost the thread (its heartbeat stopped, as in a
    paused process): the database refuses its checkpoint and registry writes all the same,
    and the new holder's lease survives the old one's release."""
    _run(db_target, tmp_path, "t")
    db = open_database(db_target)
    leases.set_up(db)
    old = leases.Lease(db, "t", LeaseSettings())
    assert old.claim() is None
    _paused(old)
    _fenced_writes(db, old, "t")  # while it holds the lease, it writes
    before = _stored(db_target, "t")
    _expire(db, "t")
    with leases.hold(db, "t") as new:
        registry = RunRegistry(db)
        record = registry.get("t")
        record.pid = 424242  # the new holder's record
        registry.save(record, new)
        old.check()  # its own flag still says "held": only the database knows
        with pytest.raises(LeaseLost, match="lost the lease on thread t"):
            _fenced_writes(db, old, "t")
        with pytest.raises(LeaseLost):
            registry.save(registry.get("t"), old)
        assert _stored(db_target, "t") == before
        assert registry.get("t").pid == 424242
        old.release()  # must not delete the new holder's row
        assert leases.holders(db)["t"].holder == new.holder
    db.close()


def test_a_lease_past_its_term_that_nobody_took_over_is_still_safe_to_write(db_target, tmp_path):
    _run(db_target, tmp_path, "t")
    db = open_database(db_target)
    leases.set_up(db)
    held = leases.Lease(db, "t", LeaseSettings())
    assert held.claim() is None
    _paused(held)
    _expire(db, "t")
    with db.checkpointer():  # its tables exist, empty
        before = _stored(db_target, "t")
    _fenced_writes(db, held, "t")  # nobody else holds the thread: writing is safe
    assert _stored(db_target, "t") != before
    registry = RunRegistry(db)
    registry.save(registry.get("t"), held)
    held.release()
    assert "t" not in leases.holders(db)
    db.close()


def test_wait_takes_the_lease_when_the_holder_releases_it(db_target):
    db = open_database(db_target)
    told: list[leases.Holder] = []
    waiting = threading.Event()
    with leases.hold(db, "t"):
        order = []

        def on_wait(holder: leases.Holder) -> None:
            told.append(holder)
            waiting.set()

        def second() -> None:
            with leases.hold(open_database(db_target), "t", wait=True, on_wait=on_wait):
                order.append("second")

        waiter = threading.Thread(target=second)
        waiter.start()
        assert waiting.wait(120)  # it found the thread busy and is waiting
        order.append("first done")
    waiter.join(120)
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
    db_target, tmp_path
):
    """Another process takes the thread over after turn 5 (and stores its own run record in
    the same transaction), then notes every checkpoint row: a write of the old holder either
    committed before the takeover (and is in the note) or is refused, so nothing changes."""
    _run(db_target, tmp_path, "t", turn_cap=60)
    registry = RunRegistry(db_target)
    turns: list[int] = []
    taken: list = []
    failure: list[BaseException] = []

    def listen(node: str, update: dict) -> None:
        turns.extend(t["index"] for t in update.get("transcript") or [])
        if len(turns) >= 5 and not taken:
            db = open_database(db_target)
            with db.transaction() as sql:
                sql.execute(
                    f"UPDATE {leases.TABLE} SET holder = 'usurper', expires = {{now}} + 600 "
                    "WHERE thread_id = 't'"
                )
                row = sql.one("SELECT record FROM ima_runs WHERE thread_id = 't'")
                record = json.loads(row["record"]) | {"pid": 424242}
                sql.execute(
                    "UPDATE ima_runs SET record = %s WHERE thread_id = 't'", (json.dumps(record),)
                )
            db.close()
            taken.append(_stored(db_target, "t"))  # nothing can be added after the takeover

    def run() -> None:
        try:
            execute(registry.get("t"), db_target, listen)
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(120)
    assert failure and isinstance(failure[0], LeaseLost), failure
    assert "another process took the thread over" in str(failure[0])
    assert _stored(db_target, "t") == taken[0]
    stored = registry.get("t")
    assert stored.pid == 424242 and stored.status == "running"  # the new holder's record
    assert len(load_state(stored, db_target)["transcript"]) <= 5
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


def _busy(db_target: str) -> bool:
    """Whether some other connection is inside a write (it would keep the paused process's
    locks while it sleeps): SQLite's write lock is taken, or a PostgreSQL session of the
    test's database is not idle."""
    if open_database(db_target).kind == "sqlite":
        conn = sqlite3.connect(db_target, timeout=0)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
            return False
        except sqlite3.OperationalError:
            return True
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(db_target, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend' "
            "AND state <> 'idle'"
        ).fetchone()
    return bool(row and row[0])


def _pause_between_writes(proc: subprocess.Popen, db_target: str) -> None:
    """SIGSTOP the process at a moment it holds no database lock (else it would block the
    takeover, not race it): pause, look, and let it run on a little if it was mid-write."""
    while True:
        proc.send_signal(signal.SIGSTOP)
        if not _busy(db_target):
            return
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.02)


@pytest.mark.slow
def test_a_process_paused_past_its_lease_writes_nothing_after_another_took_over(
    db_target, tmp_path
):
    """The failure a flag refreshed by the heartbeat could not prevent: `ima run` is paused
    (SIGSTOP: a VM migration, a long GC) past its lease, another process takes the thread
    over, then the paused one wakes. It must write no checkpoint and no record, and say so."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    env["IMA_LEASE_SECONDS"] = "2"
    common = ["--db", db_target, "--json"]
    run = ["--model", "scripted:delay=0.1", "--seed", "3", "--no-long-term", *common]
    paused = start_ima("run", "--thread", "t", *run, cwd=tmp_path, env=env)
    try:
        _wait_for(lambda: turns_so_far(db_target, "t") >= 4, "four turns")
        _pause_between_writes(paused, db_target)
        db = open_database(db_target)
        _wait_for(lambda: "t" not in leases.holders(db, ["t"]), "the paused lease to expire")
        with leases.hold(db, "t") as taker:
            registry = RunRegistry(db)
            record = registry.get("t")
            record.pid = os.getpid()  # the new holder's record
            registry.save(record, taker)
            before = (_stored(db_target, "t"), registry.get("t").stored())
            paused.send_signal(signal.SIGCONT)
            code = paused.wait(120)
            _, err = paused.communicate()
            assert code == 1, err
            assert "lost the lease on thread t" in err, err
            assert "this process stopped and wrote nothing more" in err
            assert "Traceback" not in err
            assert (_stored(db_target, "t"), registry.get("t").stored()) == before
            assert taker.lost == ""
        db.close()
    finally:
        paused.send_signal(signal.SIGCONT)
        if paused.poll() is None:
            paused.kill()
        paused.wait()
    # Released: the run continues from its checkpoint and ends as an uninterrupted run does.
    resumed = start_ima("resume", "t", *common, cwd=tmp_path, env=env)
    assert resumed.wait(300) == 0, resumed.communicate()
    reference = start_ima("run", "--thread", "ref", *run, cwd=tmp_path, env=env)
    assert reference.wait(300) == 0, reference.communicate()
    assert _transcript(db_target, "t") == _transcript(db_target, "ref")


def test_a_bad_lease_term_is_one_line_before_anything_is_written(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("IMA_LEASE_SECONDS", "soon")
    db = tmp_path / "x.sqlite"
    code, _, err = cli("run", "--model", "scripted", "--no-long-term", "--db", str(db))
    assert code == 2 and "IMA_LEASE_SECONDS='soon' is invalid" in err
    assert not db.exists()
