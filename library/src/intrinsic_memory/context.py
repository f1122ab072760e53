"""f_context, the paper's Algorithm 1: the task and the agent's own memory always, then the
newest whole messages that fit the remaining token budget, kept in chronological order.
Memory beats old history.

`select_window` is the selection itself, for any sequence of items with a size (messages,
turns of a meeting); `fit_context` applies it to a list of LangChain messages. Two rules
make it safe: the newest message (or an AI message's tool calls with their results) is
always kept, and a budget that cannot hold the task, the memory and a message is refused
when the agent is built (`check_budget`), not discovered at run time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from intrinsic_memory import _prompts
from intrinsic_memory._checks import whole_number
from intrinsic_memory.memory import Memory
from intrinsic_memory.tokens import (
    MESSAGE_OVERHEAD,
    TokenCounter,
    count_message_tokens,
    count_tokens,
)

# Messages made for an agent's view (its task, its memory) carry ids with this prefix, so
# whatever a node returns, they never become part of the saved conversation.
VIEW_ID = "intrinsic-memory-view:"
# Room a budget must leave for the newest message beside the task and the memory.
MIN_MESSAGE_TOKENS = 64


def select_window(count: int, size: Callable[[int], int], room: int, *, block: int = 1) -> int:
    """Where the kept window of `count` items starts: the newest items whose sizes fit in
    `room`, taken newest first and whole (Algorithm 1). Sizes are read lazily: only the
    items that fit, and the first that does not, are ever measured.

    `block` > 1 makes the window's start a multiple of `block`: up to `block` - 1 more old
    items leave, and the start (hence the prompt prefix a cache can reuse) stays put for
    several items; never fewer than half of what fits are kept.
    """
    used, first = 0, count
    while first > 0:
        needed = size(first - 1)
        if used + needed > room:
            break
        used += needed
        first -= 1
    if block > 1 and first < count:
        aligned = -(-first // block) * block
        if count - aligned >= -(-(count - first) // 2):
            first = aligned
    return first


def render_memory(memory: str | Memory) -> str:
    """The agent's own memory as its prompt shows it ("Your own notes from earlier turns"),
    from its Markdown (`AgentMemory["text"]`); "(empty)" before its first update."""
    text = memory.render() if isinstance(memory, Memory) else memory
    return _prompts.render("memory_section", memory=text.strip() or "(empty)")


def minimum_budget(memory_tokens: int, task: str | None = None, system_tokens: int = 0) -> int:
    """The smallest context budget that holds the system prompt (`system_tokens`), the task
    (when given), a memory of `memory_tokens` and a short newest message."""
    frame = count_tokens(render_memory("")) + 3 * MESSAGE_OVERHEAD  # task, memory, message
    task_tokens = count_tokens(task) if task else 0
    return system_tokens + task_tokens + memory_tokens + frame + MIN_MESSAGE_TOKENS


def check_budget(
    token_budget: int, memory_tokens: int, task: str | None = None, system_tokens: int = 0
) -> None:
    """TypeError when `token_budget` is not an int; ValueError in one line, naming the
    minimum, when it cannot hold the system prompt (`system_tokens`), the task, the memory
    and the newest message."""
    whole_number("token_budget", token_budget)
    least = minimum_budget(memory_tokens, task, system_tokens)
    if token_budget < least:
        system = f"the system prompt ({system_tokens} tokens), " if system_tokens else ""
        held = "the task, " if task else ""
        raise ValueError(
            f"token_budget={token_budget!r} cannot hold {system}{held}the memory "
            f"({memory_tokens} tokens) and the newest message: give token_budget={least} or more"
        )


def _units(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """Messages in the groups that must stay together: an AI message that calls tools and
    the tool results answering it (a provider refuses a result without its call)."""
    units: list[list[BaseMessage]] = []
    for message in messages:
        if isinstance(message, ToolMessage) and units and _calls_tools(units[-1][0]):
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _calls_tools(message: BaseMessage) -> bool:
    return isinstance(message, AIMessage) and bool(message.tool_calls)


def is_view_message(message: BaseMessage) -> bool:
    """Whether `message` was made for an agent's view (its task or memory), not said."""
    return str(message.id or "").startswith(VIEW_ID)


def fit_context(
    messages: Sequence[BaseMessage],
    memory: str | Memory | None,
    *,
    token_budget: int,
    task: str | BaseMessage | None = None,
    token_counter: TokenCounter = count_message_tokens,
) -> list[BaseMessage]:
    """The messages one agent's model should see, within `token_budget` tokens.

    Args:
        messages: the conversation so far (leading system messages are kept as they are).
        memory: the agent's own memory (`Memory` or its Markdown); None shows no memory
            (a memoryless baseline with the same budget).
        token_budget: the most tokens of the whole context.
        task: the task description. None takes the conversation's first human message
            (the paper's "first message"), which then stays at the top.
        token_counter: counts a list of messages; replace it with your model's own, e.g.
            `model.get_num_tokens_from_messages`.

    Returns system messages, the task, the memory (a human message "Your own notes from
    earlier turns: ..."), then the newest whole messages that fit what is left, oldest
    first. The task, the memory and the newest message (a tool call with its results) are
    always kept, even over the budget: the budget limits the older history. The task and
    memory messages made here have ids starting with `VIEW_ID`. A budget that is not an int
    is a TypeError.
    """
    whole_number("token_budget", token_budget)
    rest = list(messages)
    system = []
    while rest and isinstance(rest[0], SystemMessage):
        system.append(rest.pop(0))
    fixed: list[BaseMessage] = list(system)
    if task is None:
        first = next((i for i, m in enumerate(rest) if isinstance(m, HumanMessage)), None)
        if first is not None:
            fixed.append(rest.pop(first))
    else:
        text = task if isinstance(task, str) else task.text
        fixed.append(HumanMessage(text, id=f"{VIEW_ID}task"))
        rest = [m for m in rest if m.text != text]  # shown once, at the top
    if memory is not None:
        fixed.append(HumanMessage(render_memory(memory), id=f"{VIEW_ID}memory"))
    units = _units(rest)
    room = token_budget - token_counter(fixed)
    first = select_window(len(units), lambda i: token_counter(units[i]), room)
    first = min(first, len(units) - 1) if units else 0  # the newest is always kept
    while first < len(units) - 1 and isinstance(units[first][0], ToolMessage):
        first += 1  # a result whose call was not kept cannot open the history
    return fixed + [m for unit in units[first:] for m in unit]
