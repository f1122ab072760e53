"""The memory-update node of one agent in the meeting: the library's memory step
(`intrinsic_memory.memory_step`) on the agent's own latest turn, with the meeting's
prompt parts, its template kind, the log of every version and progress events.

The step writes the agent's own slot and nothing else: whatever the model writes, no other
agent's memory can change (memory privacy is structural).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from intrinsic_memory import IntrinsicMemory, memory_step, only_markers
from langgraph.runtime import Runtime

from ima.core.settings import RunContext
from ima.core.state import MemoryRepairs, MemorySlot, MemoryVersion, State, add_usage
from ima.meeting.nodes.templates import template_for
from ima.meeting.prompting import own_role_prompt, role_prompt, system_prompt, task_prompt
from ima.models import Models
from ima.tasks import Task


def memory_node_name(role_id: str) -> str:
    return f"{role_id}_memory"


def latest_turn_of(state: State, role_id: str) -> dict[str, Any]:
    """The agent's own latest turn (other agents may have spoken since)."""
    return next(t for t in reversed(state["transcript"]) if t["speaker"] == role_id)


def line_changes(old: str, new: str) -> dict[str, int]:
    """How an update changed the memory, for progress events: lines added and removed."""
    diff = list(difflib.ndiff(old.splitlines(), new.splitlines()))
    return {
        "lines_added": sum(d.startswith("+ ") for d in diff),
        "lines_removed": sum(d.startswith("- ") for d in diff),
    }


def _prompt_parts(task: Task, role_id: str, settings: RunContext, brief: str) -> dict[str, Any]:
    """The role and shared opening of the update prompt, by the run's prompt layout."""
    if settings.prompt_layout == "shared":  # the task every call opens with, then the role
        return {"role": own_role_prompt(task, role_id), "system": task_prompt(task, brief)}
    if settings.memory_prompt == "lean":
        return {"role": role_prompt(task, role_id)}
    return {"role": system_prompt(task, role_id, brief)}


def make_memory_node(task: Task, role_id: str, models: Models) -> Callable[..., dict[str, Any]]:
    def update_memory(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        settings = runtime.context
        latest = latest_turn_of(state, role_id)
        slot = state["memories"][role_id]
        update: dict[str, Any] = {"usage": {}}
        template = state["templates"].get(role_id)
        if slot["kind"] != settings.template or template is None:
            # The run was forked with another template kind: adopt it from here on.
            template, call = template_for(task, role_id, settings, state["brief"], models)
            update["templates"] = {role_id: template}
            slot = MemorySlot(**{**slot, "kind": settings.template})  # type: ignore[typeddict-item]
            if call:
                update["usage"] = {role_id: {"template_generation": call}}
        memory = IntrinsicMemory(
            models.memory(settings),
            template,
            memory_tokens=settings.memory_tokens,
            mode=settings.memory_update,
            min_new_words=settings.memory_news_words,
        )
        # A bare vote gives the memory nothing to keep (the vote is in the state): no call.
        own = "" if only_markers(latest["content"]) else latest["content"]
        stepped, result = memory_step(
            memory,
            {**state, "memories": {role_id: slot}},
            agent=role_id,
            output=own,
            turn=latest["index"],
            key="memories",
            metadata={
                "ima_role": role_id,
                "ima_kind": "memory_update",
                "ima_turn": latest["index"],
            },
            **_prompt_parts(task, role_id, settings, state["brief"]),
        )
        new = stepped.get("memories", {}).get(role_id, slot)
        update["memories"] = {role_id: new}
        event = {"event": "memory", "role": role_id, "version": new["version"]}
        if result is None:
            runtime.stream_writer(event)
            return update
        update["usage"] = add_usage(update["usage"], {role_id: {"memory_update": result.usage}})
        update["memory_log"] = [
            MemoryVersion(
                role=role_id,
                version=new["version"],
                turn=latest["index"],
                text=new["text"],
                template=settings.template,
                usage=result.usage,
                mode=settings.memory_update,
                cut_off=result.cut_off,
                repairs=MemoryRepairs(**result.repairs.as_dict()),  # type: ignore[typeddict-item]
            )
        ]
        runtime.stream_writer(event | line_changes(slot["text"], new["text"]))
        return update

    update_memory.__name__ = memory_node_name(role_id)
    return update_memory
