"""Evaluation in a shared database: `ima eval --db` queues, `ima worker`s run, judge and
store, `ima eval status` shows progress, `--report-only` reports from any directory; on
both backends. A killed worker's run is continued by another, exactly once."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest
from conftest import start_ima, turns_so_far

from ima.evals import runner as eval_runner
from ima.evals.queue import SharedEvaluation
from ima.runs.database import open_database
from ima.runs.registry import RunRegistry
from ima.runs.runner import load_state

EVAL = ["--model", "scripted", "--pairs", "2", "--turn-cap", "8", "--out", "ev"]


@pytest.fixture
def env_clean(monkeypatch):
    for name in [k for k in os.environ if k.startswith("IMA_")]:
        monkeypatch.delenv(name)


def status(cli, db: str) -> dict:
    code, out, err = cli("eval", "status", "--db", db, "--json")
    assert code == 0, err
    return json.loads(out)


def test_queue_work_status_and_report_from_anywhere(cli, db_target, tmp_path, env_clean):
    code, out, err = cli("eval", *EVAL, "--db", db_target)
    assert code == 0, err
    assert "evaluation ev: 0 stored · 4 queued" in " ".join(out.split())
    assert "ima worker --db" in out
    assert not (tmp_path / "ev" / "results.jsonl").exists()  # nothing ran here
    assert status(cli, db_target)["evaluations"]["ev"]["queued"] == 4

    code, out, err = cli("worker", "--db", db_target, "--until-done", "--poll", "0.1")
    assert code == 0, err
    assert out.count("✓ ev · ") == 4 and "done: 4 run(s), 0 failed" in out

    progress = status(cli, db_target)
    assert progress["evaluations"]["ev"] == {
        "queued": 0,
        "running": 0,
        "done": 4,
        "failed": 0,
        "stalled": 0,
    }
    ((worker, did),) = progress["workers"].items()
    assert worker == f"{os.uname().nodename}:{os.getpid()}" and did["done"] == 4

    shared = SharedEvaluation(open_database(db_target), "ev")
    rows = shared.load()
    assert sorted(r["key"] for r in rows) == sorted(
        [
            "intrinsic/generic/b2048/s0",
            "none/b2048/s0",
            "intrinsic/generic/b2048/s1",
            "none/b2048/s1",
        ]
    )
    assert all(r["judge"]["status"] == "ok" and r["turns"] == 8 for r in rows)
    assert all(r["thread_id"].startswith("ev--data-pipeline-") for r in rows)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chdir(elsewhere)
    code, out, err = cli("eval", "--report-only", "ev", "--db", db_target)
    assert code == 0, err
    assert (elsewhere / "ev" / "report.md").exists()
    assert "from 4 stored runs" in (elsewhere / "ev" / "report.md").read_text()

    os.chdir(tmp_path)
    code, out, err = cli("eval", *EVAL, "--db", db_target)  # again: nothing to queue
    assert code == 0 and "4 stored · 0 queued" in " ".join(out.split())


def test_a_failed_run_is_reported_and_queued_again(cli, db_target, monkeypatch, env_clean):
    assert cli("eval", *EVAL, "--db", db_target)[0] == 0
    real = eval_runner.execute

    def failing(record, db, listener=None, **kwargs):
        if record.thread_id.endswith("none-b2048-s1"):
            raise ConnectionError("model server went away")
        return real(record, db, listener, **kwargs)

    monkeypatch.setattr(eval_runner, "execute", failing)
    code, out, _ = cli("worker", "--db", db_target, "--until-done", "--poll", "0.1")
    assert code == 0 and "done: 3 run(s), 1 failed" in out
    progress = status(cli, db_target)
    assert progress["evaluations"]["ev"]["failed"] == 1
    assert progress["failures"][0]["error"] == "ConnectionError: model server went away"
    code, out, _ = cli("eval", "status", "--db", db_target)
    assert "model server went away" in out

    monkeypatch.setattr(eval_runner, "execute", real)
    code, out, _ = cli("eval", *EVAL, "--db", db_target)
    assert "3 stored · 1 queued" in " ".join(out.split())
    assert cli("worker", "--db", db_target, "--until-done", "--poll", "0.1")[0] == 0
    assert status(cli, db_target)["evaluations"]["ev"]["done"] == 4


def test_a_worker_refuses_a_thread_someone_else_runs(cli, db_target, env_clean):
    """`ima resume` of an eval thread and a worker never run it at once: the worker only
    claims jobs whose conversation has no live lease."""
    from ima.evals.queue import claim
    from ima.runs import leases

    assert cli("eval", *EVAL, "--pairs", "1", "--db", db_target)[0] == 0
    db = open_database(db_target)
    first = claim(db, "w1")
    assert first is not None
    with leases.hold(db, "ev--data-pipeline-none-b2048-s0"):  # someone runs the second one
        assert claim(db, "w2") is None
    job, lease = first
    lease.release()  # the first worker stops without finishing: claimable again
    again = claim(db, "w3")
    assert again is not None and again[0].key == job.key
    again[1].release()
    db.close()


def test_a_worker_with_no_database_or_nothing_queued_says_so(cli, db_target, tmp_path, env_clean):
    """A worker pointed at the wrong place must not sit idle or exit 0 in silence."""
    missing = tmp_path / "dir" / "missing.sqlite"
    code, _, err = cli("worker", "--db", str(missing), "--until-done")
    assert code == 2 and err.startswith("error: no database at ") and str(missing) in err, err
    assert len(err.strip().splitlines()) == 1 and not missing.exists()

    RunRegistry(db_target).close()  # a runs database, but no evaluation in it
    code, _, err = cli("worker", "--db", db_target, "--until-done")
    assert code == 2 and "no evaluation queue in" in err and "ima eval --db" in err, err

    assert cli("eval", *EVAL, "--pairs", "1", "--db", db_target)[0] == 0
    code, _, err = cli("worker", "--db", db_target, "--eval", "other", "--until-done")
    assert code == 2 and "no evaluation other in" in err and "(it has ev)" in err, err
    code, _, err = cli("eval", "status", "--db", str(missing))
    assert code == 2 and "no database at" in err and not missing.exists()


def test_the_printed_commands_work_as_printed_from_another_folder(
    cli, db_target, tmp_path, env_clean, request
):
    """An absolute --out keeps its leading / in the printed report command, and a SQLite
    --db given relative is printed absolute: typed elsewhere, both reach the same place."""
    db = db_target if "://" in db_target else "runs/ima.sqlite"  # relative to tmp_path
    # Short: a thread id carries the evaluation's name and may not pass 100 characters.
    out_dir = Path(tempfile.mkdtemp(prefix="ev", dir="/tmp")) / "ev"
    request.addfinalizer(lambda: shutil.rmtree(out_dir.parent, ignore_errors=True))
    code, out, err = cli("eval", *EVAL[:-2], "--pairs", "1", "--out", str(out_dir), "--db", db)
    assert code == 0, err
    printed = {
        line.split(": ", 1)[0]: line.split(": ", 1)[1]
        for line in out.splitlines()
        if ": ima " in line
    }
    shown_db = db_target if "://" in db_target else str(tmp_path / "runs" / "ima.sqlite")
    assert printed["report"] == f"ima eval --report-only {out_dir} --db {shown_db}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chdir(elsewhere)
    worker = shlex.split(printed["start workers (any machine)"])[1:]
    code, out, err = cli(*worker, "--until-done", "--poll", "0.1")
    assert code == 0 and "done: 2 run(s), 0 failed" in out, out + err
    # the runs' folders land in the absolute --out, not under the worker's folder
    assert len(list((out_dir / "runs").glob("*/run.json"))) == 2
    assert list(elsewhere.iterdir()) == []
    code, out, err = cli(*shlex.split(printed["report"])[1:])
    assert code == 0, err
    assert (out_dir / "report.md").exists()
    assert list(elsewhere.glob("**/report.md")) == []


def test_a_worker_told_where_writes_the_run_files_there(cli, tmp_path, env_clean, request):
    db = str(tmp_path / "shared.sqlite")
    out_dir = Path(tempfile.mkdtemp(prefix="ev", dir="/tmp")) / "ev"
    request.addfinalizer(lambda: shutil.rmtree(out_dir.parent, ignore_errors=True))
    assert cli("eval", *EVAL[:-2], "--pairs", "1", "--out", str(out_dir), "--db", db)[0] == 0
    told = tmp_path / "told"
    code, out, err = cli("worker", "--db", db, "--out", str(told), "--until-done", "--poll", "0.1")
    assert code == 0 and "done: 2 run(s), 0 failed" in out, out + err
    name = str(out_dir).lstrip("/")  # the evaluation's name: its --out, normalised
    assert len(list((told / name / "runs").glob("*/run.json"))) == 2
    assert not (out_dir / "runs").exists()


@pytest.mark.slow
def test_a_killed_workers_run_is_continued_by_another_exactly_once(db_target, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    env["IMA_LEASE_SECONDS"] = "3"

    model = ["--model", "scripted:delay=0.05", "--pairs", "1", "--turn-cap", "30", "--out", "ev"]
    queued = start_ima("eval", *model, "--db", db_target, cwd=tmp_path, env=env)
    assert queued.wait(120) == 0, queued.communicate()
    victim = start_ima("worker", "--db", db_target, "--poll", "0.2", cwd=tmp_path, env=env)
    db = open_database(db_target)
    thread = "ev--data-pipeline-intrinsic-generic-b2048-s0"
    deadline = time.monotonic() + 120
    turns = 0
    while time.monotonic() < deadline and turns < 6:
        time.sleep(0.2)
        turns = turns_so_far(db_target, thread)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert 6 <= turns < 30, "killed mid-run"

    rescuer = start_ima(
        "worker", "--db", db_target, "--until-done", "--poll", "0.2", cwd=tmp_path, env=env
    )
    out, err = rescuer.communicate(timeout=300)
    assert rescuer.returncode == 0, err
    assert "done: 2 run(s), 0 failed" in out

    rows = SharedEvaluation(db, "ev").load()
    assert len(rows) == 2 and all(r["turns"] == 30 for r in rows)
    registry = RunRegistry(db)
    values = load_state(registry.get(thread), db)
    registry.close()
    assert [t["index"] for t in values["transcript"]] == list(range(1, 31))
    # the rescuer continued the conversation: it made fewer agent calls than a whole run
    calls = values["usage"]  # per role and kind, summed over both processes
    assert sum(k["agent_turn"]["calls"] for k in calls.values() if "agent_turn" in k) == 30
    db.close()
    assert Path(tmp_path / "ev" / "runs" / thread / "run.json").exists()
