"""Builds the messages of each call from prompt files, stable parts first.

In the paper layout every call of an agent starts with the same system message (task, then
role); in the shared layout every agent's turn starts with the task alone, then the same
recent turns. Either way prefix-caching backends (llama.cpp, Ollama, hosted APIs) skip what
an earlier call already evaluated.
"""

from __future__ import annotations

from functools import lru_cache

from intrinsic_memory import render_memory

from ima import prompts
from ima.core.tokens import count_tokens
from ima.tasks import Task


def roster(task: Task) -> str:
    """Every agent of the meeting: id and name."""
    return ", ".join(f"{r.id} ({r.name})" for r in task.roles)


def role_prompt(task: Task, role_id: str) -> str:
    """Who the agent is: its role, the roster of the meeting, its role description."""
    role = task.role(role_id)
    return prompts.render(
        "role",
        role_name=role.name,
        role_id=role.id,
        roster=roster(task),
        role_description=role.description.strip(),
    )


def own_role_prompt(task: Task, role_id: str) -> str:
    """The agent's role and its description, without the roster (the shared layout shows
    the roster once, with the task)."""
    role = task.role(role_id)
    return prompts.render(
        "own_role", role_name=role.name, role_id=role.id, role_description=role.description.strip()
    )


def system_prompt(task: Task, role_id: str, brief: str) -> str:
    """The task, then the role: the same opening for every call of an agent."""
    return prompts.render("agent_system", task=brief.strip(), role=role_prompt(task, role_id))


def task_prompt(task: Task, brief: str) -> str:
    """The task and who meets about it: the system message every agent's turn shares in
    the shared layout."""
    return prompts.render("task_system", task=brief.strip(), roster=roster(task))


@lru_cache(maxsize=256)
def cached_count(text: str) -> int:
    """Token count of texts that repeat every call (system prompts, frames)."""
    return count_tokens(text)


def memory_section(memory: str | None) -> str:
    """The memory block of a turn prompt; '' without memory (the baseline)."""
    if memory is None:
        return ""
    return render_memory(memory) + "\n\n"


def conversation_section(turns: str) -> str:
    """The recent-turns block of a turn prompt; '' when no turn is shown."""
    return prompts.render("conversation_section", turns=turns.rstrip()) + "\n\n" if turns else ""


def sections(memory: str | None, turns: str) -> str:
    """The memory and conversation blocks of a turn prompt (memory None: baseline)."""
    return memory_section(memory) + conversation_section(turns)
