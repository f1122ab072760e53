"""Builds the messages of each call from prompt files, stable parts first.

Every call of an agent starts with the same system message (task, then role), so local
backends (llama.cpp, Ollama) reuse the cached prompt prefix across calls.
"""

from __future__ import annotations

from functools import lru_cache

from ima import prompts
from ima.core.tokens import count_tokens
from ima.tasks import Task


def role_prompt(task: Task, role_id: str) -> str:
    """Who the agent is: its role, the roster of the meeting, its role description."""
    role = task.role(role_id)
    roster = ", ".join(f"{r.id} ({r.name})" for r in task.roles)
    return prompts.render(
        "role",
        role_name=role.name,
        role_id=role.id,
        roster=roster,
        role_description=role.description.strip(),
    )


def system_prompt(task: Task, role_id: str, brief: str) -> str:
    """The task, then the role: the same opening for every call of an agent."""
    return prompts.render("agent_system", task=brief.strip(), role=role_prompt(task, role_id))


@lru_cache(maxsize=256)
def cached_count(text: str) -> int:
    """Token count of texts that repeat every call (system prompts, frames)."""
    return count_tokens(text)


def sections(memory: str | None, turns: str) -> str:
    """The memory and conversation blocks of a turn prompt (memory None: baseline)."""
    parts = []
    if memory is not None:
        parts.append(prompts.render("memory_section", memory=memory or "(empty)"))
    if turns:
        parts.append(prompts.render("conversation_section", turns=turns.rstrip()))
    return "".join(p + "\n\n" for p in parts)
