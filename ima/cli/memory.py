"""`ima memory`: see what each agent believes, why, and whether it is applied; correct it.

Register on the `ima` app with `app.add_typer(memory_app, name="memory")`. The principal
comes from the run configuration (IMA_PRINCIPAL / ima.toml `principal`, else the OS user),
never from a command-line argument. Every correction is recorded in the audit log.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ima.cli.options import JsonOpt
from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.longterm.errors import MemoryUnavailable
from ima.longterm.hub import Entry, MemoryHub
from ima.longterm.namespaces import SHARED, private
from ima.longterm.runtime import hub_options
from ima.runs.database import open_memory_hub
from ima.storage.targets import is_url, memory_location, safe_url

memory_app = typer.Typer(
    help="Long-term memory across runs: list what each agent believes, see why, correct it.\n\n"
    "Items are provisional until enough runs support them; only mature items reach an "
    "agent's starting memory.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
)
console = Console()

StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Long-term memory: a SQLite file or a postgresql:// URL (env IMA_MEMORY_STORE; "
        "default: beside the runs database, IMA_DB: memory.sqlite next to a SQLite file, or "
        "the same PostgreSQL database).",
    ),
]
ItemArg = Annotated[
    str, typer.Argument(help="Item id (or a unique prefix), see `ima memory list`.")
]


def _location(store: str | None) -> str:
    """--store, else the memory_store setting, else beside the runs database (IMA_DB)."""
    return memory_location(store or RunContext().memory_store)


@contextmanager
def _hub(
    store: str | None, *, create: bool = False, read_only: bool = False
) -> Iterator[MemoryHub | None]:
    location = _location(store)
    if not create and not is_url(location) and not Path(location).exists():
        yield None
        return
    options = hub_options(RunContext())  # whose memory, and its policy: as a run would use
    try:
        hub = open_memory_hub(location, read_only=read_only, **options)
    except MemoryUnavailable as exc:
        raise UserError(str(exc)) from None
    try:
        yield hub
    except MemoryUnavailable as exc:
        raise UserError(str(exc)) from None
    finally:
        hub.close()


def _need(hub: MemoryHub | None, store: str | None) -> MemoryHub:
    if hub is None:
        where = safe_url(_location(store))
        raise UserError(f"no long-term memory at {where} yet: runs add to it (or pass --store)")
    return hub


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else "-"


def _entry_json(entry: Entry) -> dict[str, Any]:
    item, status = entry.item, entry.status
    return {
        "id": item.id,
        "memory": entry.scope.label,
        "text": item.text,
        "status": status.state,
        "applied": status.applied,
        "reason": status.reason,
        "support": {"recent": status.recent, "needed": status.needed, "total": item.support_total},
        "source": item.source,
        "created_at": item.created_at,
        "last_support_at": status.last_support_at,
        "superseded_by": item.superseded_by,
        "replaces": item.replaces,
    }


def _state_text(state: str) -> str:
    colour = {"mature": "green", "provisional": "yellow"}.get(state, "dim")
    return f"[{colour}]{state}[/{colour}]"


@memory_app.command("list")
def list_items(
    role: Annotated[str | None, typer.Option(help="Only this agent role's private memory.")] = None,
    shared: Annotated[bool, typer.Option("--shared", help="Only the shared team memory.")] = False,
    show_all: Annotated[
        bool, typer.Option("--all", help="Also superseded and expired items.")
    ] = False,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Items per agent and shared, with status (mature / provisional) and support."""
    with _hub(store, read_only=True) as hub:
        if hub is None:
            entries: list[Entry] = []
        else:
            scopes = [private(role)] if role else [SHARED] if shared else None
            entries = hub.entries(scopes)
    if not show_all:
        entries = [e for e in entries if e.status.state in ("mature", "provisional")]
    entries.sort(key=lambda e: (e.scope.kind != "private", e.scope.token, -e.item.last_at))
    if as_json:
        print(json.dumps([_entry_json(e) for e in entries], indent=2))
        return
    table = Table(title=f"Long-term memory ({len(entries)} items)")
    for col in ("id", "memory", "status", "support", "last seen", "text"):
        table.add_column(col, overflow="fold")
    for e in entries:
        table.add_row(
            e.item.id,
            e.scope.label,
            _state_text(e.status.state) + (" (user)" if e.item.source == "user" else ""),
            f"{e.status.recent}/{e.status.needed} ({e.item.support_total} total)",
            _when(e.item.last_at),
            Text(e.item.text),
        )
    console.print(table)
    if hub is None:
        console.print("[dim]no long-term memory yet: finished runs add to it[/dim]")


@memory_app.command()
def show(item: ItemArg, store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """One item: its text, where it lives, status and support."""
    with _hub(store, read_only=True) as hub:
        entry = _need(hub, store).find(item)
    data = _entry_json(entry)
    if as_json:
        print(json.dumps(data, indent=2))
        return
    lines = [
        f"[bold]{escape(entry.item.text)}[/bold]",
        "",
        f"memory  {data['memory']}   source {data['source']}",
        f"status  {_state_text(data['status'])}: {data['reason']}",
        f"support {data['support']['recent']} recent of {data['support']['needed']} needed, "
        f"{data['support']['total']} in all; last {_when(data['last_support_at'])}",
    ]
    if entry.item.superseded_by:
        lines.append(f"superseded by {entry.item.superseded_by}")
    if entry.item.replaces:
        lines.append(f"corrects {entry.item.replaces}")
    console.print(Panel("\n".join(lines), title=f"item {entry.item.id}"))


@memory_app.command()
def why(item: ItemArg, store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Why an item is believed: its support and provenance, and whether it is applied."""
    with _hub(store, read_only=True) as hub:
        hub = _need(hub, store)
        entry = hub.find(item)
        policy = hub.policy(entry.scope)
        corrections = [
            e
            for e in hub.events()
            if entry.item.id in (e.get("item"), e.get("new_item"))
            or (entry.item.replaces and entry.item.replaces == e.get("item"))
        ]
    provenance = [asdict(s) for s in entry.item.support]
    if as_json:
        print(
            json.dumps(
                _entry_json(entry)
                | {"policy": asdict(policy), "provenance": provenance, "corrections": corrections},
                indent=2,
            )
        )
        return
    applied = (
        "[green]applied[/green]: agents start with it"
        if entry.status.applied
        else "[yellow]not applied[/yellow]: stored only"
    )
    head = (
        f"[bold]{escape(entry.item.text)}[/bold]\n\n{applied}\n{entry.status.state}: {escape(entry.status.reason)}\n"
        f"policy ({entry.scope.label}): {policy.min_support} runs within {policy.window_days:g} days "
        f"mature; decays after {policy.decay_days:g} days without support; kept "
        f"{policy.retention_days:g} days; counted outcomes: {', '.join(policy.supporting_statuses)}"
    )
    table = Table(title="Provenance")
    for col in ("when", "run (thread)", "turn", "agents", "outcome"):
        table.add_column(col, overflow="fold")
    for s in entry.item.support:
        table.add_row(_when(s.at), s.thread, str(s.turn), ", ".join(s.agents), s.status)
    parts: list[Any] = [head, table]
    if corrections:
        audit = Table(title="Corrections")
        for col in ("when", "action", "item", "new item"):
            audit.add_column(col)
        for e in corrections:
            audit.add_row(_when(e["at"]), e["action"], e.get("item", ""), e.get("new_item", ""))
        parts.append(audit)
    console.print(Panel(Group(*parts), title=f"why {entry.item.id} ({entry.scope.label})"))


@memory_app.command()
def edit(
    item: ItemArg,
    text: Annotated[str, typer.Argument(help="The corrected text.")],
    store: StoreOpt = None,
) -> None:
    """Correct an item: the new text is your statement (mature at once); the old item is kept
    as corrected, and the edit is recorded."""
    with _hub(store) as hub:
        entry = _need(hub, store).edit(item, text)
    console.print(
        f"{item} corrected → [bold]{entry.item.id}[/bold] ({entry.scope.label}, "
        f"{entry.status.state}: {entry.status.reason})"
    )


@memory_app.command()
def forget(item: ItemArg, store: StoreOpt = None) -> None:
    """Remove an item; runs will not learn it again (undo with `ima memory add`)."""
    with _hub(store) as hub:
        entry = _need(hub, store).forget(item)
    console.print(f"forgot {entry.item.id} ({entry.scope.label}); it will not be learned again")


def _task_roles(refs: Iterator[str]) -> Iterator[str]:
    from ima.tasks import load_task

    for ref in dict.fromkeys(refs):
        try:
            yield from (r.id for r in load_task(ref).roles)
        except UserError:  # a recorded run's task file is gone: its roles are unknown here
            continue


def _recorded_task_refs() -> Iterator[str]:
    """The tasks of the runs recorded in the runs database (--db / IMA_DB), if it exists."""
    from ima.runs.database import open_database
    from ima.runs.registry import RunRegistry

    try:
        with open_database(None, read_only=True) as database:
            if not database.exists():
                return
            with RunRegistry(database) as registry:
                refs = [r.task_ref for r in registry.all()]
    except Exception:  # an unusable runs database: no roles from it
        return
    yield from refs


def _check_role(role: str) -> None:
    """A fact for a role no task has would never reach an agent: refuse it, naming the
    roles of the bundled tasks and of the tasks of recorded runs."""
    from ima.tasks import available_tasks

    known = list(_task_roles(iter(available_tasks())))
    if role in known:
        return
    known += _task_roles(_recorded_task_refs())
    if role in known:
        return
    names = ", ".join(sorted(set(known))) or "none"
    raise UserError(
        f"no task here has a role {role!r}, so no agent would ever load this fact: use one of "
        f"{names}, or pass --any-role for a task that is not installed here"
    )


@memory_app.command()
def add(
    text: Annotated[str, typer.Argument(help="A fact the agents should know.")],
    role: Annotated[
        str | None, typer.Option(help="Give it to this agent role only (default: shared).")
    ] = None,
    any_role: Annotated[
        bool,
        typer.Option(
            "--any-role",
            help="Accept a --role that no bundled task or recorded run has (a task that is "
            "not installed here).",
        ),
    ] = False,
    store: StoreOpt = None,
) -> None:
    """State a fact yourself: it is mature at once (policy `explicit_matures`)."""
    with _hub(store, create=True) as hub:
        hub = _need(hub, store)
        if role is not None and not any_role:
            hub.private(role)  # a malformed role: "invalid role", before anything else
            _check_role(role)
        entry = hub.add_fact(text, role)
    console.print(f"added [bold]{entry.item.id}[/bold] ({entry.scope.label}, {entry.status.state})")


@memory_app.command()
def reset(
    role: Annotated[
        str | None, typer.Option(help="Reset this agent role's private memory.")
    ] = None,
    shared: Annotated[bool, typer.Option("--shared", help="Reset the shared team memory.")] = False,
    everything: Annotated[
        bool, typer.Option("--all", help="Reset every agent's memory and the shared memory.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    store: StoreOpt = None,
) -> None:
    """Empty long-term memory: one role (--role R), the shared memory (--shared) or all (--all)."""
    if sum((role is not None, shared, everything)) != 1:
        raise UserError("say what to reset: exactly one of --role R, --shared or --all")
    with _hub(store) as hub:
        hub = _need(hub, store)
        scopes = hub.scopes() if everything else [SHARED] if shared else [private(role or "")]
        what = "all long-term memory" if everything else scopes[0].label
        if not yes:
            if not sys.stdin.isatty():
                raise UserError(f"reset of {what} needs confirmation: pass --yes")
            typer.confirm(f"Reset {what}?", abort=True)
        removed = hub.reset(scopes)
    console.print(f"reset {what}: {removed} items removed (recorded in the audit log)")


@memory_app.command()
def audit(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """The audit log: every learning run and every correction (ids and counts, no text)."""
    with _hub(store, read_only=True) as hub:
        events = hub.events() if hub else []
    if as_json:
        print(json.dumps(events, indent=2))
        return
    table = Table(title=f"Long-term memory audit ({len(events)} events)")
    for col in ("when", "action", "memory", "details"):
        table.add_column(col, overflow="fold")
    skip = {"principal", "kind", "scope", "action", "at", "memory"}
    for e in events:
        details = ", ".join(f"{k}={v}" for k, v in e.items() if k not in skip)
        table.add_row(_when(e["at"]), e["action"], e.get("memory", ""), details)
    console.print(table)
