"""A finished thread keeps only its final checkpoint, on both backends, and reads back the
same state (DeltaChannel values stored whole)."""

from __future__ import annotations

import pytest

from ima.core.settings import RunContext
from ima.graph.builder import compile_graph
from ima.runs.checkpoints import compact_thread
from ima.runs.database import open_database

WRITES = {"sqlite": "writes", "postgres": "checkpoint_writes"}


def _counts(db, thread: str) -> tuple[int, int]:
    with db.session() as sql:
        checkpoints = sql.one(
            "SELECT count(*) AS n FROM checkpoints WHERE thread_id = %s", (thread,)
        )
        writes = sql.one(
            f"SELECT count(*) AS n FROM {WRITES[db.kind]} WHERE thread_id = %s", (thread,)
        )
    return checkpoints["n"], writes["n"]


@pytest.mark.parametrize("memory_mode", ["intrinsic", "none"])
def test_compaction_keeps_the_state_and_only_the_last_checkpoint(db_target, task, memory_mode):
    db = open_database(db_target)
    context = RunContext(model="scripted:reject_rounds=100000", turn_cap=40, long_term=False)
    with db.checkpointer() as saver:
        graph = compile_graph(task, memory_mode, checkpointer=saver)
        for thread in ("done", "other"):
            graph.invoke({}, {"configurable": {"thread_id": thread}}, context=context)
        config = {"configurable": {"thread_id": "done"}}
        before = graph.get_state(config).values
        assert _counts(db, "done")[0] > 80
        other = _counts(db, "other")

        compact_thread(saver, graph, config)

        assert _counts(db, "done") == (1, 0)
        assert _counts(db, "other") == other  # other threads untouched
        after = graph.get_state(config).values
        assert after == before
        assert len(after["transcript"]) == 40 and after["status"] == "turn_cap"
        if memory_mode == "intrinsic":
            assert all(m["text"] for m in after["memories"].values())
        compact_thread(saver, graph, config)  # again: nothing changes
        assert graph.get_state(config).values == before
    # a fresh process (new connection, new graph) reads the same state
    db.close()
    db = open_database(db_target)
    with db.checkpointer() as saver:
        graph = compile_graph(task, memory_mode, checkpointer=saver)
        assert graph.get_state(config).values == before
        assert len(list(saver.list(config))) == 1
    if db.kind == "postgres":
        with db.session() as sql:
            kept = sql.one("SELECT count(*) AS n FROM checkpoint_blobs WHERE thread_id = 'done'")[
                "n"
            ]
            channels = sql.one(
                "SELECT count(*) AS n FROM checkpoints, jsonb_object_keys("
                "checkpoint -> 'channel_versions') WHERE thread_id = 'done'"
            )["n"]
        assert kept <= channels  # no blob of a deleted checkpoint is left behind
    db.close()
