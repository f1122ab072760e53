"""Where an agent's memory lives in a graph's state: one key, `intrinsic_memory`, holding
each agent's memory under its name; its reducer merges by agent, so two agents (parallel
subagents, a writer and a critic in one step) never overwrite each other's memory.

What memory updates cost can be kept beside it, under a key of your choosing (`usage_key=`),
as a `UsageChannel`: summed per agent and kind of call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, NotRequired

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from typing_extensions import TypedDict

from intrinsic_memory.models import CallUsage, add_call_usage

MEMORY_KEY = "intrinsic_memory"


class AgentMemory(TypedDict):
    """One agent's memory in the graph state.

    `text` is its Markdown; `version` counts the updates that changed it (an empty or
    unusable answer keeps the version); `turn` is the agent's latest own turn its memory
    step has processed; `pending` is its latest own output, waiting for that step;
    `template` is the Markdown of the template it keeps, when not the manager's own."""

    text: str
    version: int
    turn: NotRequired[int]
    pending: NotRequired[str]
    template: NotRequired[str]


def merge_memories(
    current: Mapping[str, AgentMemory] | None, update: Mapping[str, AgentMemory] | None
) -> dict[str, AgentMemory]:
    """Reducer: each update replaces only the agents it names."""
    return {**(current or {}), **(update or {})}


MemoryChannel = Annotated[dict[str, AgentMemory], merge_memories]
MemoryChannel.__doc__ = """The type of a graph state's `intrinsic_memory` key: each agent's
`AgentMemory` under its name, merged by agent (`intrinsic_memory: MemoryChannel`)."""


def add_usage(
    current: Mapping[str, Mapping[str, CallUsage]] | None,
    update: Mapping[str, Mapping[str, CallUsage]] | None,
) -> dict[str, dict[str, CallUsage]]:
    """Reducer: usage summed per agent and kind of call (`{agent: {"memory_update": usage}}`,
    as `usage_key=` writes it); tokens, calls and seconds add up."""
    out = {agent: dict(kinds) for agent, kinds in (current or {}).items()}
    for agent, kinds in (update or {}).items():
        for kind, usage in kinds.items():
            before = out.setdefault(agent, {}).get(kind)
            out[agent][kind] = usage if before is None else add_call_usage(before, usage)
    return out


UsageChannel = Annotated[dict[str, dict[str, CallUsage]], add_usage]
UsageChannel.__doc__ = """The type of a graph state's usage key (`usage_key=` of
`add_intrinsic_memory` and `memory_node`): each agent's `CallUsage` per kind of call, summed
(`usage: UsageChannel`)."""


def memory_of(state: Mapping[str, Any], agent: str, key: str = MEMORY_KEY) -> AgentMemory | None:
    """`agent`'s memory in `state`, if it has one yet."""
    memories = state.get(key) or {}
    return memories.get(agent) if isinstance(memories, Mapping) else None


def own_output(messages: list[BaseMessage]) -> str:
    """What the agent said in its latest turn: the text of its messages after the last
    human message (its answer, and any text beside its tool calls)."""
    start = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    texts = [m.text for m in messages[start + 1 :] if isinstance(m, AIMessage) and m.text]
    return "\n\n".join(texts).strip()
