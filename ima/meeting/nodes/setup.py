"""The first node: fill in the brief, the schedule position, and each agent's memory slot
(its long-term lessons, if any) with its template (LLM-generated templates are written
here, once per run); fix how memory formation is scheduled for the whole run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime

from ima.core.settings import RunContext
from ima.core.state import MemorySlot, MemoryVersion, State
from ima.longterm import load_starting_memory
from ima.meeting.agent_context import check_budget
from ima.meeting.nodes.templates import template_for
from ima.models import Models, parallel_calls
from ima.tasks import Task


def make_setup_node(task: Task, with_memory: bool, models: Models) -> Callable[..., dict[str, Any]]:
    def setup(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        settings = runtime.context
        brief = (state.get("brief") or "").strip() or task.description
        # However the meeting was started (ima, Studio, the SDK): every context can hold it.
        check_budget(task, brief, settings, with_memory)
        update: dict[str, Any] = {
            "task_id": task.id,
            "brief": brief,
            "status": "running",
            "usage": {},
            **task.schedule.start(),
        }
        if not with_memory:
            return update | {"templates": {}, "memory_concurrency": 1}
        concurrency = settings.memory_concurrency or parallel_calls(settings)
        templates, usage = {}, {}
        for role_id in task.speakers:
            templates[role_id], call = template_for(task, role_id, settings, brief, models)
            if call:
                usage[role_id] = {"template_generation": call}
        # Long-term lessons sit beside the memory, not in it: a rewrite cannot drop them.
        lessons, long_term = load_starting_memory(settings, task.speakers, runtime.store)
        slots = {
            r: MemorySlot(text="", version=0, turn=0, kind=settings.template)
            | ({"lessons": lessons[r]} if lessons.get(r) else {})  # type: ignore[operator]
            for r in task.speakers
        }
        start = [
            MemoryVersion(role=r, version=0, turn=0, text="", template=s["kind"])
            for r, s in slots.items()
        ]
        return update | {
            "templates": templates,
            "memories": slots,
            "memory_log": start,
            "usage": usage,
            "long_term": {"start": long_term},
            "memory_concurrency": concurrency,
        }

    return setup
