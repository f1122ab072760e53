"""f_memory_update, the heart of the method: M_new = LLM(role, template, M_old, own output).

Templates: generic (one universal structure), manual (written for the task) or
LLM-generated (the agent's model writes its own from the task description, once per run).
The node that calls this (ima/nodes/memory_update.py) writes only its own agent's slot.
"""

from __future__ import annotations

import difflib

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from ima import prompts
from ima.core.settings import MemoryPromptLayout, RunContext
from ima.core.state import CallUsage
from ima.method.prompting import role_prompt, system_prompt
from ima.models.calls import call_model
from ima.tasks import Task


def write_template(
    task: Task, role_id: str, settings: RunContext, brief: str, model: BaseChatModel | None
) -> tuple[str, CallUsage | None]:
    """The template text for `role_id` of kind `settings.template`, and the call it cost
    (`model` writes LLM-generated templates)."""
    if settings.template == "manual":
        return task.manual_template.strip(), None
    if settings.template == "llm" and model is not None:
        messages = [
            SystemMessage(system_prompt(task, role_id, brief)),
            HumanMessage(prompts.load("template_generation")),
        ]
        meta = {"ima_kind": "template_generation", "ima_role": role_id}
        text, usage = call_model(model, messages, meta)
        return text or prompts.load("templates/generic"), usage
    return prompts.load("templates/generic"), None


def update_messages(
    task: Task,
    role_id: str,
    brief: str,
    template: str,
    memory: str,
    output: str,
    turn: int,
    words: int,
    layout: MemoryPromptLayout = "lean",
) -> list[BaseMessage]:
    """The update prompt: the agent's role, its template, its memory so far and its latest
    turn: what f_memory_update needs. The `full` layout also repeats the task, opening with
    the agent's own system message, which a prefix-caching backend does not evaluate again.
    """
    system = role_prompt(task, role_id) if layout == "lean" else system_prompt(task, role_id, brief)
    prompt = prompts.render(
        "memory_update",
        template=template,
        memory=memory or "(empty: this is your first turn)",
        output=output,
        turn=turn,
        words=words,
    )
    return [SystemMessage(system), HumanMessage(prompt)]


def line_changes(old: str, new: str) -> dict[str, int]:
    """How a rewrite changed the memory, for progress events: lines added and removed."""
    diff = list(difflib.ndiff(old.splitlines(), new.splitlines()))
    return {
        "lines_added": sum(d.startswith("+ ") for d in diff),
        "lines_removed": sum(d.startswith("- ") for d in diff),
    }
