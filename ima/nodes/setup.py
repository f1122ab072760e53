"""The first node: fill in the brief, the schedule position, and each agent's empty memory
slot with its template (LLM-generated templates are written here, once per run)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from ima import prompts
from ima.graph.context import RunContext
from ima.graph.state import MemorySlot, State
from ima.models.calls import call_model
from ima.nodes.prompting import system_prompt
from ima.nodes.schedule import initial_position
from ima.tasks import Task


def make_setup_node(task: Task, with_memory: bool) -> Callable[..., dict[str, Any]]:
    def setup(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        settings = runtime.context
        brief = (state.get("brief") or "").strip() or task.description
        update: dict[str, Any] = {
            "task_id": task.id,
            "brief": brief,
            "status": "running",
            "usage": {},
            **initial_position(task.schedule),
        }
        if not with_memory:
            return update | {"templates": {}}
        templates, usage = {}, {}
        for role_id in task.speakers:
            if settings.template == "manual":
                templates[role_id] = task.manual_template.strip()
            elif settings.template == "llm":
                messages = [
                    SystemMessage(system_prompt(task, role_id, brief)),
                    HumanMessage(prompts.load("template_generation")),
                ]
                model = settings.chat_model()
                meta = {"ima_kind": "template_generation", "ima_role": role_id}
                text, call = call_model(model, messages, meta)
                templates[role_id] = text or prompts.load("templates/generic")
                usage[role_id] = {"template_generation": call}
            else:
                templates[role_id] = prompts.load("templates/generic")
        slots = {
            r: MemorySlot(text="", template=settings.template, version=0, updated_turn=0)
            for r in task.speakers
        }
        return update | {"templates": templates, "memories": slots, "usage": usage}

    return setup
