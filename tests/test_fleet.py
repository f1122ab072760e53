"""The load and fault benchmark (benchmarks/fleet.py) at a small size: workers on the
private PostgreSQL, one killed mid-run, and resumes racing on SQLite. It prints its
figures; every correctness line must pass."""

from __future__ import annotations

import pytest

from benchmarks import fleet
from ima.runs.database import open_database


@pytest.mark.slow
def test_fleet_benchmark_passes_small(pg_url, capsys):
    small = ["--conversations", "6", "--turn-cap", "8", "--delay", "0.05", "--resumes", "4"]
    code = fleet.main(["--db", pg_url, "--lease-seconds", "3", *small])
    out = capsys.readouterr().out
    print(out)
    assert "throughput 3 workers vs 1:" in out
    assert code == 0 and "FAIL" not in out


def test_the_witness_sees_two_processes_in_one_conversation(pg_url):
    """The overlap check can fail: spans of two pids that interleave are counted."""
    db = open_database(pg_url)
    with db.session() as sql:
        sql.execute(
            "CREATE TABLE bench_activity (thread_id TEXT, pid BIGINT, turn BIGINT, "
            "at DOUBLE PRECISION)"
        )
        rows = [
            ("e--a", 1, 1, 1.0),
            ("e--a", 1, 2, 2.0),
            ("e--a", 2, 3, 3.0),  # handed over
            ("e--b", 1, 1, 1.0),
            ("e--b", 2, 1, 1.5),
            ("e--b", 1, 2, 2.0),  # at once
        ]
        for row in rows:
            sql.execute("INSERT INTO bench_activity VALUES (%s, %s, %s, %s)", row)
    found = fleet._witness(db, "e")
    assert found["run_twice_at_once"] == 1
    assert found["turns_redone_after_kill"] == 1  # turn 1 of e--b by both
    db.close()
