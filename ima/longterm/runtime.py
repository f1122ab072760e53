"""The integration points the runner and the graph's nodes call. Each one turns a store
failure into a report ("unavailable: why") so the run goes on without long-term memory
and says so; none of them ever puts memory contents in a report or a log.

- `open_long_term(settings, db)`  (runner, around a run): opens the store where
  `ima.storage.targets.memory_location` says it lives (`memory_store`, else beside the runs
  database `db`), which goes to `compile_graph(..., store=...)` (the LangGraph server
  brings its own store instead).
- `load_starting_memory(settings, roles, runtime.store)`  (setup node): starting texts
  per role and the report of what was loaded.
- `learn_from_run(settings, runtime.store, thread, values)`  (learning node, after the
  documentation): what the finished run taught each agent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore

from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.longterm.backend import Backend, open_sqlite
from ima.longterm.errors import LongTermError
from ima.longterm.hub import Clock, MemoryHub
from ima.longterm.namespaces import resolve_principal
from ima.longterm.pipeline import Drafter, RunOutcome, learn, rule_drafter
from ima.longterm.policy import load_policy
from ima.longterm.retrieval import starting_memory
from ima.storage.targets import memory_location

log = logging.getLogger(__name__)
FINISHED = ("finalized", "turn_cap", "failed")


def hub_options(settings: RunContext, clock: Clock | None = None) -> dict[str, Any]:
    """The principal and the keyword arguments of a MemoryHub for a run's settings (its
    `principal`, `long_term_policy`): UserError for a bad principal or policy file."""
    options: dict[str, Any] = {
        "principal": resolve_principal(settings.principal),
        "policies": load_policy(settings.long_term_policy),
    }
    return options | ({"clock": clock} if clock else {})


def check_settings(settings: RunContext) -> None:
    """Fail before a run exists on a bad principal or policy file (UserError)."""
    if settings.long_term:
        hub_options(settings)


def _unavailable(reason: str) -> dict[str, Any]:
    return {
        "enabled": True,
        "available": False,
        "reason": reason,
        "note": f"long-term memory unavailable ({reason}): this run goes on without it",
    }


class LongTermSession:
    """A run's handle on long-term memory; `hub` is None when it is off or unavailable."""

    def __init__(self, hub: MemoryHub | None, status: dict[str, Any]) -> None:
        self.hub = hub
        self.status = status  # enabled / available / reason / note: for the run record

    @property
    def store(self) -> BaseStore | None:
        return self.hub.store if self.hub else None

    @property
    def note(self) -> str:
        """A line to show the user when long-term memory is not in use ("" when it is)."""
        return str(self.status.get("note", ""))

    def run_record(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The run record's `long_term` block: what the run started with and what it learned
        (the graph's own reports), or why long-term memory was not used."""
        if self.hub is None:
            return {"start": dict(self.status), "learned": dict(self.status)}
        block = dict(values.get("long_term") or {})
        return {"start": block.get("start", {}), "learned": block.get("learned", {})}

    def close(self) -> None:
        if self.hub:
            self.hub.close()


# Opens long-term memory at a location (a SQLite file, or a URL for the runs database's
# opener, which has the PostgreSQL driver): (location, timeout) -> Backend.
BackendOpener = Callable[[str, float], Backend]


def open_session(
    settings: RunContext,
    db: str | Path | None = None,
    *,
    opener: BackendOpener = open_sqlite,
    clock: Clock | None = None,
    timeout: float = 30.0,
) -> LongTermSession:
    """Long-term memory for a run whose runs database is `db` (a SQLite path or a
    postgresql:// URL; None: IMA_DB), where `memory_location` says it lives, opened by
    `opener` (the runner passes `ima.runs.database.open_memory_backend`)."""
    if not settings.long_term:
        return LongTermSession(None, {"enabled": False})  # the user's choice: no note
    try:
        options = hub_options(settings, clock)
        backend = opener(memory_location(settings.memory_store, db), timeout)
        hub = MemoryHub.on_backend(backend, **options)
    except (LongTermError, UserError) as exc:
        log.info("long-term memory unavailable: %s", exc)
        return LongTermSession(None, _unavailable(str(exc)))
    except Exception as exc:  # a database error while opening: the run goes on without it
        reason = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
        log.info("long-term memory unavailable: %s", reason)
        return LongTermSession(None, _unavailable(reason))
    return LongTermSession(hub, {"enabled": True, "available": True, "store": backend.where})


@contextmanager
def open_long_term(
    settings: Any, db: str | Path | None = None, **kwargs: Any
) -> Iterator[LongTermSession]:
    """The session for one run (`with open_long_term(settings, db) as lt:`)."""
    session = open_session(settings, db, **kwargs)
    try:
        yield session
    finally:
        session.close()


def learn_from_run(
    settings: RunContext,
    store: BaseStore | None,
    thread_id: str,
    values: Mapping[str, Any],
    *,
    drafter: Drafter = rule_drafter,
    clock: Clock | None = None,
) -> dict[str, Any]:
    """For the learning node: draft, screen and merge the finished run's lessons through the
    graph's store. A report, never an exception: a store failure must not fail the run."""
    if not settings.long_term:
        return {"enabled": False}
    if store is None:
        return _unavailable("no store attached to the graph") | {"learned": False}
    status = str(values.get("status", ""))
    if status not in FINISHED:
        return {"enabled": True, "learned": False, "reason": f"run not finished ({status})"}
    try:
        hub = MemoryHub(store, **hub_options(settings, clock))
        report = learn(hub, RunOutcome.from_values(thread_id, values), drafter)
    except (LongTermError, UserError) as exc:
        log.info("long-term memory: learning from %s failed: %s", thread_id, exc)
        return _unavailable(str(exc)) | {"learned": False}
    return {"enabled": True, "available": True, "learned": True, **report.as_dict()}


def load_starting_memory(
    settings: Any,
    roles: Sequence[str],
    store: BaseStore | None,
    *,
    clock: Clock | None = None,
) -> tuple[dict[str, str], dict[str, Any]]:
    """For the setup node: (starting memory text per role, report for the run record).
    Uses the graph's store (`runtime.store`); without one, long-term memory is not used."""
    if not settings.long_term:
        return {}, {"enabled": False}
    if store is None:
        return {}, _unavailable("no store attached to the graph")
    try:
        hub = MemoryHub(store, **hub_options(settings, clock))
        result = starting_memory(hub, roles, settings.long_term_budget)
    except (LongTermError, UserError) as exc:
        log.info("long-term memory unavailable at run start: %s", exc)
        return {}, _unavailable(str(exc))
    return result.texts, result.report
