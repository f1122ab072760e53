"""LangGraph's own checkpointer conformance suite (`langgraph-checkpoint-conformance`, by the
LangGraph team) against both of the project's savers, plain and fenced by a held lease: a
LangGraph upgrade that breaks the savers' contract, or a fence that changes what a write
stores, fails here by name."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES

from ima.runs import leases
from ima.runs.checkpoints import Checkpointer, CompressedSerializer, PostgresCheckpointer
from ima.runs.database import open_database
from ima.storage.sqlite import connect


class _Async:
    """The async methods the suite calls, on a sync saver: each runs the saver's own sync
    method in a worker thread (the savers lock their connection)."""

    async def aget_tuple(self, config: Any) -> Any:
        return await asyncio.to_thread(self.get_tuple, config)  # type: ignore[attr-defined]

    async def alist(
        self,
        config: Any,
        *,
        filter: dict[str, Any] | None = None,
        before: Any = None,
        limit: int | None = None,
    ) -> AsyncIterator[Any]:
        def listed() -> list[Any]:
            return list(self.list(config, filter=filter, before=before, limit=limit))  # type: ignore[attr-defined]

        for item in await asyncio.to_thread(listed):
            yield item

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)  # type: ignore[attr-defined]

    async def aput_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)  # type: ignore[attr-defined]

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)  # type: ignore[attr-defined]


class AsyncCheckpointer(_Async, Checkpointer):
    pass


class AsyncPostgresCheckpointer(_Async, PostgresCheckpointer):
    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)


@contextmanager
def _fence(target: str, fenced: bool) -> Iterator[leases.Lease | None]:
    """A lease held on a thread of its own in the same database, or none."""
    if not fenced:
        yield None
        return
    db = open_database(target)
    try:
        with leases.hold(db, "conformance-fence") as held:
            yield held
    finally:
        db.close()


@pytest.mark.parametrize("fenced", [False, True], ids=["plain", "fenced"])
def test_the_sqlite_saver_passes_langgraphs_conformance_suite(tmp_path, fenced):
    path = tmp_path / "ima.sqlite"

    @checkpointer_test(name=f"ima Checkpointer ({'fenced' if fenced else 'plain'})")
    async def sqlite_saver() -> AsyncIterator[AsyncCheckpointer]:
        conn = connect(path)
        saver = AsyncCheckpointer(conn, serde=CompressedSerializer())
        saver.setup()
        with _fence(str(path), fenced) as held:
            saver.fence = held
            yield saver
        conn.close()

    report = asyncio.run(validate(sqlite_saver))
    _assert_passed(report, BASE_CAPABILITIES)


@pytest.mark.parametrize("fenced", [False, True], ids=["plain", "fenced"])
def test_the_postgres_saver_passes_langgraphs_conformance_suite(pg_url, fenced):
    database = open_database(pg_url)

    @checkpointer_test(name=f"ima PostgresCheckpointer ({'fenced' if fenced else 'plain'})")
    async def postgres_saver() -> AsyncIterator[AsyncPostgresCheckpointer]:
        saver = AsyncPostgresCheckpointer(database.pool, serde=CompressedSerializer())
        database.set_up("checkpoints", lambda sql: saver.setup())
        with _fence(pg_url, fenced) as held:
            saver.fence = held
            yield saver

    report = asyncio.run(validate(postgres_saver))
    _assert_passed(report, {*BASE_CAPABILITIES, "prune"})


def _assert_passed(report: Any, expected: set[Any]) -> None:
    names = {str(getattr(c, "value", c)) for c in expected}
    ran = {name for name, r in report.results.items() if r.detected}
    failures = {
        name: r.failures for name, r in report.results.items() if r.detected and not r.passed
    }
    assert not failures, f"{report.checkpointer_name} fails LangGraph's contract: {failures}"
    assert ran == names, f"capabilities tested: {sorted(ran)}, expected {sorted(names)}"
    assert all(report.results[n].tests_passed > 0 for n in names)
