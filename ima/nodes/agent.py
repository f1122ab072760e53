"""The agent node: build the context (Algorithm 1), call the model, append the turn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from ima import prompts
from ima.graph.context import RunContext
from ima.graph.state import State, Turn
from ima.memory.context import build_context, render_turn
from ima.memory.tokens import count_tokens
from ima.models.calls import call_model
from ima.nodes.flags import parse_flags
from ima.nodes.prompting import cached_count, sections, system_prompt
from ima.nodes.schedule import speaker_after, voters
from ima.tasks import Task


def instruction_for(task: Task, role_id: str, state: State) -> str:
    schedule = task.schedule
    phase = next(p for p in schedule.phases if p.name == state["phase"])
    if role_id == schedule.facilitator:
        if state["consensus"]:
            return prompts.render("instruction_finalize", finalizer=schedule.finalizer)
        return prompts.render(
            "instruction_facilitator",
            phase_instruction=phase.instruction,
            next_speaker=speaker_after(schedule, state),
        )
    if phase.name == "consensus" and role_id in voters(schedule):
        return prompts.render("instruction_voter", phase_instruction=phase.instruction)
    return prompts.render("instruction_worker", phase_instruction=phase.instruction)


def build_turn_prompt(
    task: Task, role_id: str, state: State, settings: RunContext, with_memory: bool
) -> tuple[list[SystemMessage | HumanMessage], int]:
    """The agent's messages and their token count, within `settings.token_budget`."""
    system = system_prompt(task, role_id, state["brief"])

    def user(memory: str | None, turns: str) -> str:
        return prompts.render(
            "agent_turn",
            sections=sections(memory, turns),
            phase=state["phase"],
            round=state["phase_round"],
            instruction=instruction_for(task, role_id, state),
            role_id=role_id,
            words=settings.max_turn_words,
        )

    # Fixed parts: system prompt and the turn frame with empty memory and no turns.
    fixed = cached_count(system) + cached_count(user("" if with_memory else None, "x"))
    memory = state["memories"][role_id]["text"] if with_memory else ""
    context = build_context(
        fixed_tokens=fixed,
        memory=memory,
        transcript=state["transcript"],
        budget=settings.token_budget,
    )
    text = user(context.memory if with_memory else None, context.rendered_turns)
    return [SystemMessage(system), HumanMessage(text)], context.tokens


def make_agent_node(task: Task, role_id: str, with_memory: bool) -> Callable[..., dict[str, Any]]:
    schedule = task.schedule

    def agent(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        settings = runtime.context
        messages, _ = build_turn_prompt(task, role_id, state, settings, with_memory)
        index = len(state["transcript"]) + 1
        metadata = {
            "ima_kind": "agent_turn",
            "ima_role": role_id,
            "ima_turn": index,
            "ima_phase": state["phase"],
            "ima_round": state["phase_round"],
            "ima_next": speaker_after(schedule, state),
            "ima_facilitator": role_id == schedule.facilitator,
            "ima_finalize": state["consensus"],
            "ima_voting": state["phase"] == "consensus" and role_id in voters(schedule),
            "ima_last_voter": role_id == voters(schedule)[-1],
        }
        model = settings.chat_model()
        text, usage = call_model(model, messages, metadata, max_tokens=2 * settings.max_turn_words)
        turn = Turn(
            index=index,
            speaker=role_id,
            phase=state["phase"],
            content=text,
            flags=parse_flags(text, voting=metadata["ima_voting"]),
            tokens=count_tokens(render_turn(index, role_id, text)),
            usage=usage,
        )
        runtime.stream_writer(
            {
                "event": "turn",
                "turn": index,
                "speaker": role_id,
                "phase": state["phase"],
                "flags": turn["flags"],
            }
        )
        return {"transcript": [turn], "usage": {role_id: {"agent_turn": usage}}}

    agent.__name__ = role_id
    return agent
