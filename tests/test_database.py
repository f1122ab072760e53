"""One database target selects the backend; PostgreSQL problems are one line, exit 2."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from benchmarks.pgcluster import PASSWORD, PASSWORD_USER, free_port
from ima.core.errors import UserError
from ima.runs.database import PostgresDatabase, SqliteDatabase, open_database, safe_url
from ima.runs.registry import RunRecord, RunRegistry

RUN = ["--model", "scripted", "--turn-cap", "12", "--no-long-term", "--json"]


def test_a_path_is_sqlite_a_postgresql_url_is_postgres_anything_else_is_refused(monkeypatch):
    monkeypatch.delenv("IMA_DB", raising=False)
    assert isinstance(open_database("runs/x.sqlite"), SqliteDatabase)
    assert open_database(None).label == str(Path("runs") / "ima.sqlite")
    for url in ("postgresql://u@h:5432/db", "postgres://u@h/db", "POSTGRESQL://u@h/db"):
        assert isinstance(open_database(url), PostgresDatabase)
    monkeypatch.setenv("IMA_DB", "postgresql://u@h/db")
    assert isinstance(open_database(None), PostgresDatabase)
    with pytest.raises(UserError, match="unsupported database URL 'mysql://u@h/db'"):
        open_database("mysql://u:secret@h/db".replace("u:secret", "u"))
    assert safe_url("postgresql://u:secret@h:5/db") == "postgresql://u@h:5/db"


def _one_line_error(cli, *args: str) -> str:
    code, out, err = cli(*args)
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in err
    return err


def test_refused_connection_is_one_line_and_writes_nothing(cli, tmp_path):
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/ima"
    err = _one_line_error(cli, "run", *RUN, "--db", url)
    assert f"cannot use PostgreSQL database {url}: " in err
    assert "Connection refused" in err and "is the server running" in err
    # the old bug: a URL was taken as a file path and a directory `postgresql:` appeared
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("database", "user", "expected"),
    [
        ("no_such_db", "postgres", 'database "no_such_db" does not exist'),
        (
            "postgres",
            f"{PASSWORD_USER}:wrong",
            f'password authentication failed for user "{PASSWORD_USER}"',
        ),
    ],
)
def test_missing_database_and_bad_password_are_one_line(
    cli, postgres_cluster, database, user, expected
):
    url = f"postgresql://{user}@127.0.0.1:{postgres_cluster.port}/{database}"
    err = _one_line_error(cli, "runs", "--db", url)
    assert expected in err
    assert "wrong" not in err.replace(expected, "")  # the password is never printed


def test_right_password_works_and_a_forbidden_schema_is_one_line(cli, postgres_cluster):
    login = f"{PASSWORD_USER}:{PASSWORD}@127.0.0.1:{postgres_cluster.port}"
    code, out, err = cli("run", *RUN, "--db", f"postgresql://{login}/{PASSWORD_USER}")
    assert code == 0, err
    assert PASSWORD not in out + err
    # PostgreSQL 15: only the owner may create tables in a database's public schema
    err = _one_line_error(cli, "runs", "--db", f"postgresql://{login}/postgres")
    assert "cannot create tables in PostgreSQL database" in err
    assert "permission denied for schema public" in err and PASSWORD not in err


def test_a_malformed_url_is_one_line(cli):
    err = _one_line_error(cli, "runs", "--db", "postgresql://po stgres@127.0.0.1/x")
    assert "cannot use PostgreSQL database" in err


def test_run_show_runs_on_either_backend(cli, db_target):
    code, out, err = cli("run", *RUN, "--thread", "t1", "--db", db_target)
    assert code == 0, err
    assert json.loads(out)["turns"] == 12
    code, out, err = cli("runs", "--db", db_target, "--json")
    assert [(r["thread_id"], r["status"]) for r in json.loads(out)] == [("t1", "turn_cap")]
    code, out, err = cli("show", "t1", "--db", db_target, "--json")
    shown = json.loads(out)
    assert [t["turn"] for t in shown["transcript"]] == list(range(1, 13))
    code, out, err = cli("run", *RUN, "--thread", "t1", "--db", db_target)
    assert code == 2 and "thread 't1' already exists" in err


def test_ima_db_environment_selects_the_backend(cli, monkeypatch, db_target):
    monkeypatch.setenv("IMA_DB", db_target)
    assert cli("run", *RUN, "--thread", "env")[0] == 0
    _code, out, _ = cli("runs", "--json")
    assert [r["thread_id"] for r in json.loads(out)] == ["env"]


def test_registry_add_is_atomic_and_save_replaces(db_target):
    registry = RunRegistry(db_target)
    try:
        record = RunRecord("r", "data-pipeline", "data-pipeline", 2, "f", "none", {}, "/tmp/r")
        assert registry.add(record)
        assert not registry.add(RunRecord(**{**record.stored(), "task_version": 9}))
        assert registry.get("r").task_version == 2  # the second add wrote nothing
        record.status = "finalized"
        registry.save(record)
        assert [(r.thread_id, r.status) for r in registry.all()] == [("r", "finalized")]
        assert registry.find("other") is None
    finally:
        registry.close()


def test_tables_are_set_up_once_by_concurrent_processes(pg_url):
    """Eight processes opening a new database at once: schema set-up is serialised."""
    import subprocess
    import sys

    code = (
        "import sys; from ima.runs.registry import RunRegistry; from ima.runs.database import "
        "open_database, open_memory_backend; db = open_database(sys.argv[1]); "
        "RunRegistry(db).all(); db.checkpointer().__enter__(); open_memory_backend(sys.argv[1])"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, pg_url], stderr=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
    assert os.environ.get("IMA_DB") != pg_url


def test_threads_opening_a_new_sqlite_file_together_all_get_in(tmp_path):
    """SQLite refuses a journal-mode change at once while another connection opens the same
    new file (no busy wait); `ima eval --concurrency 4` opened its database that way."""
    import threading

    from ima.storage.sqlite import connect

    errors: list[sqlite3.Error] = []

    def open_and_write(path: Path) -> None:
        try:
            connect(path, autocommit=True).execute("CREATE TABLE IF NOT EXISTS t (a)")
        except sqlite3.Error as exc:
            errors.append(exc)

    for attempt in range(150):
        path = tmp_path / f"{attempt}.sqlite"
        threads = [threading.Thread(target=open_and_write, args=(path,)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
