"""What ima/runs/checkpoints.py relies on in LangGraph, checked against the installed
versions. If one of these fails after an upgrade, read the message: it says what changed
and what to re-check in ima/runs/checkpoints.py before trusting compaction or resume."""

from __future__ import annotations

import sqlite3
from importlib.metadata import version

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.base import MIGRATIONS
from langgraph.checkpoint.sqlite import SqliteSaver

from ima.core.settings import RunContext
from ima.meeting.builder import compile_graph
from ima.runs.checkpoints import compact_thread
from ima.runs.database import open_database

CHECKED = {  # the versions this contract was last checked against
    "langgraph": "1.2.24",
    "langgraph-checkpoint": "4.3.2",
    "langgraph-checkpoint-sqlite": "3.1.2",
    "langgraph-checkpoint-postgres": "3.2.0",
}


def test_the_pinned_versions_are_the_checked_ones():
    installed = {name: version(name) for name in CHECKED}
    assert installed == CHECKED, (
        "LangGraph packages changed: run this file, then update CHECKED once every other "
        "test here passes"
    )


def test_the_private_snapshot_class_still_exists_and_holds_a_value():
    from langgraph.checkpoint.serde.types import _DeltaSnapshot

    assert _DeltaSnapshot([1, 2]).value == [1, 2], (
        "langgraph.checkpoint.serde.types._DeltaSnapshot changed: compact_thread stores "
        "DeltaChannel values whole with it"
    )


def test_base_saver_versions_are_integers_and_savers_still_write_strings():
    assert BaseCheckpointSaver.get_next_version(None, None, None) == 1  # type: ignore[arg-type]
    assert isinstance(SqliteSaver.get_next_version(None, None, None), str), (  # type: ignore[arg-type]
        "SqliteSaver now writes non-string versions: Checkpointer.get_next_version may go"
    )
    assert isinstance(PostgresSaver.get_next_version(None, None, None), str), (  # type: ignore[arg-type]
        "PostgresSaver now writes non-string versions: PostgresCheckpointer's override may go"
    )


def test_no_saver_prunes_delta_channel_threads_yet(run_to_end):
    """If this fails, LangGraph prunes DeltaChannel threads itself: use its public
    `prune(..., strategy="keep_latest")` in compact_thread instead of editing tables."""
    for target in run_to_end.targets:
        db = open_database(target)
        with db.checkpointer() as saver, pytest.raises(NotImplementedError):
            saver.prune(["done"], strategy="keep_latest")


def test_sqlite_table_layout(tmp_path):
    db = open_database(tmp_path / "x.sqlite")
    with db.checkpointer():
        pass
    conn = sqlite3.connect(tmp_path / "x.sqlite")
    columns = {
        table: [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        for table in ("checkpoints", "writes")
    }
    assert columns == {
        "checkpoints": [
            "thread_id",
            "checkpoint_ns",
            "checkpoint_id",
            "parent_checkpoint_id",
            "type",
            "checkpoint",
            "metadata",
        ],
        "writes": [
            "thread_id",
            "checkpoint_ns",
            "checkpoint_id",
            "task_id",
            "task_path",
            "idx",
            "channel",
            "type",
            "value",
        ],
    }, "SqliteSaver's tables changed: _compact_sqlite rewrites them"


def test_postgres_table_layout(pg_url):
    db = open_database(pg_url)
    with db.checkpointer():
        pass
    with db.session() as sql:
        rows = sql.all(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_name "
            "IN ('checkpoints', 'checkpoint_blobs', 'checkpoint_writes') "
            "ORDER BY table_name, ordinal_position"
        )
    columns: dict[str, list[str]] = {}
    for r in rows:
        columns.setdefault(r["table_name"], []).append(r["column_name"])
    assert columns == {
        "checkpoint_blobs": ["thread_id", "checkpoint_ns", "channel", "version", "type", "blob"],
        "checkpoint_writes": [
            "thread_id",
            "checkpoint_ns",
            "checkpoint_id",
            "task_id",
            "idx",
            "channel",
            "type",
            "blob",
            "task_path",
        ],
        "checkpoints": [
            "thread_id",
            "checkpoint_ns",
            "checkpoint_id",
            "parent_checkpoint_id",
            "type",
            "checkpoint",
            "metadata",
        ],
    }, "PostgresSaver's tables changed: _compact_postgres rewrites them"
    assert len(MIGRATIONS) == 10, "PostgresSaver has new migrations: check _compact_postgres"


def test_postgres_keeps_a_snapshot_as_a_blob_behind_an_inline_true(run_to_end):
    """compact_thread writes the snapshot the way PostgresSaver.put does; the compacted
    thread must read back as the same state through the saver's own loading code."""
    db = open_database(run_to_end.postgres)
    with db.session() as sql:
        row = sql.one("SELECT checkpoint FROM checkpoints WHERE thread_id = 'done'")
        blob = sql.one(
            "SELECT type FROM checkpoint_blobs WHERE thread_id = 'done' AND channel = "
            "'transcript' AND version = %s",
            (str(row["checkpoint"]["channel_versions"]["transcript"]),),
        )
    assert row["checkpoint"]["channel_values"]["transcript"] is True
    assert blob["type"].startswith("zlib+")  # compressed by CompressedSerializer
    assert isinstance(row["checkpoint"]["channel_versions"]["transcript"], int)


class _Runs:
    def __init__(self, sqlite: str, postgres: str) -> None:
        self.sqlite, self.postgres = sqlite, postgres
        self.targets = (sqlite, postgres)


@pytest.fixture
def run_to_end(tmp_path, pg_url, task) -> _Runs:
    """One finished, compacted thread `done` on each backend."""
    runs = _Runs(str(tmp_path / "c.sqlite"), pg_url)
    for target in runs.targets:
        db = open_database(target)
        with db.checkpointer() as saver:
            graph = compile_graph(task, "intrinsic", checkpointer=saver)
            config = {"configurable": {"thread_id": "done"}}
            graph.invoke({}, config, context=RunContext(model="scripted", turn_cap=12))
            compact_thread(saver, graph, config)
        db.close()
    return runs
