"""The memory-update node: M_new = LLM(role, M_old, latest own output).

The node returns an update for its own role's slot and nothing else: whatever the model
writes, no other agent's memory can change (memory privacy is structural).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from ima import prompts
from ima.graph.context import RunContext
from ima.graph.state import MemorySlot, State, add_usage
from ima.memory.templates import write_template
from ima.models.calls import call_model
from ima.nodes.prompting import system_prompt
from ima.tasks import Task


def line_changes(old: str, new: str) -> dict[str, int]:
    """How a rewrite changed the memory, for progress events: lines added and removed."""
    diff = list(difflib.ndiff(old.splitlines(), new.splitlines()))
    return {
        "lines_added": sum(d.startswith("+ ") for d in diff),
        "lines_removed": sum(d.startswith("- ") for d in diff),
    }


def make_memory_node(task: Task, role_id: str) -> Callable[..., dict[str, Any]]:
    def update_memory(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        settings = runtime.context
        latest = state["transcript"][-1]
        slot = state["memories"][role_id]
        update: dict[str, Any] = {"usage": {}}
        template = state["templates"].get(role_id)
        if slot["template"] != settings.template or template is None:
            # The run was forked with another template kind: adopt it from here on.
            template, call = write_template(task, role_id, settings, state["brief"])
            update["templates"] = {**state["templates"], role_id: template}
            if call:
                update["usage"] = {role_id: {"template_generation": call}}
        prompt = prompts.render(
            "memory_update",
            template=template,
            memory=slot["text"] or "(empty: this is your first turn)",
            output=latest["content"],
            turn=latest["index"],
            words=settings.max_memory_words,
        )
        # Same system message as the agent's own turn: the backend reuses its cached prefix.
        messages = [
            SystemMessage(system_prompt(task, role_id, state["brief"])),
            HumanMessage(prompt),
        ]
        model = settings.memory_chat_model()
        metadata = {"ima_kind": "memory_update", "ima_role": role_id, "ima_turn": latest["index"]}
        text, usage = call_model(
            model, messages, metadata, max_tokens=2 * settings.max_memory_words
        )
        update["usage"] = add_usage(update["usage"], {role_id: {"memory_update": usage}})
        if text:  # an empty rewrite would erase the memory: keep the previous version instead
            update["memories"] = {
                role_id: MemorySlot(
                    text=text,
                    template=settings.template,
                    version=slot["version"] + 1,
                    updated_turn=latest["index"],
                )
            }
            runtime.stream_writer(
                {"event": "memory", "role": role_id, "version": slot["version"] + 1}
                | line_changes(slot["text"], text)
            )
        return update

    update_memory.__name__ = f"{role_id}_memory"
    return update_memory
