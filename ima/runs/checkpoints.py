"""Checkpoints: LangGraph's SqliteSaver tuned for size, and compaction of finished threads.

This is the one module that relies on LangGraph internals (a private snapshot class and the
saver's table layout); tests/test_checkpoint_contract.py fails loudly if an upgrade changes
them. Checkpoints are kept small: integer channel versions instead of SqliteSaver's
49-character strings, and blobs compressed with zlib."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.checkpoint.sqlite import SqliteSaver

from ima.runs.sqlite import connect

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph


class CompressedSerializer(JsonPlusSerializer):
    """LangGraph's serializer, with blobs of 256 bytes or more zlib-compressed.

    Compressed blobs carry the type tag `zlib+<type>`; untagged blobs (older databases) load
    as before.
    """

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = super().dumps_typed(obj)
        if len(data) < 256:
            return kind, data
        return f"zlib+{kind}", zlib.compress(data, 6)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, blob = data
        if kind.startswith("zlib+"):
            return super().loads_typed((kind.removeprefix("zlib+"), zlib.decompress(blob)))
        return super().loads_typed(data)


class Checkpointer(SqliteSaver):
    """SqliteSaver with integer channel versions (LangGraph's default scheme).

    Every checkpoint lists a version per channel twice (channel_versions, versions_seen);
    SqliteSaver writes each as a 49-character string, integers take 1-3 bytes. Threads that
    began with string versions keep them, so older databases resume unchanged.
    """

    def get_next_version(self, current: str | int | None, channel: None = None) -> Any:  # type: ignore[override]
        if isinstance(current, str):
            return super().get_next_version(current, channel)
        return (current or 0) + 1


def compact_thread(saver: SqliteSaver, graph: CompiledStateGraph, config: Any) -> None:
    """Keep only the latest checkpoint of a finished thread, its DeltaChannels stored whole.

    The way LangGraph documents to prune a thread that uses DeltaChannel
    (`BaseCheckpointSaver.prune`): the kept checkpoint holds a snapshot of every delta
    channel, so nothing needs the deleted ancestors. The thread's state is unchanged; its
    step-by-step history is gone. Freed pages return to the file system.
    """
    thread_id = str(config["configurable"]["thread_id"])
    latest = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    if latest is None:
        return
    values = graph.get_state(latest.config).values
    checkpoint = dict(latest.checkpoint)
    stored = dict(checkpoint["channel_values"])
    delta = [k for k, ch in graph.channels.items() if isinstance(ch, DeltaChannel) and k in values]
    for key in delta:
        stored[key] = _DeltaSnapshot(values[key])
    checkpoint["channel_values"] = stored
    metadata = {**latest.metadata, "counters_since_delta_snapshot": {k: [0, 0] for k in delta}}
    kind, blob = saver.serde.dumps_typed(checkpoint)
    keep = latest.config["configurable"]["checkpoint_id"]
    where = "thread_id = ? AND checkpoint_ns = '' AND checkpoint_id"
    with saver.cursor() as cur:
        cur.execute(f"DELETE FROM writes WHERE {where} != ?", (thread_id, keep))
        cur.execute(f"DELETE FROM checkpoints WHERE {where} != ?", (thread_id, keep))
        cur.execute(
            f"UPDATE checkpoints SET type = ?, checkpoint = ?, metadata = ?, "
            f"parent_checkpoint_id = NULL WHERE {where} = ?",
            (kind, blob, json.dumps(metadata).encode(), thread_id, keep),
        )
    with saver.lock:  # executescript steps the pragma to the end (execute frees one page)
        saver.conn.executescript("PRAGMA incremental_vacuum;")


@contextmanager
def open_checkpointer(path: Path, *, read_only: bool = False) -> Iterator[SqliteSaver]:
    conn = connect(path, read_only=read_only)
    try:
        saver = Checkpointer(conn, serde=CompressedSerializer())
        if read_only:
            saver.is_setup = True  # the tables exist, or there is nothing to read
        else:
            saver.setup()
        yield saver
    finally:
        conn.close()
