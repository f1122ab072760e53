"""The memory step after an agent's turn, and intrinsic memory for an agent node of your own
`StateGraph`, built with the graph's public API only.

    after_writer = add_intrinsic_memory(builder, "writer", writer, memory, token_budget=2048)
    builder.add_edge(after_writer, "critic")

adds two nodes: `writer`, which runs your function on the budgeted view of the
conversation (task, its own memory, the newest messages that fit), and `writer_memory`,
which updates the agent's memory from what `writer` itself returned. Route on from the
name it returns. The graph's state needs an `intrinsic_memory` key (`MemoryChannel`).

`memory_step` is that step as a function (the update for the state, and what the model
call gave), for graphs that keep their transcript in another shape; `memory_node` makes a
node of it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, NotRequired, Required, get_args, get_origin, get_type_hints

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.graph import StateGraph
from langgraph.runtime import get_runtime
from langgraph.types import Command

from intrinsic_memory.context import check_budget, fit_context, is_view_message
from intrinsic_memory.manager import IntrinsicMemory, MemoryUpdate
from intrinsic_memory.state import MEMORY_KEY, AgentMemory, memory_of
from intrinsic_memory.tokens import TokenCounter, count_message_tokens

Output = Callable[[Mapping[str, Any]], str]


def _seen(record: AgentMemory | None, turn: int | None) -> AgentMemory:
    """The record once the agent's latest output is processed: no output pending, the turn
    noted; every other field (your own too) kept."""
    seen = AgentMemory(**{k: v for k, v in (record or {}).items() if k != "pending"})  # type: ignore[typeddict-item]
    seen.setdefault("text", "")
    seen.setdefault("version", 0)
    if turn is not None:
        seen["turn"] = turn
    return seen


def _stored(record: AgentMemory | None, result: MemoryUpdate, turn: int | None) -> AgentMemory:
    """The agent's next record: a new version only when the memory changed."""
    new = _seen(record, turn)
    if result.changed:
        new["text"], new["version"] = result.text, new["version"] + 1
    return new


class _Step:
    """One memory step's inputs, read from the state."""

    def __init__(
        self,
        memory: IntrinsicMemory,
        state: Mapping[str, Any],
        agent: str,
        output: str | None,
        turn: int | None,
        key: str,
    ) -> None:
        self.record = memory_of(state, agent, key)
        self.text = (self.record or {}).get("pending", "") if output is None else output
        self.turn, self.key, self.agent = turn, key, agent
        template = (self.record or {}).get("template")
        self.memory = memory.with_template(template) if template else memory

    def skipped(self) -> dict[str, Any] | None:
        """The update when the output gives the memory nothing to keep (empty, or no news to
        it: `IntrinsicMemory.is_news`); None otherwise."""
        current = (self.record or {}).get("text", "")
        if self.memory.is_news(current, self.text):
            return None
        if self.record is None:
            return {}
        seen = _seen(self.record, self.turn)
        return {self.key: {self.agent: seen}} if seen != self.record else {}

    def stored(self, result: MemoryUpdate, usage_key: str | None) -> dict[str, Any]:
        update: dict[str, Any] = {self.key: {self.agent: _stored(self.record, result, self.turn)}}
        if usage_key:
            update[usage_key] = {self.agent: {"memory_update": result.usage}}
        return update

    def arguments(self, role: str, system: str | None, metadata: dict[str, Any] | None) -> dict:
        return {
            "role": role,
            "turn": self.turn,
            "system": system,
            "metadata": {"agent": self.agent, **(metadata or {})},
        }


def memory_step(
    memory: IntrinsicMemory,
    state: Mapping[str, Any],
    *,
    agent: str,
    output: str | None = None,
    turn: int | None = None,
    role: str = "",
    system: str | None = None,
    key: str = MEMORY_KEY,
    usage_key: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], MemoryUpdate | None]:
    """The memory step after `agent`'s turn: its memory's next version from its own output.

    Args:
        memory: the manager (its template yields to a `template` in the agent's record).
        state: the graph state; the agent's `AgentMemory` is `state[key][agent]`.
        agent: whose memory: the only record the update writes.
        output: the agent's own latest output; None takes the `pending` output its node
            recorded. Empty (nothing to keep, e.g. a bare vote) or no news to the memory
            (`IntrinsicMemory.is_news`): no model call.
        turn: the number of that turn, shown in the prompt and kept as the record's `turn`.
        role, system: the agent's role and shared opening text (`IntrinsicMemory.update`).
        key: the state key of the memories.
        usage_key: a state key (a `UsageChannel`) where the call's usage is summed as
            `{agent: {"memory_update": usage}}`; None records nothing.
        metadata: labels for tracing, beside `{"agent": agent}`.

    Returns the state update (the agent's record only: no other memory can change,
    whatever the model writes) and the update's result (None when there was no call).
    """
    step = _Step(memory, state, agent, output, turn, key)
    if (update := step.skipped()) is not None:
        return update, None
    text = step.record["text"] if step.record else ""
    result = step.memory.update(text, step.text, **step.arguments(role, system, metadata))
    return step.stored(result, usage_key), result


async def amemory_step(
    memory: IntrinsicMemory,
    state: Mapping[str, Any],
    *,
    agent: str,
    output: str | None = None,
    turn: int | None = None,
    role: str = "",
    system: str | None = None,
    key: str = MEMORY_KEY,
    usage_key: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], MemoryUpdate | None]:
    """`memory_step` for async callers: the same arguments, the same `(state update,
    MemoryUpdate | None)`, the model called with `ainvoke`."""
    step = _Step(memory, state, agent, output, turn, key)
    if (update := step.skipped()) is not None:
        return update, None
    text = step.record["text"] if step.record else ""
    result = await step.memory.aupdate(text, step.text, **step.arguments(role, system, metadata))
    return step.stored(result, usage_key), result


def memory_node(
    memory: IntrinsicMemory,
    *,
    agent: str,
    role: str = "",
    output: Output | None = None,
    key: str = MEMORY_KEY,
    usage_key: str | None = None,
) -> Runnable:
    """A graph node that runs `memory_step` for `agent` (sync and async).

    `output(state)` gives the agent's own latest output; by default the `pending` output
    its node recorded (what `add_intrinsic_memory`'s agent node does).
    """
    if not isinstance(memory, IntrinsicMemory):
        raise TypeError(f"memory must be an IntrinsicMemory, not {type(memory).__name__}")

    def options(state: Mapping[str, Any]) -> dict[str, Any]:
        given = output(state) if output else None
        return {"agent": agent, "output": given, "role": role, "key": key, "usage_key": usage_key}

    def update(state: Mapping[str, Any]) -> dict[str, Any]:
        return memory_step(memory, state, **options(state))[0]

    async def aupdate(state: Mapping[str, Any]) -> dict[str, Any]:
        return (await amemory_step(memory, state, **options(state)))[0]

    return RunnableLambda(update, afunc=aupdate, name=f"{agent}_memory")


# ------------------------------------------------------------------ add_intrinsic_memory


def _hints(builder: StateGraph) -> dict[str, Any]:
    return get_type_hints(builder.state_schema, include_extras=True)


def _has_reducer(hint: Any) -> bool:
    """Whether a state key's values are merged (a reducer or channel), not replaced."""
    while get_origin(hint) in (NotRequired, Required):
        hint = get_args(hint)[0]
    return get_origin(hint) is Annotated


def _same(message: BaseMessage, shown: Sequence[BaseMessage]) -> bool:
    return any(
        message is s or (message.id is not None and message.id == s.id) or message == s
        for s in shown
    )


def _calls(node: Any) -> tuple[Callable[..., Any] | None, Callable[..., Any] | None]:
    """Sync and async callables of the user's node: `fn(state, config)`."""
    if isinstance(node, Runnable):
        return (lambda s, c: node.invoke(s, c)), (lambda s, c: node.ainvoke(s, c))
    if not callable(node):
        raise TypeError(
            f"the agent node must be a function or a Runnable, not {type(node).__name__}"
        )
    params = inspect.signature(node).parameters

    def kwargs(config: RunnableConfig) -> dict[str, Any]:
        given: dict[str, Any] = {}
        if "config" in params:
            given["config"] = config
        if {"runtime", "store", "writer"} & set(params):
            runtime = get_runtime()
            given |= {"runtime": runtime, "store": runtime.store, "writer": runtime.stream_writer}
            given = {k: v for k, v in given.items() if k in params}
        return given

    if inspect.iscoroutinefunction(node):
        return None, lambda s, c: node(s, **kwargs(c))
    return (lambda s, c: node(s, **kwargs(c))), None


def add_intrinsic_memory(
    builder: StateGraph,
    name: str,
    node: Callable[..., Any] | Runnable,
    memory: IntrinsicMemory,
    *,
    token_budget: int,
    agent: str | None = None,
    task: str | None = None,
    role: str = "",
    messages_key: str = "messages",
    output: Callable[[Any], str] | None = None,
    token_counter: TokenCounter = count_message_tokens,
    usage_key: str | None = None,
) -> str:
    """Add the agent node `name` with intrinsic memory to `builder`; returns the name of
    its memory step (`name + "_memory"`), from which to route on.

    Args:
        builder: the uncompiled graph; its state has a list of messages at `messages_key`
            and an `intrinsic_memory` key (`MemoryChannel`, or subclass
            `IntrinsicMemoryState`).
        name: the agent node's name.
        node: the agent: a function of the state (it may take `config`, `runtime`,
            `store` or `writer` too) or a Runnable (a `create_agent` agent, a subgraph).
            It reads `state[messages_key]`, which holds the budgeted view, and returns its
            answer as usual.
        memory: the `IntrinsicMemory` that updates this agent's memory.
        token_budget: the most tokens of the view: an int; refused (ValueError) if it
            cannot hold the task, the memory and the newest message.
        agent: the agent's key in `intrinsic_memory` (default: `name`).
        task: the task description; None takes the conversation's first human message.
        role: the agent's role, shown to the memory update.
        messages_key: the state key of the conversation.
        output: reads the agent's own output from what its node returned (default: the
            text of the new messages it returned under `messages_key`).
        token_counter: counts a list of messages (default: tiktoken estimate).
        usage_key: a state key (a `UsageChannel`) where each update's usage is summed as
            `{agent: {"memory_update": usage}}`; None records nothing.

    Whatever the node returns, the view never becomes state: messages it returns that it
    was shown (the whole view plus its answer, say) are not written again, and the task
    and memory messages made for the view are dropped. A node that routes with
    `Command(goto=...)` still has its memory step: it runs beside the node it goes to.
    """
    if not isinstance(builder, StateGraph):
        raise TypeError(f"builder must be an uncompiled StateGraph, not {type(builder).__name__}")
    if not isinstance(memory, IntrinsicMemory):
        raise TypeError(f"memory must be an IntrinsicMemory, not {type(memory).__name__}")
    hints = _hints(builder)
    keys = ", ".join(hints)
    for needed, fix in (
        (
            MEMORY_KEY,
            "add `intrinsic_memory: MemoryChannel` to it (or subclass IntrinsicMemoryState)",
        ),
        (messages_key, f"give the key of its messages as messages_key= (keys: {keys})"),
        (
            usage_key,
            f"add `{usage_key}: UsageChannel` to it, or give usage_key=None (keys: {keys})",
        ),
    ):
        if needed is not None and needed not in hints:
            raise ValueError(f"the graph's state has no {needed!r} key: {fix}")
    if usage_key is not None and not _has_reducer(hints[usage_key]):
        raise ValueError(
            f"the graph's state key {usage_key!r} keeps only the latest update, so usage "
            f"would not be summed: declare it `{usage_key}: UsageChannel`"
        )
    check_budget(token_budget, memory.memory_tokens, task)
    key = agent or name
    merged = _has_reducer(hints[messages_key])
    sync_call, async_call = _calls(node)

    def view(state: Mapping[str, Any]) -> dict[str, Any]:
        record = memory_of(state, key)
        shown = fit_context(
            state.get(messages_key) or [],
            record["text"] if record else "",
            token_budget=token_budget,
            task=task,
            token_counter=token_counter,
        )
        return {**state, messages_key: shown}

    def recorded(state: Mapping[str, Any], shown: Mapping[str, Any], update: Any) -> Any:
        """The node's update with the view taken out and the agent's output pending."""
        command = update if isinstance(update, Command) else None
        values = dict((command.update if command else update) or {})
        returned = values.get(messages_key)
        returned = list(returned) if isinstance(returned, list) else [returned] if returned else []
        new = [m for m in returned if not is_view_message(m) and not _same(m, shown[messages_key])]
        if messages_key in values:
            if merged or len(new) == len(returned):
                values[messages_key] = new
            else:  # a node that returned the view with its answer, into a replaced key
                values[messages_key] = [*(state.get(messages_key) or []), *new]
        text = output(update) if output else "\n\n".join(m.text for m in new).strip()
        record = memory_of(state, key) or AgentMemory(text="", version=0)
        values[MEMORY_KEY] = {**values.get(MEMORY_KEY, {}), key: {**record, "pending": text}}
        if command:
            return Command(update=values, goto=command.goto, graph=command.graph)
        return values

    def run(state: Mapping[str, Any], config: RunnableConfig) -> Any:
        shown = view(state)
        if sync_call is None:
            raise TypeError(f"agent node {name!r} is async: run the graph with ainvoke/astream")
        return recorded(state, shown, sync_call(shown, config))

    async def arun(state: Mapping[str, Any], config: RunnableConfig) -> Any:
        shown = view(state)
        if async_call is None:
            return recorded(state, shown, sync_call(shown, config))  # type: ignore[misc]
        return recorded(state, shown, await async_call(shown, config))

    memory_name = f"{name}_memory"
    builder.add_node(name, RunnableLambda(run, afunc=arun, name=name))
    builder.add_node(memory_name, memory_node(memory, agent=key, role=role, usage_key=usage_key))
    builder.add_edge(name, memory_name)
    return memory_name
