"""Memory templates: generic (one universal structure), manual (written for the task) or
LLM-generated (the agent's model writes its own from the task description, once)."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, SystemMessage

from ima import prompts
from ima.graph.context import RunContext
from ima.graph.state import CallUsage
from ima.models.calls import call_model
from ima.nodes.prompting import system_prompt
from ima.tasks import Task


def write_template(
    task: Task, role_id: str, settings: RunContext, brief: str
) -> tuple[str, CallUsage | None]:
    """The template text for `role_id` of kind `settings.template`, and the call it cost."""
    if settings.template == "manual":
        return task.manual_template.strip(), None
    if settings.template == "llm":
        messages = [
            SystemMessage(system_prompt(task, role_id, brief)),
            HumanMessage(prompts.load("template_generation")),
        ]
        meta = {"ima_kind": "template_generation", "ima_role": role_id}
        text, usage = call_model(settings.chat_model(), messages, meta)
        return text or prompts.load("templates/generic"), usage
    return prompts.load("templates/generic"), None
