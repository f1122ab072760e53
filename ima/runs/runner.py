"""Starting, resuming and inspecting runs: the layer between the CLI and the graph."""

from __future__ import annotations

import os
import re
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from langgraph.types import Command, StateSnapshot

from ima.core.errors import UserError
from ima.core.settings import MEMORY_MODES, RunContext
from ima.graph.builder import compile_graph
from ima.longterm import check_settings, open_long_term
from ima.method.agent_context import build_turn_prompt
from ima.method.schedule import initial_position
from ima.models import agent_model, memory_model
from ima.runs import leases
from ima.runs.checkpoints import compact_thread, compact_while_running
from ima.runs.database import Database, using
from ima.runs.leases import Holder, Lease, LeaseLost, ThreadBusy
from ima.runs.outputs import check_output_dir, run_record, write_outputs
from ima.runs.registry import RunRecord, RunRegistry
from ima.tasks import Task, load_task

FINISHED = ("finalized", "turn_cap", "failed")
Listener = Callable[[str, dict[str, Any]], None]
Target = Database | Path | str  # a Database, a SQLite path or a postgresql:// URL


class RunEnded(UserError):
    """The run had already ended when this process got to it: it is never run again."""

    def __init__(self, record: RunRecord) -> None:
        self.record = record
        super().__init__(
            f"run {record.thread_id} already ended ({record.status}): see `ima show "
            f"{record.thread_id}`"
        )


def minimum_budget(task: Task, brief: str, settings: RunContext) -> int:
    """Tokens of the largest fixed context (task, role, instructions) any agent needs."""
    state: dict[str, Any] = {
        "brief": brief,
        "transcript": [],
        "memories": {r: {"text": ""} for r in task.speakers},
        **initial_position(task.schedule),
    }
    probe = settings.with_values(token_budget=10**9)
    return max(build_turn_prompt(task, r, state, probe, True).tokens for r in task.speakers)


def validate_settings(task: Task, memory_mode: str, settings: RunContext, brief: str) -> None:
    if memory_mode not in MEMORY_MODES:
        raise UserError(f"unknown memory mode {memory_mode!r}: use intrinsic or none")
    if settings.template == "manual" and not task.manual_template.strip():
        raise UserError(f"task {task.id} has no manual_template: use --template generic or llm")
    needed = minimum_budget(task, brief, settings)
    if memory_mode == "intrinsic":  # every context reserves the whole memory: never cut
        needed += settings.memory_tokens + (settings.long_term_budget if settings.long_term else 0)
    if settings.token_budget < needed:
        raise UserError(
            f"token budget {settings.token_budget} is smaller than the task description, role "
            f"prompt and memory ({needed} tokens): raise --budget to at least {needed + 256}"
            + (" or lower --memory-tokens" if memory_mode == "intrinsic" else "")
        )
    check_settings(settings)  # a bad principal or policy file fails before a run exists
    agent_model(settings)  # a bad model spec fails before a run exists
    memory_model(settings)


# A thread id names the run's output folder: one path component, never a way out of --out.
THREAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_thread_id(thread_id: str) -> None:
    if not THREAD_ID.fullmatch(thread_id) or ".." in thread_id:
        shown = thread_id if len(thread_id) <= 40 else thread_id[:40] + "..."
        raise UserError(
            f"invalid thread id {shown!r}: use 1-100 letters, digits, '.', '-' or '_', starting "
            "with a letter or digit (it names the run's output folder)"
        )


def new_thread_id(task: Task) -> str:
    # Date and time joined by a dot: as 14 digits with a dash, one id in ten passed a card
    # number's checksum, and long-term memory's screen refused to learn from that run.
    return f"{task.id}-{datetime.now():%Y%m%d.%H%M%S}-{secrets.token_hex(2)}"


def create_run(
    *,
    task_ref: str,
    memory_mode: str,
    settings: RunContext,
    db: Target,
    out_root: Path,
    thread_id: str | None = None,
    brief: str = "",
    keep_history: bool = False,
) -> RunRecord:
    """Validate everything and register a new run; nothing is written if anything is wrong."""
    task = load_task(task_ref)
    validate_settings(task, memory_mode, settings, brief or task.description)
    leases.lease_settings()  # a bad IMA_LEASE_SECONDS fails before the run exists
    thread_id = thread_id or new_thread_id(task)
    check_thread_id(thread_id)
    check_output_dir(out_root / thread_id)  # no conversation is spent on unwritable results
    registry = RunRegistry(db)
    try:
        ref = task_ref if Path(task_ref).suffix in {".yaml", ".yml"} else task.id
        record = RunRecord(
            thread_id=thread_id,
            task_ref=str(Path(ref).resolve()) if ref != task.id else ref,
            task_id=task.id,
            task_version=task.version,
            task_fingerprint=task.fingerprint,
            memory_mode=memory_mode,
            settings={**settings.to_dict(), "brief_override": bool(brief)},
            out_dir=str((out_root / thread_id).resolve()),
            pid=os.getpid(),
            keep_history=keep_history,
            brief=brief,
        )
        if not registry.add(record):  # atomic: of two processes naming one thread, one wins
            raise UserError(
                f"thread {thread_id!r} already exists: continue it with `ima resume {thread_id}` "
                "or choose another --thread"
            )
        return record
    finally:
        registry.close()


Reviewer = Callable[[dict[str, Any]], dict[str, Any]]
Waiting = Callable[[Holder], None]


@contextmanager
def _holding(
    db: Database, thread_id: str, lease: Lease | None, wait: bool, on_wait: Waiting | None
) -> Iterator[Lease]:
    if lease is not None:  # claimed by the caller (a queue claims a job and its thread at once)
        if lease.thread_id != thread_id:
            raise ValueError(f"lease is for {lease.thread_id}, not {thread_id}")
        yield lease
        return
    with leases.hold(db, thread_id, wait=wait, on_wait=on_wait) as held:
        yield held


def execute(
    record: RunRecord,
    db: Target,
    listener: Listener | None = None,
    reviewer: Reviewer | None = None,
    answer: dict[str, Any] | None = None,
    *,
    wait: bool = False,
    on_wait: Waiting | None = None,
    lease: Lease | None = None,
) -> dict[str, Any]:
    """Run (or continue) the thread until it ends or waits for a review nobody can give.

    Only the holder of the thread's lease advances it: ThreadBusy if another process holds
    it (or, with `wait`, after it is free). Under the lease the run's record is read again:
    a run that ended meanwhile raises RunEnded and is never run twice. `answer` resumes a
    pending review; `reviewer` is asked whenever the graph pauses for one. Checkpoints are
    synced after every step, so a killed process loses at most one step.
    """
    with (
        using(db) as database,
        _holding(database, record.thread_id, lease, wait, on_wait) as held,
    ):
        return _advance(database, held, record, listener, reviewer, answer)


def _advance(
    db: Database,
    held: Lease,
    record: RunRecord,
    listener: Listener | None,
    reviewer: Reviewer | None,
    answer: dict[str, Any] | None,
) -> dict[str, Any]:
    task = load_task(record.task_ref)
    registry = RunRegistry(db)
    current = registry.get(record.thread_id)
    if current.status in FINISHED:
        registry.close()
        raise RunEnded(current)
    vars(record).update(vars(current))  # what another process stored wins over our copy
    started, spent = time.perf_counter(), record.wall_seconds
    record.pid, record.status = os.getpid(), "running"
    # Every write below is fenced by the lease row (in the write's own transaction): once
    # another process has taken the thread over, each is refused with LeaseLost.
    registry.save(record, held)
    settings = record.run_context()
    values: dict[str, Any] = {}
    failed = False
    try:
        with (
            db.checkpointer() as saver,
            open_long_term(settings, lambda: db.long_term(settings.memory_store)) as lt,
        ):
            saver.fence = held  # checkpoints and compaction: refused once the lease is lost
            if lt.note and listener:
                listener("long_term", {"note": lt.note})
            graph = compile_graph(task, record.memory_mode, checkpointer=saver, store=lt.store)  # type: ignore[arg-type]
            config: Any = {"configurable": {"thread_id": record.thread_id}}
            snapshot = graph.get_state(config)
            # The brief is part of the record, so a run interrupted before its first
            # checkpoint still starts with it.
            start = {"brief": record.brief} if record.brief else {}
            payload: Any = start if not snapshot.values else None
            if answer is not None and _questions(snapshot):
                payload = Command(resume=answer)
            steps = 0
            while True:
                for chunk in graph.stream(
                    payload,
                    config,
                    context=settings,
                    stream_mode="updates",
                    durability="sync",
                ):
                    # Time spent so far, kept step by step: a killed process's share counts.
                    record.wall_seconds = spent + time.perf_counter() - started
                    registry.save(record, held)
                    steps += 1
                    if not record.keep_history:
                        compact_while_running(saver, graph, config, steps)
                    for node, update in chunk.items():
                        if listener and isinstance(update, dict):
                            listener(node, update)
                snapshot = graph.get_state(config)
                pending = _questions(snapshot)
                if not pending:
                    break
                if reviewer is None:
                    record.status = "awaiting_review"
                    return dict(snapshot.values)
                payload = Command(resume=reviewer(pending[0]))
            values = dict(snapshot.values)
            long_term = lt.run_record(values)
            if values.get("status") in FINISHED and not record.keep_history:
                compact_thread(saver, graph, config)  # nothing left to resume: keep the end
        record.status = values.get("status", "running")
    except BaseException:
        failed = True
        record.status = "interrupted"
        raise
    finally:
        record.wall_seconds = spent + time.perf_counter() - started
        try:
            registry.save(record, held)
        except LeaseLost:
            pass  # the thread is another process's now: its record is not ours to touch
        except Exception:
            if not failed:
                raise
            # else the error that stopped the run (a full disk, say) is the one to report
        finally:
            registry.close()
    write_outputs(
        Path(record.out_dir), run_record(record, values) | {"long_term": long_term}, values
    )
    return values


def _questions(snapshot: StateSnapshot) -> list[Any]:
    return [i.value for t in snapshot.tasks for i in t.interrupts]


def pending_review(record: RunRecord, db: Target) -> dict[str, Any] | None:
    """The question a paused run is waiting on, if any."""
    snapshot = _snapshot(record, db)
    return next(iter(_questions(snapshot)), None) if snapshot else None


def resumable(record: RunRecord, db: Target | None = None, *, wait: bool = False) -> None:
    """Refuse at once a run that ended, or (without `wait`) one another process holds;
    `execute` checks both again under the lease."""
    if record.status in FINISHED:
        raise RunEnded(record)
    if db is None or wait:
        return
    with using(db) as database:
        holder = leases.holders(database, [record.thread_id]).get(record.thread_id)
    if holder is not None:
        raise ThreadBusy(holder)


def load_state(record: RunRecord, db: Target) -> dict[str, Any]:
    snapshot = _snapshot(record, db)
    return dict(snapshot.values) if snapshot else {}


def _snapshot(record: RunRecord, db: Target) -> StateSnapshot | None:
    """The thread's latest state, read through the graph it was built with (a SQLite file
    is only read); None when no run in this database has written a checkpoint yet."""
    with using(db, read_only=True) as database, database.checkpointer() as saver:
        graph = compile_graph(load_task(record.task_ref), record.memory_mode, checkpointer=saver)  # type: ignore[arg-type]
        try:
            return graph.get_state({"configurable": {"thread_id": record.thread_id}})
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return None
            raise


def export_outputs(record: RunRecord, db: Target, out_dir: Path | None = None) -> Path:
    """Write a run's design and run record again from its checkpoint (atomically), to its
    own output folder or to `out_dir`/THREAD."""
    values = load_state(record, db)
    if not values:
        raise UserError(f"run {record.thread_id} has no checkpoint yet: nothing to export")
    target = out_dir / record.thread_id if out_dir else Path(record.out_dir)
    long_term = dict(values.get("long_term") or {})
    block = {"start": long_term.get("start", {}), "learned": long_term.get("learned", {})}
    return write_outputs(target, run_record(record, values) | {"long_term": block}, values)
