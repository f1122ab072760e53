"""Intrinsic memory for an agent node of a hand-built `StateGraph`, in one call:

    builder.add_node("writer", writer)
    builder.add_edge("writer", "critic")
    add_intrinsic_memory(builder, "writer", memory, budget=2048)

The node then reads the budgeted context (task, its memory, the newest messages that fit)
in place of the whole `messages`; what it returns still goes to the real transcript. A new
node, `writer_memory`, follows it and updates the agent's memory from what the node itself
returned (never from another agent's message); the node's edges now leave from
`writer_memory`, so the rest of the graph is unchanged. Call it after the node's edges are
added, before `compile`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Annotated, Any, get_type_hints

from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import StateGraph
from langgraph.types import Command
from typing_extensions import TypedDict

from ima.blocks.state import MEMORY_KEY, AgentMemory, MemoryChannel, memory_of, next_version
from ima.core.state import add_usage
from ima.method.context import TokenCounter, count_message_tokens, fit_context
from ima.method.memory_update import IntrinsicMemory, MemoryUpdate

# The agent's own latest output, as its node returned it, waiting for its memory node.
OUTPUT_KEY = "intrinsic_memory_output"
Output = Callable[[Any], str]
# The memory manager, or a function of the graph state that gives it.
MemorySource = IntrinsicMemory | Callable[[Mapping[str, Any]], IntrinsicMemory]


def _merge_outputs(current: dict[str, str] | None, update: dict[str, str] | None) -> dict:
    return {**(current or {}), **(update or {})}


def _returned_messages(messages_key: str) -> Output:
    """The text of the messages a node returned under `messages_key`."""

    def output(update: Any) -> str:
        if isinstance(update, Command):
            update = update.update
        if not isinstance(update, Mapping):
            return ""
        returned = update.get(messages_key) or []
        returned = returned if isinstance(returned, list) else [returned]
        return "\n\n".join(getattr(m, "text", str(m)) for m in returned).strip()

    return output


def _hints(builder: StateGraph) -> dict[str, Any]:
    return get_type_hints(builder.state_schema, include_extras=True)


def _schema_with_memory(builder: StateGraph, usage_key: str | None) -> type:
    """The builder's state schema plus the memory keys (their channels get registered)."""
    hints = _hints(builder)
    keys = {MEMORY_KEY: MemoryChannel, OUTPUT_KEY: Annotated[dict[str, str], _merge_outputs]}
    if usage_key:
        keys[usage_key] = Annotated[dict[str, dict[str, Any]], add_usage]
    missing = {k: v for k, v in keys.items() if k not in hints}
    if not missing:
        return builder.state_schema
    return TypedDict(  # type: ignore[operator]
        f"{builder.state_schema.__name__}WithMemory", {**hints, **missing}, total=False
    )


def _add_to_output(builder: StateGraph, schema: type) -> None:
    """The graph's result carries every agent's memory (and the usage key), like its other
    state keys, unless the graph declares its own output schema."""
    ours = f"{builder.state_schema.__name__}Output"
    if builder.output_schema is not builder.state_schema and builder.output_schema.__name__ != ours:
        return
    hints = get_type_hints(builder.output_schema, include_extras=True)
    added = {k: v for k, v in get_type_hints(schema, include_extras=True).items() if k not in hints}
    added.pop(OUTPUT_KEY, None)  # the pending output is internal
    if added:
        output = TypedDict(ours, {**hints, **added}, total=False)  # type: ignore[operator]
        builder._add_schema(output, allow_managed=False)
        builder.output_schema = output


def _pairs(update: Any) -> list[tuple[str, Any]]:
    if isinstance(update, Mapping):
        return list(update.items())
    return list(update or [])


def add_intrinsic_memory(
    builder: StateGraph,
    node: str,
    memory: MemorySource,
    *,
    budget: int,
    agent: str | None = None,
    task: str | None = None,
    role: str = "",
    messages_key: str = "messages",
    output: Output | None = None,
    token_counter: TokenCounter = count_message_tokens,
    usage_key: str | None = None,
) -> str:
    """Give the agent node `node` of `builder` intrinsic memory; returns the memory node's name.

    Args:
        builder: the uncompiled graph; its state has a list of messages at `messages_key`.
        node: the agent node: it reads `state[messages_key]` and adds its answer there.
        memory: the `IntrinsicMemory` that updates this agent's memory, or a function of
            the graph state that returns it (for a template written during the run).
        budget: the most tokens of the messages the node sees.
        agent: the agent's name in `intrinsic_memory` (default: the node's name).
        task: the task description; None takes the conversation's first message.
        role: the agent's role, shown to the memory update.
        messages_key: the state key of the conversation.
        output: reads the agent's own output from what its node returned (default: the
            text of the messages it returned under `messages_key`), e.g.
            `lambda update: update["draft"]` for a node that writes a draft.
        token_counter: counts a list of messages (default: tiktoken estimate).
        usage_key: a state key where each update's usage (`CallUsage`) is summed as
            `{agent: {"memory_update": usage}}` (added to the state if missing); None
            records nothing.

    Raises ValueError if the node does not exist, routes with `Command(goto=...)` (the
    memory step would be skipped), or has no outgoing edge yet.
    """
    if builder.compiled:
        raise ValueError("add intrinsic memory before compiling the graph")
    if node not in builder.nodes:
        raise ValueError(f"no node {node!r} in the graph: add it first")
    spec = builder.nodes[node]
    if spec.ends:
        raise ValueError(
            f"node {node!r} routes with Command(goto=...), which would skip its memory "
            "update: route it with edges instead"
        )
    outgoing = {e for e in builder.edges if e[0] == node} or builder.branches.get(node)
    waiting = any(node in starts for starts, _ in builder.waiting_edges)
    if not outgoing and not waiting:
        raise ValueError(f"node {node!r} has no outgoing edge yet: add its edges first")

    name = agent or node
    memory_node = f"{node}_memory"
    schema = _schema_with_memory(builder, usage_key)
    agent_node = spec.runnable
    read_output = output or _returned_messages(messages_key)

    def fitted(state: Mapping[str, Any]) -> dict[str, Any]:
        record = memory_of(state, name)
        messages = fit_context(
            state.get(messages_key) or [],
            record["text"] if record else "",
            budget=budget,
            task=task,
            token_counter=token_counter,
        )
        return {**state, messages_key: messages}

    def remembered(update: Any) -> Any:
        """The node's update, plus its output for the memory node (beside, not in, it)."""
        mark = {OUTPUT_KEY: {name: read_output(update)}}
        if isinstance(update, Command):
            return Command(update=[*_pairs(update.update), *mark.items()], graph=update.graph)
        return {**(update or {}), **mark}

    def with_context(state: Mapping[str, Any], config: RunnableConfig) -> Any:
        return remembered(agent_node.invoke(fitted(state), config))

    async def awith_context(state: Mapping[str, Any], config: RunnableConfig) -> Any:
        return remembered(await agent_node.ainvoke(fitted(state), config))

    def pending(state: Mapping[str, Any]) -> tuple[AgentMemory | None, str]:
        return memory_of(state, name), (state.get(OUTPUT_KEY) or {}).get(name, "")

    def manager(state: Mapping[str, Any]) -> IntrinsicMemory:
        return memory if isinstance(memory, IntrinsicMemory) else memory(state)

    def stored(record: AgentMemory | None, result: MemoryUpdate) -> dict[str, Any]:
        out = {MEMORY_KEY: {name: next_version(record, result.text)}, OUTPUT_KEY: {name: ""}}
        if usage_key:
            out[usage_key] = {name: {"memory_update": result.usage}}
        return out

    def update(state: Mapping[str, Any]) -> dict[str, Any]:
        record, text = pending(state)
        if not text:
            return {}
        result = manager(state).update(
            record["text"] if record else "", text, role=role, metadata={"ima_role": name}
        )
        return stored(record, result)

    async def aupdate(state: Mapping[str, Any]) -> dict[str, Any]:
        record, text = pending(state)
        if not text:
            return {}
        result = await manager(state).aupdate(
            record["text"] if record else "", text, role=role, metadata={"ima_role": name}
        )
        return stored(record, result)

    builder.add_node(memory_node, RunnableLambda(update, afunc=aupdate), input_schema=schema)
    _add_to_output(builder, schema)
    builder.nodes[node] = replace(
        spec,
        runnable=RunnableLambda(with_context, afunc=awith_context, name=node),
        input_schema=schema,
    )
    # The node's edges now leave from its memory update.
    builder.edges = {(memory_node if a == node else a, b) for a, b in builder.edges}
    builder.waiting_edges = {
        (tuple(memory_node if s == node else s for s in starts), end)
        for starts, end in builder.waiting_edges
    }
    if node in builder.branches:
        builder.branches[memory_node] = builder.branches.pop(node)
    builder.add_edge(node, memory_node)
    return memory_node
