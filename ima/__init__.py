"""Intrinsic Memory Agents on LangGraph (Yuen et al., 2025): every agent keeps its own
structured memory, updated from its own output after each of its turns, and sees its task,
its memory and as many recent messages as a token budget allows.

The library, for your own graphs (see docs/reference.md):

- `IntrinsicMemory`: the memory itself (a stateless manager: empty memory, next version).
- `fit_context`: the paper's Algorithm 1 for any list of LangChain messages.
- `IntrinsicMemoryMiddleware`, `subagent_tool`, `IntrinsicMemoryState`: for
  `langchain.agents.create_agent` agents and supervisors.
- `add_intrinsic_memory`: for an agent node of a hand-built `StateGraph`.
- `create_meeting`: a scheduled multi-agent meeting on a task, as an uncompiled graph;
  `advance_schedule`: its schedule (the modified round robin) on its own.

Names load on first use, so `import ima` stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "IntrinsicMemory": "ima.method.memory_update",
    "MemoryUpdate": "ima.method.memory_update",
    "write_template": "ima.method.memory_update",
    "generic_template": "ima.method.memory_update",
    "Memory": "ima.method.memory",
    "MemoryTemplate": "ima.method.memory",
    "MemoryLimits": "ima.method.memory",
    "fit_context": "ima.method.context",
    "count_message_tokens": "ima.method.context",
    "IntrinsicMemoryMiddleware": "ima.blocks.middleware",
    "subagent_tool": "ima.blocks.middleware",
    "IntrinsicMemoryState": "ima.blocks.state",
    "AgentMemory": "ima.blocks.state",
    "add_intrinsic_memory": "ima.blocks.graph",
    "create_meeting": "ima.graph.builder",
    "RunContext": "ima.core.settings",
    "Task": "ima.tasks",
    "Schedule": "ima.tasks",
    "load_task": "ima.tasks",
    "advance_schedule": "ima.method.schedule",
    "initial_position": "ima.method.schedule",
}

__all__ = [
    "AgentMemory",
    "IntrinsicMemory",
    "IntrinsicMemoryMiddleware",
    "IntrinsicMemoryState",
    "Memory",
    "MemoryLimits",
    "MemoryTemplate",
    "MemoryUpdate",
    "RunContext",
    "Schedule",
    "Task",
    "add_intrinsic_memory",
    "advance_schedule",
    "count_message_tokens",
    "create_meeting",
    "fit_context",
    "generic_template",
    "initial_position",
    "load_task",
    "subagent_tool",
    "write_template",
]

if TYPE_CHECKING:
    from ima.blocks.graph import add_intrinsic_memory
    from ima.blocks.middleware import IntrinsicMemoryMiddleware, subagent_tool
    from ima.blocks.state import AgentMemory, IntrinsicMemoryState
    from ima.core.settings import RunContext
    from ima.graph.builder import create_meeting
    from ima.method.context import count_message_tokens, fit_context
    from ima.method.memory import Memory, MemoryLimits, MemoryTemplate
    from ima.method.memory_update import (
        IntrinsicMemory,
        MemoryUpdate,
        generic_template,
        write_template,
    )
    from ima.method.schedule import advance_schedule, initial_position
    from ima.tasks import Schedule, Task, load_task


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ima' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
