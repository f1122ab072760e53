"""A finished thread keeps only its final checkpoint, on both backends, and reads back the
same state (DeltaChannel values stored whole)."""

from __future__ import annotations

from typing import Any

import pytest

from ima.core.settings import RunContext
from ima.meeting.builder import compile_graph
from ima.runs.checkpoints import COMPACT_EVERY, KEEP_STEPS, compact_thread
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


def test_a_run_compacted_while_running_resumes_to_the_same_state(db_target, task):
    """Compaction of a run in progress keeps its newest steps whole and folds the rest into
    a snapshot: the run, interrupted after it and resumed in a fresh process, ends in the
    state of a run that was never compacted."""
    context = RunContext(model="scripted:reject_rounds=100000", turn_cap=30, long_term=False)
    db = open_database(db_target)
    with db.checkpointer() as saver:
        graph = compile_graph(task, "intrinsic", checkpointer=saver)
        whole = graph.invoke({}, {"configurable": {"thread_id": "whole"}}, context=context)
        config = {"configurable": {"thread_id": "compacted"}}
        stream = graph.stream({}, config, context=context, durability="sync")
        for steps, _ in enumerate(stream, start=1):
            if steps % 7 == 0:
                compact_thread(saver, graph, config, keep_last=KEEP_STEPS)
                assert _counts(db, "compacted")[0] <= KEEP_STEPS + 1
            if steps == 50:
                break  # the process stops here (durability=sync: every step is stored)
        assert len(graph.get_state(config).values["transcript"]) < 30
    db.close()
    db = open_database(db_target)
    with db.checkpointer() as saver:
        graph = compile_graph(task, "intrinsic", checkpointer=saver)
        resumed = graph.invoke(None, config, context=context)
    db.close()
    assert _without_timings(resumed) == _without_timings(whole)


def _without_timings(values: Any) -> Any:
    """The values with the seconds each call took (never equal between runs) left out."""
    if isinstance(values, dict):
        return {k: _without_timings(v) for k, v in values.items() if k != "seconds"}
    if isinstance(values, list):
        return [_without_timings(v) for v in values]
    return values


def test_ima_run_compacts_as_it_goes_unless_history_is_kept(tmp_path, task):
    """`ima run` keeps no more than the newest steps whole while it runs; with
    --keep-history every step's checkpoint stays."""
    from ima.runs.runner import create_run, execute

    db_path = str(tmp_path / "ima.sqlite")
    context = RunContext(model="scripted:reject_rounds=100000", turn_cap=60, long_term=False)
    most: dict[bool, int] = {}
    probe = open_database(db_path)
    for keep_history in (False, True):
        record = create_run(
            task_ref="data-pipeline",
            memory_mode="intrinsic",
            settings=context,
            db=db_path,
            out_root=tmp_path / "runs",
            keep_history=keep_history,
        )
        counts: list[int] = []

        def listener(
            node: str, update: dict, thread: str = record.thread_id, counts: list = counts
        ) -> None:
            if node in task.speakers:
                counts.append(_counts(probe, thread)[0])

        values = execute(record, db_path, listener)
        assert len(values["transcript"]) == 60
        most[keep_history] = max(counts)
    probe.close()
    assert most[False] <= COMPACT_EVERY + KEEP_STEPS
    assert most[True] > 3 * 59
