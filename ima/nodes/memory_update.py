"""The memory-update node of one agent: rewrites that agent's memory from its own latest turn.

The node returns an update for its own role's slot and nothing else: whatever the model
writes, no other agent's memory can change (memory privacy is structural).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime

from ima.core.settings import RunContext
from ima.core.state import MemorySlot, MemoryVersion, State, add_usage
from ima.method.memory_update import line_changes, update_messages, write_template
from ima.models import agent_model, memory_model
from ima.models.calls import call_model
from ima.tasks import Task


def memory_node_name(role_id: str) -> str:
    return f"{role_id}_memory"


def latest_turn_of(state: State, role_id: str) -> dict[str, Any]:
    """The agent's own latest turn (other agents may have spoken since)."""
    return next(t for t in reversed(state["transcript"]) if t["speaker"] == role_id)


def make_memory_node(task: Task, role_id: str) -> Callable[..., dict[str, Any]]:
    def update_memory(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        settings = runtime.context
        latest = latest_turn_of(state, role_id)
        slot = state["memories"][role_id]
        update: dict[str, Any] = {"usage": {}}
        template = state["templates"].get(role_id)
        if slot["template"] != settings.template or template is None:
            # The run was forked with another template kind: adopt it from here on.
            template, call = write_template(
                task, role_id, settings, state["brief"], agent_model(settings)
            )
            update["templates"] = {role_id: template}
            if call:
                update["usage"] = {role_id: {"template_generation": call}}
        messages = update_messages(
            task,
            role_id,
            state["brief"],
            template,
            slot["text"],
            latest["content"],
            latest["index"],
            settings.max_memory_words,
            settings.memory_prompt,
        )
        metadata = {"ima_kind": "memory_update", "ima_role": role_id, "ima_turn": latest["index"]}
        text, usage = call_model(
            memory_model(settings), messages, metadata, max_tokens=2 * settings.max_memory_words
        )
        update["usage"] = add_usage(update["usage"], {role_id: {"memory_update": usage}})
        # An empty rewrite would erase the memory: keep the previous version instead.
        update["memories"] = {role_id: {**slot, "seen_turn": latest["index"]}}
        if text:
            version = slot["version"] + 1
            update["memories"] = {
                role_id: MemorySlot(
                    text=text,
                    template=settings.template,
                    version=version,
                    updated_turn=latest["index"],
                    seen_turn=latest["index"],
                )
            }
            update["memory_log"] = [
                MemoryVersion(
                    role=role_id,
                    version=version,
                    turn=latest["index"],
                    text=text,
                    template=settings.template,
                    usage=usage,
                )
            ]
            runtime.stream_writer(
                {"event": "memory", "role": role_id, "version": version}
                | line_changes(slot["text"], text)
            )
        return update

    update_memory.__name__ = memory_node_name(role_id)
    return update_memory
