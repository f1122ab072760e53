"""Which memory template an agent keeps: generic, the task's manual one, or one its own model
writes from the task at the start of the run (the paper's three kinds)."""

from __future__ import annotations

from intrinsic_memory import MemoryTemplate, write_template

from ima.core.settings import RunContext
from ima.core.state import CallUsage
from ima.meeting.prompting import role_prompt
from ima.models import Models
from ima.tasks import Task


def template_for(
    task: Task, role_id: str, settings: RunContext, brief: str, models: Models
) -> tuple[str, CallUsage | None]:
    """The template (Markdown) of kind `settings.template` for `role_id`, and the model call
    it cost (only LLM-written templates cost one)."""
    if settings.template == "manual":
        return MemoryTemplate.of(task.manual_template, kind="manual").markdown(), None
    if settings.template == "llm":
        template, usage = write_template(
            models.agent(settings), brief, role_prompt(task, role_id), {"ima_role": role_id}
        )
        return template.markdown(), usage
    return MemoryTemplate.generic().markdown(), None
