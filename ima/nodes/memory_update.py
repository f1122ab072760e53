"""The memory-update node of one agent: its memory's next version from its own latest turn
(`IntrinsicMemory`, rewrite or edit).

The node returns an update for its own role's slot and nothing else: whatever the model
writes, no other agent's memory can change (memory privacy is structural).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime

from ima.core.settings import RunContext
from ima.core.state import MemoryRepairs, MemorySlot, MemoryVersion, State, add_usage
from ima.method.memory_update import IntrinsicMemory, line_changes
from ima.method.prompting import own_role_prompt, role_prompt, system_prompt, task_prompt
from ima.method.votes import only_markers
from ima.models import Models
from ima.nodes.templates import template_for
from ima.tasks import Task


def memory_node_name(role_id: str) -> str:
    return f"{role_id}_memory"


def latest_turn_of(state: State, role_id: str) -> dict[str, Any]:
    """The agent's own latest turn (other agents may have spoken since)."""
    return next(t for t in reversed(state["transcript"]) if t["speaker"] == role_id)


def make_memory_node(task: Task, role_id: str, models: Models) -> Callable[..., dict[str, Any]]:
    def update_memory(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        settings = runtime.context
        latest = latest_turn_of(state, role_id)
        slot = state["memories"][role_id]
        if only_markers(latest["content"]) and slot["template"] == settings.template:
            # A bare vote gives the memory nothing to keep (the vote is in the state): the
            # memory stays as it is, formed from this turn.
            runtime.stream_writer({"event": "memory", "role": role_id, "version": slot["version"]})
            return {"memories": {role_id: MemorySlot(**{**slot, "seen_turn": latest["index"]})}}
        update: dict[str, Any] = {"usage": {}}
        template = state["templates"].get(role_id)
        if slot["template"] != settings.template or template is None:
            # The run was forked with another template kind: adopt it from here on.
            template, call = template_for(task, role_id, settings, state["brief"], models)
            update["templates"] = {role_id: template}
            if call:
                update["usage"] = {role_id: {"template_generation": call}}
        memory = IntrinsicMemory(
            models.memory(settings),
            template,
            tokens=settings.memory_tokens,
            mode=settings.memory_update,
        )
        system = None
        if settings.prompt_layout == "shared":  # the task every call opens with, then the role
            role, system = own_role_prompt(task, role_id), task_prompt(task, state["brief"])
        elif settings.memory_prompt == "lean":
            role = role_prompt(task, role_id)
        else:
            role = system_prompt(task, role_id, state["brief"])
        result = memory.update(
            slot["text"],
            latest["content"],
            role=role,
            turn=latest["index"],
            metadata={"ima_role": role_id, "ima_turn": latest["index"]},
            system=system,
        )
        update["usage"] = add_usage(update["usage"], {role_id: {"memory_update": result.usage}})
        text = result.text if result.text or not slot["text"] else slot["text"]
        repairs = MemoryRepairs(**result.repairs.as_dict())  # type: ignore[typeddict-item]
        if text != result.text:  # an answer that would erase the memory keeps it instead
            repairs["unusable"] = 1
        version = slot["version"] + 1
        update["memories"] = {
            role_id: MemorySlot(
                text=text,
                template=settings.template,
                version=version,
                updated_turn=latest["index"],
                seen_turn=latest["index"],
                **({"lessons": slot["lessons"]} if slot.get("lessons") else {}),  # type: ignore[typeddict-item]
            )
        }
        update["memory_log"] = [
            MemoryVersion(
                role=role_id,
                version=version,
                turn=latest["index"],
                text=text,
                template=settings.template,
                usage=result.usage,
                mode=settings.memory_update,
                cut_off=result.cut_off,
                repairs=repairs,
            )
        ]
        runtime.stream_writer(
            {"event": "memory", "role": role_id, "version": version}
            | line_changes(slot["text"], text)
        )
        return update

    update_memory.__name__ = memory_node_name(role_id)
    return update_memory
