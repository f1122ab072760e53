"""The memory-update node of one agent in the meeting: the library's memory step
(`intrinsic_memory.memory_step`) on the agent's own latest turn, with the meeting's
prompt parts, its template kind, the log of every version and progress events.

The step writes the agent's own slot and nothing else: whatever the model writes, no other
agent's memory can change (memory privacy is structural).

A turn that gives the memory nothing of the agent's own costs no update call: a bare vote,
or a turn that repeats the meeting (half or more of its word 8-grams are in earlier turns or
the agents' instructions). The 0.5B facilitator echoed "Meeting notes so far", and workers
the first worker's list, into their memories. A turn that restates the brief still counts:
keeping the brief's requirements in mind is what the memory is for.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from intrinsic_memory import IntrinsicMemory, memory_step, only_markers
from langgraph.runtime import Runtime

from ima.core.ngrams import Gram, copied_share, ngram_set
from ima.core.settings import RunContext
from ima.core.state import (
    MEMORY_KEY,
    MemoryRepairs,
    MemorySlot,
    MemoryVersion,
    State,
    add_usage,
    memory_slots,
)
from ima.meeting.nodes.templates import template_for
from ima.meeting.prompting import (
    instruction_texts,
    own_role_prompt,
    role_prompt,
    system_prompt,
    task_prompt,
)
from ima.models import Models
from ima.tasks import Task


def memory_node_name(role_id: str) -> str:
    return f"{role_id}_memory"


def latest_turn_of(state: State, role_id: str) -> dict[str, Any]:
    """The agent's own latest turn (other agents may have spoken since)."""
    return next(t for t in reversed(state["transcript"]) if t["speaker"] == role_id)


REPEATED = 0.5  # share of a turn's word 8-grams found in earlier turns and instructions


@lru_cache(maxsize=8)
def _instruction_grams(texts: tuple[str, ...]) -> frozenset[Gram]:
    """The instructions' 8-grams: the same at every memory step of a run."""
    return frozenset(ngram_set(texts))


def repeats_the_meeting(task: Task, state: State, turn: Mapping[str, Any]) -> bool:
    """Whether `turn` mostly repeats earlier turns or the agents' instructions."""
    earlier = [t["content"] for t in state["transcript"] if t["index"] < turn["index"]]
    told = _instruction_grams(tuple(instruction_texts(task, state.get("templates"))))
    share = copied_share(turn["content"], told | ngram_set(earlier))
    return share is not None and share >= REPEATED


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
        slot = memory_slots(state)[role_id]
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
        # nothing of the agent's own: no call (a vote is in the state; see the docstring)
        repeated = only_markers(latest["content"]) or (
            settings.memory_news_words > 0 and repeats_the_meeting(task, state, latest)
        )
        own = "" if repeated else latest["content"]
        stepped, result = memory_step(
            memory,
            {**state, MEMORY_KEY: {role_id: slot}},
            agent=role_id,
            output=own,
            turn=latest["index"],
            metadata={
                "ima_role": role_id,
                "ima_kind": "memory_update",
                "ima_turn": latest["index"],
            },
            **_prompt_parts(task, role_id, settings, state["brief"]),
        )
        new = stepped.get(MEMORY_KEY, {}).get(role_id, slot)
        update[MEMORY_KEY] = {role_id: new}
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
