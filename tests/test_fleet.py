"""The load and fault benchmark (benchmarks/fleet.py) at a small size: procrastinate workers
on the private PostgreSQL, some SIGKILLed mid-job, and resumes racing on SQLite. It prints
its figures; every correctness line must pass."""

from __future__ import annotations

import pytest

from benchmarks import fleet, fleet_checks
from ima.runs.database import open_database


@pytest.mark.slow
def test_fleet_benchmark_passes_small(pg_url, capsys):
    small = [
        "--jobs",
        "4",
        "--sizes",
        "2",
        "--kills",
        "2",
        "--fault-workers",
        "2",
        "--turn-cap",
        "6",
    ]
    small += ["--delay", "0.1", "--resumes", "3", "--stall-seconds", "2"]
    code = fleet.main(["--db", pg_url, *small])
    out = capsys.readouterr().out
    print(out)
    assert "1 worker(s) x concurrency 2" in out and "2 SIGKILLs" in out
    assert code == 0 and "FAIL" not in out


def test_the_witness_sees_two_jobs_in_one_conversation_and_a_result_written_twice(pg_url):
    """The checks can fail: spans of two jobs that interleave are counted, and so is a
    second written result."""
    db = open_database(pg_url)
    with db.session() as sql:
        sql.execute(
            "CREATE TABLE bench_activity (thread_id TEXT, who TEXT, turn BIGINT, "
            "at DOUBLE PRECISION)"
        )
        sql.execute("CREATE TABLE bench_results (eval TEXT, key TEXT, who TEXT, written BOOLEAN)")
        rows = [
            ("e--a", "1:1", 1, 1.0),
            ("e--a", "1:1", 2, 2.0),
            ("e--a", "2:1", 3, 3.0),  # handed over
            ("e--b", "1:1", 1, 1.0),
            ("e--b", "1:2", 1, 1.5),
            ("e--b", "1:1", 2, 2.0),  # at once, two threads of one process
        ]
        for row in rows:
            sql.execute("INSERT INTO bench_activity VALUES (%s, %s, %s, %s)", row)
        for written in (True, True, False):
            sql.execute("INSERT INTO bench_results VALUES ('e', 'k', '1:1', %s)", (written,))
    found = fleet_checks.witness(db, "e")
    assert found["run_twice_at_once"] == 1
    assert found["turns_redone_after_kill"] == 1  # turn 1 of e--b by both
    assert found["results_written_twice"] == 1
    db.close()
