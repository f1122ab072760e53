"""Evaluations beyond one machine, on procrastinate and the suite's private PostgreSQL (no
mocks of it): `ima eval --db URL` queues jobs, `ima worker`s run, judge and store them,
`ima eval status` reads the job table, `cancel` and `retry` manage it, a killed worker's run
is continued by another exactly once; on SQLite the same evaluation runs in-process and
resumes after a kill."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest
from conftest import start_ima, turns_so_far
from procrastinate import exceptions

from ima.evals import runner as eval_runner
from ima.evals.jobs import app, queueing
from ima.evals.jobs.engine import connector, opened
from ima.evals.shared import SharedEvaluation
from ima.evals.store import ResultsStore
from ima.runs.database import open_database
from ima.runs.registry import RunRegistry
from ima.runs.runner import load_state

EVAL = ["--model", "scripted", "--pairs", "2", "--turn-cap", "8", "--out", "ev"]
KEYS = sorted(
    ["intrinsic/generic/b2048/s0", "none/b2048/s0", "intrinsic/generic/b2048/s1", "none/b2048/s1"]
)


@pytest.fixture
def env_clean(monkeypatch):
    for name in [k for k in os.environ if k.startswith("IMA_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("IMA_CONFIG", os.devnull)


def status(cli, db: str) -> dict:
    code, out, err = cli("eval", "status", "--db", db, "--json")
    assert code == 0, err
    return json.loads(out)


def one_line(err: str) -> str:
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()


def test_queue_work_status_and_report_from_anywhere(cli, pg_url, tmp_path, env_clean):
    code, out, err = cli("eval", *EVAL, "--db", pg_url)
    assert code == 0, err
    assert "evaluation ev: 0 stored · 4 queued" in " ".join(out.split())
    assert "ima worker --db" in out
    assert not (tmp_path / "ev" / "results.jsonl").exists()  # nothing ran here
    assert status(cli, pg_url)["evaluations"]["ev"]["queued"] == 4

    code, out, err = cli("worker", "--db", pg_url, "--until-done")
    assert code == 0, err
    assert out.count("✓ ev · ") == 4 and "done: 4 job(s), 0 failed" in out

    progress = status(cli, pg_url)
    assert progress["evaluations"]["ev"] == {
        "stored": 4,
        "done": 4,
        "queued": 0,
        "running": 0,
        "stalled": 0,
        "failed": 0,
        "cancelled": 0,
    }
    rows = SharedEvaluation(open_database(pg_url), "ev").load()
    assert sorted(r["key"] for r in rows) == KEYS
    assert all(r["judge"]["status"] == "ok" and r["turns"] == 8 for r in rows)
    assert all(r["thread_id"].startswith("ev--data-pipeline-") for r in rows)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chdir(elsewhere)
    code, out, err = cli("eval", "--report-only", "ev", "--db", pg_url)
    assert code == 0, err
    assert "from 4 stored runs" in (elsewhere / "ev" / "report.md").read_text()

    os.chdir(tmp_path)
    code, out, err = cli("eval", *EVAL, "--db", pg_url)  # again: finished, nothing to queue
    assert code == 0 and "4 stored · 0 queued" in " ".join(out.split())
    assert len(_jobs(pg_url)) == 4


def _jobs(url: str) -> list:
    import asyncio

    async def go() -> list:
        async with opened(url):
            return list(await app.job_manager.list_jobs_async(queue="eval:ev"))

    return asyncio.run(go())


def test_a_duplicate_enqueue_is_refused(cli, pg_url, env_clean):
    """Queueing the same evaluation twice makes no second job of a key: ours skips what
    waits, and procrastinate itself refuses a second job with the same queueing lock."""
    assert cli("eval", *EVAL, "--db", pg_url)[0] == 0
    code, out, _ = cli("eval", *EVAL, "--db", pg_url)
    assert code == 0 and "0 stored · 4 queued" in " ".join(out.split())
    jobs = _jobs(pg_url)
    assert len(jobs) == 4
    assert {j.queueing_lock for j in jobs} == {f"ev:{k}" for k in KEYS}
    assert {j.lock for j in jobs} == {
        f"ev--data-pipeline-{k.replace('/', '-')}" for k in KEYS
    }  # the conversation's thread
    first = jobs[0]
    with app.replace_connector(connector(pg_url)) as engine, engine.open():
        deferrer = engine.configure_task(
            queueing.EVAL_TASK,
            lock=first.lock,
            queueing_lock=first.queueing_lock,
            queue="eval:ev",
        )
        with pytest.raises(exceptions.AlreadyEnqueued):
            deferrer.defer(**first.task_kwargs)
    assert len(_jobs(pg_url)) == 4


def test_cancel_then_retry(cli, pg_url, tmp_path, env_clean):
    assert cli("eval", *EVAL, "--db", pg_url)[0] == 0
    code, out, err = cli("eval", "cancel", "ev", "--db", pg_url)
    assert code == 0, err
    assert "cancelled ev: 4 job(s) that had not started; 0 running" in " ".join(out.split())
    assert status(cli, pg_url)["evaluations"]["ev"]["cancelled"] == 4

    # a cancelled evaluation is bad input for the commands that would run it
    for args in (["eval", *EVAL], ["worker", "--eval", "ev", "--until-done"]):
        code, _, err = cli(*args, "--db", pg_url)
        line = one_line(err)
        assert code == 2 and "evaluation ev was cancelled" in line and "ima eval retry ev" in line
    code, _, err = cli("eval", "cancel", "ev", "--db", pg_url)
    assert code == 2 and "cancelled already" in one_line(err)
    code, out, _ = cli("worker", "--db", pg_url, "--until-done")
    assert code == 0 and "done: 0 job(s)" in out
    assert not (tmp_path / "ev" / "runs").exists()  # nothing ran

    code, out, err = cli("eval", "retry", "ev", "--db", pg_url)
    assert code == 0 and "ev: 4 queued" in out, err
    assert cli("worker", "--db", pg_url, "--until-done")[0] == 0
    found = status(cli, pg_url)["evaluations"]["ev"]
    assert (found["stored"], found["done"], found["cancelled"]) == (4, 4, 0)


REAL_EXECUTE = eval_runner.execute


def _failing(times: int):
    """`execute`, failing the first `times` calls of one conversation."""
    real = REAL_EXECUTE
    calls = {"n": 0}

    def execute(record, db, listener=None, **kwargs):
        if record.thread_id.endswith("none-b2048-s1"):
            calls["n"] += 1
            if calls["n"] <= times:
                raise ConnectionError("model server went away")
        return real(record, db, listener, **kwargs)

    return execute, calls


def test_a_failed_job_is_retried_per_its_policy(cli, pg_url, monkeypatch, env_clean):
    monkeypatch.setenv("IMA_JOB_RETRY_SECONDS", "0")
    execute, calls = _failing(times=1)
    monkeypatch.setattr(eval_runner, "execute", execute)
    assert cli("eval", *EVAL, "--retries", "1", "--db", pg_url)[0] == 0
    code, out, err = cli("worker", "--db", pg_url, "--until-done")
    assert code == 0, err
    assert "✗ ev · none/b2048/s1: ConnectionError: model server went away" in out
    assert "done: 4 job(s), 1 failed" in out  # the failure, then the retry that worked
    assert calls["n"] == 2
    found = status(cli, pg_url)
    assert found["evaluations"]["ev"]["stored"] == 4 and found["failures"] == []
    (job,) = [j for j in _jobs(pg_url) if j.task_kwargs["key"] == "none/b2048/s1"]
    assert job.status == "succeeded" and job.attempts == 2


def test_a_job_that_keeps_failing_shows_its_error_and_can_be_retried(
    cli, pg_url, monkeypatch, env_clean
):
    monkeypatch.setenv("IMA_JOB_RETRY_SECONDS", "0")
    execute, calls = _failing(times=10)
    monkeypatch.setattr(eval_runner, "execute", execute)
    assert cli("eval", *EVAL, "--retries", "1", "--db", pg_url)[0] == 0
    code, out, _ = cli("worker", "--db", pg_url, "--until-done")
    assert code == 0 and "done: 3 job(s), 2 failed" in out  # one retry, then it stays failed
    assert calls["n"] == 2
    found = status(cli, pg_url)
    assert found["evaluations"]["ev"]["failed"] == 1
    (failure,) = found["failures"]
    assert failure["key"] == "none/b2048/s1"
    assert failure["error"] == "ConnectionError: model server went away"
    code, out, _ = cli("eval", "status", "--db", pg_url)
    assert "model server went away" in out and "ima eval retry" in out

    monkeypatch.setattr(eval_runner, "execute", REAL_EXECUTE)
    code, out, _ = cli("eval", *EVAL, "--db", pg_url)  # queueing again retries the failed one
    assert "3 stored · 1 queued" in " ".join(out.split())
    assert cli("worker", "--db", pg_url, "--until-done")[0] == 0
    assert status(cli, pg_url)["evaluations"]["ev"]["stored"] == 4


def test_a_worker_with_the_wrong_database_or_nothing_queued_says_so(
    cli, pg_url, tmp_path, env_clean
):
    """A worker pointed at the wrong place must not sit idle or exit 0 in silence."""
    code, _, err = cli("worker", "--db", str(tmp_path / "runs.sqlite"), "--until-done")
    line = one_line(err)
    assert code == 2 and "one machine needs no worker: run `ima eval`" in line
    assert not (tmp_path / "runs.sqlite").exists()

    code, _, err = cli("worker", "--db", "postgresql://ima@127.0.0.1:1/nothing", "--until-done")
    assert code == 2 and "cannot use PostgreSQL database" in one_line(err)

    code, _, err = cli("worker", "--db", pg_url, "--until-done")
    assert code == 2 and "nothing queued in" in one_line(err) and "ima eval --db" in err
    assert cli("eval", *EVAL, "--pairs", "1", "--db", pg_url)[0] == 0
    code, _, err = cli("worker", "--db", pg_url, "--eval", "other", "--until-done")
    line = one_line(err)
    assert code == 2 and "no evaluation other in" in line and "(it has ev)" in line
    code, _, err = cli("eval", "status", "--db", str(tmp_path / "runs.sqlite"))
    assert code == 2 and "one machine needs no job queue" in one_line(err)


def test_a_schema_from_another_procrastinate_version_is_refused(cli, pg_url, env_clean):
    """A database whose job tables an older procrastinate made (here: 3.3's, before its
    3.4 migration added procrastinate_retry_job_v2) is named in one line, not used."""
    assert cli("eval", *EVAL, "--pairs", "1", "--db", pg_url)[0] == 0  # applies the schema
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP FUNCTION procrastinate_retry_job_v2")
    from ima.evals.jobs import schema

    schema._CHECKED.clear()  # a new process would check again
    for args in (["eval", "status"], ["worker", "--until-done"], ["eval", *EVAL]):
        code, _, err = cli(*args, "--db", pg_url)
        line = one_line(err)
        assert code == 2, err
        assert "come from another procrastinate version" in line
        assert "procrastinate_retry_job_v2" in line and "migrations" in line
        schema._CHECKED.clear()


def test_the_printed_commands_work_as_printed_from_another_folder(
    cli, pg_url, tmp_path, env_clean, request
):
    """An absolute --out keeps its leading / in the printed report command: typed
    elsewhere, the worker and the report reach the same place."""
    # Short: a thread id carries the evaluation's name and may not pass 100 characters.
    out_dir = Path(tempfile.mkdtemp(prefix="ev", dir="/tmp")) / "ev"
    request.addfinalizer(lambda: shutil.rmtree(out_dir.parent, ignore_errors=True))
    code, out, err = cli("eval", *EVAL[:-2], "--pairs", "1", "--out", str(out_dir), "--db", pg_url)
    assert code == 0, err
    printed = {
        line.split(": ", 1)[0]: line.split(": ", 1)[1]
        for line in out.splitlines()
        if ": ima " in line
    }
    assert printed["report"] == f"ima eval --report-only {out_dir} --db {pg_url}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chdir(elsewhere)
    worker = shlex.split(printed["start workers (any machine)"])[1:]
    code, out, err = cli(*worker, "--until-done")
    assert code == 0 and "done: 2 job(s), 0 failed" in out, out + err
    # the runs' folders land in the absolute --out, not under the worker's folder
    assert len(list((out_dir / "runs").glob("*/run.json"))) == 2
    assert list(elsewhere.iterdir()) == []
    code, out, err = cli(*shlex.split(printed["report"])[1:])
    assert code == 0, err
    assert (out_dir / "report.md").exists()


def test_a_worker_told_where_writes_the_run_files_there(cli, pg_url, tmp_path, env_clean):
    assert cli("eval", *EVAL, "--pairs", "1", "--db", pg_url)[0] == 0
    told = tmp_path / "told"
    code, out, err = cli("worker", "--db", pg_url, "--out", str(told), "--until-done")
    assert code == 0 and "done: 2 job(s), 0 failed" in out, out + err
    assert len(list((told / "ev" / "runs").glob("*/run.json"))) == 2
    assert not (tmp_path / "ev" / "runs").exists()


def test_a_queued_ima_run_is_run_by_a_worker(cli, pg_url, tmp_path, env_clean):
    args = ["--model", "scripted", "--turn-cap", "6", "--thread", "q1", "--db"]
    code, out, err = cli("run", *args, pg_url, "--queue")
    assert code == 0, err
    assert "queued q1" in out and "ima worker --db" in out
    with RunRegistry(open_database(pg_url)) as registry:
        assert registry.get("q1").status == "queued"
    assert status(cli, pg_url)["evaluations"]["runs"]["queued"] == 1
    code, out, err = cli("worker", "--db", pg_url, "--until-done")
    assert code == 0 and "✓ run q1" in out and "done: 1 job(s)" in out, out + err
    with RunRegistry(open_database(pg_url)) as registry:
        record = registry.get("q1")
    assert record.status == "turn_cap"
    assert (Path(record.out_dir) / "design.md").exists()
    code, _, err = cli("run", *args[:-1], "--db", str(tmp_path / "x.sqlite"), "--queue")
    assert code == 2 and "one machine needs no queue" in one_line(err)


def test_in_process_concurrency_gives_the_same_results(cli, tmp_path, env_clean):
    """Several runs at once on one machine (a model server's way) store what one at a time
    stores; the embedded model, one job at a time, refuses it in one line."""
    assert cli("eval", *EVAL[:-1], "one")[0] == 0
    code, _, err = cli("eval", *EVAL[:-1], "four", "--concurrency", "4")
    assert code == 0, err

    def essentials(folder: str) -> dict:
        rows = ResultsStore(tmp_path / folder).load()
        return {
            r["key"]: (r["turns"], r["usage"]["total"]["output_tokens"], r["judge"]["scores"])
            for r in rows
        }

    assert essentials("one") == essentials("four") and len(essentials("one")) == 4
    code, _, err = cli("eval", "--model", "embedded", "--concurrency", "2", "--out", "e")
    assert code == 2 and "runs one job at a time" in one_line(err)
    assert not (tmp_path / "e").exists()


@pytest.mark.slow
def test_procrastinates_own_command_runs_the_jobs(cli, pg_url, tmp_path, env_clean):
    assert cli("eval", *EVAL, "--pairs", "1", "--db", pg_url)[0] == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    env |= {"IMA_DB": pg_url, "IMA_CONFIG": os.devnull}
    program = [sys.executable, "-m", "procrastinate", "--app", "ima.evals.jobs.app"]
    checked = subprocess.run(
        [*program, "healthchecks"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert checked.returncode == 0 and "Found procrastinate_jobs table: OK" in checked.stdout
    ran = subprocess.run(
        [*program, "worker", "--one-shot"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr
    assert len(SharedEvaluation(open_database(pg_url), "ev").keys()) == 2


def _victim_kill(db: str, thread: str, victim: subprocess.Popen, at_turn: int) -> int:
    deadline = time.monotonic() + 120
    turns = 0
    while time.monotonic() < deadline and turns < at_turn:
        time.sleep(0.2)
        turns = turns_so_far(db, thread)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    return turns


def _once_each(db: str, thread: str, turns: int) -> None:
    with RunRegistry(db) as registry:
        values = load_state(registry.get(thread), db)
    assert [t["index"] for t in values["transcript"]] == list(range(1, turns + 1))
    # the rescue continued the conversation: no turn was made twice
    calls = values["usage"]  # per role and kind, summed over both processes
    assert sum(k["agent_turn"]["calls"] for k in calls.values() if "agent_turn" in k) == turns


@pytest.mark.slow
def test_a_killed_workers_run_is_continued_by_another_exactly_once(pg_url, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    env |= {"IMA_CONFIG": os.devnull, "IMA_JOB_STALL_SECONDS": "2"}
    model = ["--model", "scripted:delay=0.05", "--pairs", "1", "--turn-cap", "30", "--out", "ev"]
    queued = start_ima("eval", *model, "--db", pg_url, cwd=tmp_path, env=env)
    assert queued.wait(120) == 0, queued.communicate()
    victim = start_ima("worker", "--db", pg_url, cwd=tmp_path, env=env)
    thread = "ev--data-pipeline-intrinsic-generic-b2048-s0"
    turns = _victim_kill(pg_url, thread, victim, at_turn=6)
    assert 6 <= turns < 30, "killed mid-run"

    rescuer = start_ima("worker", "--db", pg_url, "--until-done", cwd=tmp_path, env=env)
    out, err = rescuer.communicate(timeout=300)
    assert rescuer.returncode == 0, err
    assert "done: 2 job(s), 0 failed" in out, out

    db = open_database(pg_url)
    rows = SharedEvaluation(db, "ev").load()
    assert len(rows) == 2 and all(r["turns"] == 30 for r in rows)
    _once_each(pg_url, thread, 30)
    assert Path(tmp_path / "ev" / "runs" / thread / "run.json").exists()
    (job,) = [j for j in _jobs(pg_url) if j.lock == thread]
    assert job.status == "succeeded" and job.attempts == 2  # killed once, then done
    db.close()


@pytest.mark.slow
def test_the_in_process_path_resumes_after_a_kill(tmp_path):
    """On SQLite `ima eval` runs its jobs itself; killed with SIGKILL mid-run, the same
    command finishes the evaluation and no turn is made twice."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    env["IMA_CONFIG"] = os.devnull
    args = ["eval", "--model", "scripted:delay=0.05", "--pairs", "1", "--turn-cap", "30"]
    args += ["--out", "ev"]
    victim = start_ima(*args, cwd=tmp_path, env=env)
    db = str(tmp_path / "ev" / "ima.sqlite")
    thread = "data-pipeline-intrinsic-generic-b2048-s0"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not Path(db).exists():
        time.sleep(0.1)
    turns = _victim_kill(db, thread, victim, at_turn=6)
    assert 6 <= turns < 30, "killed mid-run"
    assert not ResultsStore(tmp_path / "ev").load()

    again = start_ima(*args, cwd=tmp_path, env=env)
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    rows = ResultsStore(tmp_path / "ev").load()
    assert sorted(r["key"] for r in rows) == ["intrinsic/generic/b2048/s0", "none/b2048/s0"]
    _once_each(db, thread, 30)
