"""Intrinsic Memory Agents (Yuen et al., 2025) for LangGraph and LangChain.

Every agent keeps its own structured memory, updated by an LLM call from that agent's own
output after each of its turns, and sees the task, its memory and as many recent messages
as a token budget allows (the paper's Algorithm 1); `Schedule` is the paper's Algorithm 2
for scheduled meetings.

    memory = IntrinsicMemory("ollama:qwen2.5:7b", memory_tokens=256)
    after_writer = add_intrinsic_memory(builder, "writer", writer, memory, token_budget=2048)

Names load on first use, so `import intrinsic_memory` stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

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
    "IntrinsicMemoryState": "intrinsic_memory.state",
    "MemoryChannel": "intrinsic_memory.state",
    "restates": "intrinsic_memory.notes",
    "scripts_of": "intrinsic_memory.notes",
    "strip_foreign": "intrinsic_memory.notes",
    "UsageChannel": "intrinsic_memory.state",
    "add_usage": "intrinsic_memory.state",
    "CallUsage": "intrinsic_memory.models",
    "count_message_tokens": "intrinsic_memory.tokens",
    "Phase": "intrinsic_memory.schedule",
    "Schedule": "intrinsic_memory.schedule",
}

__all__ = [
    "AgentMemory",
    "CallUsage",
    "IntrinsicMemory",
    "IntrinsicMemoryMiddleware",
    "IntrinsicMemoryState",
    "MemoryChannel",
    "MemoryTemplate",
    "Phase",
    "Schedule",
    "UsageChannel",
    "add_intrinsic_memory",
    "add_usage",
    "count_message_tokens",
    "fit_context",
    "memory_node",
    "restates",
    "scripts_of",
    "strip_foreign",
    "subagent_tool",
    "write_template",
]

if TYPE_CHECKING:
    from intrinsic_memory.context import fit_context
    from intrinsic_memory.manager import IntrinsicMemory, write_template
    from intrinsic_memory.memory import MemoryTemplate
    from intrinsic_memory.middleware import IntrinsicMemoryMiddleware, subagent_tool
    from intrinsic_memory.models import CallUsage
    from intrinsic_memory.nodes import add_intrinsic_memory, memory_node
    from intrinsic_memory.notes import restates, scripts_of, strip_foreign
    from intrinsic_memory.schedule import Phase, Schedule
    from intrinsic_memory.state import (
        AgentMemory,
        IntrinsicMemoryState,
        MemoryChannel,
        UsageChannel,
        add_usage,
    )
    from intrinsic_memory.tokens import count_message_tokens


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'intrinsic_memory' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
