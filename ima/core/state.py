"""Graph state: one place for everything a run remembers between steps.

The transcript and the memory log are DeltaChannels: a checkpoint stores only the new
writes (plus rare snapshots), so checkpoint storage grows linearly with the conversation
instead of storing the whole transcript again at every step. Each agent's memory lives
where the library keeps it, under `intrinsic_memory` (the library's `MemoryChannel`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired

from intrinsic_memory import AgentMemory, MemoryChannel
from intrinsic_memory import CallUsage as CallUsage
from intrinsic_memory import add_call_usage as add_call_usage
from intrinsic_memory import add_usage as add_usage  # usage summed per role and call kind
from intrinsic_memory import zero_usage as zero_usage
from langgraph.channels.delta import DeltaChannel
from langgraph.errors import EmptyChannelError

# typing_extensions: pydantic (LangGraph server schemas) rejects typing.TypedDict on 3.11.
from typing_extensions import TypedDict

MEMORY_KEY = "intrinsic_memory"  # where the library's memory step keeps each agent's memory
RunStatus = Literal["running", "finalized", "turn_cap", "failed"]

# Snapshots bound replay time on resume; a high cadence keeps them from dominating storage.
_SNAPSHOT_EVERY = 5000


class ContextShare(TypedDict):
    """How an agent's prompt used its token budget (Algorithm 1 made visible)."""

    budget: int
    task: int  # the task description
    role: int  # the role description and roster
    instruction: int  # the turn's frame and phase instruction
    memory: int  # the agent's own memory
    history: int  # the recent turns that fit
    history_turns: list[int]  # first and last turn index kept ([] when none fit)


class Turn(TypedDict):
    index: int  # 1-based position in the conversation
    speaker: str
    phase: str
    round: NotRequired[int]  # round within the phase
    content: str
    flags: list[str]  # parsed markers: ACCEPT, REJECT, FINALIZE
    tokens: int  # tiktoken count of the turn as rendered in a context, computed once
    usage: CallUsage
    context: NotRequired[ContextShare]  # the prompt that produced it (absent: HUMAN turns)


class MemorySlot(AgentMemory):
    """An agent's memory in the meeting: the library's `AgentMemory` (text, version, the
    latest own turn processed), with the kind of its template and its long-term lessons."""

    kind: str  # generic | manual | llm: where its template (state["templates"]) came from
    lessons: NotRequired[str]  # long-term lessons the agent started with (never rewritten)


class MemoryRepairs(TypedDict):
    """What an update's answer needed before it could be stored (see the library: intrinsic_memory/memory.py)."""

    carried_sections: int  # kept from the previous version: the answer was cut off
    shortened_notes: int
    dropped_notes: int
    malformed_edits: int
    merged_notes: NotRequired[int]  # new notes that restated a note already held
    foreign_script: NotRequired[int]  # notes cleaned of (or refused for) another script
    repeated_words: NotRequired[int]  # notes cut where they repeated themselves, or refused
    copied_prompt: NotRequired[int]  # notes refused: copied from the role, not the turn
    unusable: int  # 1: nothing of the answer was usable, the memory stayed as it was


class MemoryVersion(TypedDict):
    """One entry of the append-only log of every memory version (version 0: the start)."""

    role: str
    version: int
    turn: int  # the agent's own turn that caused it (0: starting memory)
    text: str
    template: str
    usage: NotRequired[CallUsage]  # the update's model call (absent for version 0)
    mode: NotRequired[str]  # rewrite | edit
    cut_off: NotRequired[bool]  # the backend stopped at its output cap
    repairs: NotRequired[MemoryRepairs]


class FinalOutput(TypedDict):
    """The final design: design.md (`markdown`) renders design.json (`spec`, the design as
    one structure: `ima.meeting.design.document.Design`)."""

    markdown: str
    spec: dict[str, Any] | None
    missing: NotRequired[list[str]]  # parts of the design that could not be filled


def append_items(current: list[Any], batches: Sequence[list[Any]]) -> list[Any]:
    """Append-only, batching-invariant (as DeltaChannel requires)."""
    out = list(current)
    for batch in batches:
        out.extend(batch)
    return out


def by_role(current: dict[str, Any], batches: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Values kept per role (templates): each write replaces only the roles it names, as the
    library's `MemoryChannel` merges memories."""
    out = dict(current)
    for batch in batches:
        out.update(batch)
    return out


def last_write(current: Any, batches: Sequence[Any]) -> Any:
    """Write-once values (the brief): the latest write wins."""
    return batches[-1] if batches else current


def sum_usage(
    current: dict[str, dict[str, CallUsage]], batches: Sequence[dict[str, dict[str, CallUsage]]]
) -> dict[str, dict[str, CallUsage]]:
    out = current
    for batch in batches:
        out = add_usage(out, batch)
    return out


class _Before(DeltaChannel):
    """The channel of `memories`, where threads begun before the meeting kept its memory under
    the library's key (`intrinsic_memory`) kept it: LangGraph rebuilds it from their
    checkpoints, so they load and resume. Nothing writes it now; empty, as in every newer
    thread, it is left out of the state."""

    def get(self) -> Any:
        value = super().get()
        if not value:
            raise EmptyChannelError()
        return value

    def is_available(self) -> bool:
        return super().is_available() and bool(self.value)


def memory_slots(values: Mapping[str, Any]) -> dict[str, MemorySlot]:
    """Each agent's memory in a meeting's state, by role: `intrinsic_memory`, over what a
    thread begun before that key held under `memories` (resumed, its agents' newer
    memories are under the new key)."""
    return {**(values.get("memories") or {}), **(values.get(MEMORY_KEY) or {})}


class InputState(TypedDict):
    """What a caller provides to start a run: nothing is required."""

    # replaces the task's description for this run; a DeltaChannel like every value that is
    # written once or summed, so checkpoints do not repeat it at every step
    brief: NotRequired[Annotated[str, DeltaChannel(last_write, snapshot_frequency=_SNAPSHOT_EVERY)]]


class State(InputState):
    task_id: str
    transcript: Annotated[
        list[Turn], DeltaChannel(append_items, snapshot_frequency=_SNAPSHOT_EVERY)
    ]
    intrinsic_memory: MemoryChannel  # each agent's MemorySlot, by role (`memory_slots`)
    memories: NotRequired[  # threads begun before the rename: their memories then (read only)
        Annotated[dict[str, MemorySlot], _Before(by_role, snapshot_frequency=_SNAPSHOT_EVERY)]
    ]
    memory_log: Annotated[
        list[MemoryVersion], DeltaChannel(append_items, snapshot_frequency=_SNAPSHOT_EVERY)
    ]
    templates: Annotated[  # memory template text per role; each writer writes its own role's
        dict[str, str], DeltaChannel(by_role, snapshot_frequency=_SNAPSHOT_EVERY)
    ]
    phase: str
    phase_round: int  # 1-based round within the current phase
    position: int  # index into the round's speaking order of the last speaker
    next_speaker: str
    votes: dict[str, str]  # role -> ACCEPT | REJECT in the current consensus round
    consensus: bool
    finalize_asks: int  # times the facilitator was asked to FINALIZE after consensus
    handoff: str  # how documentation started: finalize | fallback | turn_cap ("" before)
    status: RunStatus
    usage: Annotated[
        dict[str, dict[str, CallUsage]], DeltaChannel(sum_usage, snapshot_frequency=_SNAPSHOT_EVERY)
    ]
    final: FinalOutput
    routed_turn: int  # the latest turn the router has scheduled
    memory_concurrency: int  # 1: memory formed before the next turn; 2: beside it
    long_term: dict[str, Any]  # long-term memory: what the run started with, what it learned
