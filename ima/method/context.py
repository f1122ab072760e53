"""f_context, the paper's Algorithm 1, for any list of LangChain messages: the task and the
agent's memory always, then the newest whole messages that fit the remaining token budget,
kept in chronological order. Memory beats old history.

`fit_context` is what one agent's model should see; the saved conversation is not changed.
Our meeting builds its turn prompts on the same selection (`newest_that_fit`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ima import prompts
from ima.core.tokens import count_tokens
from ima.method.memory import Memory

TokenCounter = Callable[[Sequence[BaseMessage]], int]
# Tokens a chat template adds around each message (role markers, separators).
MESSAGE_OVERHEAD = 4


def count_message_tokens(messages: Sequence[BaseMessage]) -> int:
    """Tokens of `messages` as a model sees them, estimated offline with tiktoken (cl100k)
    plus a few per message for the chat template; tool calls count by their arguments."""
    total = 0
    for message in messages:
        total += count_tokens(message.text) + MESSAGE_OVERHEAD
        for call in getattr(message, "tool_calls", None) or ():
            total += count_tokens(f"{call['name']}{call['args']}")
    return total


def newest_that_fit(sizes_newest_first: Iterable[int], room: int) -> int:
    """How many of the newest items fit in `room`, taken newest first and whole (the
    selection of Algorithm 1). Sizes are read lazily: only the items that fit, and the
    first that does not, are ever counted, however long the history."""
    used = kept = 0
    for size in sizes_newest_first:
        if used + size > room:
            break
        used += size
        kept += 1
    return kept


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


def memory_message(memory: str | Memory) -> HumanMessage:
    """The agent's own memory as the message its model reads."""
    text = memory.render() if isinstance(memory, Memory) else memory
    return HumanMessage(prompts.render("memory_section", memory=text.strip() or "(empty)"))


def fit_context(
    messages: Sequence[BaseMessage],
    memory: str | Memory,
    *,
    budget: int,
    task: str | BaseMessage | None = None,
    token_counter: TokenCounter = count_message_tokens,
) -> list[BaseMessage]:
    """The messages one agent's model should see, within `budget` tokens.

    Args:
        messages: the conversation so far (leading system messages are kept as they are).
        memory: the agent's own memory (`Memory` or its Markdown).
        budget: the most tokens of the whole context.
        task: the task description; None takes the conversation's first non-system message
            (the paper's "first message").
        token_counter: counts a list of messages; replace it with your model's own, e.g.
            `model.get_num_tokens_from_messages`.

    Returns system messages, the task, the memory (a human message "Your own notes from
    earlier turns: ..."), then the newest whole messages that fit what is left, oldest
    first. Task and memory are always kept, even over the budget: the budget limits the
    history. A tool call and its results are kept or dropped together.
    """
    rest = list(messages)
    system = []
    while rest and isinstance(rest[0], SystemMessage):
        system.append(rest.pop(0))
    if task is None:
        task_message = rest.pop(0) if rest else None
    else:
        task_message = HumanMessage(task) if isinstance(task, str) else task
    fixed = [*system, *([task_message] if task_message else []), memory_message(memory)]
    room = budget - token_counter(fixed)
    units = _units(rest)
    kept = newest_that_fit((token_counter(unit) for unit in reversed(units)), room)
    while kept and isinstance(units[len(units) - kept][0], ToolMessage):
        kept -= 1  # a result whose call was not kept cannot open the history
    return fixed + [m for unit in units[len(units) - kept :] for m in unit]
