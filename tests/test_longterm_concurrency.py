"""Conditional writes: concurrent writers lose no update, and a loser re-merges, on both
backends (SQLite file; PostgreSQL, whose store has no compare-and-set of its own)."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from ima.longterm import MemoryHub, RunOutcome, learn
from ima.longterm.hub import DOC_KEY
from ima.longterm.merge import Candidate, merge
from ima.longterm.namespaces import namespace, private
from ima.runs.database import open_memory_hub


def _lesson(writer: str, n: int) -> Candidate:
    return Candidate(
        f"Lesson {n} from writer {writer}", f"{writer}-run{n}", n, ("BOA",), "finalized"
    )


def _write_many(path: str, writer: str, count: int, barrier=None) -> None:
    with open_memory_hub(path, "alice") as hub:
        if barrier is not None:
            barrier.wait(120)  # a writer that died must not hang the other
        for n in range(count):
            hub.merge(private("BOA"), [_lesson(writer, n)])


def _run_threads(target, args_list) -> None:
    """Run threads, then re-raise the first exception any of them hit."""
    errors: list[BaseException] = []

    def wrapped(*args):
        try:
            target(*args)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=wrapped, args=args) for args in args_list]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    if errors:
        raise errors[0]


def _assert_nothing_lost(path: str, writers: list[str], count: int) -> None:
    with open_memory_hub(path, "alice") as hub:
        doc = hub.read(private("BOA"))
        texts = {i.text for i in doc.items.values()}
        expected = {_lesson(w, n).text for w in writers for n in range(count)}
        assert texts == expected
        # every successful write is one revision, and revisions form one unbroken chain
        revs = [r.rev for r in hub._log.history(namespace("alice", private("BOA")), DOC_KEY)]
        assert revs == list(range(1, len(writers) * count + 1)) and doc.rev == revs[-1]


def test_two_threads_lose_no_update(memory_target):
    path, count = memory_target, 40
    barrier = threading.Barrier(2)
    lost: list[int] = []
    original = MemoryHub.update

    def counting_update(self, scope, change):  # count re-merges, to show the race happened
        calls = [0]

        def counted(doc):
            calls[0] += 1
            return change(doc)

        try:
            return original(self, scope, counted)
        finally:
            lost.append(calls[0] - 1)

    MemoryHub.update = counting_update  # type: ignore[method-assign]
    try:
        _run_threads(_write_many, [(str(path), w, count, barrier) for w in ("x", "y")])
    finally:
        MemoryHub.update = original  # type: ignore[method-assign]
    _assert_nothing_lost(path, ["x", "y"], count)
    assert len(lost) == 2 * count  # every merge ran once, plus once per lost race (sum(lost))


def _write_many_reporting(path: str, writer: str, count: int, barrier, errors) -> None:
    """In a child process: write, and report any failure to the parent before dying."""
    try:
        _write_many(path, writer, count, barrier)
    except BaseException as exc:
        errors.put(f"{writer}: {type(exc).__name__}: {exc}")
        raise


@pytest.mark.slow  # spawns two interpreters
def test_two_processes_lose_no_update(memory_target):
    path, count = memory_target, 25
    ctx = multiprocessing.get_context("spawn")
    barrier, errors = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=_write_many_reporting, args=(str(path), w, count, barrier, errors))
        for w in ("p", "q")
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    failures = [errors.get(timeout=5) for p in procs if p.exitcode != 0]
    assert not failures and all(p.exitcode == 0 for p in procs), failures
    _assert_nothing_lost(path, ["p", "q"], count)


def test_the_loser_rereads_and_remerges(memory_target):
    """Writer one reads revision 0; writer two commits meanwhile; one's claim of revision 1
    fails, so it runs its merge again on two's document instead of overwriting it."""
    path = memory_target
    with open_memory_hub(path, "alice") as one, open_memory_hub(path, "alice") as two:
        seen: list[int] = []

        def change(doc):
            seen.append(doc.rev)
            if len(seen) == 1:  # between our read and our write, another writer commits
                two.merge(private("BOA"), [_lesson("two", 1)])
            merge(doc, [_lesson("one", 1)], one.policy(private("BOA")), one.now())
            return True

        result = one.update(private("BOA"), change)
        assert seen == [0, 1] and result.rev == 2
        texts = {i.text for i in one.read(private("BOA")).items.values()}
        assert texts == {_lesson("one", 1).text, _lesson("two", 1).text}


def test_concurrent_learning_of_the_same_lesson_counts_both_runs(memory_target):
    path = memory_target
    memory = "## Decisions\n- Storage format: Parquet on object storage\n"
    barrier = threading.Barrier(4)

    def run(thread: str) -> None:
        with open_memory_hub(path, "alice") as hub:
            barrier.wait(60)
            learn(hub, RunOutcome(thread, "finalized", {"BOA": (memory, 2), "DEA": (memory, 3)}))

    _run_threads(run, [(f"run{i}",) for i in range(4)])
    with open_memory_hub(path, "alice") as hub:
        for scope in (private("BOA"), private("DEA"), hub.shared):
            (item,) = hub.read(scope).items.values()
            assert item.support_total == 4
            assert {s.thread for s in item.support} == {f"run{i}" for i in range(4)}
