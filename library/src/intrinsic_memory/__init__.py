"""Intrinsic Memory Agents (Yuen et al., 2025) for LangGraph and LangChain.

Every agent keeps its own structured memory, updated by an LLM call from that agent's own
output after each of its turns, and sees the task, its memory and as many recent messages
as a token budget allows (the paper's Algorithm 1); `Schedule` is the paper's Algorithm 2
for scheduled meetings.

    memory = IntrinsicMemory("ollama:qwen2.5:7b", memory_tokens=256)
    after_writer = add_intrinsic_memory(builder, "writer", writer, memory, token_budget=2048)

Beside these, the method's building blocks are public, for graphs that run its steps
themselves: the memory step (`memory_step`, `amemory_step`), the window and the budget
(`select_window`, `fit_window`, `check_budget`), the markers (`parse_flags`), the memory as a prompt shows
it (`render_memory`), accounted model calls (`invoke`, `json_model`) and token counting.
Every public name is in `__all__` and on docs/reference.md; the modules behind them are not
an interface.

Names load on first use, so `import intrinsic_memory` stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Each public name and the module that defines it. The first group is what most users
# need; the rest are the building blocks of the same method, for graphs that run the memory
# step, the window or the schedule themselves (the `ima` application is one).
_EXPORTS = {
    "IntrinsicMemory": "intrinsic_memory.manager",
    "write_template": "intrinsic_memory.manager",
    "MemoryTemplate": "intrinsic_memory.memory",
    "fit_context": "intrinsic_memory.context",
    "add_intrinsic_memory": "intrinsic_memory.nodes",
    "memory_node": "intrinsic_memory.nodes",
    "IntrinsicMemoryMiddleware": "intrinsic_memory.middleware",
    "subagent_tool": "intrinsic_memory.middleware",
    "AgentMemory": "intrinsic_memory.state",
    "IntrinsicMemoryState": "intrinsic_memory.middleware",
    "MemoryChannel": "intrinsic_memory.state",
    "UsageChannel": "intrinsic_memory.state",
    "add_usage": "intrinsic_memory.state",
    "Phase": "intrinsic_memory.schedule",
    "Schedule": "intrinsic_memory.schedule",
    # the memory: its defaults, its step after a turn, its record and how a prompt shows it
    "DEFAULT_MEMORY_TOKENS": "intrinsic_memory.manager",
    "MIN_MEMORY_TOKENS": "intrinsic_memory.manager",
    "UPDATE_MODES": "intrinsic_memory.manager",
    "update_prompts": "intrinsic_memory.manager",
    "memory_step": "intrinsic_memory.nodes",
    "amemory_step": "intrinsic_memory.nodes",
    "memory_of": "intrinsic_memory.state",
    "render_memory": "intrinsic_memory.context",
    # notes worth keeping: restated, in another script, copied from the prompt
    "restates": "intrinsic_memory.notes",
    "copies_prompt": "intrinsic_memory.notes",
    "scripts_of": "intrinsic_memory.notes",
    "strip_foreign": "intrinsic_memory.notes",
    # Algorithm 1: the window and the budget
    "select_window": "intrinsic_memory.context",
    "fit_window": "intrinsic_memory.context",
    "minimum_budget": "intrinsic_memory.context",
    "check_budget": "intrinsic_memory.context",
    # Algorithm 2's markers: votes and FINALIZE
    "DOCUMENTATION": "intrinsic_memory.schedule",
    "parse_vote": "intrinsic_memory.schedule",
    "parse_flags": "intrinsic_memory.schedule",
    "only_markers": "intrinsic_memory.schedule",
    # model calls as the memory makes them: JSON output, an output cap, usage accounted
    "CallUsage": "intrinsic_memory.models",
    "zero_usage": "intrinsic_memory.models",
    "add_call_usage": "intrinsic_memory.models",
    "Reply": "intrinsic_memory.models",
    "invoke": "intrinsic_memory.models",
    "ainvoke": "intrinsic_memory.models",
    "limit_output": "intrinsic_memory.models",
    "json_model": "intrinsic_memory.models",
    "answers_in_json": "intrinsic_memory.models",
    # token counting, offline
    "count_tokens": "intrinsic_memory.tokens",
    "count_message_tokens": "intrinsic_memory.tokens",
}

__all__ = [
    "DEFAULT_MEMORY_TOKENS",
    "DOCUMENTATION",
    "MIN_MEMORY_TOKENS",
    "UPDATE_MODES",
    "AgentMemory",
    "CallUsage",
    "IntrinsicMemory",
    "IntrinsicMemoryMiddleware",
    "IntrinsicMemoryState",
    "MemoryChannel",
    "MemoryTemplate",
    "Phase",
    "Reply",
    "Schedule",
    "UsageChannel",
    "add_call_usage",
    "add_intrinsic_memory",
    "add_usage",
    "ainvoke",
    "amemory_step",
    "answers_in_json",
    "check_budget",
    "copies_prompt",
    "count_message_tokens",
    "count_tokens",
    "fit_context",
    "fit_window",
    "invoke",
    "json_model",
    "limit_output",
    "memory_node",
    "memory_of",
    "memory_step",
    "minimum_budget",
    "only_markers",
    "parse_flags",
    "parse_vote",
    "render_memory",
    "restates",
    "scripts_of",
    "select_window",
    "strip_foreign",
    "subagent_tool",
    "update_prompts",
    "write_template",
    "zero_usage",
]

if TYPE_CHECKING:
    from intrinsic_memory.context import (
        check_budget,
        fit_context,
        fit_window,
        minimum_budget,
        render_memory,
        select_window,
    )
    from intrinsic_memory.manager import (
        DEFAULT_MEMORY_TOKENS,
        MIN_MEMORY_TOKENS,
        UPDATE_MODES,
        IntrinsicMemory,
        update_prompts,
        write_template,
    )
    from intrinsic_memory.memory import MemoryTemplate
    from intrinsic_memory.middleware import (
        IntrinsicMemoryMiddleware,
        IntrinsicMemoryState,
        subagent_tool,
    )
    from intrinsic_memory.models import (
        CallUsage,
        Reply,
        add_call_usage,
        ainvoke,
        answers_in_json,
        invoke,
        json_model,
        limit_output,
        zero_usage,
    )
    from intrinsic_memory.nodes import add_intrinsic_memory, amemory_step, memory_node, memory_step
    from intrinsic_memory.notes import copies_prompt, restates, scripts_of, strip_foreign
    from intrinsic_memory.schedule import (
        DOCUMENTATION,
        Phase,
        Schedule,
        only_markers,
        parse_flags,
        parse_vote,
    )
    from intrinsic_memory.state import (
        AgentMemory,
        MemoryChannel,
        UsageChannel,
        add_usage,
        memory_of,
    )
    from intrinsic_memory.tokens import count_message_tokens, count_tokens


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'intrinsic_memory' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
