"""The documentation node (the finaliser role, DJE in the case study): the final design
compiled part by part from the brief, the accepted proposal and every agent's memory
(`ima.meeting.design.compile`), rendered to Markdown; `design.json` is the same structure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime

from ima.core.settings import RunContext
from ima.core.state import FinalOutput, State
from ima.meeting.design.compile import compile_design
from ima.meeting.design.render import render_design
from ima.meeting.prompting import instruction_texts, system_prompt, task_prompt
from ima.models import Models
from ima.tasks import Task


def make_documentation_node(task: Task, models: Models) -> Callable[..., dict[str, Any]]:
    role_id = task.schedule.finalizer

    def documentation(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        settings = runtime.context
        ending = (
            "all agents accepted" if state["consensus"] else "turn cap reached without consensus"
        )
        # The system message the meeting's last prompts opened with: a prefix cache has it.
        system = (
            task_prompt(task, state["brief"])
            if settings.prompt_layout == "shared"
            else system_prompt(task, role_id, state["brief"])
        )
        compiled = compile_design(
            task,
            state,
            models.agent(settings),
            system=system,
            ending=ending,
            metadata={"ima_role": role_id, "ima_kind": "documentation"},
            instructions=instruction_texts(task, state.get("templates")),
        )
        design = compiled.design
        final = FinalOutput(
            markdown=render_design(design, task.title).strip(),
            spec=design.model_dump(),
            missing=design.missing,
        )
        status = "finalized" if state["consensus"] else "turn_cap"
        usage = {role_id: {"documentation": compiled.usage}}
        return {"final": final, "status": status, "usage": usage}

    return documentation
