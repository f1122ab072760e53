"""Builds the messages of each call from prompt files, stable parts first.

In the paper layout every call of an agent starts with the same system message (task, then
role); in the shared layout every agent's turn starts with the task alone, then the same
recent turns. Either way prefix-caching backends (llama.cpp, Ollama, hosted APIs) skip what
an earlier call already evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache, lru_cache

from intrinsic_memory import render_memory

from ima import prompts
from ima.core.tokens import count_tokens
from ima.tasks import Task
from ima.tasks.design import ComponentSlot


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


# Prompts that the agents never see: the evaluation's own.
NOT_AGENT_PROMPTS = ("judge", "requirement_check")


@cache
def _prompt_texts() -> tuple[str, ...]:
    names = sorted(
        str(p.relative_to(prompts.PROMPTS_DIR).with_suffix(""))
        for p in prompts.PROMPTS_DIR.rglob("*.md")
    )
    return tuple(prompts.load(n) for n in names if n not in NOT_AGENT_PROMPTS)


def component_line(component: ComponentSlot) -> str:
    """A design component as a worker proposing it is shown it: what it is for, and its
    candidate technologies."""
    options = "; ".join(component.options)
    return f"- {component.title}: {component.ask}" + (
        f" (candidates: {options})" if options else ""
    )


def instruction_texts(task: Task, templates: Mapping[str, str] | None = None) -> list[str]:
    """What the agents are told besides the brief: the task's phase instructions, role
    descriptions and manual template, the agent-facing prompt files, and the run's memory
    templates (LLM-written ones live only in the run's state). The design's components,
    shown to workers proposing them, are left out: a design names them and their
    technologies by right."""
    return [
        *(p.instruction for p in task.schedule.phases),
        *(r.description for r in task.roles),
        task.manual_template,
        *_prompt_texts(),
        *(templates or {}).values(),
    ]
